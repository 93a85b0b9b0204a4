//! The inbox API (spec 2.4, 3.3, 4.2-4.4): GET /inbox (the flat list, a read,
//! threads, search, waiting for mail), POST /inbox (read flags and folders),
//! GET /attachment, and their MCP tools. What is stored, and how each change is
//! kept exact, is `mail_store`.
//!
//! Who reads what: a standard key reads its own account's stored mail; the
//! agent key and operators read one service-domain mailbox (`mailbox=`,
//! default `inbox@`). A message, thread or file of another scope is 404.

use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use super::mail_store::{self, AttachmentInfo, Direction, Folder, Row, Thread};
use super::waits;
use super::{Call, Download};
use crate::auth::Caller;
use crate::error::{self, ApiError};
use crate::keys;
use crate::mail::codes;
use crate::validate::{Fields, Origin};
use crate::values::Bounded;
use crate::values::{Chars, Cursor, EmailAddress, Inline, Needle, RowId, StoredMessageId, ThreadId, Threads};

pub const DEFAULT_LIMIT: i64 = 25;
pub const MAX_LIMIT: i64 = 50;
/// The highest attachment index GET /attachment serves: every file a
/// received message keeps (spec 4.4's 0 to 2 bounds what a send carries).
pub const MAX_ATTACHMENT_INDEX: i64 = crate::mail::inbound::MAX_ATTACHMENTS as i64 - 1;
/// Rows of each direction a search reads (spec 4.2 rule 5).
pub const SEARCH_DEPTH: usize = 200;
/// Messages in one page of a thread.
pub const THREAD_PAGE: usize = 100;
/// The longest wait for mail, under API Gateway's 29-second limit.
pub const MAX_WAIT_SECONDS: i64 = 25;
/// How often a wait looks for new mail.
const WAIT_POLL: Duration = Duration::from_millis(500);
/// The text an MCP read returns unless the agent asks for more or less.
pub const DEFAULT_MAX_CHARS: i64 = 20_000;

// ------------------------------------------------------------------ shapes

/// A list row (spec 2.4): no body, attachment metadata only.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
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
    /// A row keeps no folder until it is filed elsewhere: inbox.
    #[serde(default)]
    pub folder: Folder,
    pub source: String,
    /// inbound, or outbound for a threaded send.
    #[serde(rename = "box")]
    pub direction: Direction,
    /// 64 lowercase hex characters.
    pub thread_id: String,
    pub attachments: Vec<AttachmentInfo>,
    /// True when a different message was filed earlier under the same
    /// Message-ID (a read by messageId gives that first one); omitted
    /// otherwise.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub message_id_conflict: bool,
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
            folder: r.folder(),
            source: r.source.clone(),
            direction: r.direction,
            thread_id: r.thread_id.clone(),
            attachments: r.attachments.clone(),
            message_id_conflict: r.message_id_conflict,
        }
    }
}

/// A [`Summary`] as a list page reads it from a stored [`Row`]'s text: each
/// value is the row's own JSON, copied to the answer as it is (the store wrote
/// it with the same encoder), and the row's other fields are skipped. The
/// fields and their order are the `Summary`'s, so both encode alike; a test
/// holds them together.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct StoredSummary<'a> {
    #[serde(borrow)]
    id: &'a RawValue,
    #[serde(borrow)]
    message_id: &'a RawValue,
    #[serde(borrow)]
    mailbox: &'a RawValue,
    #[serde(borrow)]
    from: &'a RawValue,
    #[serde(borrow)]
    to: &'a RawValue,
    #[serde(borrow)]
    subject: &'a RawValue,
    #[serde(borrow)]
    preview: &'a RawValue,
    /// The store drops empty values: a row without a date has none.
    #[serde(borrow, default)]
    date: Option<&'a RawValue>,
    #[serde(borrow, default)]
    ingested_at: Option<&'a RawValue>,
    unread: bool,
    #[serde(default)]
    folder: Folder,
    #[serde(borrow)]
    source: &'a RawValue,
    #[serde(rename = "box")]
    direction: Direction,
    #[serde(borrow)]
    thread_id: &'a RawValue,
    #[serde(borrow)]
    attachments: &'a RawValue,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    message_id_conflict: bool,
}

/// A page of rows, newest first.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InboxList {
    pub ok: bool,
    /// Each a [`Summary`], encoded when the page was read.
    #[schemars(with = "Vec<Summary>")]
    pub messages: Vec<Box<RawValue>>,
    /// Unread rows in this page only.
    pub unread_in_page: usize,
    /// Present when older rows exist: pass it back as `cursor`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

