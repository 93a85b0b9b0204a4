//! The index's items in the store, one partition per reading scope
//! (`SIDX#<scope>`), all read by one Query:
//!
//! - `m`: the manifest: the segments (blobs), the blob of every message's
//!   state, and what waits to be deleted once no reader can need it;
//! - `d#<id>`: a message filed since the last segment was written (its
//!   words packed), put in the filing's own transaction;
//! - `o#<id>`: a message's folder (`f`) or unread flag (`u`) changed since
//!   the state blob was written, or the message deleted for good (`g`), set
//!   in the change's own transaction, with a token (`t`) a fold deletes it
//!   on;
//! - `x#<mailbox>`: every message of a purged mailbox up to an id (`upTo`);
//! - `b`: how far the indexing of mail filed before the index existed has
//!   come (`done`, or the last row id of each direction indexed).
//!
//! And `SIDXDUE/<scope>`: a scope whose index wants compacting (`at`: not
//! before then), which the poller's runs look at.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::doc::{Doc, Folder, State};
use crate::error::ApiError;
use crate::store::{Cond, Item, Key, PK, Query, SK, Store, StoreExt, Update, Write};

pub const DUE: &str = "SIDXDUE";
const MANIFEST: &str = "m";
const DOC: &str = "d#";
const OVERRIDE: &str = "o#";
const TOMBSTONE: &str = "x#";
const BACKFILL: &str = "b";

pub fn partition(scope: &str) -> String {
    format!("SIDX#{scope}")
}

pub fn manifest_key(scope: &str) -> Key {
    Key::new(partition(scope), MANIFEST)
}

pub fn doc_key(scope: &str, id: &str) -> Key {
    Key::new(partition(scope), format!("{DOC}{id}"))
}

pub fn override_key(scope: &str, id: &str) -> Key {
    Key::new(partition(scope), format!("{OVERRIDE}{id}"))
}

pub fn tombstone_key(scope: &str, mailbox: &str) -> Key {
    Key::new(partition(scope), format!("{TOMBSTONE}{mailbox}"))
}

pub fn backfill_key(scope: &str) -> Key {
    Key::new(partition(scope), BACKFILL)
}

pub fn due_key(scope: &str) -> Key {
    Key::new(DUE, scope)
}

/// The manifest: what the index is made of now.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Manifest {
    /// Every change bumps it; a compaction writes on condition it is unchanged.
    pub version: i64,
    pub segments: Vec<SegmentRef>,
    /// The blob of every segment message's state, one byte each, segments in
    /// order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
    /// Items a compaction folded, deleted by a later one once no reader can
    /// still need them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pending: Vec<Pending>,
    /// Blobs no longer in the index, deleted the same way.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub garbage: Vec<Garbage>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SegmentRef {
    /// Its blobs are `<prefix>/seg/<id>/h` and `.../b<n>`.
    pub id: String,
    pub docs: usize,
    /// Bucket blobs (0: inline in the head).
    pub k: u32,
    /// Its blobs' bytes.
    pub bytes: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Pending {
    /// Epoch ms of the compaction that folded them.
    pub at: i64,
    #[serde(default)]
    pub docs: Vec<String>,
    /// (id, token) of each folded change.
    #[serde(default)]
    pub overrides: Vec<(String, String)>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Garbage {
    pub at: i64,
    pub blobs: Vec<String>,
}

/// A message's changes since the state blob was written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Override {
    pub id: String,
    pub folder: Option<u8>,
    pub unread: Option<bool>,
    /// Deleted for good.
    pub gone: bool,
    pub token: String,
}

impl Override {
    pub fn apply(&self, state: State) -> State {
        let state = self.folder.map_or(state, |f| state.with_folder(f));
        let state = self.unread.map_or(state, |u| state.with_unread(u));
        if self.gone { state.with_gone() } else { state }
    }
}

/// Everything the index keeps in the store for a scope.
#[derive(Debug, Default)]
pub struct Stored {
    pub manifest: Manifest,
    pub docs: Vec<Doc>,
    pub overrides: Vec<Override>,
    /// (mailbox, every id up to this one is gone).
    pub tombstones: Vec<(String, String)>,
    pub backfill: Backfill,
}

/// How far the indexing of mail filed before the index existed has come.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Backfill {
    /// Every row of the scope is indexed.
    #[serde(default)]
    pub done: bool,
    /// The last row id indexed, oldest first, of each direction.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after_in: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after_out: Option<String>,
}

impl Stored {
    /// Whether a message of this mailbox and id was purged.
    pub fn purged(&self, mailbox: &str, id: &str) -> bool {
        self.tombstones
            .iter()
            .any(|(m, up_to)| m == mailbox && id <= up_to.as_str())
    }
}

/// Reads a scope's index items: one Query (more pages when it is large).
pub async fn read(store: &dyn Store, scope: &str) -> Result<Stored, ApiError> {
    let items = store.all(Query::partition(partition(scope)).limit(1000)).await?;
    let mut out = Stored::default();
    for item in items {
        let sk = item.get(SK).and_then(Value::as_str).unwrap_or_default().to_string();
        if sk == MANIFEST {
            out.manifest = crate::store::record(item)?;
        } else if let Some(id) = sk.strip_prefix(DOC) {
            out.docs.push(doc_of(id, &item)?);
        } else if let Some(id) = sk.strip_prefix(OVERRIDE) {
            out.overrides.push(Override {
                id: id.to_string(),
                folder: item.get("f").and_then(Value::as_u64).map(|f| f as u8),
                unread: item.get("u").and_then(Value::as_bool),
                gone: item.get("g").and_then(Value::as_bool).unwrap_or(false),
                token: item.get("t").and_then(Value::as_str).unwrap_or_default().to_string(),
            });
        } else if sk == BACKFILL {
            out.backfill = crate::store::record(item)?;
        } else if let Some(mailbox) = sk.strip_prefix(TOMBSTONE) {
            let up_to = item.get("upTo").and_then(Value::as_str).unwrap_or_default();
            out.tombstones.push((mailbox.to_string(), up_to.to_string()));
        }
    }
    Ok(out)
}

