//! Marks for the mail host's IMAP side: what the store changed that Dovecot
//! has yet to take. Each is one small item in the partition `MBSYNC`, written
//! in the same transaction as the change it marks, keyed by what changed (a
//! thread, a row deleted for good, a sent copy), so many changes to one thread
//! leave one mark. A mark says only *that* something changed; the mail host
//! reads the rows' state as they are when it asks, applies it, and clears
//! the mark on condition its stamp is unchanged: a change made meanwhile
//! restamps it, and it is served again. Nothing is lost between a read and
//! a clear, and applying a state twice changes nothing.

use serde::{Deserialize, Serialize};

use super::blobs::blob_prefix;
use super::shapes::{Direction, Row};
use crate::context::Context;
use crate::error::ApiError;
use crate::keys;
use crate::store::{Cond, Key, Query, StoreError, TTL, Write, item};

/// How long a mark waits for a mail host to take it (none attached: the
/// local server alone, or a host gone for good).
pub const MARK_DAYS: i64 = 30;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MarkKind {
    /// A thread's rows changed (read flags, folders): their state as it is.
    Thread,
    /// A row deleted for good: its Message-ID and direction say which copy.
    Gone,
    /// A message sent from a hosted mailbox: its bytes go to IMAP's Sent.
    Sent,
    /// One received row's state: its read flag changed alone in its thread,
    /// or it moved into the spam folder or out of it (a message out of every
    /// thread, spam in IMAP's Junk). Read by its key, where a thread mark
    /// reads its thread's rows by a query first.
    Message,
}

/// One mark, as stored.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Mark {
    pub kind: MarkKind,
    pub mailbox: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub direction: Option<Direction>,
    /// A sent copy's bytes: this blob.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blob: Option<String>,
    /// A small sent copy's bytes, kept in the mark itself instead of a blob
    /// ([`INLINE_BYTES`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes: Option<String>,
    /// The row a `Message` mark is about.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub row_id: Option<String>,
    /// Random per write: a clear holds only while it is unchanged.
    pub stamp: String,
    /// When the change was made (epoch ms): the sync's latency counts from it.
    pub ms: i64,
}

fn stamp() -> String {
    hex::encode(rand::random::<[u8; 8]>())
}

fn put(sk: String, mark: &Mark) -> Write {
    let key = Key::new(keys::mailbox_sync_marks(), sk);
    let mut stored = item(&key, mark);
    stored.insert(TTL.into(), (mark.ms / 1000 + MARK_DAYS * 86_400).into());
    Write::Put {
        item: stored,
        cond: None,
    }
}

/// The mark of a thread whose rows changed.
pub fn thread_mark(scope: &str, mailbox: &str, thread_id: &str, ms: i64) -> Write {
    put(
        format!("t#{scope}#{thread_id}"),
        &Mark {
            kind: MarkKind::Thread,
            mailbox: mailbox.to_string(),
            scope: Some(scope.to_string()),
            thread_id: Some(thread_id.to_string()),
            message_id: None,
            direction: None,
            blob: None,
            bytes: None,
            row_id: None,
            stamp: stamp(),
            ms,
        },
    )
}

/// The mark of read flags changed in one thread, the folder unchanged: one
/// row's is that row's (a backlog of flags is one row a thread, and a page
/// of row marks reads its rows in one batch), more rows' their thread's.
pub fn flags_mark(scope: &str, rows: &[&Row], ms: i64) -> Option<Write> {
    match rows {
        [] => None,
        [row] => Some(message_mark(scope, row, ms)),
        [row, ..] => Some(thread_mark(scope, &row.mailbox, &row.thread_id, ms)),
    }
}

/// The mark of a row deleted for good.
pub fn gone_mark(scope: &str, row: &Row, ms: i64) -> Write {
    put(
        format!("d#{scope}#{}", row.id),
        &Mark {
            kind: MarkKind::Gone,
            mailbox: row.mailbox.clone(),
            scope: Some(scope.to_string()),
            thread_id: Some(row.thread_id.clone()),
            message_id: Some(row.message_id.clone()),
            direction: Some(row.direction),
            blob: None,
            bytes: None,
            row_id: None,
            stamp: stamp(),
            ms,
        },
    )
}

