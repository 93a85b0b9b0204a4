//! Several threads' flag and folder changes in one transaction: what the
//! mail host's backlog of IMAP changes is applied as, rather than one
//! transaction per change. Each thread's part is written as `changes` writes
//! it (each row conditioned on its old flag, the summary's count
//! by an atomic add, or the whole summary on its version when it moves), so
//! a part that lost a race refuses the whole transaction and the caller
//! applies its changes one at a time, as they are now.

use std::collections::{BTreeMap, BTreeSet};

use super::shapes::{Folder, Row, Thread};
use super::sync_marks::{flags_mark, thread_mark};
use crate::keys;
use crate::store::{Cond, Update, Write};

/// One thread's part of a batch: rows whose unread flag changes, or the
/// thread moved to a folder with every row it loads (and maybe flags).
#[derive(Debug, Clone)]
pub struct ThreadChange {
    /// The summary as read.
    pub summary: Thread,
    /// The rows written: the flipped ones, or, on a move, every loaded row.
    pub rows: Vec<Row>,
    /// The folder the thread moves to.
    pub folder: Option<Folder>,
    /// The new unread flag of rows, by id.
    pub unread: BTreeMap<String, bool>,
    /// Rows whose new flag IMAP holds already (the mail host looked):
    /// their flags need no mark back.
    pub settled: BTreeSet<String>,
}

impl ThreadChange {
    pub fn new(summary: Thread) -> ThreadChange {
        ThreadChange {
            summary,
            rows: Vec::new(),
            folder: None,
            unread: BTreeMap::new(),
            settled: BTreeSet::new(),
        }
    }

    /// How far the summary's unread count moves.
    fn delta(&self) -> i64 {
        self.rows
            .iter()
            .filter_map(|r| self.unread.get(&r.id).filter(|u| **u != r.unread))
            .map(|u| if *u { 1 } else { -1 })
            .sum()
    }

    /// The rows' new folder and flag, where either changes.
    fn targets(&self) -> impl Iterator<Item = (&Row, Option<Folder>, Option<bool>)> {
        self.rows.iter().filter_map(|row| {
            let to = self.folder.filter(|f| row.folder() != *f);
            let unread = self
                .unread
                .get(&row.id)
                .copied()
                .filter(|u| *u != row.unread && !row.outbound() && row.quarantine.is_none());
            (to.is_some() || unread.is_some()).then_some((row, to, unread))
        })
    }

    /// The writes of this part, its sync mark included (the thread's on a
    /// move; on flags alone, `flags_mark`'s for the rows not settled).
    pub fn writes(&self, scope: &str, ms: i64) -> Vec<Write> {
        let mut writes = Vec::new();
        let thread_id = &self.summary.thread_id;
        let delta = self.delta();
        match self.folder.filter(|f| *f != self.summary.folder) {
            Some(_) => {
                let (old, new) = (&self.summary, self.summary_after());
                writes.push(Write::Put {
                    item: new.stored_item(&keys::thread_summary(scope, thread_id)),
                    cond: Some(Cond::eq("version", old.version)),
                });
                writes.push(Write::Delete {
                    key: old.list_copy(scope),
                    cond: None,
                });
                writes.push(Write::Put {
                    item: new.stored_item(&new.list_copy(scope)),
                    cond: None,
                });
            }
            // The list copy keeps no count a thread list answers with.
            None => writes.push(Write::Update {
                key: keys::thread_summary(scope, thread_id),
                update: Update::new().add("unreadCount", delta).add("version", 1),
                cond: Some(Cond::Exists),
            }),
        }
        let mut flipped = Vec::new();
        for (row, to, unread) in self.targets() {
            writes.extend(super::changes::row_writes(scope, row, to, unread));
            if !self.settled.contains(&row.id) {
                flipped.push(row);
            }
        }
        match self.folder {
            Some(_) => writes.push(thread_mark(scope, &self.summary.mailbox, thread_id, ms)),
            None => writes.extend(flags_mark(scope, &flipped, ms)),
        }
        writes
    }

    /// A row a change leaves as it is, checked to be so still: its flag
    /// and folder as read.
    pub fn unchanged(scope: &str, row: &Row) -> Write {
        let folder = match row.folder {
            Some(f) => Cond::eq("folder", f.as_str()),
            None => Cond::missing("folder"),
        };
        Write::Check {
            key: row.home(scope),
            cond: Cond::And(vec![Cond::eq("unread", row.unread), folder]),
        }
    }

    /// The summary as the transaction leaves it.
    pub fn summary_after(&self) -> Thread {
        Thread {
            folder: self.folder.unwrap_or(self.summary.folder),
            unread_count: self.summary.unread_count + self.delta(),
            version: self.summary.version + 1,
            ..self.summary.clone()
        }
    }

    /// The rows as the transaction leaves them.
    pub fn rows_after(&self) -> Vec<Row> {
        let mut rows = self.rows.clone();
        for row in &mut rows {
            if let Some(f) = self.folder {
                row.folder = Some(f);
            }
            if let Some(u) = self.unread.get(&row.id)
                && !row.outbound()
                && row.quarantine.is_none()
            {
                row.unread = *u;
            }
        }
        rows
    }
}
