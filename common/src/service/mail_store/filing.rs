//! Filing a message: its blobs, then its row's copies and its thread's
//! summary in one conditional transaction, idempotent on its Message-ID.

use sha2::{Digest, Sha256};

use super::blobs::{StoredBody, head, put_blobs};
use super::blobs::{blob_prefix, preview};
use super::ids::{new_id, root_of, thread_id};
use super::limits::{MAX_PARTICIPANTS, MAX_TO, RETRIES, TEXT_ON_ROW, backoff};
use super::shapes::{Direction, Folder, NewMessage, QUARANTINE_DAYS, Quarantined, Row, RowRef, Thread};
use crate::clock::iso;
use crate::context::Context;
use crate::error::ApiError;
use crate::keys;
use crate::store::{Cond, Query, StoreError, StoreExt, Write, item, record};

/// What filing finds already there for a message's Message-ID.
enum Held {
    Nothing,
    /// The same message (same digest), or one filed before digests were kept.
    Same,
    /// A different message holds the Message-ID; this one is filed beside it.
    Other,
}

async fn held(ctx: &Context, m: &NewMessage<'_>) -> Result<Held, ApiError> {
    let outbound = m.direction == Direction::Outbound;
    let first = ctx
        .store
        .read::<RowRef>(&keys::message_id(m.scope, m.message_id, m.mailbox, outbound))
        .await?;
    let Some(first) = first else {
        return Ok(Held::Nothing);
    };
    let digest = m.digest.unwrap_or_default();
    if first.digest.is_empty() || first.digest == digest {
        return Ok(Held::Same);
    }
    let beside = keys::conflicting_message_id(m.scope, m.message_id, m.mailbox, digest);
    Ok(match ctx.store.get(&beside).await? {
        Some(_) => Held::Same,
        None => Held::Other,
    })
}

/// The thread a message belongs to: the root's, or the thread of a message it
/// names that this mailbox holds, or a new one.
async fn thread_of(ctx: &Context, m: &NewMessage<'_>) -> Result<(String, Option<Thread>), ApiError> {
    let root = thread_id(m.mailbox, root_of(m.message_id, m.in_reply_to, m.references));
    if let Some(thread) = ctx.store.read::<Thread>(&keys::thread_summary(m.scope, &root)).await? {
        return Ok((root, Some(thread)));
    }
    // A conversation whose first message named no References: look up, newest
    // first, a few of the messages it names.
    let named = m.in_reply_to.iter().chain(m.references.iter().rev()).take(5);
    for id in named {
        let query = Query::partition(keys::message_ids_of(m.scope))
            .prefix(keys::message_id_prefix(id, Some(m.mailbox)))
            .limit(1);
        if let Some(found) = ctx.store.query(&query).await?.items.into_iter().next() {
            let row: RowRef = record(found)?;
            let thread = ctx
                .store
                .read::<Thread>(&keys::thread_summary(m.scope, &row.thread_id))
                .await?;
            return Ok((row.thread_id, thread));
        }
    }
    Ok((root, None))
}

/// Files a message into its scope: blobs first, then every item in one
/// transaction. Idempotent on (mailbox, Message-ID, direction): `Ok(None)`
/// when it is already there, and also when `only_on_existing_thread` finds no
/// thread. The blobs' keys come from the Message-ID, not the attempt: an
/// attempt cut short between its blobs and its transaction leaves nothing the
/// next attempt does not write again, and a duplicate adds no blob.
pub async fn file(ctx: &Context, m: &NewMessage<'_>) -> Result<Option<Row>, ApiError> {
    let conflict = match held(ctx, m).await? {
        Held::Same => return Ok(None),
        Held::Nothing => false,
        Held::Other => true,
    };
    // A quarantined row joins no thread: its id is the one it would have.
    let (thread_id, existing) = match m.quarantine {
        Some(_) => (
            thread_id(m.mailbox, root_of(m.message_id, m.in_reply_to, m.references)),
            None,
        ),
        None => thread_of(ctx, m).await?,
    };
    if m.only_on_existing_thread && existing.is_none() {
        return Ok(None);
    }
    // One reading of the clock: the row's id, its ingestedAt and its
    // thread's lastActivity name the same millisecond.
    let now = ctx.clock.now();
    let ms = now.timestamp_millis();
    let id = new_id(ms, m.direction);
    let prefix = blobs_of(m);
    let body = put_blobs(ctx, m, &id, &prefix).await?;
    let row = new_row(ctx, m, now, thread_id, id, prefix, body, conflict);
    index(ctx, m, row, existing, ms).await
}