/// The mark of one received row: its flag, or its move into spam or out.
pub fn message_mark(scope: &str, row: &Row, ms: i64) -> Write {
    put(
        format!("m#{scope}#{}", row.id),
        &Mark {
            kind: MarkKind::Message,
            mailbox: row.mailbox.clone(),
            scope: Some(scope.to_string()),
            thread_id: None,
            message_id: Some(row.message_id.clone()),
            direction: Some(row.direction),
            blob: None,
            bytes: None,
            row_id: Some(row.id.clone()),
            stamp: stamp(),
            ms,
        },
    )
}

/// The mark of a message sent from a hosted mailbox, its bytes in the mark
/// itself or in `blob`.
fn sent_mark(mailbox: &str, message_id: &str, delivery: &str, copy: &Copy, ms: i64) -> Write {
    let (blob, bytes) = match copy {
        Copy::Blob(blob) => (Some(blob.clone()), None),
        Copy::Inline(bytes) => (None, Some(bytes.clone())),
    };
    put(
        format!("s#{delivery}"),
        &Mark {
            kind: MarkKind::Sent,
            mailbox: mailbox.to_string(),
            scope: None,
            thread_id: None,
            message_id: Some(message_id.to_string()),
            direction: Some(Direction::Outbound),
            blob,
            bytes,
            row_id: None,
            stamp: stamp(),
            ms,
        },
    )
}

/// The oldest marks first (by kind, then key), at most `limit`, after the
/// sort key `after` (a page of the last answer).
pub async fn marks(ctx: &Context, after: Option<&str>, limit: usize) -> Result<Vec<(String, Mark)>, ApiError> {
    let mut query = Query::partition(keys::mailbox_sync_marks()).limit(limit);
    if let Some(after) = after {
        query = query.between(format!("{after}\u{0}"), "~");
    }
    let page = ctx.store.query_raw(&query).await?;
    page.items
        .into_iter()
        .map(|i| Ok((i.sk.clone(), i.record::<Mark>()?)))
        .collect()
}