impl InboxList {
    fn of(rows: &[Row], next_cursor: Option<String>) -> Result<InboxList, ApiError> {
        let messages = rows
            .iter()
            .map(|row| serde_json::value::to_raw_value(&Summary::from(row)).map_err(ApiError::internal))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(InboxList {
            ok: true,
            messages,
            unread_in_page: rows.iter().filter(|row| row.unread).count(),
            next_cursor,
        })
    }
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
    /// Set by get_message: whether the text (and html) was cut at maxChars.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub truncated: Option<bool>,
}

/// A folder's threads, newest activity first.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadList {
    pub ok: bool,
    pub threads: Vec<Thread>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// A thread's summary and its messages, oldest first.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadView {
    pub ok: bool,
    pub thread: Thread,
    pub messages: Vec<Summary>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// GET /inbox answers with one of these, by the precedence of spec 4.2.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum InboxOutput {
    Message(Box<MessageRead>),
    Thread(ThreadView),
    List(InboxList),
    Threads(ThreadList),
}

// ---------------------------------------------------------------- fields

/// A page's length: 1 to 50.
pub type Limit = Bounded<1, MAX_LIMIT>;
/// Seconds to wait for mail.
pub type WaitSeconds = Bounded<1, MAX_WAIT_SECONDS>;
/// How much of a message's text and html an MCP read returns.
pub type MaxChars = Bounded<100, 1_000_000>;

// ---------------------------------------------------------------- scope

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
                Some(m) if crate::values::email_domain(m) == domain => m.to_string(),
                Some(_) => return Err(error::INBOX_MAILBOX_INVALID.into()),
                None => format!("inbox@{domain}"),
            };
            Ok(keys::inbox_mailbox_scope(&address))
        }
    }
}

/// A message by id, else by Message-ID.
async fn find(call: &Call<'_>, scope: &str, target: &Target) -> Result<Row, ApiError> {
    let row = match target {
        Target::Id(id) => mail_store::by_id(call.ctx, scope, id).await?,
        Target::MessageId(mid) => mail_store::by_message_id(call.ctx, scope, mid, None).await?,
        Target::Thread(_) => None,
    };
    row.ok_or(error::NOT_FOUND.into())
}

#[derive(Debug, Clone)]
enum Target {
    Id(String),
    MessageId(String),
    Thread(String),
}

/// id wins over messageId, and both over thread (spec 4.2 rule 1, 4.3).
fn target(id: Option<RowId>, message_id: Option<StoredMessageId>, thread: Option<ThreadId>) -> Option<Target> {
    id.map(|id| Target::Id(id.into_string()))
        .or(message_id.map(|m| Target::MessageId(m.into_string())))
        .or(thread.map(|t| Target::Thread(t.into_string())))
}

// ------------------------------------------------------------ GET /inbox

crate::input! {
    pub struct InboxQuery {
        /// 1 to 50, default 25.
        pub limit: Option<Limit> = error::INBOX_LIMIT_INVALID,
        /// Agent key and operators only: an address at the service domain
        /// (default inbox@ the service domain).
        pub mailbox: Option<EmailAddress> = error::INBOX_MAILBOX_INVALID,
        /// Reads that message (with its text) and marks it read.
        pub id: Option<RowId> = error::INBOX_ID_INVALID,
        /// Reads the message with this Message-ID (id wins).
        pub message_id: Option<StoredMessageId> = error::INBOX_MESSAGE_ID_INVALID,
        /// `threads` lists conversation threads.
        pub view: Option<Threads> = error::INBOX_VIEW_INVALID,
        /// A thread's messages, oldest first; marks its inbound rows read.
        pub thread: Option<ThreadId> = error::INBOX_THREAD_INVALID,
        /// Search subject, sender and body of the newest 200 inbound and 200
        /// outbound rows; 2 to 200 characters.
        pub q: Option<Chars<2, 200>> = error::INBOX_QUERY_INVALID,
        /// inbox, archive or trash. Threads: default inbox; list and search:
        /// every folder.
        pub folder: Option<Folder> = error::INBOX_FOLDER_INVALID,
        /// The nextCursor of the previous page.
        pub cursor: Option<Cursor> = error::INBOX_CURSOR_INVALID,
        /// Wait up to this many seconds (1 to 25) for a matching message.
        pub wait: Option<WaitSeconds> = error::INBOX_WAIT_INVALID,
        /// With wait: only messages after this message id; without it, unread ones.
        pub after: Option<Cursor> = error::INBOX_CURSOR_INVALID,
        /// With wait: the sender contains this (case-insensitive).
        pub from: Option<Needle> = error::INBOX_FILTER_INVALID,
        /// With wait: the subject contains this (case-insensitive).
        pub subject: Option<Needle> = error::INBOX_FILTER_INVALID,
    }
}

