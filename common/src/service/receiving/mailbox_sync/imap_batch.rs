//! A mailbox's IMAP changes applied in few transactions: a backlog is
//! thousands of `\Seen` flags and moves, and a store that commits some
//! tens of transactions a second (DynamoDB Local) cannot take one each.
//!
//! The rows are read by their exact Message-ID key, many at once
//! (BatchGetItem), with their threads' summaries; then the changes are
//! walked in their numbers' order, and those that are a flag or a folder
//! move of a known row go into one transaction as long as it has room
//! (each thread's part once, `mail_store::ThreadChange`), together with
//! the mailbox's number moved to the last change in it, on condition it is
//! below the first: a crash between two transactions leaves the number
//! where the applied ones end, and a batch sent again applies nothing twice.
//! A change that changes nothing as read checks, in the transaction, that
//! its row is still as read.
//! Everything else (a deletion, spam, an appended message, a row not read,
//! a thread too large for one transaction) is applied one change at a time,
//! in order, as `imap` always did. A transaction refused because a row or
//! thread changed since it was read (an API change won the race) is applied
//! again one change at a time, as the rows are now.

use std::collections::{BTreeMap, HashMap, HashSet};

use futures::{StreamExt, TryStreamExt};
use serde_json::{Map, Value, json};

use super::imap_single::{ImapChange, Outcome, apply_singly, direction_of};
use super::place::Place;
use crate::context::Context;
use crate::error::ApiError;
use crate::keys;
use crate::service::caller::Call;
use crate::service::mail_store::{self, Direction, Folder, Row, Thread, ThreadChange};
use crate::store::{Cond, Key, StoreError, Update, Write, record};

/// Room for the mailbox's number in each transaction.
const WRITES: usize = 99;
/// Reads side by side while the rows and threads are read.
const READS_AT_ONCE: usize = 16;

/// What the batch knows of the rows and threads its changes are about, as
/// read before it, and as its own transactions left them.
#[derive(Debug, Default)]
pub struct Known {
    rows: HashMap<String, Row>,
    /// Row ids by Message-ID and direction.
    by_message: HashMap<(String, bool), String>,
    threads: HashMap<String, Thread>,
    /// The rows a move of the thread writes (its loaded rows).
    loaded: HashMap<String, Vec<String>>,
}

impl Known {
    fn row_of(&self, change: &ImapChange) -> Option<&Row> {
        let key = (change.message_id.trim().to_string(), outbound(change));
        self.by_message.get(&key).and_then(|id| self.rows.get(id))
    }

    /// Forgets a thread: its later changes are applied one at a time.
    fn forget(&mut self, change: &ImapChange) {
        if let Some(thread) = self.row_of(change).map(|r| r.thread_id.clone()) {
            self.threads.remove(&thread);
        }
    }
}

fn outbound(change: &ImapChange) -> bool {
    direction_of(change) == Direction::Outbound
}