/// Where a message's blobs go: under its mailbox's `mail/<mailbox>/`, 32 hex
/// characters of its direction, Message-ID and digest, so a retry writes the
/// same keys and two different messages under one Message-ID never share.
fn blobs_of(m: &NewMessage<'_>) -> String {
    let dir = if m.direction == Direction::Outbound {
        "out"
    } else {
        "in"
    };
    let digest = m.digest.unwrap_or_default();
    let key = hex::encode(Sha256::digest(format!("{dir}\n{}\n{digest}", m.message_id)));
    format!("{}{}", blob_prefix(m.mailbox), &key[..32])
}

/// The row a message is filed as, its blobs already stored.
#[allow(clippy::too_many_arguments)]
fn new_row(
    ctx: &Context,
    m: &NewMessage<'_>,
    now: chrono::DateTime<chrono::Utc>,
    thread_id: String,
    id: String,
    blob_prefix: String,
    body: StoredBody,
    conflict: bool,
) -> Row {
    let outbound = m.direction == Direction::Outbound;
    let quarantine = m.quarantine.map(|reason| Quarantined { reason, at: iso(now) });
    let kept = quarantine.is_some();
    Row {
        id,
        message_id: m.message_id.to_string(),
        mailbox: m.mailbox.to_string(),
        direction: m.direction,
        from: m.from.to_string(),
        to: m.to.iter().take(MAX_TO).cloned().collect(),
        subject: m.subject.to_string(),
        preview: preview(m.text),
        date: m.date.clone(),
        ingested_at: iso(now),
        // A quarantined row counts in no unread count and sits in no folder.
        unread: !outbound && !kept,
        folder: (!outbound && !kept).then_some(Folder::Inbox),
        source: m.source.to_string(),
        thread_id,
        attachments: body.attachments,
        blob_prefix,
        text: head(m.text, TEXT_ON_ROW).to_string(),
        text_in_blob: body.text_in_blob,
        has_html: m.html.is_some(),
        digest: m.digest.unwrap_or_default().to_string(),
        message_id_conflict: conflict,
        delivery: m.delivery.map(str::to_string),
        authentication: m.authentication.cloned(),
        spam: m.spam.cloned(),
        raw: m.raw.map(str::to_string),
        ttl: kept.then(|| now.timestamp() + QUARANTINE_DAYS * 86_400),
        quarantine,
        // What the service mails an owner comes from its noreply address; a
        // stranger who forges that From only hides their mail from agents.
        owner_only: !outbound && from_the_service(ctx, m.from),
        from_name: m.named.from_name.map(str::to_string),
        cc: m.named.cc.iter().take(MAX_TO).cloned().collect(),
        bcc: m.named.bcc.iter().take(MAX_TO).cloned().collect(),
        reply_to: m.named.reply_to.iter().take(MAX_TO).cloned().collect(),
        names: m.named.names.clone(),
        references: kept_references(m),
    }
}

/// What a reply to this message carries on in its References: the
/// message's own References (else its In-Reply-To), the first and the
/// newest kept when there are more than a reply may carry beside this
/// message's own id (RFC 5322 3.6.4).
fn kept_references(m: &NewMessage<'_>) -> Vec<String> {
    let chain = if m.references.is_empty() {
        m.in_reply_to
    } else {
        m.references
    };
    let room = crate::values::MAX_REFERENCES - 1;
    if chain.len() <= room {
        return chain.to_vec();
    }
    let mut kept = vec![chain[0].clone()];
    kept.extend_from_slice(&chain[chain.len() - (room - 1)..]);
    kept
}

