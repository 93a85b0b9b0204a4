//! A received row moved into the spam folder and back (an owner's report):
//! each move is one transaction over the row and its pointers, its thread's
//! summary and its place in the search index, conditioned on the row as it
//! was read, with the caller's own writes (the training job) inside it.

use super::filing::{drop_list_copy, filing_writes, rekeyed};
use super::limits::{RETRIES, backoff};
use super::pages::{by_id, thread};
use super::shapes::{Folder, QUARANTINE_DAYS, Quarantine, Quarantined, Row, Thread};
use super::sync_marks::message_mark;
use crate::clock::iso;
use crate::context::Context;
use crate::error::{self, ApiError};
use crate::keys;
use crate::store::{Cond, Key, PK, SK, StoreError, Write, item};

/// What a move found.
#[derive(Debug)]
pub enum Moved {
    /// Moved: the row as it now is.
    Done(Row),
    /// It was there already: the row as it is.
    Already(Row),
}

/// Moves an inbox (or archive, or trash) row into spam: out of its folder,
/// its thread and every list, never unread, kept 30 days. `also` is written
/// in the same transaction, only if the row moves.
pub async fn to_spam(ctx: &Context, scope: &str, mut row: Row, also: &[Write]) -> Result<Moved, ApiError> {
    for _ in 0..RETRIES {
        match &row.quarantine {
            Some(kept) if kept.reason == Quarantine::Spam => return Ok(Moved::Already(row)),
            Some(_) => return Err(error::SPAM_QUARANTINED.into()),
            None => {}
        }
        let summary = thread(ctx, scope, &row.thread_id).await?;
        let now = ctx.clock.now();
        let spam = Row {
            quarantine: Some(Quarantined {
                reason: Quarantine::Spam,
                at: iso(now),
            }),
            unread: false,
            folder: None,
            ttl: Some(now.timestamp() + QUARANTINE_DAYS * 86_400),
            ..row.clone()
        };
        let mut writes = out_of_the_inbox(scope, &row, &spam);
        writes.extend(thread_without(scope, &row, summary.as_ref()));
        writes.push(message_mark(scope, &spam, now.timestamp_millis()));
        writes.push(super::searchable::spam_write(scope, &row));
        writes.extend(also.iter().cloned());
        match ctx.store.transact(writes).await {
            Ok(()) => return Ok(Moved::Done(spam)),
            // The row was read, moved or reported meanwhile, or its thread
            // changed: read it again.
            Err(StoreError::ConditionFailed) => {
                row = by_id(ctx, scope, &row.id).await?.ok_or(error::NOT_FOUND)?;
                backoff().await;
            }
            Err(e) => return Err(e.into()),
        }
    }
    Err(error::REQUEST_BUSY.into())
}

/// Moves a spam row back into the inbox, unread, onto its thread (a new
/// one when that thread is gone). `also` as in [`to_spam`].
pub async fn to_inbox(ctx: &Context, scope: &str, mut row: Row, also: &[Write]) -> Result<Moved, ApiError> {
    // Searchable again in the inbox (unread) once it moves.
    let searchable = match &row.quarantine {
        Some(kept) if kept.reason == Quarantine::Spam => {
            Some(super::searchable::back_from_spam_write(ctx, scope, &row).await?)
        }
        _ => None,
    };
    for _ in 0..RETRIES {
        match &row.quarantine {
            None => return Ok(Moved::Already(row)),
            Some(kept) if kept.reason != Quarantine::Spam => return Err(error::SPAM_QUARANTINED.into()),
            Some(_) => {}
        }
        let existing = thread(ctx, scope, &row.thread_id).await?;
        let back = Row {
            quarantine: None,
            ttl: None,
            unread: true,
            folder: Some(Folder::Inbox),
            ..row.clone()
        };
        let ms = ctx.clock.now().timestamp_millis();
        let mut writes = into_the_inbox(scope, &back, existing.as_ref(), ms);
        writes.push(message_mark(scope, &back, ms));
        writes.push(Write::Delete {
            key: row.home(scope),
            cond: Some(Cond::Exists),
        });
        writes.extend(searchable.iter().cloned());
        writes.extend(also.iter().cloned());
        match ctx.store.transact(writes).await {
            Ok(()) => {
                drop_list_copy(ctx, scope, &back, existing.as_ref(), ms).await;
                return Ok(Moved::Done(back));
            }
            Err(StoreError::ConditionFailed) => {
                row = by_id(ctx, scope, &row.id).await?.ok_or(error::NOT_FOUND)?;
                backoff().await;
            }
            Err(e) => return Err(e.into()),
        }
    }
    Err(error::REQUEST_BUSY.into())
}

