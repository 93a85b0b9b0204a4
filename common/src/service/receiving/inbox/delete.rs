//! POST /inbox/delete (tool `delete_mail`): the API's one way to delete mail
//! for good. Only what is in the trash goes (as a mail app empties its
//! trash): one message, one thread, or, asked by name (`emptyTrash: true`),
//! the whole trash a page at a time. Each message goes through `mail_store::delete_row`, as an
//! expunge over IMAP does, and the mail host expunges its IMAP copies.

use schemars::JsonSchema;
use serde::Serialize;

use super::scope::*;
use crate::error::{self, ApiError};
use crate::keys;
use crate::service::caller::Call;
use crate::service::mail_store::{self, Folder, Thread};
use crate::values::Page;
use crate::values::{EmailAddress, RowId, StoredMessageId, ThreadId};

/// Threads one call empties from the trash at most.
pub const EMPTY_PAGE: usize = 25;

crate::input! {
    /// POST /inbox/delete (tool `delete_mail`).
    pub struct DeleteInput {
        /// A message in the trash; wins over messageId and thread.
        pub id: Option<RowId> = error::INBOX_ID_INVALID,
        pub message_id: Option<StoredMessageId> = error::INBOX_MESSAGE_ID_INVALID,
        /// A thread in the trash, every message of it.
        pub thread: Option<ThreadId> = error::INBOX_THREAD_INVALID,
        /// Agent key and operators only: an address at the service domain.
        pub mailbox: Option<EmailAddress> = error::INBOX_MAILBOX_INVALID,
        /// With no target: true empties the whole trash, a page at a time.
        pub empty_trash: Option<bool> = error::EMPTY_TRASH_TYPE,
    }
}

#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Deleted {
    pub ok: bool,
    /// Messages deleted for good.
    pub deleted: usize,
    /// Emptying the trash: threads are left for another call.
    pub more: bool,
}

pub async fn delete(call: &Call<'_>, input: DeleteInput) -> Result<Deleted, ApiError> {
    let ctx = call.ctx;
    let scope = scope(call, input.mailbox.as_deref())?;
    let in_trash = |folder: Folder| match folder {
        Folder::Trash => Ok(()),
        _ => Err(ApiError::from(error::INBOX_NOT_IN_TRASH)),
    };
    let deleted = match target(input.id, input.message_id, input.thread) {
        Some(Target::Thread(thread)) => {
            in_trash(find_thread(call, &scope, &thread).await?.folder)?;
            mail_store::delete_thread(ctx, &scope, &thread).await?
        }
        Some(target) => {
            let row = find(call, &scope, &target).await?;
            // A sent row follows its thread's folder.
            let folder = match row.outbound() {
                true => find_thread(call, &scope, &row.thread_id).await?.folder,
                false => row.folder(),
            };
            if row.quarantine.is_some() {
                return Err(error::NOT_FOUND.into());
            }
            in_trash(folder)?;
            usize::from(mail_store::delete_row(ctx, &scope, &row).await?)
        }
        None if input.empty_trash != Some(true) => return Err(error::MAIL_TO_DELETE_REQUIRED.into()),
        None => {
            let pk = keys::threads_partition(&scope, Folder::Trash.as_str());
            let Page {
                items,
                next_cursor: next,
            } = mail_store::page_raw_where(ctx, pk, false, None, EMPTY_PAGE, visible(call)).await?;
            let mut deleted = 0;
            for item in items {
                let thread: Thread = item.record()?;
                deleted += mail_store::delete_thread(ctx, &scope, &thread.thread_id).await?;
            }
            if next.is_some() {
                return Ok(Deleted {
                    ok: true,
                    deleted,
                    more: true,
                });
            }
            // Trashed messages whose thread new mail brought back.
            let pk = keys::folder_partition(&scope, Folder::Trash.as_str());
            let Page {
                items: rows,
                next_cursor: next,
            } = mail_store::page_raw_where(ctx, pk, false, None, 4 * EMPTY_PAGE, visible(call)).await?;
            for item in rows {
                let row: mail_store::RowRef = item.record()?;
                if let Some(now) = mail_store::by_id(ctx, &scope, &row.id).await?
                    && now.folder() == Folder::Trash
                {
                    deleted += usize::from(mail_store::delete_row(ctx, &scope, &now).await?);
                }
            }
            return Ok(Deleted {
                ok: true,
                deleted,
                more: next.is_some(),
            });
        }
    };
    Ok(Deleted {
        ok: true,
        deleted,
        more: false,
    })
}
