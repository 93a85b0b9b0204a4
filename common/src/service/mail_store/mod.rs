//! Stored mail: the rows, threads and indexes the inbox reads, and every write
//! that changes them. `docs/data-model.md` draws the items; in short, per
//! reading scope (an account, or one service-domain mailbox):
//!
//! - `MAIL#S#in|out/<id>`: each message, whole, per direction (the flat list,
//!   a read by id, search);
//! - `FOLDER#S#<folder>/<id>`: a copy of each inbound row in its folder;
//! - `THREAD#S#<thread>`: the summary (`#`) and a copy of each row, oldest
//!   first;
//! - `THREADS#S#<folder>/<last ms>-<thread>`: a copy of each summary;
//! - `QUAR#S/<id>`: each quarantined inbound row (30-day ttl), which no
//!   other partition but `MSGID#` holds;
//! - `SPAM#S/<id>`: the same for spam (rspamd's verdict, or a report);
//! - `MSGID#S/<Message-ID>\n<mailbox>\n<dir>`: a copy of each row by
//!   Message-ID, whose conditional put makes filing idempotent.
//!
//! Every copy of a row is the same record, so one read answers each question.
//! A row's unread flag and folder change on all its copies in one transaction;
//! the summary's `unreadCount` moves by an atomic add in that same
//! transaction, conditioned on each row's old flag, so it stays exact under
//! concurrent requests. A change that rewrites the summary (filing, a folder
//! move) is conditioned on the summary's `version`, which every change bumps.
//!
//! The files: `shapes` (the row, the thread summary, folders and
//! directions), `ids` (row and thread ids), `blobs` (the body kept on the row
//! and the blobs beside it), `filing`, `pages` (reads by id and cursor pages),
//! `changes` (unread flags and folder moves), `spam_moves` (a report's move
//! into spam and back), `delete` (one message for good), `purge`, and
//! `sync_marks` (what the mail host's IMAP side has yet to take, marked in
//! the same transactions).

mod blobs;
mod changes;
mod delete;
mod filing;
mod ids;
mod pages;
mod purge;
mod searchable;
mod shapes;
mod spam_moves;
pub mod sync_marks;

pub use blobs::{blob_prefix, body, preview, whole_text};
pub use changes::{loaded_rows, move_thread, set_unread};
pub use delete::{delete_row, delete_thread};
pub use filing::{Named, NewMessage, file};
pub use ids::{direction_of, new_id, root_of, thread_id, valid_id, valid_thread_id};
pub use pages::{
    FILTER_SCAN, by_id, by_message_id, covered, expired, in_spam, newest, page, page_raw, page_raw_where, quarantined,
    thread,
};
pub use purge::purge;
pub use searchable::{backfill, backfilled, forget_gone};
pub use shapes::{AttachmentInfo, Direction, Folder, QUARANTINE_DAYS, Quarantine, Quarantined, Row, Thread};
pub use spam_moves::{Moved, to_inbox, to_spam};

/// The most of a body kept on the row (and searched); the whole body is then a
/// blob. Keeps 200 rows of a search near DynamoDB's 1 MB page.
pub const TEXT_ON_ROW: usize = 4 * 1024;
pub const PREVIEW_CHARS: usize = 200;
/// Recipients kept on a row.
const MAX_TO: usize = 50;
/// Participants kept on a thread summary.
const MAX_PARTICIPANTS: usize = 20;
/// A folder move loads at most this many rows of each direction (spec 8).
pub const MOVE_LIMIT: usize = 100;
/// Retries of a write that lost a race on a thread summary.
const RETRIES: usize = 40;

async fn backoff() {
    let ms = 2 + rand::random::<u64>() % 20;
    tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
}
