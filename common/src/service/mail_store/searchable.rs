//! What stored mail tells the search index (`crate::search`), written in the
//! same transactions as the rows: a filed message's words, a changed folder
//! or unread flag, and a purge. Quarantined mail is never indexed.

use super::{Folder, NewMessage, Row};
use crate::context::Context;
use crate::error::ApiError;
use crate::search::{self, doc, items};
use crate::store::Write;

fn folder(f: Folder) -> search::Folder {
    match f {
        Folder::Inbox => search::Folder::Inbox,
        Folder::Archive => search::Folder::Archive,
        Folder::Trash => search::Folder::Trash,
    }
}

/// The index item of a message being filed (none when it is quarantined).
pub(super) fn filing_write(scope: &str, m: &NewMessage<'_>, row: &Row) -> Option<Write> {
    if row.quarantine.is_some() {
        return None;
    }
    let none: &[String] = &[];
    let names = m.names;
    let texts = doc::texts(&search::Message {
        subject: m.subject,
        from: m.from,
        from_names: names.map_or(none, |n| &n.from),
        to: m.to,
        to_names: names.map_or(none, |n| &n.to),
        cc: m.cc,
        cc_names: names.map_or(none, |n| &n.cc),
        text: m.text,
        html: m.html,
        filenames: row.attachments.iter().map(|a| a.filename.as_str()).collect(),
    });
    let mut flags = 0;
    if row.outbound() {
        flags |= doc::OUTBOUND;
    }
    if !row.attachments.is_empty() {
        flags |= doc::ATTACHMENT;
    }
    if row.owner_only {
        flags |= doc::OWNER_ONLY;
    }
    let state = search::State::new(folder(row.folder()), row.unread);
    let mut doc = search::Doc::new(&row.id, &row.mailbox, flags, state, &texts);
    doc.fit(items::MAX_PACKED);
    Some(items::filing_write(scope, &doc))
}

/// A row's unread flag set, for the index.
pub(super) fn unread_write(scope: &str, row: &Row, unread: bool) -> Write {
    items::unread_write(scope, &row.id, unread)
}

/// A row moved to a folder, for the index.
pub(super) fn folder_write(scope: &str, row: &Row, to: Folder) -> Write {
    items::folder_write(scope, &row.id, folder(to))
}

/// Every message of these mailboxes up to the newest purged row is gone
/// from search at once; their words then leave the index's blobs too.
pub(super) async fn purged(ctx: &Context, scope: &str, newest: &[(String, String)]) -> Result<(), ApiError> {
    for (mailbox, up_to) in newest {
        items::purge(&*ctx.store, scope, mailbox, up_to).await?;
    }
    let options = search::compact::Options {
        force: true,
        grace_ms: Some(0),
    };
    let now = ctx.clock.now().timestamp_millis();
    search::compact::compact(&*ctx.store, &*ctx.blobs, scope, now, options).await?;
    Ok(())
}