/// Reads the rows these changes are about (those named whole), their
/// threads' summaries, and the rows of the threads a change moves.
pub async fn known(ctx: &Context, scope: &str, mailbox: &str, changes: &[ImapChange]) -> Result<Known, ApiError> {
    let mut known = Known::default();
    let mut wanted = HashSet::new();
    let keys: Vec<Key> = changes
        .iter()
        .filter(|c| !c.message_id.trim().ends_with("..."))
        .filter(|c| wanted.insert((c.message_id.trim().to_string(), outbound(c))))
        .map(|c| keys::message_id(scope, c.message_id.trim(), mailbox, outbound(c)))
        .collect();
    let now = ctx.clock.now().timestamp();
    let pointers = read_many::<mail_store::RowRef>(ctx, keys).await?;
    for row in mail_store::rows(ctx, scope, pointers).await? {
        if row.mailbox != mailbox || mail_store::expired(&row, now) {
            continue;
        }
        let key = (row.message_id.clone(), row.outbound());
        known.by_message.insert(key, row.id.clone());
        known.rows.insert(row.id.clone(), row);
    }
    let threads: HashSet<&String> = known
        .rows
        .values()
        .filter(|r| r.quarantine.is_none())
        .map(|r| &r.thread_id)
        .collect();
    let keys = threads.into_iter().map(|t| keys::thread_summary(scope, t)).collect();
    for thread in read_many::<Thread>(ctx, keys).await? {
        known.threads.insert(thread.thread_id.clone(), thread);
    }
    // The threads a change moves: one row alone is the row read; others
    // load their rows as a move does.
    let mut moving = HashSet::new();
    for change in changes {
        let (Some(row), Some(to)) = (known.row_of(change), change.place.and_then(Place::folder)) else {
            continue;
        };
        match known.threads.get(&row.thread_id) {
            Some(t) if t.message_count == 1 && row.folder() != to => {
                known.loaded.insert(t.thread_id.clone(), vec![row.id.clone()]);
            }
            Some(t) if row.folder() != to => {
                moving.insert(t.thread_id.clone());
            }
            _ => {}
        }
    }
    let loaded: Vec<(String, Vec<Row>)> = futures::stream::iter(moving)
        .map(|thread| async move {
            Ok::<_, ApiError>((thread.clone(), mail_store::loaded_rows(ctx, scope, &thread).await?))
        })
        .buffer_unordered(READS_AT_ONCE)
        .try_collect()
        .await?;
    for (thread, rows) in loaded {
        known.loaded.insert(thread, rows.iter().map(|r| r.id.clone()).collect());
        for row in rows {
            known.rows.insert(row.id.clone(), row);
        }
    }
    Ok(known)
}

/// Items by key, 100 to a request, a few requests at once: those there.
async fn read_many<T: serde::de::DeserializeOwned>(ctx: &Context, keys: Vec<Key>) -> Result<Vec<T>, ApiError> {
    let chunks: Vec<Vec<Key>> = keys.chunks(100).map(<[Key]>::to_vec).collect();
    let pages: Vec<Vec<Option<crate::store::Item>>> = futures::stream::iter(chunks)
        .map(|chunk| async move { ctx.store.get_many(&chunk).await })
        .buffer_unordered(READS_AT_ONCE)
        .try_collect()
        .await?;
    Ok(pages
        .into_iter()
        .flatten()
        .flatten()
        .map(record)
        .collect::<Result<_, _>>()?)
}

/// One change as a part of a transaction: the row, and what it sets.
#[derive(Debug, Clone)]
struct Planned {
    seq: i64,
    message_id: String,
    row: String,
    thread: String,
    folder: Option<Folder>,
    unread: Option<bool>,
    /// IMAP holds the new flag on every copy: no mark back.
    settled: bool,
}

/// The change as a transaction's part, or `None`: one at a time.
fn plan(known: &Known, change: &ImapChange) -> Option<Planned> {
    if change.message_id.trim().ends_with("...") || matches!(change.place, Some(Place::Gone | Place::Junk)) {
        return None;
    }
    let row = known.row_of(change)?;
    // Spam and quarantined mail move as a report does.
    if row.quarantine.is_some() {
        return None;
    }
    let thread = known.threads.get(&row.thread_id)?;
    let folder = change
        .place
        .and_then(Place::folder)
        .filter(|f| !row.outbound() && row.folder() != *f);
    if folder.is_some() && (thread.folder != row.folder() || !known.loaded.contains_key(&thread.thread_id)) {
        return None;
    }
    let unread = change
        .seen
        .filter(|seen| !row.outbound() && row.unread == *seen)
        .map(|seen| !seen);
    Some(Planned {
        seq: change.seq,
        message_id: change.message_id.clone(),
        row: row.id.clone(),
        thread: row.thread_id.clone(),
        folder,
        unread,
        settled: change.settled,
    })
}

/// The changes of one transaction.
#[derive(Default)]
struct Chunk {
    parts: BTreeMap<String, (ThreadChange, usize)>,
    changes: Vec<Planned>,
    /// Every row a part writes.
    rows: HashSet<String>,
    /// Rows of changes that change nothing as read: the transaction holds
    /// only while they are so (an API change since may have made the change
    /// one to apply).
    checks: Vec<Row>,
}

enum Added {
    Yes,
    /// No room left: commit the chunk, then add it again.
    Full,
    /// Too large for any transaction: one at a time.
    Never,
}

impl Chunk {
    fn writes(&self) -> usize {
        self.parts.values().map(|(_, n)| n).sum::<usize>() + self.checks.len()
    }

