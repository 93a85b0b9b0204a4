//! `GET /mtaMailboxChanges` and `POST /mtaMailboxChanges`: the store's
//! changes the mail host has yet to apply to IMAP, each with the state of
//! the messages it is about as they are now, and the acknowledgement of
//! what it applied.

use std::collections::{BTreeMap, HashMap};

use futures::StreamExt;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::context::Context;
use crate::error::{self, ApiError};
use crate::keys;
use crate::service::caller::Call;
use crate::service::mail_store::sync_marks::{self, Mark, MarkKind};
use crate::service::mail_store::{self, Direction, Folder, Quarantine, Row, RowRef};
use crate::values::{Bounded, Field, Origin};

/// The most marks one answer carries.
pub const MAX_CHANGES: i64 = 200;
/// The most rows of one thread an answer carries (a folder move loads 100 of
/// each direction).
const THREAD_ROWS: usize = 400;

/// A mark's sort key, as answered (`t#...`, `d#...`, `s#...`, `m#...`).
#[derive(Debug, Clone, JsonSchema)]
pub struct MarkKey(#[schemars(length(min = 3, max = 1000))] pub String);

impl crate::values::Value for MarkKey {
    fn parse(raw: &str) -> Option<Self> {
        let sound = (3..=1000).contains(&raw.len())
            && ["t#", "d#", "s#", "m#"].iter().any(|p| raw.starts_with(p))
            && !raw.chars().any(char::is_control);
        sound.then(|| MarkKey(raw.to_string()))
    }
}

crate::input! {
    /// GET /mtaMailboxChanges.
    pub struct ChangesQuery {
        /// The `next` of the previous answer.
        pub after: Option<MarkKey> = error::MAILBOX_SYNC_INVALID,
        /// 1 to 200, default 100.
        pub limit: Option<Bounded<1, MAX_CHANGES>> = error::MAILBOX_SYNC_INVALID,
    }
}

/// One message's state in the store.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MessageState {
    pub message_id: String,
    pub direction: Direction,
    /// Inbound rows: the folder it is in.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub folder: Option<Folder>,
    pub unread: bool,
    /// Deleted for good: every IMAP copy goes.
    pub gone: bool,
    /// In the spam folder (no folder of its own): IMAP's Junk.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub spam: bool,
}

impl MessageState {
    fn of(row: &Row) -> MessageState {
        MessageState {
            message_id: row.message_id.clone(),
            direction: row.direction,
            folder: (!row.outbound() && row.quarantine.is_none()).then(|| row.folder()),
            unread: row.unread,
            gone: false,
            spam: row.quarantine.as_ref().is_some_and(|q| q.reason == Quarantine::Spam),
        }
    }
}

/// One change to apply.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Change {
    /// What to acknowledge, with the stamp.
    pub mark: String,
    pub stamp: String,
    /// thread (its messages' state), message (one row's: spam or back), gone, or sent (save the bytes of
    /// `GET /mtaSentCopy?mark=` to Sent).
    pub kind: String,
    /// The mailbox (its IMAP login).
    pub mailbox: String,
    /// When the change was made (epoch ms).
    pub ms: i64,
    pub messages: Vec<MessageState>,
}

#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Changes {
    pub ok: bool,
    /// Oldest marks first.
    pub changes: Vec<Change>,
    /// Pass as `after` for the next page; absent on the last.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next: Option<String>,
}