/// The row gone from the inbox (on condition its flag and folder are as read:
/// a flag flip or a folder move meanwhile rewrites it), with its thread's and
/// folder's pointers, and the spam row put. Its Message-ID's pointer stays:
/// it finds the row in spam.
fn out_of_the_inbox(scope: &str, row: &Row, spam: &Row) -> Vec<Write> {
    let as_read = Cond::And(vec![
        Cond::eq("unread", row.unread),
        match row.folder {
            Some(folder) => Cond::eq("folder", folder.as_str()),
            None => Cond::missing("folder"),
        },
    ]);
    let mut writes = vec![Write::Delete {
        key: row.home(scope),
        cond: Some(as_read),
    }];
    writes.extend(
        row.pointers(scope)
            .into_iter()
            .skip(1)
            .map(|key| Write::Delete { key, cond: None }),
    );
    writes.push(Write::Put {
        item: item(&spam.home(scope), spam),
        cond: Some(Cond::NotExists),
    });
    writes
}

/// The thread's summary and its list copy without the row (both gone with
/// its last message), conditioned on the summary's version.
fn thread_without(scope: &str, row: &Row, summary: Option<&Thread>) -> Vec<Write> {
    let Some(t) = summary else {
        return Vec::new();
    };
    let summary_key = keys::thread_summary(scope, &t.thread_id);
    let guard = Some(Cond::eq("version", t.version));
    if t.message_count <= 1 {
        return vec![
            Write::Delete {
                key: summary_key,
                cond: guard,
            },
            Write::Delete {
                key: t.list_copy(scope),
                cond: None,
            },
        ];
    }
    let less = Thread {
        message_count: t.message_count - 1,
        inbound_count: (t.inbound_count - 1).max(0),
        unread_count: (t.unread_count - i64::from(row.unread)).max(0),
        version: t.version + 1,
        ..t.clone()
    };
    let stored = less.stored_item(&summary_key);
    vec![
        Write::Put {
            item: stored.clone(),
            cond: guard,
        },
        Write::Put {
            item: rekeyed(&stored, &less.list_copy(scope)),
            cond: None,
        },
    ]
}

/// Filing's writes for the row (the row, its pointers, its thread's summary
/// and list copy), but its Message-ID's pointer, which is there already, is
/// put on condition it is.
fn into_the_inbox(scope: &str, row: &Row, existing: Option<&Thread>, ms: i64) -> Vec<Write> {
    let by_message_id = row.pointers(scope).swap_remove(0);
    let mut writes: Vec<Write> = filing_writes(scope, row, existing, ms)
        .into_iter()
        .map(|write| match write {
            Write::Put { item, .. } if names(&item, &by_message_id) => Write::Put {
                item,
                cond: Some(Cond::Exists),
            },
            other => other,
        })
        .collect();
    writes.extend(row.listing_pointers(scope).into_iter().map(|key| Write::Put {
        item: row.pointer(&key),
        cond: None,
    }));
    writes
}

fn names(item: &crate::store::Item, key: &Key) -> bool {
    item.get(PK).and_then(|v| v.as_str()) == Some(key.pk.as_str())
        && item.get(SK).and_then(|v| v.as_str()) == Some(key.sk.as_str())
}