    /// Whether the change is about a row this chunk writes or checks: its
    /// plan would read it as it was before.
    fn touches(&self, known: &Known, change: &ImapChange) -> bool {
        known.row_of(change).is_some_and(|r| self.rows.contains(&r.id))
    }

    fn add(&mut self, scope: &str, known: &Known, p: Planned) -> Added {
        let (Some(summary), Some(row)) = (known.threads.get(&p.thread), known.rows.get(&p.row)) else {
            return Added::Never;
        };
        if p.folder.is_none() && p.unread.is_none() {
            if self.writes() + 1 > WRITES {
                return Added::Full;
            }
            self.rows.insert(row.id.clone());
            self.checks.push(row.clone());
            self.changes.push(p);
            return Added::Yes;
        }
        let (mut part, before) = match self.parts.get(&p.thread) {
            // A thread's flags join its part; a move is a part of its own.
            Some((part, _)) if part.folder.is_some() || p.folder.is_some() => return Added::Full,
            Some((part, n)) => (part.clone(), *n),
            None => (ThreadChange::new(summary.clone()), 0),
        };
        if let Some(f) = p.folder {
            part.folder = Some(f);
            let ids = known.loaded.get(&p.thread).map_or(&[][..], Vec::as_slice);
            part.rows = ids.iter().filter_map(|id| known.rows.get(id).cloned()).collect();
        } else {
            part.rows.push(row.clone());
        }
        if let Some(u) = p.unread {
            part.unread.insert(p.row.clone(), u);
            if p.settled {
                part.settled.insert(p.row.clone());
            }
        }
        let n = part.writes(scope, 0).len();
        if n > WRITES {
            return match before {
                0 => Added::Never,
                _ => Added::Full,
            };
        }
        if self.writes() - before + n > WRITES {
            return Added::Full;
        }
        self.rows.extend(part.rows.iter().map(|r| r.id.clone()));
        self.parts.insert(p.thread.clone(), (part, n));
        self.changes.push(p);
        Added::Yes
    }
}

/// Applies a mailbox's new changes (numbered above its last), in order:
/// what became of each.
pub async fn apply(
    call: &Call<'_>,
    scope: &str,
    mailbox: &str,
    changes: Vec<ImapChange>,
    known: Option<Known>,
) -> Result<Vec<(i64, Outcome)>, ApiError> {
    let ctx = call.ctx;
    let mut known = match known {
        Some(known) => known,
        None => self::known(ctx, scope, mailbox, &changes).await?,
    };
    let mut changes = changes;
    changes.sort_by_key(|c| c.seq);
    let by_seq: HashMap<i64, ImapChange> = changes.iter().map(|c| (c.seq, c.clone())).collect();
    let run = Run {
        call,
        scope,
        mailbox,
        by_seq: &by_seq,
    };
    let (mut done, mut chunk, mut singles) = (Vec::new(), Chunk::default(), Vec::<ImapChange>::new());
    for change in changes {
        if chunk.touches(&known, &change) {
            done.extend(run.commit(std::mem::take(&mut chunk), &mut known).await?);
        }
        let mut planned = plan(&known, &change);
        if planned.is_some() && !singles.is_empty() {
            done.extend(run.singly(std::mem::take(&mut singles), &mut known).await?);
            planned = plan(&known, &change);
        }
        let Some(p) = planned else {
            if !chunk.changes.is_empty() {
                done.extend(run.commit(std::mem::take(&mut chunk), &mut known).await?);
            }
            singles.push(change);
            continue;
        };
        match chunk.add(scope, &known, p.clone()) {
            Added::Yes => {}
            Added::Full => {
                done.extend(run.commit(std::mem::take(&mut chunk), &mut known).await?);
                if let Added::Never = chunk.add(scope, &known, p) {
                    singles.push(change);
                }
            }
            Added::Never => {
                if !chunk.changes.is_empty() {
                    done.extend(run.commit(std::mem::take(&mut chunk), &mut known).await?);
                }
                singles.push(change);
            }
        }
    }
    done.extend(run.commit(chunk, &mut known).await?);
    done.extend(run.singly(singles, &mut known).await?);
    Ok(done)
}