pub async fn inbox(call: &Call<'_>, q: InboxQuery) -> Result<InboxOutput, ApiError> {
    let limit = q.limit.map_or(DEFAULT_LIMIT, Bounded::get) as usize;
    match target(q.id, q.message_id, q.thread) {
        Some(Target::Thread(thread)) => {
            let scope = scope(call, q.mailbox.as_deref())?;
            return Ok(InboxOutput::Thread(
                read_thread(call, &scope, &thread, q.cursor.as_deref()).await?,
            ));
        }
        Some(target) => {
            let scope = scope(call, q.mailbox.as_deref())?;
            let read = read_message(call, &scope, &target, None).await?;
            return Ok(InboxOutput::Message(Box::new(read)));
        }
        None => {}
    }
    let scope = scope(call, q.mailbox.as_deref())?;
    if let Some(text) = q.q {
        return Ok(InboxOutput::List(
            search_scope(call, &scope, &text, q.folder, limit).await?,
        ));
    }
    if q.view.is_some() {
        let folder = q.folder.unwrap_or(Folder::Inbox);
        return Ok(InboxOutput::Threads(
            threads_page(call, &scope, folder, q.cursor.as_deref(), limit).await?,
        ));
    }
    if let Some(seconds) = q.wait {
        let filter = WaitFilter {
            after: q.after,
            from: q.from,
            subject: q.subject,
        };
        let rows = wait_rows(call, &scope, &filter, seconds.get()).await?;
        return Ok(InboxOutput::List(InboxList::of(&rows, None)?));
    }
    Ok(InboxOutput::List(
        flat_page(call, &scope, q.folder, q.cursor.as_deref(), limit).await?,
    ))
}

async fn flat_page(
    call: &Call<'_>,
    scope: &str,
    folder: Option<Folder>,
    cursor: Option<&str>,
    limit: usize,
) -> Result<InboxList, ApiError> {
    let pk = match folder {
        Some(f) => keys::folder_partition(scope, f.as_str()),
        None => keys::mail_partition(scope, false),
    };
    let (items, next_cursor) = mail_store::page_raw(call.ctx, pk.clone(), true, cursor, limit).await?;
    let (messages, unread_in_page) = call.ctx.summaries.page(&pk, items, encode_stored)?;
    Ok(InboxList {
        ok: true,
        messages,
        unread_in_page,
        next_cursor,
    })
}

/// A stored row's summary and unread flag, from its text: the values are
/// copied as they are, not decoded (see [`StoredSummary`]).
fn encode_stored(text: &[u8]) -> Result<(Box<RawValue>, bool), ApiError> {
    let text = std::str::from_utf8(text).map_err(ApiError::internal)?;
    let summary: StoredSummary<'_> = serde_json::from_str(text).map_err(ApiError::internal)?;
    let encoded = serde_json::value::to_raw_value(&summary).map_err(ApiError::internal)?;
    Ok((encoded, summary.unread))
}

async fn threads_page(
    call: &Call<'_>,
    scope: &str,
    folder: Folder,
    cursor: Option<&str>,
    limit: usize,
) -> Result<ThreadList, ApiError> {
    let pk = keys::threads_partition(scope, folder.as_str());
    let (threads, next_cursor) = mail_store::page::<Thread>(call.ctx, pk, true, cursor, limit).await?;
    Ok(ThreadList {
        ok: true,
        threads,
        next_cursor,
    })
}

