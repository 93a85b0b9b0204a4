//! What stored mail tells the search index (`crate::search`), written in the
//! same transactions as the rows: a filed message's words, a changed folder
//! or unread flag, a move into spam and back, a deletion for good, and a
//! purge. Quarantined mail (spoofed, refused by a list) is never indexed;
//! spam is, in its own folder (`in:spam`).

use std::collections::BTreeMap;

use super::shapes::{Folder, NewMessage, Quarantine, Row};
use crate::context::Context;
use crate::error::ApiError;
use crate::search::{self, doc, items};
use crate::store::{Cond, Key, StoreError, Write};
use crate::values::Page;

fn folder(f: Folder) -> search::Folder {
    match f {
        Folder::Inbox => search::Folder::Inbox,
        Folder::Archive => search::Folder::Archive,
        Folder::Trash => search::Folder::Trash,
    }
}

/// Where a row is, for the index: spam in its folder, never unread.
fn state_of(row: &Row) -> search::State {
    match &row.quarantine {
        Some(_) => search::State::new(search::Folder::Spam, false),
        None => search::State::new(folder(row.folder()), row.unread),
    }
}

/// Whether the index holds this row: all but the quarantine (spam included).
fn indexed(row: &Row) -> bool {
    row.quarantine.as_ref().is_none_or(|q| q.reason == Quarantine::Spam)
}

/// The display names written beside a message's From, To and Cc.
struct People {
    from: Vec<String>,
    to: Vec<String>,
    cc: Vec<String>,
}

impl People {
    fn of(from_name: Option<&str>, to: &[String], cc: &[String], names: &BTreeMap<String, String>) -> People {
        let named = |addresses: &[String]| addresses.iter().filter_map(|a| names.get(a).cloned()).collect();
        People {
            from: from_name.map(str::to_string).into_iter().collect(),
            to: named(to),
            cc: named(cc),
        }
    }
}