fn doc_of(id: &str, item: &Item) -> Result<Doc, ApiError> {
    let num = |name: &str| item.get(name).and_then(Value::as_u64).unwrap_or(0) as u8;
    let packed = item.get("w").and_then(Value::as_str).unwrap_or_default();
    let words = Doc::unpack_words(packed).ok_or_else(|| ApiError::internal("a fresh search item could not be read"))?;
    Ok(Doc {
        id: id.to_string(),
        mailbox: item.get("m").and_then(Value::as_str).unwrap_or_default().to_string(),
        flags: num("f"),
        state: State(num("s")),
        words,
    })
}

/// The most a fresh message's packed words take in its item: a store item
/// holds at most 400 KB, and the filing's own rows go in the same
/// transaction.
pub const MAX_PACKED: usize = 256 * 1024;

/// A filed message's item, put in the filing's transaction.
pub fn filing_write(scope: &str, doc: &Doc) -> Write {
    let key = doc_key(scope, &doc.id);
    let mut item = Item::new();
    item.insert(PK.into(), key.pk.into());
    item.insert(SK.into(), key.sk.into());
    item.insert("m".into(), doc.mailbox.clone().into());
    item.insert("f".into(), doc.flags.into());
    item.insert("s".into(), doc.state.0.into());
    item.insert("w".into(), doc.packed_words().into());
    Write::Put {
        item,
        cond: Some(Cond::NotExists),
    }
}

fn token() -> String {
    hex::encode(rand::random::<[u8; 8]>())
}

/// A message moved to a folder: written in the move's transaction.
pub fn folder_write(scope: &str, id: &str, folder: Folder) -> Write {
    Write::Update {
        key: override_key(scope, id),
        update: Update::new().set("f", folder.code()).set("t", token()),
        cond: None,
    }
}

/// A message's unread flag set: written in the change's transaction.
pub fn unread_write(scope: &str, id: &str, unread: bool) -> Write {
    Write::Update {
        key: override_key(scope, id),
        update: Update::new().set("u", unread).set("t", token()),
        cond: None,
    }
}

/// A message moved to a folder with its unread flag set at once (a spam
/// report): written in the move's transaction.
pub fn state_write(scope: &str, id: &str, folder: Folder, unread: bool) -> Write {
    Write::Update {
        key: override_key(scope, id),
        update: Update::new().set("f", folder.code()).set("u", unread).set("t", token()),
        cond: None,
    }
}

/// A message deleted for good: written in the deletion's transaction, so
/// no answer (nor its `total`) counts it from then on.
pub fn gone_write(scope: &str, id: &str) -> Write {
    Write::Update {
        key: override_key(scope, id),
        update: Update::new().set("g", true).set("t", token()),
        cond: None,
    }
}

/// Marks every message of `mailbox` up to `up_to` purged (never lowering a
/// mark already higher).
pub async fn purge(store: &dyn Store, scope: &str, mailbox: &str, up_to: &str) -> Result<(), ApiError> {
    let cond = Cond::Or(vec![
        Cond::missing("upTo"),
        Cond::TextAtMost("upTo".into(), up_to.to_string()),
    ]);
    let update = Update::new().set("upTo", up_to);
    match store.update(&tombstone_key(scope, mailbox), update, Some(cond)).await {
        Ok(_) | Err(crate::store::StoreError::ConditionFailed) => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// Records how far a scope's backfill has come.
pub async fn save_backfill(store: &dyn Store, scope: &str, backfill: &Backfill) -> Result<(), ApiError> {
    store
        .put(crate::store::item(&backfill_key(scope), backfill), None)
        .await?;
    Ok(())
}

/// Asks the poller to compact a scope's index, not before `at` (epoch ms);
/// a request already there for sooner stands.
pub async fn flag_due(store: &dyn Store, scope: &str, at: i64) -> Result<(), ApiError> {
    let sooner = Cond::Or(vec![Cond::missing("at"), Cond::Ge("at".into(), at.saturating_add(1))]);
    match store
        .update(&due_key(scope), Update::new().set("at", at), Some(sooner))
        .await
    {
        Ok(_) | Err(crate::store::StoreError::ConditionFailed) => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// Scopes whose index is due, at most `n`: (scope, at).
pub async fn due(store: &dyn Store, n: usize) -> Result<Vec<(String, i64)>, ApiError> {
    let page = store.query(&Query::partition(DUE).limit(n)).await?;
    Ok(page
        .items
        .iter()
        .map(|i| {
            (
                i.get(SK).and_then(Value::as_str).unwrap_or_default().to_string(),
                i.get("at").and_then(Value::as_i64).unwrap_or(0),
            )
        })
        .collect())
}

/// Clears a due request (on condition it is the one acted on).
pub async fn clear_due(store: &dyn Store, scope: &str, at: i64) -> Result<(), ApiError> {
    match store.delete(&due_key(scope), Some(Cond::eq("at", at))).await {
        Ok(_) | Err(crate::store::StoreError::ConditionFailed) => Ok(()),
        Err(e) => Err(e.into()),
    }
}