pub async fn changes(call: &Call<'_>, q: ChangesQuery) -> Result<Changes, ApiError> {
    let ctx = call.ctx;
    let limit = q.limit.map_or(100, Bounded::get) as usize;
    let mut marks = sync_marks::marks(ctx, q.after.as_ref().map(|a| a.0.as_str()), limit + 1).await?;
    let more = marks.len() > limit;
    marks.truncate(limit);
    // Each thread mark's pointers read side by side (a backlog's page is
    // 100 threads), then the rows of them all (a row mark's by its key) in
    // batches of 100, not one batch a mark: DynamoDB Local answered a page
    // in 0.4 s that way.
    // (The futures made first: a stream mapping over borrowed marks is not
    // known to be Send.)
    let reads: Vec<_> = marks.iter().map(|(_, mark)| pointers_of(ctx, mark)).collect();
    let pointers: Vec<Vec<RowRef>> = futures::stream::iter(reads)
        .buffered(AT_ONCE)
        .collect::<Vec<_>>()
        .await
        .into_iter()
        .collect::<Result<_, _>>()?;
    let mut by_scope: BTreeMap<&str, Vec<RowRef>> = BTreeMap::new();
    for ((_, mark), named) in marks.iter().zip(&pointers) {
        if let Some(scope) = &mark.scope {
            by_scope.entry(scope).or_default().extend(named.iter().cloned());
        }
    }
    let mut rows: HashMap<String, Row> = HashMap::new();
    for (scope, named) in by_scope {
        rows.extend(
            mail_store::rows(ctx, scope, named)
                .await?
                .into_iter()
                .map(|r| (r.id.clone(), r)),
        );
    }
    let changes: Vec<Change> = marks
        .into_iter()
        .zip(pointers)
        .filter_map(|((sk, mark), named)| change_of(sk, mark, named, &rows))
        .collect();
    let next = more.then(|| changes.last().map(|c| c.mark.clone())).flatten();
    Ok(Changes {
        ok: true,
        changes,
        next,
    })
}

/// Marks read, or cleared, at once (the embedded store commits the
/// clears waiting together).
const AT_ONCE: usize = 64;

/// The rows a mark is about: a thread mark's, by its pointers (the first
/// [`THREAD_ROWS`] of the thread in its mailbox); a row mark's, by its key;
/// none for any other mark.
async fn pointers_of(ctx: &Context, mark: &Mark) -> Result<Vec<RowRef>, ApiError> {
    match (mark.kind, &mark.scope, &mark.thread_id, &mark.row_id) {
        (MarkKind::Thread, Some(scope), Some(thread), _) => {
            let pointers =
                mail_store::page::<RowRef>(ctx, keys::thread_partition(scope, thread), false, None, THREAD_ROWS)
                    .await?;
            Ok(pointers
                .items
                .into_iter()
                .filter(|p| p.mailbox == mark.mailbox)
                .collect())
        }
        (MarkKind::Message, Some(_), _, Some(id)) => Ok(vec![RowRef {
            id: id.clone(),
            mailbox: mark.mailbox.clone(),
            direction: mark.direction.unwrap_or(Direction::Inbound),
            thread_id: String::new(),
            digest: String::new(),
            owner_only: false,
        }]),
        _ => Ok(Vec::new()),
    }
}

/// One mark with the state of the messages it is about (from its rows'
/// pointers and the rows read for the page); `None` when there is nothing
/// to say (a row gone since: its gone mark says so).
fn change_of(sk: String, mark: Mark, pointers: Vec<RowRef>, rows: &HashMap<String, Row>) -> Option<Change> {
    let messages = match mark.kind {
        MarkKind::Thread | MarkKind::Message if mark.scope.is_none() => return None,
        MarkKind::Thread | MarkKind::Message => pointers
            .iter()
            .filter_map(|p| rows.get(&p.id))
            .filter(|r| r.mailbox == mark.mailbox)
            .map(MessageState::of)
            .collect(),
        MarkKind::Gone | MarkKind::Sent => vec![MessageState {
            message_id: mark.message_id.clone().unwrap_or_default(),
            direction: mark.direction.unwrap_or(Direction::Inbound),
            folder: None,
            unread: false,
            gone: mark.kind == MarkKind::Gone,
            spam: false,
        }],
    };
    Some(Change {
        kind: match mark.kind {
            MarkKind::Thread => "thread",
            MarkKind::Gone => "gone",
            MarkKind::Sent => "sent",
            MarkKind::Message => "message",
        }
        .into(),
        mark: sk,
        stamp: mark.stamp,
        mailbox: mark.mailbox,
        ms: mark.ms,
        messages,
    })
}