/// Whether `from` is the service's own noreply address (any case).
fn from_the_service(ctx: &Context, from: &str) -> bool {
    from.rsplit_once('@').is_some_and(|(local, domain)| {
        local.eq_ignore_ascii_case("noreply") && domain.eq_ignore_ascii_case(ctx.config.service_domain.as_str())
    })
}

/// Writes the row, its pointers and its thread's summary, the row and the
/// summary in one transaction, against the summary as last read: a lost
/// race reads it again, and a race on the Message-ID finds a duplicate
/// (`Ok(None)`) or files it beside.
async fn index(
    ctx: &Context,
    m: &NewMessage<'_>,
    mut row: Row,
    mut existing: Option<Thread>,
    ms: i64,
) -> Result<Option<Row>, ApiError> {
    // Searchable as soon as it is listed: its words go in the same transaction.
    let searchable = super::searchable::filing_write(m.scope, m, &row);
    // The pointers that list it go first, each a plain write at half a
    // transaction's cost: until the row is there they name nothing a read
    // answers with.
    let listing = row.listing_pointers(m.scope);
    let puts = listing.iter().map(|key| ctx.store.put(row.pointer(key), None));
    futures::future::try_join_all(puts).await?;
    let filed = file_row(ctx, m, &mut row, &mut existing, searchable, ms).await;
    if !matches!(filed, Ok(true)) {
        // A duplicate, or a failure: the pointers name no row of theirs.
        for key in &listing {
            if let Err(e) = ctx.store.delete(key, None).await {
                tracing::warn!(error = %e, "a pointer to a row never filed stays, naming nothing");
            }
        }
    }
    Ok(filed?.then_some(row))
}

/// The filing's transaction, tried again against the summary as it now is
/// when it lost a race; `Ok(false)` when the Message-ID holds the same
/// message already.
async fn file_row(
    ctx: &Context,
    m: &NewMessage<'_>,
    row: &mut Row,
    existing: &mut Option<Thread>,
    searchable: Option<Write>,
    ms: i64,
) -> Result<bool, ApiError> {
    for _ in 0..RETRIES {
        let mut writes = filing_writes(m.scope, row, existing.as_ref(), ms);
        writes.extend(searchable.iter().cloned());
        writes.extend(m.also.iter().cloned());
        match ctx.store.transact(writes).await {
            Ok(()) => {
                drop_list_copy(ctx, m.scope, row, existing.as_ref(), ms).await;
                return Ok(true);
            }
            Err(StoreError::ConditionFailed) => {
                // Another filing of this Message-ID won the race: the same
                // message is a duplicate; a different one goes beside it.
                match held(ctx, m).await? {
                    Held::Same => return Ok(false),
                    Held::Other if !row.message_id_conflict => {
                        row.message_id_conflict = true;
                        continue;
                    }
                    _ => {}
                }
                // The thread changed meanwhile: file against its new summary.
                *existing = ctx
                    .store
                    .read::<Thread>(&keys::thread_summary(m.scope, &row.thread_id))
                    .await?;
                backoff().await;
            }
            Err(e) => return Err(e.into()),
        }
    }
    // Many of one thread's messages filed at once: the poller tries this one
    // again alone.
    Err(crate::error::REQUEST_BUSY.into())
}

/// The row, its Message-ID's pointer, and its thread's summary and list
/// copy: at most 4 writes (a quarantined row and its pointer alone), before
/// the message's own `also`. The pointers that list the row are the caller's
/// to write, and the list copy it replaces is deleted after
/// ([`drop_list_copy`]).
pub(super) fn filing_writes(scope: &str, row: &Row, existing: Option<&Thread>, ms: i64) -> Vec<Write> {
    let by_message_id = row.pointers(scope).swap_remove(0);
    let mut writes = vec![
        Write::Put {
            item: item(&row.home(scope), row),
            cond: Some(Cond::NotExists),
        },
        Write::Put {
            item: row.pointer(&by_message_id),
            cond: Some(Cond::NotExists),
        },
    ];
    if let Some(kept) = &row.quarantine {
        // Spam is in IMAP's Junk: the mail host moves its copy there.
        if kept.reason == super::shapes::Quarantine::Spam {
            writes.push(super::sync_marks::message_mark(scope, row, ms));
        }
        return writes;
    }
    let thread = summary_with(row, existing, ms);
    let summary = keys::thread_summary(scope, &row.thread_id);
    let stored = thread.stored_item(&summary);
    writes.push(Write::Put {
        item: stored.clone(),
        cond: Some(match existing {
            Some(t) => Cond::eq("version", t.version),
            None => Cond::NotExists,
        }),
    });
    writes.push(Write::Put {
        item: rekeyed(&stored, &thread.list_copy(scope)),
        cond: None,
    });
    writes
}