/// Clears a mark the mail host applied, on condition it is the one it read:
/// `Ok(false)` when a change restamped it meanwhile (it is served again).
pub async fn clear(ctx: &Context, sk: &str, stamp: &str) -> Result<bool, ApiError> {
    let key = Key::new(keys::mailbox_sync_marks(), sk);
    match ctx.store.delete(&key, Some(Cond::eq("stamp", stamp))).await {
        Ok(_) => Ok(true),
        Err(StoreError::ConditionFailed) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// Clears marks the mail host applied in one transaction (at most 100, no
/// two the same), on condition each is the one it read: `Ok(false)`, none
/// cleared, when any was restamped meanwhile or is gone.
pub async fn clear_all<'a>(ctx: &Context, marks: impl Iterator<Item = (&'a str, &'a str)>) -> Result<bool, ApiError> {
    let writes: Vec<Write> = marks
        .map(|(sk, stamp)| Write::Delete {
            key: Key::new(keys::mailbox_sync_marks(), sk),
            cond: Some(Cond::eq("stamp", stamp)),
        })
        .collect();
    if writes.is_empty() {
        return Ok(true);
    }
    match ctx.store.transact(writes).await {
        Ok(()) => Ok(true),
        Err(StoreError::ConditionFailed) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// A mark as stored, by its sort key.
pub async fn mark(ctx: &Context, sk: &str) -> Result<Option<Mark>, ApiError> {
    Ok(crate::store::StoreExt::read(&*ctx.store, &Key::new(keys::mailbox_sync_marks(), sk)).await?)
}

// ------------------------------------------------- sent copies

/// The blob that holds a send's bytes until the mail host saved them.
fn blob_key(from: &str, delivery: &str) -> String {
    format!("{}sent-copies/{delivery}.eml", blob_prefix(from))
}

/// Whether a send keeps a copy for IMAP: sent through the API (`source`
/// `api`), from a mailbox of a customer's domain (the service domain's
/// senders are the service's own: access codes, the agent key).
pub fn keeps_copy(ctx: &Context, source: &str, from: &str) -> bool {
    let domain = crate::values::email_domain(from);
    source == "api" && !domain.is_empty() && !domain.eq_ignore_ascii_case(ctx.config.service_domain.as_str())
}

/// The most bytes a sent copy keeps in its mark rather than in a blob.
/// Up to about this size the mark's extra write units (2 a KB in the send's
/// transaction, 1 a KB when the mail host clears it) cost less than the blob's
/// S3 PUT and GET ($5.40 a million, `docs/deploy.md`), and the send waits for
/// no second store beside its transaction (an S3 PUT is slower than it).
pub const INLINE_BYTES: usize = 3 * 1024;

/// Where a sent copy's bytes are kept.
enum Copy {
    Blob(String),
    /// Text (a message as built is 7-bit or UTF-8), so the item stays JSON.
    Inline(String),
}

impl Copy {
    fn of(raw: &[u8], from: &str, delivery: &str) -> Copy {
        match std::str::from_utf8(raw) {
            Ok(text) if raw.len() <= INLINE_BYTES => Copy::Inline(text.to_string()),
            _ => Copy::Blob(blob_key(from, delivery)),
        }
    }
}

/// A send's copy for IMAP's Sent: where its bytes go and the mark that
/// tells the mail host, written with its delivery record.
pub struct SentCopy {
    copy: Copy,
    delivery: String,
    pub mark: Write,
}

/// The Sent copy a send of `raw` keeps (none when it keeps none); nothing
/// stored yet but the mark's own bytes, for a small copy.
pub fn sent_copy(
    ctx: &Context,
    source: &str,
    from: &str,
    message_id: &str,
    delivery: &str,
    raw: &[u8],
) -> Option<SentCopy> {
    if !keeps_copy(ctx, source, from) {
        return None;
    }
    let copy = Copy::of(raw, from, delivery);
    let ms = ctx.clock.now().timestamp_millis();
    Some(SentCopy {
        mark: sent_mark(from, message_id, delivery, &copy, ms),
        copy,
        delivery: delivery.to_string(),
    })
}

impl SentCopy {
    /// Whether the bytes ride in the mark: nothing to store beside it.
    pub fn inline(&self) -> bool {
        matches!(self.copy, Copy::Inline(_))
    }

    /// Stores the bytes. Done beside the record's transaction, not before
    /// it, so a send waits for one storage round trip fewer; a mark whose
    /// bytes are not there yet is left for the mail host's next round
    /// (`src/mailbox_sync/down.rs`). Whether it was stored: the copy is the
    /// mail app's convenience, never a condition of the send.
    pub async fn store(&self, ctx: &Context, raw: &[u8]) -> bool {
        let Copy::Blob(blob) = &self.copy else {
            return true;
        };
        match ctx.blobs.put(blob, raw.to_vec(), "message/rfc822").await {
            Ok(()) => true,
            Err(e) => {
                tracing::warn!(error = %e, delivery = %self.delivery, "a send's IMAP Sent copy was not saved");
                false
            }
        }
    }

    /// The copy's bytes never stored after its mark was written: the mark goes.
    pub async fn unmark(&self, ctx: &Context) {
        let key = Key::new(keys::mailbox_sync_marks(), format!("s#{}", self.delivery));
        if let Err(e) = ctx.store.delete(&key, None).await {
            tracing::warn!(error = %e, delivery = %self.delivery, "a Sent mark without its bytes was not withdrawn");
        }
    }

    /// A send refused before its record was written: its stored bytes go.
    pub async fn discard(&self, ctx: &Context) {
        if let Copy::Blob(blob) = &self.copy {
            let _ = ctx.blobs.delete(blob).await;
        }
    }
}

/// A send of `raw` the relay refused whole went nowhere: no Sent copy.
pub async fn withdraw_sent(ctx: &Context, source: &str, from: &str, delivery: &str, raw: &[u8]) {
    if !keeps_copy(ctx, source, from) {
        return;
    }
    let key = Key::new(crate::keys::mailbox_sync_marks(), format!("s#{delivery}"));
    if let Err(e) = ctx.store.delete(&key, None).await {
        tracing::warn!(error = %e, delivery, "a refused send's Sent mark was not withdrawn");
    }
    if let Copy::Blob(blob) = Copy::of(raw, from, delivery) {
        let _ = ctx.blobs.delete(&blob).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_small_text_copy_rides_in_its_mark_and_any_other_in_a_blob() {
        let kept = |raw: &[u8]| match Copy::of(raw, "me@x.org", "d1") {
            Copy::Inline(text) => Some(text),
            Copy::Blob(blob) => {
                assert_eq!(blob, "mail/me@x.org/sent-copies/d1.eml");
                None
            }
        };
        let small = "Subject: Hi\r\n\r\nHello, é.\r\n";
        assert_eq!(kept(small.as_bytes()).as_deref(), Some(small));
        assert!(kept("x".repeat(INLINE_BYTES).as_bytes()).is_some());
        assert!(kept("x".repeat(INLINE_BYTES + 1).as_bytes()).is_none());
        // Bytes that are not UTF-8 would not survive the item's JSON.
        assert!(kept(b"Subject: Hi\r\n\r\n\xff\r\n").is_none());
    }
}
