//! The inbox (spec 2.4, 3.3, 4.2-4.4): inbound rows filed by the poller, read
//! with GET /inbox (tools list_inbox and get_message), marked with POST /inbox, their files with GET /attachment.
//!
//! Rows live in one partition per reading scope (`keys::inbox_partition`): a
//! customer account reads all its mailboxes' mail, the agent key and operators
//! one service-domain mailbox. A row's id starts with its 13-digit filing time
//! in milliseconds, so the flat list newest first is one backward query and a
//! read by id one GetItem.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::mail_store::thread_id;
use super::{Call, keys};
use crate::auth::Caller;
use crate::clock::iso;
use crate::context::Context;
use crate::error::{self, ApiError};
use crate::mail::inbound::Inbound;
use crate::store::{Cond, Query, StoreError, StoreExt, Update, Write, item};
use crate::validate::{self, Fields, Input};

pub const DEFAULT_LIMIT: i64 = 25;
pub const MAX_LIMIT: i64 = 50;
/// The most attachments a read can address (GET /attachment index 0-2).
pub const MAX_ATTACHMENT_INDEX: i64 = 2;
/// A body longer than this is kept in a blob rather than on the row.
pub const MAX_BODY_ON_ROW: usize = 100 * 1024;
pub const PREVIEW_CHARS: usize = 200;

// ------------------------------------------------------------------ rows

/// Attachment metadata on a row (its bytes are the blob `<prefix>/att-<index>`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AttachmentInfo {
    pub index: usize,
    pub filename: String,
    pub content_type: String,
    pub size: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Folder {
    Inbox,
    Archive,
    Trash,
}

/// One stored inbound message, as the row holds it.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Row {
    pub id: String,
    pub message_id: String,
    pub mailbox: String,
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
    /// Where its blobs live: `mail/<mailbox>/<id>`.
    pub blob_prefix: String,
    /// The body, when it fits on the row; otherwise in `<prefix>/body.txt`.
    #[serde(default)]
    pub text: Option<String>,
    #[serde(default)]
    pub text_in_blob: bool,
    #[serde(default)]
    pub html: Option<String>,
    #[serde(default)]
    pub html_in_blob: bool,
}

/// A list row (spec 2.4): no body, attachment metadata only.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    /// `^[A-Za-z0-9_-]{1,128}$`
    pub id: String,
    pub message_id: String,
    pub mailbox: String,
    pub from: String,
    pub to: Vec<String>,
    pub subject: String,
    pub preview: String,
    pub date: Option<String>,
    pub ingested_at: Option<String>,
    pub unread: bool,
    pub folder: Folder,
    pub source: String,
    pub thread_id: String,
    pub attachments: Vec<AttachmentInfo>,
}

impl From<&Row> for Summary {
    fn from(r: &Row) -> Summary {
        Summary {
            id: r.id.clone(),
            message_id: r.message_id.clone(),
            mailbox: r.mailbox.clone(),
            from: r.from.clone(),
            to: r.to.clone(),
            subject: r.subject.clone(),
            preview: r.preview.clone(),
            date: r.date.clone(),
            ingested_at: Some(r.ingested_at.clone()),
            unread: r.unread,
            folder: r.folder.unwrap_or(Folder::Inbox),
            source: r.source.clone(),
            thread_id: r.thread_id.clone(),
            attachments: r.attachments.clone(),
        }
    }
}

/// A new row id: the 13-digit filing time in milliseconds and 16 random hex
/// characters, so ids sort by time.
pub fn new_id(ms: i64) -> String {
    format!("{:013}{}", ms.max(0), hex::encode(rand::random::<[u8; 8]>()))
}