/// A thread's summary and a page of its messages, oldest first; every unread
/// inbound row of the thread is marked read.
async fn read_thread(call: &Call<'_>, scope: &str, thread: &str, cursor: Option<&str>) -> Result<ThreadView, ApiError> {
    let ctx = call.ctx;
    let pk = keys::thread_partition(scope, thread);
    let (summary, page) = tokio::join!(
        mail_store::thread(ctx, scope, thread),
        mail_store::page::<Row>(ctx, pk.clone(), false, cursor, THREAD_PAGE)
    );
    let mut summary = summary?.ok_or(error::NOT_FOUND)?;
    let (rows, next_cursor) = page?;
    let unread_here = rows.iter().filter(|r| r.unread).count() as i64;
    if call.peek {
        return Ok(ThreadView {
            ok: true,
            messages: rows.iter().map(Summary::from).collect(),
            thread: summary,
            next_cursor,
        });
    }
    let rows = if summary.unread_count > unread_here {
        // Unread rows beyond this page: read them all to mark them.
        let all: Vec<Row> =
            crate::store::StoreExt::all_records(&*ctx.store, crate::store::Query::partition(pk).between("0", "~"))
                .await?;
        let unread: Vec<Row> = all.into_iter().filter(|r| r.unread).collect();
        mail_store::set_unread(ctx, scope, unread, false).await?;
        rows.into_iter().map(|r| Row { unread: false, ..r }).collect()
    } else {
        let (unread, read): (Vec<Row>, Vec<Row>) = rows.into_iter().partition(|r| r.unread);
        let mut rows = read;
        rows.extend(mail_store::set_unread(ctx, scope, unread, false).await?);
        rows.sort_by(|a, b| a.id.cmp(&b.id));
        rows
    };
    summary.unread_count = 0;
    Ok(ThreadView {
        ok: true,
        thread: summary,
        messages: rows.iter().map(Summary::from).collect(),
        next_cursor,
    })
}

/// Rows of the newest 200 of each direction whose subject, sender or body
/// holds the text, newest first. Marks nothing read.
async fn search_scope(
    call: &Call<'_>,
    scope: &str,
    text: &str,
    folder: Option<Folder>,
    limit: usize,
) -> Result<InboxList, ApiError> {
    let (inbound, outbound) = tokio::join!(
        mail_store::newest(call.ctx, scope, false, SEARCH_DEPTH),
        mail_store::newest(call.ctx, scope, true, SEARCH_DEPTH)
    );
    let needle = text.to_lowercase();
    let mut hits: Vec<Row> = inbound?
        .into_iter()
        .chain(outbound?)
        .filter(|r| folder.is_none_or(|f| r.folder() == f) && r.matches(&needle))
        .collect();
    hits.sort_by(|a, b| b.id.cmp(&a.id));
    hits.truncate(limit);
    InboxList::of(&hits, None)
}

/// A message with its body, marked read; the text cut at `max_chars` when
/// given.
async fn read_message(
    call: &Call<'_>,
    scope: &str,
    target: &Target,
    max_chars: Option<usize>,
) -> Result<MessageRead, ApiError> {
    let row = find(call, scope, target).await?;
    let row = if row.unread && !call.peek {
        mail_store::set_unread(call.ctx, scope, vec![row], false)
            .await?
            .into_iter()
            .next()
            .ok_or(error::NOT_FOUND)?
    } else {
        row
    };
    let (mut text, mut html) = mail_store::body(call.ctx, &row).await?;
    let mut truncated = None;
    if let Some(max) = max_chars {
        let cut_text = cut_chars(&mut text, max);
        let cut_html = html.as_mut().is_some_and(|h| cut_chars(h, max));
        truncated = Some(cut_text || cut_html);
    }
    Ok(MessageRead {
        ok: true,
        message: MessageView {
            summary: Summary::from(&row),
            text,
            html,
        },
        truncated,
    })
}

fn cut_chars(s: &mut String, max: usize) -> bool {
    match s.char_indices().nth(max) {
        Some((at, _)) => {
            s.truncate(at);
            true
        }
        None => false,
    }
}

// ------------------------------------------------------------ waiting

struct WaitFilter {
    after: Option<Cursor>,
    from: Option<Needle>,
    subject: Option<Needle>,
}

impl WaitFilter {
    fn admits(&self, row: &Row) -> bool {
        let fresh = match &self.after {
            Some(after) => row.id.as_str() > after.as_str(),
            None => row.unread,
        };
        fresh
            && self
                .from
                .as_ref()
                .is_none_or(|f| row.from.to_lowercase().contains(&**f))
            && self
                .subject
                .as_ref()
                .is_none_or(|s| row.subject.to_lowercase().contains(&**s))
    }
}

/// Matching inbound rows, newest first, as soon as there are any, or none at
/// the deadline. Looks every half second: the poller may run in another
/// process (another Lambda function), so the store is what they share.
async fn wait_rows(call: &Call<'_>, scope: &str, filter: &WaitFilter, seconds: i64) -> Result<Vec<Row>, ApiError> {
    let slot = waits::claim(call.ctx, call.caller, seconds).await?;
    let found = watch(call, scope, filter, seconds).await;
    slot.release(call.ctx).await;
    found
}