/// Deletes the thread's list copy the filing left behind (its place before
/// this message), after the filing's transaction: one write fewer inside it,
/// at half the cost. Until it is gone a thread list leaves it out (its
/// summary names a later place), and the first list to see it deletes it,
/// so a crash in between hides nothing and shows nothing twice.
pub(super) async fn drop_list_copy(ctx: &Context, scope: &str, row: &Row, existing: Option<&Thread>, ms: i64) {
    let Some(old) = existing.map(|t| t.list_copy(scope)) else {
        return;
    };
    if old != summary_with(row, existing, ms).list_copy(scope)
        && let Err(e) = ctx.store.delete(&old, None).await
    {
        tracing::warn!(error = %e, "a thread's old list copy stays until a list finds it");
    }
}

/// An item's copy under another key.
pub(super) fn rekeyed(item: &crate::store::Item, key: &crate::store::Key) -> crate::store::Item {
    let mut copy = item.clone();
    copy.insert(crate::store::PK.into(), key.pk.clone().into());
    copy.insert(crate::store::SK.into(), key.sk.clone().into());
    copy
}

/// The thread's summary with the row filed on it at `ms` (a new thread's
/// first). Its last activity is the later of the summary's and this filing's
/// (a row back from spam, or a function whose clock is behind, files one
/// older than the thread's), one value for the time shown and the list's order.
fn summary_with(row: &Row, existing: Option<&Thread>, ms: i64) -> Thread {
    let last_ms = existing.map_or(ms, |t| ms.max(t.last_ms));
    let last_activity = iso(chrono::DateTime::from_timestamp_millis(last_ms).unwrap_or_default());
    let mut participants = existing.map(|t| t.participants.clone()).unwrap_or_default();
    let mut names = existing.map(|t| t.names.clone()).unwrap_or_default();
    for who in std::iter::once(&row.from).chain(row.to.iter()).chain(row.cc.iter()) {
        if participants.len() < MAX_PARTICIPANTS && !who.is_empty() && !participants.contains(who) {
            participants.push(who.clone());
        }
        let name = match who == &row.from {
            true => row.from_name.as_ref(),
            false => row.names.get(who),
        };
        if let Some(name) = name.filter(|_| participants.contains(who)) {
            names.entry(who.clone()).or_insert_with(|| name.clone());
        }
    }
    let (inbound, outbound) = if row.outbound() { (0, 1) } else { (1, 0) };
    match existing {
        Some(t) => Thread {
            participants,
            names,
            last_activity,
            message_count: t.message_count + 1,
            inbound_count: t.inbound_count + inbound,
            outbound_count: t.outbound_count + outbound,
            unread_count: t.unread_count + i64::from(row.unread),
            // New inbound mail brings an archived or trashed thread back.
            folder: if row.outbound() { t.folder } else { Folder::Inbox },
            version: t.version + 1,
            last_ms,
            ..t.clone()
        },
        None => Thread {
            thread_id: row.thread_id.clone(),
            mailbox: row.mailbox.clone(),
            subject: row.subject.clone(),
            participants,
            names,
            last_activity,
            message_count: 1,
            inbound_count: inbound,
            outbound_count: outbound,
            unread_count: i64::from(row.unread),
            folder: Folder::Inbox,
            owner_only: row.owner_only,
            version: 1,
            last_ms,
        },
    }
}
