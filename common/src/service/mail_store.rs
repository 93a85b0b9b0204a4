//! Stored mail: the rows, threads and indexes the inbox reads, and every write
//! that changes them. `docs/data-model.md` draws the items; in short, per
//! reading scope (an account, or one service-domain mailbox):
//!
//! - `MAIL#S#in|out/<id>`: each message, whole, per direction (the flat list,
//!   a read by id, search);
//! - `FOLDER#S#<folder>/<id>`: a copy of each inbound row in its folder;
//! - `THREAD#S#<thread>`: the summary (`#`) and a copy of each row, oldest
//!   first;
//! - `THREADS#S#<folder>/<last ms>-<thread>`: a copy of each summary;
//! - `MSGID#S/<Message-ID>\n<mailbox>\n<dir>`: a copy of each row by
//!   Message-ID, whose conditional put makes filing idempotent.
//!
//! Every copy of a row is the same record, so one read answers each question.
//! A row's unread flag and folder change on all its copies in one transaction;
//! the summary's `unreadCount` moves by an atomic add in that same
//! transaction, conditioned on each row's old flag, so it stays exact under
//! concurrent requests. A change that rewrites the summary (filing, a folder
//! move) is conditioned on the summary's `version`, which every change bumps.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::clock::iso;
use crate::context::Context;
use crate::error::{self, ApiError};
use crate::keys;
use crate::store::{Cond, Key, Query, RawItem, StoreError, StoreExt, Update, Write, item, record};

/// The most of a body kept on the row (and searched); the whole body is then a
/// blob. Keeps 200 rows of a search near DynamoDB's 1 MB page.
pub const TEXT_ON_ROW: usize = 4 * 1024;
pub const PREVIEW_CHARS: usize = 200;
/// Recipients kept on a row.
const MAX_TO: usize = 50;
/// Participants kept on a thread summary.
const MAX_PARTICIPANTS: usize = 20;
/// A folder move loads at most this many rows of each direction (spec 8).
pub const MOVE_LIMIT: usize = 100;
/// Retries of a write that lost a race on a thread summary.
const RETRIES: usize = 40;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Folder {
    #[default]
    Inbox,
    Archive,
    Trash,
}

impl Folder {
    pub const ALL: [Folder; 3] = [Folder::Inbox, Folder::Archive, Folder::Trash];

    pub fn as_str(self) -> &'static str {
        match self {
            Folder::Inbox => "inbox",
            Folder::Archive => "archive",
            Folder::Trash => "trash",
        }
    }

    pub fn parse(s: &str) -> Option<Folder> {
        Folder::ALL.into_iter().find(|f| f.as_str() == s)
    }
}

impl crate::values::Value for Folder {
    fn parse(text: &str) -> Option<Folder> {
        Folder::parse(text)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    Inbound,
    Outbound,
}

impl crate::values::Value for Direction {
    fn parse(text: &str) -> Option<Direction> {
        match text.trim() {
            "inbound" => Some(Direction::Inbound),
            "outbound" => Some(Direction::Outbound),
            _ => None,
        }
    }
}

/// Attachment metadata on a row; the bytes are the blob `<blobPrefix>/att-<index>`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AttachmentInfo {
    pub index: usize,
    pub filename: String,
    pub content_type: String,
    pub size: usize,
    /// Where GET /attachment serves it.
    pub download_path: String,
}

/// One stored message, as each of its copies holds it.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Row {
    pub id: String,
    pub message_id: String,
    pub mailbox: String,
    #[serde(rename = "box")]
    pub direction: Direction,
    pub from: String,
    pub to: Vec<String>,
    pub subject: String,
    pub preview: String,
    pub date: Option<String>,
    pub ingested_at: String,
    pub unread: bool,
    #[serde(default)]
    pub folder: Option<Folder>,
    pub source: String,
    pub thread_id: String,
    pub attachments: Vec<AttachmentInfo>,
    /// `mail/<mailbox>/<32 hex of its direction and Message-ID>`: its blobs.
    pub blob_prefix: String,
    /// The body, or its first `TEXT_ON_ROW` bytes when `text_in_blob`.
    pub text: String,
    #[serde(default)]
    pub text_in_blob: bool,
    /// The HTML body is the blob `<blobPrefix>/body.html`.
    #[serde(default)]
    pub has_html: bool,
    /// The SHA-256 of the message as received (empty for a send): the same
    /// digest again is the same message.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub digest: String,
    /// Another message was filed earlier under this Message-ID: this one is
    /// kept too, and marked.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub message_id_conflict: bool,
}