pub fn valid_id(id: &str) -> bool {
    (1..=128).contains(&id.len()) && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

pub fn preview(text: &str) -> String {
    let flat: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    flat.chars().take(PREVIEW_CHARS).collect()
}

// ---------------------------------------------------------------- filing

/// Files a parsed message into one mailbox of a reading scope. Idempotent on
/// (mailbox, Message-ID): `Ok(false)` when it is already there, and then no
/// row and no blob is written.
pub async fn file(ctx: &Context, scope: &str, mailbox: &str, message: &Inbound) -> Result<bool, ApiError> {
    let index_key = keys::message_id(mailbox, &message.message_id);
    if ctx.store.get(&index_key).await?.is_some() {
        return Ok(false);
    }
    let now = ctx.clock.now();
    let id = new_id(now.timestamp_millis());
    let blob_prefix = format!("{}{id}", super::mail_store::blob_prefix(mailbox));
    let blob_err = |e: crate::blob::BlobError| ApiError::internal(e.to_string());
    let mut written = Vec::new();
    let mut attachments = Vec::new();
    for (index, a) in message.attachments.iter().enumerate() {
        let key = format!("{blob_prefix}/att-{index}");
        ctx.blobs
            .put(&key, a.bytes.clone(), &a.content_type)
            .await
            .map_err(blob_err)?;
        written.push(key);
        attachments.push(AttachmentInfo {
            index,
            filename: a.filename.clone(),
            content_type: a.content_type.clone(),
            size: a.bytes.len(),
        });
    }
    let text_in_blob = message.text.len() > MAX_BODY_ON_ROW;
    if text_in_blob {
        let key = format!("{blob_prefix}/body.txt");
        ctx.blobs
            .put(&key, message.text.as_bytes().to_vec(), "text/plain; charset=utf-8")
            .await
            .map_err(blob_err)?;
        written.push(key);
    }
    let html_in_blob = message.html.as_ref().is_some_and(|h| h.len() > MAX_BODY_ON_ROW);
    if let Some(html) = message.html.as_ref().filter(|_| html_in_blob) {
        let key = format!("{blob_prefix}/body.html");
        ctx.blobs
            .put(&key, html.as_bytes().to_vec(), "text/html; charset=utf-8")
            .await
            .map_err(blob_err)?;
        written.push(key);
    }
    // A reply joins the thread of a message this mailbox already holds.
    let mut related = message.references.clone();
    related.extend(message.in_reply_to.iter().cloned());
    let thread = match super::mail_store::find_thread(ctx, mailbox, &related).await? {
        Some(thread) => thread,
        None => {
            let root = message.references.first().unwrap_or(&message.message_id);
            thread_id(mailbox, root)
        }
    };
    let row = Row {
        id: id.clone(),
        message_id: message.message_id.clone(),
        mailbox: mailbox.to_string(),
        from: message.from.clone(),
        to: message.to.clone(),
        subject: message.subject.clone(),
        preview: preview(&message.text),
        date: message.date.clone(),
        ingested_at: iso(now),
        unread: true,
        folder: None,
        source: "smtp".into(),
        thread_id: thread.clone(),
        attachments,
        blob_prefix,
        text: (!text_in_blob).then(|| message.text.clone()),
        text_in_blob,
        html: message.html.clone().filter(|_| !html_in_blob),
        html_in_blob,
    };
    let row_key = keys::inbox_message(scope, &id);
    let index = serde_json::json!({ "id": id, "scope": scope, "threadId": thread });
    let writes = vec![
        Write::Put {
            item: item(&index_key, &index),
            cond: Some(Cond::NotExists),
        },
        Write::Put {
            item: item(&row_key, &row),
            cond: None,
        },
    ];
    match ctx.store.transact(writes).await {
        Ok(()) => Ok(true),
        Err(StoreError::ConditionFailed) => {
            // Filed meanwhile by another run: this copy's blobs go.
            for key in written {
                let _ = ctx.blobs.delete(&key).await;
            }
            Ok(false)
        }
        Err(e) => Err(e.into()),
    }
}

/// Deletes a scope's inbound rows of these mailboxes (their blobs and
/// Message-ID index items go with `mail_store::purge_mailbox`).
pub async fn purge_rows(ctx: &Context, scope: &str, addresses: &[String]) -> Result<usize, ApiError> {
    let rows = ctx.store.all(Query::partition(keys::inbox_partition(scope))).await?;
    let mut deleted = 0;
    for row in rows {
        let owned = row
            .get("mailbox")
            .and_then(|m| m.as_str())
            .is_some_and(|m| addresses.iter().any(|a| a == m));
        if let (true, Some(key)) = (owned, crate::store::key_of(&row)) {
            ctx.store.delete(&key, None).await?;
            deleted += 1;
        }
    }
    Ok(deleted)
}

// -------------------------------------------------------------- reading

/// The scope a caller reads: a standard key its account; the agent key and
/// operators a service-domain mailbox (`inbox@` by default).
fn scope(call: &Call<'_>, mailbox: Option<&str>) -> Result<String, ApiError> {
    match call.caller {
        Caller::Standard(key) => match mailbox {
            Some(_) => Err(error::INBOX_MAILBOX_INVALID.into()),
            None => Ok(keys::inbox_account_scope(&key.uid)),
        },
        _ => {
            let domain = call.ctx.config.service_domain.to_ascii_lowercase();
            let address = match mailbox {
                Some(m) if validate::email_domain(m) == domain => m.to_string(),
                Some(_) => return Err(error::INBOX_MAILBOX_INVALID.into()),
                None => format!("inbox@{domain}"),
            };
            Ok(keys::inbox_mailbox_scope(&address))
        }
    }
}

fn parse_mailbox(fields: &Fields) -> Result<Option<String>, ApiError> {
    match fields.str("mailbox") {
        Ok(Some(m)) => validate::email(&m).map(Some).ok_or(error::INBOX_MAILBOX_INVALID.into()),
        Ok(None) => Ok(None),
        Err(_) => Err(error::INBOX_MAILBOX_INVALID.into()),
    }
}

fn parse_id(fields: &Fields) -> Result<Option<String>, ApiError> {
    match fields.str("id") {
        Ok(Some(id)) if valid_id(&id) => Ok(Some(id)),
        Ok(None) => Ok(None),
        _ => Err(error::INBOX_ID_INVALID.into()),
    }
}

async fn load(call: &Call<'_>, mailbox: Option<&str>, id: &str) -> Result<(String, Row), ApiError> {
    let scope = scope(call, mailbox)?;
    match call.ctx.store.read::<Row>(&keys::inbox_message(&scope, id)).await? {
        Some(row) => Ok((scope, row)),
        None => Err(error::NOT_FOUND.into()),
    }
}

async fn set_unread(ctx: &Context, scope: &str, row: &mut Row, unread: bool) -> Result<(), ApiError> {
    if row.unread == unread {
        return Ok(());
    }
    let key = keys::inbox_message(scope, &row.id);
    match ctx
        .store
        .update(&key, Update::new().set("unread", unread), Some(Cond::Exists))
        .await
    {
        Ok(_) => {
            row.unread = unread;
            Ok(())
        }
        Err(StoreError::ConditionFailed) => Err(error::NOT_FOUND.into()),
        Err(e) => Err(e.into()),
    }
}

/// GET /inbox: the flat list, or one message by id.
#[derive(Debug, JsonSchema)]
pub struct InboxQuery {
    /// 1 to 50, default 25.
    #[schemars(range(min = 1, max = 50))]
    pub limit: Option<i64>,
    /// Agent key and operators only: an address at the service domain
    /// (default inbox@ the service domain).
    #[schemars(email)]
    pub mailbox: Option<String>,
    /// A message id: reads that message (with its text) and marks it read.
    #[schemars(regex(pattern = r"^[A-Za-z0-9_-]{1,128}$"))]
    pub id: Option<String>,
}

fn parse_limit(fields: &Fields) -> Result<Option<i64>, ApiError> {
    match fields.int("limit") {
        Ok(Some(n)) if (1..=MAX_LIMIT).contains(&n) => Ok(Some(n)),
        Ok(None) => Ok(None),
        _ => Err(error::INBOX_LIMIT_INVALID.into()),
    }
}

impl Input for InboxQuery {
    fn parse(fields: &Fields) -> Result<Self, ApiError> {
        Ok(InboxQuery {
            limit: parse_limit(fields)?,
            mailbox: parse_mailbox(fields)?,
            id: parse_id(fields)?,
        })
    }
}

/// The flat list (tool `list_inbox`).
#[derive(Debug, JsonSchema)]
pub struct ListQuery {
    /// 1 to 50, default 25.
    #[schemars(range(min = 1, max = 50))]
    pub limit: Option<i64>,
    /// Agent key only: an address at the service domain (default inbox@ the
    /// service domain).
    #[schemars(email)]
    pub mailbox: Option<String>,
}

impl Input for ListQuery {
    fn parse(fields: &Fields) -> Result<Self, ApiError> {
        Ok(ListQuery {
            limit: parse_limit(fields)?,
            mailbox: parse_mailbox(fields)?,
        })
    }
}

/// The flat list, newest first.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InboxList {
    pub ok: bool,
    pub messages: Vec<Summary>,
    /// Unread rows in this page only.
    pub unread_in_page: usize,
}