struct Run<'a> {
    call: &'a Call<'a>,
    scope: &'a str,
    mailbox: &'a str,
    by_seq: &'a HashMap<i64, ImapChange>,
}

impl Run<'_> {
    /// Changes applied one at a time; their threads are then forgotten.
    async fn singly(&self, changes: Vec<ImapChange>, known: &mut Known) -> Result<Vec<(i64, Outcome)>, ApiError> {
        if changes.is_empty() {
            return Ok(Vec::new());
        }
        for change in &changes {
            known.forget(change);
        }
        apply_singly(self.call, self.scope, self.mailbox, changes).await
    }

    /// One transaction: the chunk's parts and the mailbox's number. Refused,
    /// its changes not yet applied go one at a time.
    async fn commit(&self, chunk: Chunk, known: &mut Known) -> Result<Vec<(i64, Outcome)>, ApiError> {
        let ctx = self.call.ctx;
        let (Some(first), Some(last)) = (chunk.changes.first(), chunk.changes.last()) else {
            return Ok(Vec::new());
        };
        let (first, last) = (first.seq, last.seq);
        let ms = ctx.clock.now().timestamp_millis();
        let mut writes: Vec<Write> = chunk
            .parts
            .values()
            .flat_map(|(p, _)| p.writes(self.scope, ms))
            .collect();
        writes.extend(chunk.checks.iter().map(|row| ThreadChange::unchanged(self.scope, row)));
        let seq_key = keys::mailbox_sync_seq(self.mailbox);
        writes.push(Write::Update {
            key: seq_key.clone(),
            update: Update::new().set("seq", last),
            cond: Some(Cond::Or(vec![Cond::NotExists, Cond::Lt("seq".into(), first)])),
        });
        match ctx.store.transact(writes).await {
            Ok(()) => {}
            Err(StoreError::ConditionFailed) => return self.refused(chunk, known).await,
            Err(e) => return Err(e.into()),
        }
        for (part, _) in chunk.parts.values() {
            for row in part.rows_after() {
                known.rows.insert(row.id.clone(), row);
            }
            known
                .threads
                .insert(part.summary.thread_id.clone(), part.summary_after());
        }
        Ok(chunk
            .changes
            .into_iter()
            .map(|p| {
                if p.folder.is_none() && p.unread.is_none() {
                    return (p.seq, Outcome::Ignored);
                }
                let mut detail = Map::new();
                detail.insert(
                    "messageId".into(),
                    json!(p.message_id.chars().take(200).collect::<String>()),
                );
                if let Some(f) = p.folder {
                    detail.insert("folder".into(), json!(f.as_str()));
                }
                if let Some(u) = p.unread {
                    detail.insert("unread".into(), Value::Bool(u));
                }
                (p.seq, Outcome::Applied(detail))
            })
            .collect())
    }

    /// A transaction refused: a row or thread changed since it was read, or
    /// another request applied these changes. Those still above the
    /// mailbox's number are applied one at a time, as the rows are now.
    async fn refused(&self, chunk: Chunk, known: &mut Known) -> Result<Vec<(i64, Outcome)>, ApiError> {
        let ctx = self.call.ctx;
        tracing::info!(
            mailbox = self.mailbox,
            changes = chunk.changes.len(),
            "a batch of IMAP changes lost a race: applied one at a time"
        );
        let stored = ctx
            .store
            .get(&keys::mailbox_sync_seq(self.mailbox))
            .await?
            .and_then(|i| i.get("seq").and_then(Value::as_i64))
            .unwrap_or(0);
        let (again, done): (Vec<Planned>, Vec<Planned>) = chunk.changes.into_iter().partition(|p| p.seq > stored);
        let mut outcomes: Vec<(i64, Outcome)> = done.into_iter().map(|p| (p.seq, Outcome::Ignored)).collect();
        let checked = chunk.checks.iter().map(|r| &r.thread_id);
        for thread in chunk.parts.keys().chain(checked) {
            known.threads.remove(thread);
        }
        let again = again.iter().filter_map(|p| self.by_seq.get(&p.seq).cloned()).collect();
        outcomes.extend(self.singly(again, known).await?);
        Ok(outcomes)
    }
}