async fn watch(call: &Call<'_>, scope: &str, filter: &WaitFilter, seconds: i64) -> Result<Vec<Row>, ApiError> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(seconds as u64);
    loop {
        let (rows, _) = match &filter.after {
            // Oldest first past `after`, so nothing newer is skipped.
            Some(after) => {
                mail_store::page::<Row>(call.ctx, keys::mail_partition(scope, false), false, Some(after), 50).await?
            }
            None => mail_store::page::<Row>(call.ctx, keys::mail_partition(scope, false), true, None, 50).await?,
        };
        let mut hits: Vec<Row> = rows.into_iter().filter(|r| filter.admits(r)).collect();
        if !hits.is_empty() {
            hits.sort_by(|a, b| b.id.cmp(&a.id));
            return Ok(hits);
        }
        let now = tokio::time::Instant::now();
        if now >= deadline {
            return Ok(Vec::new());
        }
        tokio::time::sleep(WAIT_POLL.min(deadline - now)).await;
    }
}

// ------------------------------------------------------------- MCP tools

crate::input! {
    /// Tool `list_inbox`: the flat list.
    pub struct ListQuery {
        /// 1 to 50, default 25.
        pub limit: Option<Limit> = error::INBOX_LIMIT_INVALID,
        /// Agent key only: an address at the service domain (default inbox@
        /// the service domain).
        pub mailbox: Option<EmailAddress> = error::INBOX_MAILBOX_INVALID,
        /// inbox, archive or trash; omitted: every folder.
        pub folder: Option<Folder> = error::INBOX_FOLDER_INVALID,
        /// The nextCursor of the previous page.
        pub cursor: Option<Cursor> = error::INBOX_CURSOR_INVALID,
    }
}

pub async fn list(call: &Call<'_>, input: ListQuery) -> Result<InboxList, ApiError> {
    let scope = scope(call, input.mailbox.as_deref())?;
    let limit = input.limit.map_or(DEFAULT_LIMIT, Bounded::get) as usize;
    flat_page(call, &scope, input.folder, input.cursor.as_deref(), limit).await
}

crate::input! {
    /// Tool `get_message`: one message by id or Message-ID.
    #[schemars(extend("anyOf" = [
        {"required": ["id"], "properties": {"id": {"type": "string"}}},
        {"required": ["messageId"], "properties": {"messageId": {"type": "string"}}}
    ]))]
    pub struct MessageTarget {
        pub id: Option<RowId> = error::INBOX_ID_INVALID,
        /// The RFC Message-ID (id wins when both are given).
        pub message_id: Option<StoredMessageId> = error::INBOX_MESSAGE_ID_INVALID,
        /// Agent key and operators only: an address at the service domain.
        pub mailbox: Option<EmailAddress> = error::INBOX_MAILBOX_INVALID,
        /// Cut text and html to this many characters (100 to 1000000, default
        /// 20000); `truncated` says whether they were.
        pub max_chars: Option<MaxChars> = error::MAX_CHARS_INVALID,
    }
    check MessageTarget::named;
}

impl MessageTarget {
    fn named(self, _: &Fields) -> Result<Self, ApiError> {
        if self.id.is_none() && self.message_id.is_none() {
            return Err(error::MESSAGE_TARGET_REQUIRED.into());
        }
        Ok(self)
    }
}

pub async fn get_message(call: &Call<'_>, input: MessageTarget) -> Result<MessageRead, ApiError> {
    let scope = scope(call, input.mailbox.as_deref())?;
    let target = target(input.id, input.message_id, None).ok_or(error::MESSAGE_TARGET_REQUIRED)?;
    let max = input.max_chars.map_or(DEFAULT_MAX_CHARS, Bounded::get) as usize;
    read_message(call, &scope, &target, Some(max)).await
}

crate::input! {
    /// Tool `list_threads`: a folder's threads.
    pub struct ThreadsQuery {
        /// inbox (default), archive or trash.
        pub folder: Option<Folder> = error::INBOX_FOLDER_INVALID,
        pub limit: Option<Limit> = error::INBOX_LIMIT_INVALID,
        pub cursor: Option<Cursor> = error::INBOX_CURSOR_INVALID,
        pub mailbox: Option<EmailAddress> = error::INBOX_MAILBOX_INVALID,
    }
}

pub async fn list_threads(call: &Call<'_>, input: ThreadsQuery) -> Result<ThreadList, ApiError> {
    let scope = scope(call, input.mailbox.as_deref())?;
    let limit = input.limit.map_or(DEFAULT_LIMIT, Bounded::get) as usize;
    threads_page(
        call,
        &scope,
        input.folder.unwrap_or(Folder::Inbox),
        input.cursor.as_deref(),
        limit,
    )
    .await
}