/// One message with its body.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MessageView {
    #[serde(flatten)]
    pub summary: Summary,
    pub text: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub html: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct MessageRead {
    pub ok: bool,
    pub message: MessageView,
}

#[derive(Debug, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum InboxOutput {
    List(InboxList),
    Message(Box<MessageRead>),
}

pub async fn inbox(call: &Call<'_>, input: InboxQuery) -> Result<InboxOutput, ApiError> {
    if let Some(id) = input.id {
        let read = get_message(
            call,
            MessageTarget {
                id,
                mailbox: input.mailbox,
            },
        )
        .await?;
        return Ok(InboxOutput::Message(Box::new(read)));
    }
    let list = list(
        call,
        ListQuery {
            limit: input.limit,
            mailbox: input.mailbox,
        },
    )
    .await?;
    Ok(InboxOutput::List(list))
}

pub async fn list(call: &Call<'_>, input: ListQuery) -> Result<InboxList, ApiError> {
    let scope = scope(call, input.mailbox.as_deref())?;
    let limit = input.limit.unwrap_or(DEFAULT_LIMIT) as usize;
    let page = call
        .ctx
        .store
        .query(&Query::partition(keys::inbox_partition(&scope)).backward().limit(limit))
        .await?;
    let mut messages = Vec::new();
    for item in page.items {
        let row: Row = crate::store::record(item)?;
        messages.push(Summary::from(&row));
    }
    let unread_in_page = messages.iter().filter(|m| m.unread).count();
    Ok(InboxList {
        ok: true,
        messages,
        unread_in_page,
    })
}

