//! The changes to stored rows: the unread flag, and a thread's folder.

use super::limits::{MOVE_LIMIT, RETRIES, backoff};
use super::pages::{by_id, thread, thread_rows};
use super::shapes::{Folder, Row, Thread};
use super::sync_marks::{flags_mark, thread_mark};
use crate::context::Context;
use crate::error::{self, ApiError};
use crate::keys;
use crate::store::{Cond, StoreError, Update, Write};
use crate::values::Page;

/// Rows that change in one transaction, with their thread's summary and its
/// sync mark: 2 writes per inbound row (the row and its search state) and 2
/// more stay under 100.
const FLIPS_PER_TRANSACTION: usize = 49;
/// The most writes of one row-moving transaction: 100, less the sync mark.
const MOVE_WRITES: usize = 99;

/// Sets the unread flag of these rows of one thread (outbound rows stay read).
/// Each row changes at most once however many requests race: its copies and
/// the summary's count move together, conditioned on the row's old flag.
/// Returns the rows as they now are.
pub async fn set_unread(ctx: &Context, scope: &str, rows: Vec<Row>, unread: bool) -> Result<Vec<Row>, ApiError> {
    let mut done = Vec::with_capacity(rows.len());
    let (mut todo, untouched): (Vec<Row>, Vec<Row>) =
        // A quarantined row is never unread: it counts nowhere.
        rows.into_iter().partition(|r| !r.outbound() && r.quarantine.is_none() && r.unread != unread);
    done.extend(untouched);
    let mut attempts = 0;
    while !todo.is_empty() {
        let chunk: Vec<Row> = todo.drain(..todo.len().min(FLIPS_PER_TRANSACTION)).collect();
        let ms = ctx.clock.now().timestamp_millis();
        let writes = unread_writes(scope, &chunk, unread, ms);
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
                        // Moved into spam meanwhile: it is never unread.
                        Some(now) if now.unread != unread && now.quarantine.is_none() => todo.push(now),
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

/// Each row flagged, conditioned on its old flag, with its search state; the
/// summary's count moved by as many (the chunk is of one thread); and the
/// change marked for the mail host's IMAP. The summary's list copy is not
/// written: the thread list reads each thread's count from its summary.
fn unread_writes(scope: &str, chunk: &[Row], unread: bool, ms: i64) -> Vec<Write> {
    let delta = if unread { 1 } else { -1 } * chunk.len() as i64;
    let mut writes = Vec::new();
    for row in chunk {
        writes.push(Write::Update {
            key: row.home(scope),
            update: Update::new().set("unread", unread),
            cond: Some(Cond::eq("unread", !unread)),
        });
        writes.push(super::searchable::unread_write(scope, row, unread));
    }
    writes.push(Write::Update {
        key: keys::thread_summary(scope, &chunk[0].thread_id),
        update: Update::new().add("unreadCount", delta).add("version", 1),
        cond: Some(Cond::Exists),
    });
    writes.extend(flags_mark(scope, &chunk.iter().collect::<Vec<_>>(), ms));
    writes
}

/// The rows of a thread a folder move loads: the newest 100 of each direction.
pub async fn loaded_rows(ctx: &Context, scope: &str, thread_id: &str) -> Result<Vec<Row>, ApiError> {
    let Page { items: rows, .. } = thread_rows(ctx, scope, thread_id, true, None, 2 * MOVE_LIMIT).await?;
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
        let row_writes = row_writes(scope, row, Some(folder), None);
        match chunks.last_mut() {
            Some(chunk) if chunk.len() + row_writes.len() <= MOVE_WRITES => chunk.extend(row_writes),
            _ => chunks.push(row_writes),
        }
    }
    let ms = ctx.clock.now().timestamp_millis();
    for mut writes in chunks {
        // Each chunk marks the thread again: the mail host reads the rows
        // after the last of them moved.
        writes.push(thread_mark(scope, &rows[0].mailbox, thread_id, ms));
        match ctx.store.transact(writes).await {
            Ok(()) => {}
            Err(StoreError::ConditionFailed) => return Ok(false),
            Err(e) => return Err(e.into()),
        }
    }
    Ok(true)
}

/// One row set to its new folder and flag (conditioned on its old flag), its
/// folder's pointer moved, and the search index told.
pub(super) fn row_writes(scope: &str, row: &Row, to: Option<Folder>, unread: Option<bool>) -> Vec<Write> {
    let mut set = Update::new();
    if let Some(f) = to {
        set = set.set("folder", f.as_str());
    }
    if let Some(u) = unread {
        set = set.set("unread", u);
    }
    let mut writes = vec![Write::Update {
        key: row.home(scope),
        update: set,
        cond: Some(Cond::eq("unread", row.unread)),
    }];
    if let Some(f) = to.filter(|_| !row.outbound()) {
        writes.push(Write::Delete {
            key: row.folder_pointer(scope, row.folder()),
            cond: None,
        });
        let moved = Row {
            folder: Some(f),
            ..row.clone()
        };
        let key = moved.folder_pointer(scope, f);
        writes.push(Write::Put {
            item: moved.pointer(&key),
            cond: None,
        });
    }
    writes.push(match (to, unread) {
        (Some(f), Some(u)) => super::searchable::moved_state(scope, row, f, u),
        (Some(f), None) => super::searchable::folder_write(scope, row, f),
        (None, u) => super::searchable::unread_write(scope, row, u.unwrap_or(row.unread)),
    });
    writes
}