crate::input! {
    /// Tool `get_thread`.
    pub struct ThreadQuery {
        pub thread: ThreadId = (error::INBOX_THREAD_INVALID, error::INBOX_THREAD_INVALID),
        pub cursor: Option<Cursor> = error::INBOX_CURSOR_INVALID,
        pub mailbox: Option<EmailAddress> = error::INBOX_MAILBOX_INVALID,
    }
}

pub async fn get_thread(call: &Call<'_>, input: ThreadQuery) -> Result<ThreadView, ApiError> {
    let scope = scope(call, input.mailbox.as_deref())?;
    read_thread(call, &scope, &input.thread, input.cursor.as_deref()).await
}

crate::input! {
    /// Tool `search_inbox`.
    pub struct SearchQuery {
        pub q: Chars<2, 200> = (error::INBOX_QUERY_INVALID, error::INBOX_QUERY_INVALID),
        pub folder: Option<Folder> = error::INBOX_FOLDER_INVALID,
        pub limit: Option<Limit> = error::INBOX_LIMIT_INVALID,
        pub mailbox: Option<EmailAddress> = error::INBOX_MAILBOX_INVALID,
    }
}

pub async fn search(call: &Call<'_>, input: SearchQuery) -> Result<InboxList, ApiError> {
    let scope = scope(call, input.mailbox.as_deref())?;
    let limit = input.limit.map_or(DEFAULT_LIMIT, Bounded::get) as usize;
    search_scope(call, &scope, &input.q, input.folder, limit).await
}

crate::input! {
    /// Tool `wait_for_message`.
    pub struct WaitQuery {
        /// Seconds to wait, 1 to 25 (default 25).
        pub wait: Option<WaitSeconds> = error::INBOX_WAIT_INVALID,
        /// Only messages after this message id; omitted: any unread message.
        pub after: Option<Cursor> = error::INBOX_CURSOR_INVALID,
        /// The sender contains this (case-insensitive).
        pub from: Option<Needle> = error::INBOX_FILTER_INVALID,
        /// The subject contains this (case-insensitive).
        pub subject: Option<Needle> = error::INBOX_FILTER_INVALID,
        pub mailbox: Option<EmailAddress> = error::INBOX_MAILBOX_INVALID,
        /// Cut the text to this many characters (default 20000).
        pub max_chars: Option<MaxChars> = error::MAX_CHARS_INVALID,
    }
}

/// The newest matching message, read, with the codes and links in it; or
/// `message: null` at the deadline.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WaitResult {
    pub ok: bool,
    pub message: Option<MessageView>,
    /// One-time codes found in the subject and text, likeliest first.
    pub codes: Vec<String>,
    /// http(s) links found, verification-looking ones first.
    pub links: Vec<String>,
    pub truncated: bool,
}

pub async fn wait_for_message(call: &Call<'_>, input: WaitQuery) -> Result<WaitResult, ApiError> {
    let scope = scope(call, input.mailbox.as_deref())?;
    let filter = WaitFilter {
        after: input.after,
        from: input.from,
        subject: input.subject,
    };
    let rows = wait_rows(call, &scope, &filter, input.wait.map_or(MAX_WAIT_SECONDS, Bounded::get)).await?;
    let Some(newest) = rows.into_iter().next() else {
        return Ok(WaitResult {
            ok: true,
            message: None,
            codes: Vec::new(),
            links: Vec::new(),
            truncated: false,
        });
    };
    // Codes and links come from the whole text, before any cut.
    let (text, html) = mail_store::body(call.ctx, &newest).await?;
    let found_codes = codes::codes(&newest.subject, &text);
    let found_links = codes::links(&text, html.as_deref());
    let max = input.max_chars.map_or(DEFAULT_MAX_CHARS, Bounded::get) as usize;
    let read = read_message(call, &scope, &Target::Id(newest.id), Some(max)).await?;
    Ok(WaitResult {
        ok: true,
        truncated: read.truncated.unwrap_or(false),
        message: Some(read.message),
        codes: found_codes,
        links: found_links,
    })
}

// ------------------------------------------------------------ POST /inbox