/// One applied mark.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Applied {
    #[schemars(length(min = 3, max = 1000))]
    pub mark: String,
    #[schemars(length(min = 1, max = 64))]
    pub stamp: String,
}

/// 1 to 200 applied marks.
#[derive(Debug, JsonSchema)]
pub struct AppliedList(#[schemars(length(min = 1, max = 200))] pub Vec<Applied>);

impl Field for AppliedList {
    type Problems = ();
    fn read(value: &Value, _: Origin, (): ()) -> Result<Option<Self>, ApiError> {
        let list: Vec<Applied> = serde_json::from_value(value.clone()).map_err(|_| error::MAILBOX_SYNC_INVALID)?;
        let sound = |a: &Applied| {
            <MarkKey as crate::values::Value>::parse(&a.mark).is_some() && (1..=64).contains(&a.stamp.len())
        };
        if list.is_empty() || list.len() > MAX_CHANGES as usize || !list.iter().all(sound) {
            return Err(error::MAILBOX_SYNC_INVALID.into());
        }
        Ok(Some(AppliedList(list)))
    }
}

crate::input! {
    /// POST /mtaMailboxChanges.
    pub struct AckInput {
        pub applied: AppliedList = (error::MAILBOX_SYNC_INVALID, ()),
    }
}

#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Acknowledged {
    pub ok: bool,
    /// Marks cleared.
    pub cleared: usize,
    /// Marks changed since they were read (or already gone): served again.
    pub kept: usize,
}

pub async fn acknowledge(call: &Call<'_>, input: AckInput) -> Result<Acknowledged, ApiError> {
    let ctx = call.ctx;
    // A mark named twice clears once: the second finds it gone.
    let mut named = std::collections::HashSet::new();
    let (once, twice): (Vec<Applied>, Vec<Applied>) =
        input.applied.0.into_iter().partition(|a| named.insert(a.mark.clone()));
    // Sent marks one at a time (their bytes go with them); the others a
    // transaction of 100 each, all cleared or, one restamped, one at a time.
    let (sent, others): (Vec<Applied>, Vec<Applied>) = once.into_iter().partition(|a| a.mark.starts_with("s#"));
    let mut groups: Vec<(bool, Vec<Applied>)> = others.chunks(CLEARS).map(|g| (false, g.to_vec())).collect();
    groups.extend(sent.into_iter().map(|a| (true, vec![a])));
    let cleared: Vec<Result<Vec<bool>, ApiError>> = futures::stream::iter(groups)
        .map(|(sent, group)| async move {
            if sent {
                return Ok(vec![clear_sent(ctx, &group[0]).await?]);
            }
            if sync_marks::clear_all(ctx, group.iter().map(|a| (a.mark.as_str(), a.stamp.as_str()))).await? {
                return Ok(vec![true; group.len()]);
            }
            let mut each = Vec::new();
            for applied in &group {
                each.push(sync_marks::clear(ctx, &applied.mark, &applied.stamp).await?);
            }
            Ok(each)
        })
        .buffer_unordered(AT_ONCE)
        .collect()
        .await;
    let mut all = Vec::new();
    for c in cleared {
        all.extend(c?);
    }
    let kept = all.iter().filter(|c| !**c).count() + twice.len();
    let cleared = all.len() - all.iter().filter(|c| !**c).count();
    Ok(Acknowledged {
        ok: true,
        cleared,
        kept,
    })
}

/// Marks cleared in one transaction.
const CLEARS: usize = 100;

/// A sent mark cleared, and its copy's bytes with it.
async fn clear_sent(ctx: &Context, applied: &Applied) -> Result<bool, ApiError> {
    let blob = sync_marks::mark(ctx, &applied.mark).await?.and_then(|m| m.blob);
    let cleared = sync_marks::clear(ctx, &applied.mark, &applied.stamp).await?;
    if cleared
        && let Some(blob) = blob
        && let Err(e) = ctx.blobs.delete(&blob).await
    {
        tracing::warn!(error = %e, blob, "a saved sent copy's bytes were not deleted");
    }
    Ok(cleared)
}