impl Row {
    pub fn outbound(&self) -> bool {
        self.direction == Direction::Outbound
    }

    pub fn folder(&self) -> Folder {
        self.folder.unwrap_or(Folder::Inbox)
    }

    /// Every key holding a copy of this row.
    fn copies(&self, scope: &str) -> Vec<Key> {
        let by_message_id = if self.message_id_conflict {
            keys::conflicting_message_id(scope, &self.message_id, &self.mailbox, &self.digest)
        } else {
            keys::message_id(scope, &self.message_id, &self.mailbox, self.outbound())
        };
        let mut keys = vec![
            Key::new(keys::mail_partition(scope, self.outbound()), &self.id),
            by_message_id,
            Key::new(keys::thread_partition(scope, &self.thread_id), &self.id),
        ];
        if !self.outbound() {
            keys.push(self.folder_copy(scope, self.folder()));
        }
        keys
    }

    fn folder_copy(&self, scope: &str, folder: Folder) -> Key {
        Key::new(keys::folder_partition(scope, folder.as_str()), &self.id)
    }

    /// Whether q (already lowercase) is in its subject, sender or body.
    pub fn matches(&self, q: &str) -> bool {
        [&self.subject, &self.from, &self.text]
            .iter()
            .any(|field| field.to_lowercase().contains(q))
    }
}

/// A thread's summary (sort key `#` of its partition, and copied into its
/// folder's thread list).
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Thread {
    /// 64 lowercase hex characters.
    pub thread_id: String,
    pub mailbox: String,
    /// The subject of the message that started it.
    pub subject: String,
    /// Senders and recipients seen on it, first seen first.
    pub participants: Vec<String>,
    pub last_activity: String,
    pub message_count: i64,
    pub inbound_count: i64,
    pub outbound_count: i64,
    pub unread_count: i64,
    pub folder: Folder,
    #[serde(skip_serializing)]
    #[schemars(skip)]
    #[serde(default)]
    pub version: i64,
    #[serde(skip_serializing)]
    #[schemars(skip)]
    #[serde(default)]
    pub last_ms: i64,
}

/// The stored form of a summary: the public fields plus its version and the
/// sort key of its list copy, which the public shape leaves out.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct StoredThread<'a> {
    #[serde(flatten)]
    thread: &'a Thread,
    version: i64,
    last_ms: i64,
}

impl Thread {
    fn stored_item(&self, key: &Key) -> crate::store::Item {
        item(
            key,
            &StoredThread {
                thread: self,
                version: self.version,
                last_ms: self.last_ms,
            },
        )
    }

    fn list_copy(&self, scope: &str) -> Key {
        Key::new(
            keys::threads_partition(scope, self.folder.as_str()),
            format!("{:013}-{}", self.last_ms.max(0), self.thread_id),
        )
    }
}

/// A thread's id: 64 lowercase hex characters from the mailbox and the
/// Message-ID that started the conversation.
pub fn thread_id(mailbox: &str, root_message_id: &str) -> String {
    hex::encode(Sha256::digest(format!("{mailbox}\n{root_message_id}")))
}

/// The Message-ID a conversation started with, as a message names it: the
/// first of its References, else what it replies to, else itself. Any message
/// of the conversation names the same root whatever order they arrive in.
pub fn root_of<'a>(message_id: &'a str, in_reply_to: &'a [String], references: &'a [String]) -> &'a str {
    references
        .first()
        .or(in_reply_to.first())
        .map(String::as_str)
        .unwrap_or(message_id)
}

/// A new row id: the 13-digit filing time in milliseconds, then 16 random hex
/// characters inbound, or `o` and 16 outbound, so ids of both directions sort
/// by time and tell their direction.
pub fn new_id(ms: i64, direction: Direction) -> String {
    let mark = if direction == Direction::Outbound { "o" } else { "" };
    format!("{:013}{mark}{}", ms.max(0), hex::encode(rand::random::<[u8; 8]>()))
}

pub fn direction_of(id: &str) -> Direction {
    if id.as_bytes().get(13) == Some(&b'o') {
        Direction::Outbound
    } else {
        Direction::Inbound
    }
}