crate::input! {
    /// POST /inbox (tool `mark_read`).
    #[schemars(extend("anyOf" = [
        {"required": ["id"], "properties": {"id": {"type": "string"}}},
        {"required": ["messageId"], "properties": {"messageId": {"type": "string"}}},
        {"required": ["thread"], "properties": {"thread": {"type": "string"}}}
    ]))]
    pub struct MarkInput {
        /// A message; wins over messageId and thread.
        pub id: Option<RowId> = error::INBOX_ID_INVALID,
        pub message_id: Option<StoredMessageId> = error::INBOX_MESSAGE_ID_INVALID,
        /// A whole thread (all its inbound rows).
        pub thread: Option<ThreadId> = error::INBOX_THREAD_INVALID,
        /// true marks unread, false read (outbound rows stay read). The tool
        /// marks read when neither unread nor folder is given.
        pub unread: Option<bool> = error::UNREAD_TYPE,
        /// Moves the whole thread (up to 100 inbound and 100 outbound messages).
        pub folder: Option<Folder> = error::INBOX_FOLDER_INVALID,
        /// Agent key and operators only: an address at the service domain.
        pub mailbox: Option<EmailAddress> = error::INBOX_MAILBOX_INVALID,
    }
    check MarkInput::complete;
}

impl MarkInput {
    fn complete(mut self, fields: &Fields) -> Result<Self, ApiError> {
        if self.id.is_none() && self.message_id.is_none() && self.thread.is_none() {
            return Err(error::INBOX_TARGET_REQUIRED.into());
        }
        if self.unread.is_none() && self.folder.is_none() {
            // The spec's mark_read: "omit unread to mark read".
            if fields.origin != Origin::Tool {
                return Err(error::INBOX_CHANGE_REQUIRED.into());
            }
            self.unread = Some(false);
        }
        Ok(self)
    }
}

/// The thread as it is after the change.
pub async fn mark(call: &Call<'_>, input: MarkInput) -> Result<ThreadView, ApiError> {
    let ctx = call.ctx;
    let scope = scope(call, input.mailbox.as_deref())?;
    let target = target(input.id, input.message_id, input.thread).ok_or(error::INBOX_TARGET_REQUIRED)?;
    let (thread_id, row) = match &target {
        Target::Thread(t) => {
            mail_store::thread(ctx, &scope, t).await?.ok_or(error::NOT_FOUND)?;
            (t.clone(), None)
        }
        _ => {
            let row = find(call, &scope, &target).await?;
            (row.thread_id.clone(), Some(row))
        }
    };
    if let Some(folder) = input.folder {
        mail_store::move_thread(ctx, &scope, &thread_id, folder).await?;
    }
    if let Some(unread) = input.unread {
        let rows = match row {
            // After a move, the row as it is now.
            Some(row) if input.folder.is_some() => {
                vec![mail_store::by_id(ctx, &scope, &row.id).await?.ok_or(error::NOT_FOUND)?]
            }
            Some(row) => vec![row],
            None => {
                crate::store::StoreExt::all_records(
                    &*ctx.store,
                    crate::store::Query::partition(keys::thread_partition(&scope, &thread_id)).between("0", "~"),
                )
                .await?
            }
        };
        mail_store::set_unread(ctx, &scope, rows, unread).await?;
    }
    let pk = keys::thread_partition(&scope, &thread_id);
    let (summary, page) = tokio::join!(
        mail_store::thread(ctx, &scope, &thread_id),
        mail_store::page::<Row>(ctx, pk, false, None, THREAD_PAGE)
    );
    let (rows, next_cursor) = page?;
    Ok(ThreadView {
        ok: true,
        thread: summary?.ok_or(error::NOT_FOUND)?,
        messages: rows.iter().map(Summary::from).collect(),
        next_cursor,
    })
}

// ---------------------------------------------------------- GET /attachment

crate::input! {
    pub struct AttachmentQuery {
        /// The message's id; wins over messageId.
        pub id: Option<RowId> = error::INBOX_ID_INVALID,
        pub message_id: Option<StoredMessageId> = error::INBOX_MESSAGE_ID_INVALID,
        pub index: Bounded<0, MAX_ATTACHMENT_INDEX> = (error::ATTACHMENT_INDEX_INVALID, error::ATTACHMENT_INDEX_INVALID),
        /// inbound (default), or outbound for a threaded send's files.
        pub r#box: Option<Direction> = error::ATTACHMENT_BOX_INVALID,
        /// `inline`: shown in the browser, for raster images, PDF and plain text.
        pub disposition: Option<Inline> = error::ATTACHMENT_DISPOSITION_INVALID,
        /// Agent key and operators only: an address at the service domain.
        pub mailbox: Option<EmailAddress> = error::INBOX_MAILBOX_INVALID,
    }
    check AttachmentQuery::named;
}