/// The index item of a message being filed (none when it is quarantined;
/// spam is indexed in its folder).
pub(super) fn filing_write(scope: &str, m: &NewMessage<'_>, row: &Row) -> Option<Write> {
    if !indexed(row) {
        return None;
    }
    let people = People::of(m.named.from_name, m.to, m.named.cc, &m.named.names);
    let texts = doc::texts(&search::Message {
        subject: m.subject,
        from: m.from,
        from_names: &people.from,
        to: m.to,
        to_names: &people.to,
        cc: m.named.cc,
        cc_names: &people.cc,
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
    let mut doc = search::Doc::new(&row.id, &row.mailbox, flags, state_of(row), &texts);
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

/// A row moved with its unread flag changed at once, for the index.
pub(super) fn moved_state(scope: &str, row: &Row, to: Folder, unread: bool) -> Write {
    items::state_write(scope, &row.id, folder(to), unread)
}

/// A row deleted for good, for the index: no answer counts it from then on.
pub(super) fn gone_write(scope: &str, row: &Row) -> Write {
    items::gone_write(scope, &row.id)
}

/// A row reported spam, for the index: in the spam folder, read.
pub(super) fn spam_write(scope: &str, row: &Row) -> Write {
    items::state_write(scope, &row.id, search::Folder::Spam, false)
}

/// A message the index found whose row is gone (spam past its 30 days, or
/// mail deleted before deletions told the index) is marked gone there, so
/// later counts leave it out: on condition, in one transaction, that no row
/// holds it (a row moving between the inbox and spam meanwhile stays).
pub async fn forget_gone(ctx: &Context, scope: &str, id: &str) -> Result<(), ApiError> {
    let outbound = super::ids::direction_of(id) == super::shapes::Direction::Outbound;
    let mut writes = vec![Write::Check {
        key: Key::new(crate::keys::mail_partition(scope, outbound), id),
        cond: Cond::NotExists,
    }];
    if !outbound {
        let now = ctx.clock.now().timestamp();
        writes.push(Write::Check {
            key: Key::new(crate::keys::spam_partition(scope), id),
            cond: Cond::Or(vec![Cond::NotExists, Cond::Le("ttl".into(), now)]),
        });
    }
    writes.push(items::gone_write(scope, id));
    match ctx.store.transact(writes).await {
        Ok(()) | Err(StoreError::ConditionFailed) => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// A spam row reported not spam, for the index: in the inbox, unread. A
/// row the index lacks (spam filed before spam was indexed) is written
/// whole, its words read back from its body.
pub(super) async fn back_from_spam_write(ctx: &Context, scope: &str, row: &Row) -> Result<Write, ApiError> {
    for _ in 0..3 {
        let Some(loaded) = search::load::load(&*ctx.store, &*ctx.blobs, scope).await? else {
            continue;
        };
        if loaded.views.iter().any(|v| v.head.find(&row.id).is_some()) {
            return Ok(items::state_write(scope, &row.id, search::Folder::Inbox, true));
        }
        let doc = doc_of_row(ctx, row, search::State::new(search::Folder::Inbox, true)).await?;
        return Ok(match items::filing_write(scope, &doc) {
            // Nothing else writes it: the row is still in spam, where no
            // backfill reads.
            Write::Put { item, .. } => Write::Put { item, cond: None },
            other => other,
        });
    }
    Err(ApiError::internal("the search index changed under every read"))
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

/// Rows of each direction one backfill step reads.
const BACKFILL_PAGE: usize = 200;

/// The index's message of a stored row (mail filed before the index
/// existed): its whole body read back.
async fn doc_of_row(ctx: &Context, row: &Row, state: search::State) -> Result<search::Doc, ApiError> {
    let (text, html) = super::blobs::body(ctx, row).await?;
    let people = People::of(row.from_name.as_deref(), &row.to, &row.cc, &row.names);
    let texts = doc::texts(&search::Message {
        subject: &row.subject,
        from: &row.from,
        from_names: &people.from,
        to: &row.to,
        to_names: &people.to,
        cc: &row.cc,
        cc_names: &people.cc,
        text: &text,
        html: html.as_deref(),
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
    let mut doc = search::Doc::new(&row.id, &row.mailbox, flags, state, &texts);
    doc.fit(items::MAX_PACKED);
    Ok(doc)
}

/// One step of indexing the mail a scope held before its index existed: a
/// page of each direction's rows, oldest first, those the index lacks
/// written as fresh messages. Returns whether every row is indexed; if not,
/// the scope is flagged due for the next step.
pub async fn backfill(ctx: &Context, scope: &str) -> Result<bool, ApiError> {
    let store = &*ctx.store;
    let now = ctx.clock.now().timestamp_millis();
    let stored = items::read(store, scope).await?;
    if stored.backfill.done {
        return Ok(true);
    }
    let Some(loaded) = search::load::load_from(&*ctx.blobs, scope, stored).await? else {
        items::flag_due(store, scope, now).await?;
        return Ok(false);
    };
    let mut progress = loaded.stored.backfill.clone();
    let in_index = |id: &str| loaded.views.iter().any(|v| v.head.find(id).is_some());
    for outbound in [false, true] {
        let after = if outbound {
            &mut progress.after_out
        } else {
            &mut progress.after_in
        };
        let pk = crate::keys::mail_partition(scope, outbound);
        let Page {
            items: rows,
            next_cursor: next,
        } = super::pages::page::<Row>(ctx, pk, false, after.as_deref(), BACKFILL_PAGE).await?;
        let mut writes = Vec::new();
        for row in rows.iter().filter(|r| !in_index(&r.id) && indexed(r)) {
            let doc = doc_of_row(ctx, row, state_of(row)).await?;
            // A filing of the same row cannot race this one: its row is
            // already stored, and with it its index item.
            if let Write::Put { item, .. } = items::filing_write(scope, &doc) {
                writes.push(Write::Put { item, cond: None });
            }
        }
        for chunk in writes.chunks(25) {
            store.transact(chunk.to_vec()).await?;
        }
        if let Some(last) = rows.last() {
            *after = Some(last.id.clone());
        }
        if next.is_some() {
            items::save_backfill(store, scope, &progress).await?;
            items::flag_due(store, scope, now).await?;
            return Ok(false);
        }
    }
    progress.done = true;
    items::save_backfill(store, scope, &progress).await?;
    Ok(true)
}

/// Whether every row of a scope is indexed, as far as a search can tell:
/// none older than the oldest message the index holds. When so, it is
/// recorded once; if not, the poller is asked to index them.
pub async fn backfilled(ctx: &Context, scope: &str, oldest_indexed: Option<&str>) -> Result<bool, ApiError> {
    for outbound in [false, true] {
        let pk = crate::keys::mail_partition(scope, outbound);
        let Page { items: rows, .. } = super::pages::page::<Row>(ctx, pk, false, None, 1).await?;
        if rows
            .first()
            .is_some_and(|r| oldest_indexed.is_none_or(|o| r.id.as_str() < o))
        {
            items::flag_due(&*ctx.store, scope, ctx.clock.now().timestamp_millis()).await?;
            return Ok(false);
        }
    }
    let done = items::Backfill {
        done: true,
        ..items::Backfill::default()
    };
    items::save_backfill(&*ctx.store, scope, &done).await?;
    Ok(true)
}