pub fn valid_id(id: &str) -> bool {
    (1..=128).contains(&id.len()) && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

pub fn valid_thread_id(id: &str) -> bool {
    id.len() == 64 && id.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

pub fn preview(text: &str) -> String {
    let flat: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    flat.chars().take(PREVIEW_CHARS).collect()
}

fn head(text: &str, bytes: usize) -> &str {
    if text.len() <= bytes {
        return text;
    }
    let mut end = bytes;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

pub fn blob_prefix(address: &str) -> String {
    format!("mail/{address}/")
}

fn blob_err(e: crate::blob::BlobError) -> ApiError {
    ApiError::internal(e.to_string())
}

// ---------------------------------------------------------------- filing

/// A message to file: what the poller parsed, or what a threaded send sent.
pub struct NewMessage<'a> {
    pub scope: &'a str,
    pub mailbox: &'a str,
    pub direction: Direction,
    pub message_id: &'a str,
    pub from: &'a str,
    pub to: &'a [String],
    pub subject: &'a str,
    pub date: Option<String>,
    pub in_reply_to: &'a [String],
    pub references: &'a [String],
    pub text: &'a str,
    pub html: Option<&'a str>,
    /// (filename, content type, bytes)
    pub attachments: Vec<(&'a str, &'a str, &'a [u8])>,
    pub source: &'a str,
    /// Only file it when it joins a thread this scope already holds.
    pub only_on_existing_thread: bool,
    /// The SHA-256 (hex) of a received message's bytes; none for a send,
    /// whose Message-ID is new.
    pub digest: Option<&'a str>,
}

/// What filing finds already there for a message's Message-ID.
enum Held {
    Nothing,
    /// The same message (same digest), or one filed before digests were kept.
    Same,
    /// A different message holds the Message-ID; this one is filed beside it.
    Other,
}

async fn held(ctx: &Context, m: &NewMessage<'_>) -> Result<Held, ApiError> {
    let outbound = m.direction == Direction::Outbound;
    let first = ctx
        .store
        .read::<Row>(&keys::message_id(m.scope, m.message_id, m.mailbox, outbound))
        .await?;
    let Some(first) = first else {
        return Ok(Held::Nothing);
    };
    let digest = m.digest.unwrap_or_default();
    if first.digest.is_empty() || first.digest == digest {
        return Ok(Held::Same);
    }
    let beside = keys::conflicting_message_id(m.scope, m.message_id, m.mailbox, digest);
    Ok(match ctx.store.get(&beside).await? {
        Some(_) => Held::Same,
        None => Held::Other,
    })
}

/// The thread a message belongs to: the root's, or the thread of a message it
/// names that this mailbox holds, or a new one.
async fn thread_of(ctx: &Context, m: &NewMessage<'_>) -> Result<(String, Option<Thread>), ApiError> {
    let root = thread_id(m.mailbox, root_of(m.message_id, m.in_reply_to, m.references));
    if let Some(thread) = ctx.store.read::<Thread>(&keys::thread_summary(m.scope, &root)).await? {
        return Ok((root, Some(thread)));
    }
    // A conversation whose first message named no References: look up, newest
    // first, a few of the messages it names.
    let named = m.in_reply_to.iter().chain(m.references.iter().rev()).take(5);
    for id in named {
        let query = Query::partition(keys::message_ids_of(m.scope))
            .prefix(keys::message_id_prefix(id, Some(m.mailbox)))
            .limit(1);
        if let Some(found) = ctx.store.query(&query).await?.items.into_iter().next() {
            let row: Row = record(found)?;
            let thread = ctx
                .store
                .read::<Thread>(&keys::thread_summary(m.scope, &row.thread_id))
                .await?;
            return Ok((row.thread_id, thread));
        }
    }
    Ok((root, None))
}

/// Files a message into its scope: blobs first, then every item in one
/// transaction. Idempotent on (mailbox, Message-ID, direction): `Ok(None)`
/// when it is already there, and also when `only_on_existing_thread` finds no
/// thread. The blobs' keys come from the Message-ID, not the attempt: an
/// attempt cut short between its blobs and its transaction leaves nothing the
/// next attempt does not write again, and a duplicate adds no blob.
pub async fn file(ctx: &Context, m: &NewMessage<'_>) -> Result<Option<Row>, ApiError> {
    let conflict = match held(ctx, m).await? {
        Held::Same => return Ok(None),
        Held::Nothing => false,
        Held::Other => true,
    };
    let (thread_id, existing) = thread_of(ctx, m).await?;
    if m.only_on_existing_thread && existing.is_none() {
        return Ok(None);
    }
    let now = ctx.clock.now();
    let ms = now.timestamp_millis();
    let id = new_id(ms, m.direction);
    let dir = if m.direction == Direction::Outbound {
        "out"
    } else {
        "in"
    };
    // Two different messages under one Message-ID never share blobs.
    let digest = m.digest.unwrap_or_default();
    let key = hex::encode(Sha256::digest(format!("{dir}\n{}\n{digest}", m.message_id)));
    let prefix = format!("{}{}", blob_prefix(m.mailbox), &key[..32]);
    store_and_index(ctx, m, &thread_id, existing, &id, &prefix, ms, conflict).await
}

#[allow(clippy::too_many_arguments)]
async fn store_and_index(
    ctx: &Context,
    m: &NewMessage<'_>,
    thread_id: &str,
    mut existing: Option<Thread>,
    id: &str,
    prefix: &str,
    ms: i64,
    conflict: bool,
) -> Result<Option<Row>, ApiError> {
    let outbound = m.direction == Direction::Outbound;
    let mut attachments = Vec::new();
    for (index, (filename, content_type, bytes)) in m.attachments.iter().enumerate() {
        let key = format!("{prefix}/att-{index}");
        ctx.blobs
            .put(&key, bytes.to_vec(), content_type)
            .await
            .map_err(blob_err)?;
        let mut path = format!("/attachment?id={id}&index={index}");
        if outbound {
            path.push_str("&box=outbound");
        }
        if let Some(address) = m.scope.strip_prefix("mailbox:") {
            path.push_str(&format!("&mailbox={address}"));
        }
        attachments.push(AttachmentInfo {
            index,
            filename: filename.to_string(),
            content_type: content_type.to_string(),
            size: bytes.len(),
            download_path: path,
        });
    }
    let text_in_blob = m.text.len() > TEXT_ON_ROW;
    if text_in_blob {
        let key = format!("{prefix}/body.txt");
        ctx.blobs
            .put(&key, m.text.as_bytes().to_vec(), "text/plain; charset=utf-8")
            .await
            .map_err(blob_err)?;
    }
    if let Some(html) = m.html {
        let key = format!("{prefix}/body.html");
        ctx.blobs
            .put(&key, html.as_bytes().to_vec(), "text/html; charset=utf-8")
            .await
            .map_err(blob_err)?;
    }
    let mut row = Row {
        id: id.to_string(),
        message_id: m.message_id.to_string(),
        mailbox: m.mailbox.to_string(),
        direction: m.direction,
        from: m.from.to_string(),
        to: m.to.iter().take(MAX_TO).cloned().collect(),
        subject: m.subject.to_string(),
        preview: preview(m.text),
        date: m.date.clone(),
        ingested_at: iso(ctx.clock.now()),
        unread: !outbound,
        folder: (!outbound).then_some(Folder::Inbox),
        source: m.source.to_string(),
        thread_id: thread_id.to_string(),
        attachments,
        blob_prefix: prefix.to_string(),
        text: head(m.text, TEXT_ON_ROW).to_string(),
        text_in_blob,
        has_html: m.html.is_some(),
        digest: m.digest.unwrap_or_default().to_string(),
        message_id_conflict: conflict,
    };
    for _ in 0..RETRIES {
        let writes = filing_writes(m.scope, &row, existing.as_ref(), ms);
        match ctx.store.transact(writes).await {
            Ok(()) => return Ok(Some(row)),
            Err(StoreError::ConditionFailed) => {
                // Another filing of this Message-ID won the race: the same
                // message is a duplicate; a different one goes beside it.
                match held(ctx, m).await? {
                    Held::Same => return Ok(None),
                    Held::Other if !row.message_id_conflict => {
                        row.message_id_conflict = true;
                        continue;
                    }
                    _ => {}
                }
                // The thread changed meanwhile: file against its new summary.
                existing = ctx
                    .store
                    .read::<Thread>(&keys::thread_summary(m.scope, thread_id))
                    .await?;
                backoff().await;
            }
            Err(e) => return Err(e.into()),
        }
    }
    Err(ApiError::internal(
        "filing lost the race on its thread summary too many times",
    ))
}

/// The row's copies and its thread's summary and list copy: at most 7 writes.
fn filing_writes(scope: &str, row: &Row, existing: Option<&Thread>, ms: i64) -> Vec<Write> {
    let mut writes: Vec<Write> = row
        .copies(scope)
        .into_iter()
        .map(|key| Write::Put {
            item: item(&key, row),
            cond: Some(Cond::NotExists),
        })
        .collect();
    let mut participants = existing.map(|t| t.participants.clone()).unwrap_or_default();
    for who in std::iter::once(&row.from).chain(row.to.iter()) {
        if participants.len() < MAX_PARTICIPANTS && !who.is_empty() && !participants.contains(who) {
            participants.push(who.clone());
        }
    }
    let (inbound, outbound) = if row.outbound() { (0, 1) } else { (1, 0) };
    let thread = match existing {
        Some(t) => Thread {
            participants,
            last_activity: row.ingested_at.clone(),
            message_count: t.message_count + 1,
            inbound_count: t.inbound_count + inbound,
            outbound_count: t.outbound_count + outbound,
            unread_count: t.unread_count + i64::from(row.unread),
            // New inbound mail brings an archived or trashed thread back.
            folder: if row.outbound() { t.folder } else { Folder::Inbox },
            version: t.version + 1,
            last_ms: ms.max(t.last_ms),
            ..t.clone()
        },
        None => Thread {
            thread_id: row.thread_id.clone(),
            mailbox: row.mailbox.clone(),
            subject: row.subject.clone(),
            participants,
            last_activity: row.ingested_at.clone(),
            message_count: 1,
            inbound_count: inbound,
            outbound_count: outbound,
            unread_count: i64::from(row.unread),
            folder: Folder::Inbox,
            version: 1,
            last_ms: ms,
        },
    };
    let summary = keys::thread_summary(scope, &row.thread_id);
    writes.push(Write::Put {
        item: thread.stored_item(&summary),
        cond: Some(match existing {
            Some(t) => Cond::eq("version", t.version),
            None => Cond::NotExists,
        }),
    });
    let list = thread.list_copy(scope);
    if let Some(old) = existing.map(|t| t.list_copy(scope)).filter(|old| *old != list) {
        writes.push(Write::Delete { key: old, cond: None });
    }
    writes.push(Write::Put {
        item: thread.stored_item(&list),
        cond: None,
    });
    writes
}

async fn backoff() {
    let ms = 2 + rand::random::<u64>() % 20;
    tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
}

// ---------------------------------------------------------------- reading

/// A row by id, from its direction's partition.
pub async fn by_id(ctx: &Context, scope: &str, id: &str) -> Result<Option<Row>, ApiError> {
    let outbound = direction_of(id) == Direction::Outbound;
    Ok(ctx
        .store
        .read(&Key::new(keys::mail_partition(scope, outbound), id))
        .await?)
}

/// A row by Message-ID, of one direction, or the inbound copy before the
/// outbound one.
pub async fn by_message_id(
    ctx: &Context,
    scope: &str,
    message_id: &str,
    direction: Option<Direction>,
) -> Result<Option<Row>, ApiError> {
    let query = Query::partition(keys::message_ids_of(scope))
        .prefix(keys::message_id_prefix(message_id, None))
        .limit(10);
    let rows: Vec<Row> = ctx
        .store
        .query(&query)
        .await?
        .items
        .into_iter()
        .map(record)
        .collect::<Result<_, _>>()?;
    let want = direction.unwrap_or(Direction::Inbound);
    let preferred = rows.iter().position(|r| r.direction == want);
    Ok(match (preferred, direction) {
        (Some(i), _) => rows.into_iter().nth(i),
        (None, None) => rows.into_iter().next(),
        (None, Some(_)) => None,
    })
}

pub async fn thread(ctx: &Context, scope: &str, thread_id: &str) -> Result<Option<Thread>, ApiError> {
    Ok(ctx.store.read(&keys::thread_summary(scope, thread_id)).await?)
}

/// One page of a partition whose sort keys are ids or `<ms>-<thread>`, newest
/// first (or oldest first), strictly past the cursor: the sort key of the last
/// item of the previous page. Follows the store's pages until the page is full
/// or the partition ends, so a page is never short while more exists.
pub async fn page<T: serde::de::DeserializeOwned + Send>(
    ctx: &Context,
    pk: String,
    newest_first: bool,
    cursor: Option<&str>,
    limit: usize,
) -> Result<(Vec<T>, Option<String>), ApiError> {
    let (items, next) = page_raw(ctx, pk, newest_first, cursor, limit).await?;
    let records = items.iter().map(|i| i.record()).collect::<Result<Vec<T>, _>>()?;
    Ok((records, next))
}

/// [`page`], each item left as its stored text.
pub async fn page_raw(
    ctx: &Context,
    pk: String,
    newest_first: bool,
    cursor: Option<&str>,
    limit: usize,
) -> Result<(Vec<RawItem>, Option<String>), ApiError> {
    // Message ids and list keys start with a digit; `#` (a thread summary)
    // sorts before them and `~` after.
    let (low, high) = match (cursor, newest_first) {
        (Some(c), true) => ("0".to_string(), c.to_string()),
        (Some(c), false) => (c.to_string(), "~".to_string()),
        (None, _) => ("0".to_string(), "~".to_string()),
    };
    let mut query = Query::partition(pk).between(low, high).limit(limit + 1);
    if newest_first {
        query = query.backward();
    }
    let mut items = Vec::new();
    loop {
        let page = ctx.store.query_raw(&query).await?;
        items.extend(page.items.into_iter().filter(|i| Some(i.sk.as_str()) != cursor));
        match page.next {
            Some(next) if items.len() <= limit => query = query.after(Some(next)),
            _ => break,
        }
    }
    let more = items.len() > limit;
    items.truncate(limit);
    let next = if more { items.last().map(|i| i.sk.clone()) } else { None };
    Ok((items, next))
}

/// The newest `n` rows of a direction (search reads 200 of each).
pub async fn newest(ctx: &Context, scope: &str, outbound: bool, n: usize) -> Result<Vec<Row>, ApiError> {
    Ok(page(ctx, keys::mail_partition(scope, outbound), true, None, n).await?.0)
}

/// The body of a row: the text (whole) and the HTML when it had some.
pub async fn body(ctx: &Context, row: &Row) -> Result<(String, Option<String>), ApiError> {
    let blob = |name: &'static str| {
        let key = format!("{}/{name}", row.blob_prefix);
        async move {
            let bytes = ctx.blobs.get(&key).await.map_err(blob_err)?;
            Ok::<_, ApiError>(String::from_utf8_lossy(&bytes.unwrap_or_default()).into_owned())
        }
    };
    let text = if row.text_in_blob {
        blob("body.txt").await?
    } else {
        row.text.clone()
    };
    let html = if row.has_html {
        Some(blob("body.html").await?)
    } else {
        None
    };
    Ok((text, html))
}

// ---------------------------------------------------------------- changes

/// Rows that change in one transaction, with their thread's two summary
/// writes: 4 writes per inbound row and 2 more stay under 100.
const FLIPS_PER_TRANSACTION: usize = 24;

/// Sets the unread flag of these rows of one thread (outbound rows stay read).
/// Each row changes at most once however many requests race: its copies and
/// the summary's count move together, conditioned on the row's old flag.
/// Returns the rows as they now are.
pub async fn set_unread(ctx: &Context, scope: &str, rows: Vec<Row>, unread: bool) -> Result<Vec<Row>, ApiError> {
    let mut done = Vec::with_capacity(rows.len());
    let (mut todo, untouched): (Vec<Row>, Vec<Row>) =
        rows.into_iter().partition(|r| !r.outbound() && r.unread != unread);
    done.extend(untouched);
    let mut attempts = 0;
    while !todo.is_empty() {
        let chunk: Vec<Row> = todo.drain(..todo.len().min(FLIPS_PER_TRANSACTION)).collect();
        let thread_id = chunk[0].thread_id.clone();
        let Some(summary) = thread(ctx, scope, &thread_id).await? else {
            return Err(error::NOT_FOUND.into());
        };
        let delta = if unread { 1 } else { -1 } * chunk.len() as i64;
        let mut writes = Vec::new();
        for row in &chunk {
            for (i, key) in row.copies(scope).into_iter().enumerate() {
                // The main row carries the condition; its copies follow it.
                let cond = if i == 0 {
                    Cond::eq("unread", !unread)
                } else {
                    Cond::Exists
                };
                writes.push(Write::Update {
                    key,
                    update: Update::new().set("unread", unread),
                    cond: Some(cond),
                });
            }
        }
        let counts = Update::new().add("unreadCount", delta).add("version", 1);
        writes.push(Write::Update {
            key: keys::thread_summary(scope, &thread_id),
            update: counts.clone(),
            cond: Some(Cond::Exists),
        });
        writes.push(Write::Update {
            key: summary.list_copy(scope),
            update: counts,
            cond: Some(Cond::Exists),
        });
        match ctx.store.transact(writes).await {
            Ok(()) => done.extend(chunk.into_iter().map(|r| Row { unread, ..r })),
            Err(StoreError::ConditionFailed) => {
                // Another request flipped some of them, or the thread moved:
                // read them again and go on with those still to change.
                attempts += 1;
                if attempts > RETRIES {
                    return Err(ApiError::internal("marking lost the race too many times"));
                }
                for row in chunk {
                    match by_id(ctx, scope, &row.id).await? {
                        Some(now) if now.unread != unread => todo.push(now),
                        Some(now) => done.push(now),
                        None => {}
                    }
                }
                backoff().await;
            }
            Err(e) => return Err(e.into()),
        }
    }
    Ok(done)
}

/// The rows of a thread a folder move loads: the newest 100 of each direction.
pub async fn loaded_rows(ctx: &Context, scope: &str, thread_id: &str) -> Result<Vec<Row>, ApiError> {
    let (rows, _) = page::<Row>(
        ctx,
        keys::thread_partition(scope, thread_id),
        true,
        None,
        2 * MOVE_LIMIT,
    )
    .await?;
    let (mut inbound, mut outbound) = (0, 0);
    let mut loaded: Vec<Row> = rows
        .into_iter()
        .filter(|r| {
            let n = if r.outbound() { &mut outbound } else { &mut inbound };
            *n += 1;
            *n <= MOVE_LIMIT
        })
        .collect();
    loaded.reverse();
    Ok(loaded)
}

/// Moves a thread and its loaded rows to a folder. The summary moves first
/// (conditioned on its version); the rows follow in transactions of at most
/// 100 writes, each row with all its copies. A move cut short by a crash is
/// finished by the same request again: only rows not yet there are written.
pub async fn move_thread(ctx: &Context, scope: &str, thread_id: &str, folder: Folder) -> Result<Thread, ApiError> {
    let mut moved = None;
    for _ in 0..RETRIES {
        let Some(t) = thread(ctx, scope, thread_id).await? else {
            return Err(error::NOT_FOUND.into());
        };
        if t.folder == folder {
            moved = Some(t);
            break;
        }
        let new = Thread {
            folder,
            version: t.version + 1,
            ..t.clone()
        };
        let summary = keys::thread_summary(scope, thread_id);
        let writes = vec![
            Write::Put {
                item: new.stored_item(&summary),
                cond: Some(Cond::eq("version", t.version)),
            },
            Write::Delete {
                key: t.list_copy(scope),
                cond: None,
            },
            Write::Put {
                item: new.stored_item(&new.list_copy(scope)),
                cond: None,
            },
        ];
        match ctx.store.transact(writes).await {
            Ok(()) => {
                moved = Some(new);
                break;
            }
            Err(StoreError::ConditionFailed) => backoff().await,
            Err(e) => return Err(e.into()),
        }
    }
    let moved = moved.ok_or_else(|| ApiError::internal("a folder move lost the race too many times"))?;
    for _ in 0..RETRIES {
        if move_rows(ctx, scope, thread_id, folder).await? {
            return Ok(moved);
        }
        backoff().await;
    }
    Err(ApiError::internal("a folder move lost the race too many times"))
}

/// `Ok(false)` when a row changed meanwhile (read, or moved): load them again.
async fn move_rows(ctx: &Context, scope: &str, thread_id: &str, folder: Folder) -> Result<bool, ApiError> {
    let rows = loaded_rows(ctx, scope, thread_id).await?;
    let mut chunks: Vec<Vec<Write>> = Vec::new();
    for row in rows.iter().filter(|r| r.folder() != folder) {
        let row_writes = move_writes(scope, row, folder);
        match chunks.last_mut() {
            Some(chunk) if chunk.len() + row_writes.len() <= 100 => chunk.extend(row_writes),
            _ => chunks.push(row_writes),
        }
    }
    for writes in chunks {
        match ctx.store.transact(writes).await {
            Ok(()) => {}
            Err(StoreError::ConditionFailed) => return Ok(false),
            Err(e) => return Err(e.into()),
        }
    }
    Ok(true)
}

/// One row's move: its copies' folder set, and its folder copy moved.
fn move_writes(scope: &str, row: &Row, folder: Folder) -> Vec<Write> {
    let moved = Row {
        folder: Some(folder),
        ..row.clone()
    };
    let mut writes = Vec::new();
    for (i, key) in row.copies(scope).into_iter().enumerate() {
        // The folder copy is rewritten whole: the main row's flag guards it.
        let cond = if i == 0 {
            Cond::eq("unread", row.unread)
        } else {
            Cond::Exists
        };
        if !row.outbound() && key == row.folder_copy(scope, row.folder()) {
            writes.push(Write::Delete { key, cond: None });
            writes.push(Write::Put {
                item: item(&moved.folder_copy(scope, folder), &moved),
                cond: None,
            });
        } else {
            writes.push(Write::Update {
                key,
                update: Update::new().set("folder", folder.as_str()),
                cond: Some(cond),
            });
        }
    }
    writes
}

// ---------------------------------------------------------------- removal

/// Permanently deletes the stored mail of these mailboxes of a scope: every
/// copy of every row, their threads and list copies, and every blob under
/// `mail/<mailbox>/`.
pub async fn purge(ctx: &Context, scope: &str, addresses: &[String]) -> Result<usize, ApiError> {
    let owned = |row: &Row| addresses.contains(&row.mailbox);
    let mut deleted = 0;
    let mut threads = std::collections::BTreeSet::new();
    for outbound in [false, true] {
        let rows: Vec<Row> = ctx
            .store
            .all_records(Query::partition(keys::mail_partition(scope, outbound)))
            .await?;
        for row in rows.iter().filter(|r| owned(r)) {
            threads.insert(row.thread_id.clone());
            let mut keys = row.copies(scope);
            // A copy may sit in any folder if a move was cut short.
            if !row.outbound() {
                keys.extend(Folder::ALL.iter().map(|f| row.folder_copy(scope, *f)));
            }
            for key in &keys {
                ctx.store.delete(key, None).await?;
            }
            deleted += 1;
        }
    }
    for thread_id in threads {
        if let Some(t) = thread(ctx, scope, &thread_id).await? {
            ctx.store.delete(&t.list_copy(scope), None).await?;
        }
        deleted += ctx
            .store
            .delete_partition(&keys::thread_partition(scope, &thread_id))
            .await?;
    }
    for address in addresses {
        let blobs = ctx
            .blobs
            .list(&blob_prefix(address))
            .await
            .map_err(ApiError::internal)?;
        for key in blobs {
            ctx.blobs.delete(&key).await.map_err(ApiError::internal)?;
            deleted += 1;
        }
    }
    Ok(deleted)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_sort_by_time_and_tell_their_direction() {
        let a = new_id(1_700_000_000_000, Direction::Inbound);
        let b = new_id(1_700_000_000_001, Direction::Outbound);
        assert!(a < b);
        assert_eq!(direction_of(&a), Direction::Inbound);
        assert_eq!(direction_of(&b), Direction::Outbound);
        assert!(valid_id(&a) && valid_id(&b));
    }

    #[test]
    fn the_root_does_not_depend_on_arrival_order() {
        let refs = vec!["<a@x>".to_string()];
        let irt = vec!["<b@x>".to_string()];
        assert_eq!(root_of("<c@x>", &irt, &refs), "<a@x>");
        assert_eq!(root_of("<b@x>", &refs, &[]), "<a@x>");
        assert_eq!(root_of("<a@x>", &[], &[]), "<a@x>");
        let t = thread_id("me@example.com", "<a@x>");
        assert!(valid_thread_id(&t));
    }

    #[test]
    fn a_long_body_is_cut_on_a_character_boundary() {
        let text = "é".repeat(TEXT_ON_ROW);
        let cut = head(&text, TEXT_ON_ROW);
        assert!(cut.len() <= TEXT_ON_ROW);
        assert!(cut.chars().all(|c| c == 'é'));
    }
}
