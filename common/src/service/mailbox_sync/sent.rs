//! Sent copies: every message the service sends from a hosted mailbox
//! through the API (REST, MCP, the web app, a held or scheduled send when it
//! goes out) is saved to that mailbox's IMAP Sent, the bytes as sent (a send
//! never carries Bcc). A mail app that submits on 587 saves its own copy, so
//! its submissions keep none here.

use crate::context::Context;
use crate::error::{self, ApiError};
use crate::service::Call;
use crate::service::Download;
use crate::service::mail_store::{blob_prefix, sync_marks};
use crate::store::Write;

use super::changes::MarkKey;

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

/// Stores a send's bytes and gives the mark to write with its delivery
/// record (none when it keeps no copy).
pub async fn prepare(
    ctx: &Context,
    source: &str,
    from: &str,
    message_id: &str,
    delivery: &str,
    raw: &[u8],
) -> Result<Option<Write>, ApiError> {
    if !keeps_copy(ctx, source, from) {
        return Ok(None);
    }
    let blob = blob_key(from, delivery);
    ctx.blobs
        .put(&blob, raw.to_vec(), "message/rfc822")
        .await
        .map_err(|e| ApiError::internal(e.to_string()))?;
    let ms = ctx.clock.now().timestamp_millis();
    Ok(Some(sync_marks::sent_mark(from, message_id, delivery, &blob, ms)))
}

/// A send the relay refused whole went nowhere: no Sent copy.
pub async fn withdraw(ctx: &Context, source: &str, from: &str, delivery: &str) {
    if !keeps_copy(ctx, source, from) {
        return;
    }
    let key = crate::store::Key::new(crate::keys::mailbox_sync_marks(), format!("s#{delivery}"));
    if let Err(e) = ctx.store.delete(&key, None).await {
        tracing::warn!(error = %e, delivery, "a refused send's Sent mark was not withdrawn");
    }
    let _ = ctx.blobs.delete(&blob_key(from, delivery)).await;
}

crate::input! {
    /// GET /mtaSentCopy.
    pub struct SentCopyQuery {
        /// The mark of the sent copy (`s#...`).
        pub mark: MarkKey = (error::MAILBOX_SYNC_INVALID, error::MAILBOX_SYNC_INVALID),
    }
}

/// The bytes of a sent copy the mail host is to save.
pub async fn sent_copy(call: &Call<'_>, q: SentCopyQuery) -> Result<Download, ApiError> {
    let ctx = call.ctx;
    let mark = sync_marks::mark(ctx, &q.mark.0).await?.ok_or(error::NOT_FOUND)?;
    let blob = mark.blob.ok_or(error::NOT_FOUND)?;
    let bytes = ctx
        .blobs
        .get(&blob)
        .await
        .map_err(|e| ApiError::internal(e.to_string()))?
        .ok_or(error::NOT_FOUND)?;
    Ok(Download {
        content_type: "message/rfc822".into(),
        filename: "sent.eml".into(),
        bytes,
        inline: false,
    })
}