impl AttachmentQuery {
    fn named(self, _: &Fields) -> Result<Self, ApiError> {
        if self.id.is_none() && self.message_id.is_none() {
            return Err(error::MESSAGE_TARGET_REQUIRED.into());
        }
        Ok(self)
    }
}

/// Types a browser shows without running anything: raster images, PDF and
/// plain text. Everything else is a download, whatever was asked.
fn previewable(content_type: &str) -> bool {
    let essence = content_type
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    matches!(
        essence.as_str(),
        "image/png" | "image/jpeg" | "image/gif" | "image/webp" | "image/bmp" | "application/pdf" | "text/plain"
    )
}

pub async fn attachment(call: &Call<'_>, input: AttachmentQuery) -> Result<Download, ApiError> {
    let scope = scope(call, input.mailbox.as_deref())?;
    let direction = input.r#box.unwrap_or(Direction::Inbound);
    let row = match (input.id, input.message_id) {
        (Some(id), _) => mail_store::by_id(call.ctx, &scope, &id).await?,
        (None, Some(mid)) => mail_store::by_message_id(call.ctx, &scope, &mid, Some(direction)).await?,
        (None, None) => None,
    };
    let row = row.filter(|r| r.direction == direction).ok_or(error::NOT_FOUND)?;
    let index = input.index.get() as usize;
    let meta = row
        .attachments
        .iter()
        .find(|a| a.index == index)
        .ok_or(error::NOT_FOUND)?;
    let key = format!("{}/att-{index}", row.blob_prefix);
    let bytes = call
        .ctx
        .blobs
        .get(&key)
        .await
        .map_err(|e| ApiError::internal(e.to_string()))?
        .ok_or(error::NOT_FOUND)?;
    Ok(Download {
        content_type: meta.content_type.clone(),
        filename: meta.filename.clone(),
        bytes,
        inline: input.disposition.is_some() && previewable(&meta.content_type),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{self, Key};

    fn row(date: Option<String>, folder: Option<Folder>, attachments: Vec<AttachmentInfo>, conflict: bool) -> Row {
        Row {
            id: "m1".into(),
            message_id: "<a\"b@example.org>".into(),
            mailbox: "inbox@example.org".into(),
            direction: Direction::Inbound,
            from: "Zoë \\ \u{1}<z@example.org>".into(),
            to: vec!["inbox@example.org".into(), "b@example.org".into()],
            subject: "Snow ☃ \"quoted\"\ttab".into(),
            preview: "line\nbreak".into(),
            date,
            ingested_at: "2026-11-23T10:00:00Z".into(),
            unread: true,
            folder,
            source: "smtp".into(),
            thread_id: "ab".repeat(32),
            attachments,
            blob_prefix: "mail/inbox@example.org/00".into(),
            text: "the body, which a list never shows".into(),
            text_in_blob: false,
            has_html: true,
            digest: "00ff".into(),
            message_id_conflict: conflict,
        }
    }

    /// A page read from stored text answers what the rows themselves would.
    #[test]
    fn a_stored_rows_summary_is_its_summary() {
        let attachment = AttachmentInfo {
            index: 0,
            filename: "a.pdf".into(),
            content_type: "application/pdf".into(),
            size: 12,
            download_path: "/attachment?id=m1&index=0".into(),
        };
        let rows = [
            row(None, None, vec![], false),
            row(None, None, vec![], true),
            row(
                Some("Mon, 23 Nov 2026 10:00:00 +0000".into()),
                Some(Folder::Archive),
                vec![attachment],
                false,
            ),
        ];
        for r in rows {
            let item = store::item(&Key::new("MAIL#S#in", &r.id), &r);
            let (from_text, unread) = encode_stored(&serde_json::to_vec(&item).unwrap()).unwrap();
            let from_row = serde_json::to_string(&Summary::from(&r)).unwrap();
            assert!(unread);
            assert_eq!(
                serde_json::from_str::<serde_json::Value>(from_text.get()).unwrap(),
                serde_json::from_str::<serde_json::Value>(&from_row).unwrap()
            );
            let text = from_text.get();
            assert!(!text.contains("body") && !text.contains("blobPrefix") && !text.contains("\"pk\""));
            assert!(!text.contains("digest"));
            // Same fields in the same order: without attachments (whose
            // stored keys are sorted) the two encodings are the same bytes.
            if r.attachments.is_empty() {
                assert_eq!(text, from_row);
            }
        }
    }
}
