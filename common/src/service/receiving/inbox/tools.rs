//! The reading tools (list_inbox, get_message, list_threads, get_thread,
//! search_inbox): GET /inbox's reads, one tool each, what a stranger wrote
//! always inside a boundary.

use super::fields::*;
use super::read::{flat_page, quarantine_page, read_message, read_thread, search_scope, spam_page, threads_page};
use super::scope::*;
use super::shapes::*;
use crate::error::{self, ApiError};
use crate::service::caller::Call;
use crate::service::delivery::boundary::Boundary;
use crate::service::mail_store::Folder;
use crate::validate::Fields;
use crate::values::Bounded;
use crate::values::{Chars, Cursor, EmailAddress, RowId, StoredMessageId, ThreadId};

crate::input! {
    /// Tool `list_inbox`: the flat list.
    pub struct ListQuery {
        /// 1 to 50, default 25.
        pub limit: Option<Limit>,
        /// Agent key only: an address at the service domain (default inbox@
        /// the service domain).
        pub mailbox: Option<EmailAddress> = error::INBOX_MAILBOX_INVALID,
        /// inbox, archive or trash; omitted: every folder.
        pub folder: Option<Folder> = error::INBOX_FOLDER_INVALID,
        /// The nextCursor of the previous page.
        pub cursor: Option<Cursor> = error::CURSOR_INVALID,
        /// `quarantine`: the received mail kept out of the inbox (spoofed,
        /// or refused by a sender list); `spam`: the mail whose content is
        /// spam; each newest first, instead of the inbox. (`threads` is
        /// list_threads.)
        pub view: Option<KeptView> = error::LIST_VIEW_INVALID,
    }
}

pub async fn list(call: &Call<'_>, input: ListQuery) -> Result<InboxList, ApiError> {
    let scope = scope(call, input.mailbox.as_deref())?;
    let limit = Limit::rows(input.limit, DEFAULT_LIMIT);
    let page = match input.view {
        Some(KeptView::Quarantine) => quarantine_page(call, &scope, input.cursor.as_deref(), limit).await?,
        Some(KeptView::Spam) => spam_page(call, &scope, input.cursor.as_deref(), limit).await?,
        None => flat_page(call, &scope, input.folder, input.cursor.as_deref(), limit).await?,
    };
    Boundary::new().list(page)
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
    read_message(call, &scope, &target, Some(max), Some(&Boundary::new())).await
}

crate::input! {
    /// Tool `list_threads`: a folder's threads.
    pub struct ThreadsQuery {
        /// inbox (default), archive or trash.
        pub folder: Option<Folder> = error::INBOX_FOLDER_INVALID,
        pub limit: Option<Limit>,
        pub cursor: Option<Cursor> = error::CURSOR_INVALID,
        pub mailbox: Option<EmailAddress> = error::INBOX_MAILBOX_INVALID,
    }
}

pub async fn list_threads(call: &Call<'_>, input: ThreadsQuery) -> Result<ThreadList, ApiError> {
    let scope = scope(call, input.mailbox.as_deref())?;
    let limit = Limit::rows(input.limit, DEFAULT_LIMIT);
    let page = threads_page(
        call,
        &scope,
        input.folder.unwrap_or(Folder::Inbox),
        input.cursor.as_deref(),
        limit,
    )
    .await?;
    Ok(Boundary::new().threads(page))
}

crate::input! {
    /// Tool `get_thread`.
    pub struct ThreadQuery {
        pub thread: ThreadId = (error::INBOX_THREAD_INVALID, error::INBOX_THREAD_INVALID),
        pub cursor: Option<Cursor> = error::CURSOR_INVALID,
        pub mailbox: Option<EmailAddress> = error::INBOX_MAILBOX_INVALID,
    }
}

pub async fn get_thread(call: &Call<'_>, input: ThreadQuery) -> Result<ThreadView, ApiError> {
    let scope = scope(call, input.mailbox.as_deref())?;
    read_thread(
        call,
        &scope,
        &input.thread,
        input.cursor.as_deref(),
        Some(&Boundary::new()),
    )
    .await
}

crate::input! {
    /// Tool `search_inbox`.
    pub struct SearchQuery {
        pub q: Chars<2, 200> = (error::INBOX_QUERY_INVALID, error::INBOX_QUERY_INVALID),
        pub folder: Option<Folder> = error::INBOX_FOLDER_INVALID,
        pub limit: Option<Limit>,
        /// The nextCursor of the previous page.
        pub cursor: Option<Cursor> = error::CURSOR_INVALID,
        pub mailbox: Option<EmailAddress> = error::INBOX_MAILBOX_INVALID,
    }
}

pub async fn search(call: &Call<'_>, input: SearchQuery) -> Result<InboxList, ApiError> {
    let scope = scope(call, input.mailbox.as_deref())?;
    let limit = Limit::rows(input.limit, DEFAULT_LIMIT);
    let cursor = input.cursor.as_deref();
    Boundary::new().list(search_scope(call, &scope, &input.q, input.folder, cursor, limit).await?)
}