/// A message by id (tool `get_message`).
#[derive(Debug, JsonSchema)]
pub struct MessageTarget {
    #[schemars(regex(pattern = r"^[A-Za-z0-9_-]{1,128}$"))]
    pub id: String,
    /// Agent key and operators only: an address at the service domain.
    #[schemars(email)]
    pub mailbox: Option<String>,
}

impl Input for MessageTarget {
    fn parse(fields: &Fields) -> Result<Self, ApiError> {
        let id = parse_id(fields)?.ok_or(error::ID_REQUIRED)?;
        Ok(MessageTarget {
            id,
            mailbox: parse_mailbox(fields)?,
        })
    }
}

async fn body(ctx: &Context, row: &Row) -> Result<(String, Option<String>), ApiError> {
    let blob = |name: &'static str| {
        let key = format!("{}/{name}", row.blob_prefix);
        async move {
            let bytes = ctx
                .blobs
                .get(&key)
                .await
                .map_err(|e| ApiError::internal(e.to_string()))?;
            Ok::<_, ApiError>(String::from_utf8_lossy(&bytes.unwrap_or_default()).into_owned())
        }
    };
    let text = match (&row.text, row.text_in_blob) {
        (_, true) => blob("body.txt").await?,
        (Some(t), false) => t.clone(),
        (None, false) => String::new(),
    };
    let html = match (&row.html, row.html_in_blob) {
        (_, true) => Some(blob("body.html").await?),
        (h, false) => h.clone(),
    };
    Ok((text, html))
}

