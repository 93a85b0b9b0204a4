//! POST /inbox (tool `mark_read`): read flags and folders.

use schemars::JsonSchema;
use serde::Serialize;

use super::fields::*;
use super::scope::*;
use super::shapes::*;
use crate::error::{self, ApiError};
use crate::service::caller::Call;
use crate::service::delivery::boundary::Boundary;
use crate::service::mail_store::{self, Folder};
use crate::validate::{Fields, Origin};
use crate::values::Page;
use crate::values::{EmailAddress, RowId, StoredMessageId, ThreadId};

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
        /// Reports one received message (id or messageId, alone): true moves
        /// it into the spam folder, false back into the inbox; rspamd on the
        /// mail host learns from it (see `mark_spam`).
        pub spam: Option<bool> = error::SPAM_TYPE,
    }
    check MarkInput::complete;
}

impl MarkInput {
    fn complete(mut self, fields: &Fields) -> Result<Self, ApiError> {
        if self.id.is_none() && self.message_id.is_none() && self.thread.is_none() {
            return Err(error::INBOX_TARGET_REQUIRED.into());
        }
        if self.spam.is_some() {
            return alone(self);
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

/// The thread as it is after the change (a spam report: the message).
pub async fn mark(call: &Call<'_>, input: MarkInput) -> Result<MarkOutput, ApiError> {
    let ctx = call.ctx;
    let scope = scope(call, input.mailbox.as_deref())?;
    let target = target(input.id, input.message_id, input.thread).ok_or(error::INBOX_TARGET_REQUIRED)?;
    // The tool's answer wraps what the sender wrote; REST's keeps its shape.
    let boundary = Boundary::for_tool(call);
    if let Some(spam) = input.spam {
        let reported = super::report::report(call, &scope, &target, spam).await?;
        let reported = match &boundary {
            Some(b) => b.reported(reported),
            None => reported,
        };
        return Ok(MarkOutput::Reported(Box::new(reported)));
    }
    let (thread_id, row) = match &target {
        Target::Thread(t) => {
            find_thread(call, &scope, t).await?;
            (t.clone(), None)
        }
        _ => {
            let row = find(call, &scope, &target).await?;
            // Quarantined mail has no thread or folder to change: POST /inbox
            // acts on the inbox alone (docs/decisions.md).
            if row.quarantine.is_some() {
                return Err(error::NOT_FOUND.into());
            }
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
            None => mail_store::all_thread_rows(ctx, &scope, &thread_id).await?,
        };
        mail_store::set_unread(ctx, &scope, rows, unread).await?;
    }
    let (summary, page) = tokio::join!(
        mail_store::thread(ctx, &scope, &thread_id),
        mail_store::thread_rows(ctx, &scope, &thread_id, false, None, THREAD_PAGE)
    );
    let Page {
        items: rows,
        next_cursor,
    } = page?;
    let view = ThreadView {
        ok: true,
        thread: summary?.ok_or(error::NOT_FOUND)?,
        messages: rows.iter().map(Summary::from).collect(),
        next_cursor,
        envelope: None,
    };
    Ok(MarkOutput::Thread(Box::new(match &boundary {
        Some(b) => b.thread_view(view),
        None => view,
    })))
}

/// POST /inbox answers with the updated thread, or for a spam report the
/// message (spec 4.3: "one message when the row has no thread id").
#[derive(Debug, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum MarkOutput {
    Thread(Box<ThreadView>),
    Reported(Box<super::report::Reported>),
}

/// A report names one message and changes nothing else.
fn alone(input: MarkInput) -> Result<MarkInput, ApiError> {
    let one_message = input.id.is_some() || input.message_id.is_some();
    if !one_message || input.unread.is_some() || input.folder.is_some() {
        return Err(error::SPAM_ALONE.into());
    }
    Ok(input)
}
