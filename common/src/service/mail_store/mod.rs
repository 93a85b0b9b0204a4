//! Stored mail: the rows, threads and indexes the inbox reads, and every write
//! that changes them. `docs/data-model.md` draws the items; in short, per
//! reading scope (an account, or one service-domain mailbox):
//!
//! - `MAIL#S#in|out/<id>`: each message, whole, per direction (the flat list,
//!   a read by id, search): its unread flag and folder live here alone;
//! - `FOLDER#S#<folder>/<id>`: a pointer to each inbound row in its folder;
//! - `THREAD#S#<thread>`: the summary (`#`) and a pointer to each row,
//!   oldest first;
//! - `THREADS#S#<folder>/<last ms>-<thread>`: a copy of each summary, in
//!   order of last activity (its counts are read from the summary);
//! - `QUAR#S/<id>`: each quarantined inbound row (30-day ttl), which only
//!   its `MSGID#` pointer finds;
//! - `SPAM#S/<id>`: the same for spam (rspamd's verdict, or a report);
//! - `MSGID#S/<Message-ID>\n<mailbox>\n<dir>`: a pointer to each row by
//!   Message-ID, whose conditional put makes filing idempotent.
//!
//! A pointer ([`RowRef`]) names its row and what a page is filtered by; a
//! page of pointers is followed by one batch read of their rows, so a flag
//! change writes the row alone, not one item per copy. The summary's
//! `unreadCount` moves by an atomic add in the flag's own transaction,
//! conditioned on the row's old flag, so it stays exact under concurrent
//! requests. A change that rewrites the summary (filing, a folder move) is
//! conditioned on the summary's `version`, which every change bumps.
//!
//! The files: `shapes` (the row, the thread summary, folders and
//! directions), `ids` (row and thread ids), `blobs` (the body kept on the row
//! and the blobs beside it), `filing`, `pages` (reads by id and cursor pages),
//! `changes` (unread flags and folder moves), `batch` (several threads'
//! flags and moves in one transaction), `spam_moves` (a report's move
//! into spam and back), `delete` (one message for good), `purge`, and
//! `sync_marks` (what the mail host's IMAP side has yet to take, marked in
//! the same transactions).

mod batch;
mod blobs;
mod changes;
mod delete;
mod filing;
mod ids;
mod limits;
mod pages;
mod purge;
mod searchable;
mod shapes;
mod spam_moves;
pub mod sync_marks;

pub use batch::ThreadChange;
pub use blobs::{blob_prefix, body, preview, whole_text};
pub use changes::{loaded_rows, move_thread, set_unread};
pub use delete::{delete_row, delete_thread};
pub use filing::file;
pub use ids::{direction_of, new_id, root_of, thread_id, valid_id, valid_thread_id};
pub use limits::{MAX_SPEC_ATTACHMENT_INDEX, MOVE_LIMIT, PREVIEW_CHARS, TEXT_ON_ROW};
pub use pages::{
    FILTER_SCAN, all_thread_rows, by_id, by_message_id, covered, expired, folder_page_raw, in_spam, newest, page,
    page_raw, page_raw_where, quarantined, rows, summaries_of, thread, thread_rows,
};
pub use purge::purge;
pub use searchable::{backfill, backfilled, forget_gone};
pub use shapes::{
    AttachmentInfo, Direction, Folder, Named, NewMessage, QUARANTINE_DAYS, Quarantine, Quarantined, Row, RowRef, Thread,
};
pub use spam_moves::{Moved, to_inbox, to_spam};