pub async fn get_message(call: &Call<'_>, input: MessageTarget) -> Result<MessageRead, ApiError> {
    let (scope, mut row) = load(call, input.mailbox.as_deref(), &input.id).await?;
    set_unread(call.ctx, &scope, &mut row, false).await?;
    let (text, html) = body(call.ctx, &row).await?;
    Ok(MessageRead {
        ok: true,
        message: MessageView {
            summary: Summary::from(&row),
            text,
            html,
        },
    })
}

/// POST /inbox (tool `mark_read`).
#[derive(Debug, JsonSchema)]
pub struct MarkInput {
    #[schemars(regex(pattern = r"^[A-Za-z0-9_-]{1,128}$"))]
    pub id: String,
    /// true marks it unread; omitted or false marks it read.
    pub unread: Option<bool>,
    /// Agent key and operators only: an address at the service domain.
    #[schemars(email)]
    pub mailbox: Option<String>,
}

impl Input for MarkInput {
    fn parse(fields: &Fields) -> Result<Self, ApiError> {
        let id = parse_id(fields)?.ok_or(error::ID_REQUIRED)?;
        let unread = fields.bool("unread").map_err(|_| error::UNREAD_TYPE)?;
        Ok(MarkInput {
            id,
            unread,
            mailbox: parse_mailbox(fields)?,
        })
    }
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Marked {
    pub ok: bool,
    pub message: Summary,
}

pub async fn mark(call: &Call<'_>, input: MarkInput) -> Result<Marked, ApiError> {
    let (scope, mut row) = load(call, input.mailbox.as_deref(), &input.id).await?;
    set_unread(call.ctx, &scope, &mut row, input.unread.unwrap_or(false)).await?;
    Ok(Marked {
        ok: true,
        message: Summary::from(&row),
    })
}

/// GET /attachment.
#[derive(Debug, JsonSchema)]
pub struct AttachmentQuery {
    #[schemars(regex(pattern = r"^[A-Za-z0-9_-]{1,128}$"))]
    pub id: String,
    #[schemars(range(min = 0, max = 2))]
    pub index: i64,
    /// Agent key and operators only: an address at the service domain.
    #[schemars(email)]
    pub mailbox: Option<String>,
}

impl Input for AttachmentQuery {
    fn parse(fields: &Fields) -> Result<Self, ApiError> {
        let id = parse_id(fields)?.ok_or(error::ID_REQUIRED)?;
        let index = match fields.int("index") {
            Ok(Some(i)) if (0..=MAX_ATTACHMENT_INDEX).contains(&i) => i,
            _ => return Err(error::ATTACHMENT_INDEX_INVALID.into()),
        };
        Ok(AttachmentQuery {
            id,
            index,
            mailbox: parse_mailbox(fields)?,
        })
    }
}

pub async fn attachment(call: &Call<'_>, input: AttachmentQuery) -> Result<super::Download, ApiError> {
    let (_, row) = load(call, input.mailbox.as_deref(), &input.id).await?;
    let index = input.index as usize;
    let Some(meta) = row.attachments.iter().find(|a| a.index == index) else {
        return Err(error::NOT_FOUND.into());
    };
    let key = format!("{}/att-{index}", row.blob_prefix);
    let bytes = call
        .ctx
        .blobs
        .get(&key)
        .await
        .map_err(|e| ApiError::internal(e.to_string()))?
        .ok_or(error::NOT_FOUND)?;
    Ok(super::Download {
        content_type: meta.content_type.clone(),
        filename: meta.filename.clone(),
        bytes,
    })
}
