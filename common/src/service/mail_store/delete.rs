//! Deleting one message for good: the one path every door takes (the API's
//! delete from the trash, an expunge over IMAP). Whatever else keeps an index
//! of stored mail hooks here.

use super::limits::{RETRIES, backoff};
use super::pages::{by_id, thread};
use super::shapes::{Row, Thread};
use super::sync_marks::gone_mark;
use crate::context::Context;
use crate::error::ApiError;
use crate::keys;
use crate::store::{Cond, StoreError, Write};

/// Deletes a row for good: the row and its pointers, its place in its thread's
/// summary (the summary too when it was the thread's last message), and its
/// blobs; the mail host and the search index are told (a `gone` mark and an
/// index change in the same transaction).
/// `Ok(false)` when it was already gone. Safe to run again after a failure
/// at any step: the blobs go last, and a row already gone still has its
/// blobs removed.
pub async fn delete_row(ctx: &Context, scope: &str, row: &Row) -> Result<bool, ApiError> {
    let mut current = Some(row.clone());
    let mut deleted = false;
    for _ in 0..RETRIES {
        let Some(row) = current.take() else { break };
        let summary = match row.quarantine {
            Some(_) => None,
            None => thread(ctx, scope, &row.thread_id).await?,
        };
        let ms = ctx.clock.now().timestamp_millis();
        match ctx
            .store
            .transact(delete_writes(scope, &row, summary.as_ref(), ms))
            .await
        {
            Ok(()) => {
                deleted = true;
                break;
            }
            Err(StoreError::ConditionFailed) => {
                // The row changed (read, moved) or its thread did: again, as
                // they are now.
                current = by_id(ctx, scope, &row.id).await?;
                backoff().await;
            }
            Err(e) => return Err(e.into()),
        }
    }
    if !deleted && by_id(ctx, scope, &row.id).await?.is_some() {
        return Err(ApiError::internal("a deletion lost the race too many times"));
    }
    delete_blobs(ctx, row).await?;
    Ok(deleted)
}

/// The row and its pointers (the row on condition it is as read), the summary
/// without it (or gone with its list copy), and the gone mark.
fn delete_writes(scope: &str, row: &Row, summary: Option<&Thread>, ms: i64) -> Vec<Write> {
    // A move meanwhile would leave its new folder's pointer behind: the row
    // must still be in the folder read.
    let mut as_read = vec![Cond::Exists, Cond::eq("unread", row.unread)];
    if let (false, Some(folder)) = (row.outbound(), row.folder) {
        as_read.push(Cond::eq("folder", folder.as_str()));
    }
    let mut writes = vec![Write::Delete {
        key: row.home(scope),
        cond: Some(Cond::And(as_read)),
    }];
    writes.extend(
        row.pointers(scope)
            .into_iter()
            .map(|key| Write::Delete { key, cond: None }),
    );
    if let Some(t) = summary {
        let summary_key = keys::thread_summary(scope, &t.thread_id);
        let guard = Some(Cond::eq("version", t.version));
        if t.message_count <= 1 {
            writes.push(Write::Delete {
                key: summary_key,
                cond: guard,
            });
            writes.push(Write::Delete {
                key: t.list_copy(scope),
                cond: None,
            });
        } else {
            let (inbound, outbound) = if row.outbound() { (0, 1) } else { (1, 0) };
            let less = Thread {
                message_count: t.message_count - 1,
                inbound_count: (t.inbound_count - inbound).max(0),
                outbound_count: (t.outbound_count - outbound).max(0),
                unread_count: (t.unread_count - i64::from(row.unread)).max(0),
                version: t.version + 1,
                ..t.clone()
            };
            let list = less.list_copy(scope);
            writes.push(Write::Put {
                item: less.stored_item(&summary_key),
                cond: guard,
            });
            writes.push(Write::Put {
                item: less.stored_item(&list),
                cond: None,
            });
        }
    }
    writes.push(gone_mark(scope, row, ms));
    // Out of search at once, its count included.
    writes.push(super::searchable::gone_write(scope, row));
    writes
}

/// Every blob the row kept (its body, HTML and attachments).
async fn delete_blobs(ctx: &Context, row: &Row) -> Result<(), ApiError> {
    if row.blob_prefix.is_empty() {
        return Ok(());
    }
    let prefix = format!("{}/", row.blob_prefix);
    let blobs = ctx.blobs.list(&prefix).await.map_err(ApiError::internal)?;
    for key in blobs {
        ctx.blobs.delete(&key).await.map_err(ApiError::internal)?;
    }
    Ok(())
}

/// Deletes every row of a thread for good (oldest first); the count deleted.
pub async fn delete_thread(ctx: &Context, scope: &str, thread_id: &str) -> Result<usize, ApiError> {
    let mut deleted = 0;
    for row in super::pages::all_thread_rows(ctx, scope, thread_id).await? {
        if delete_row(ctx, scope, &row).await? {
            deleted += 1;
        }
    }
    Ok(deleted)
}
