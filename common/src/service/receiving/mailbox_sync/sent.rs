//! Sent copies: every message the service sends from a hosted mailbox
//! through the API (REST, MCP, the web app, a held or scheduled send when it
//! goes out) is saved to that mailbox's IMAP Sent, the bytes as sent (a send
//! never carries Bcc). A mail app that submits on 587 saves its own copy, so
//! its submissions keep none here. What a send keeps, and its mark, is
//! `mail_store::sync_marks` (the send path writes them, and must not import
//! this service).

use crate::error::{self, ApiError};
use crate::service::caller::Call;
use crate::service::caller::Download;
use crate::service::mail_store::sync_marks;

use super::changes::MarkKey;

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
    let bytes = match (mark.bytes, mark.blob) {
        (Some(inline), _) => inline.into_bytes(),
        (None, Some(blob)) => ctx
            .blobs
            .get(&blob)
            .await
            .map_err(|e| ApiError::internal(e.to_string()))?
            .ok_or(error::NOT_FOUND)?,
        (None, None) => return Err(error::NOT_FOUND.into()),
    };
    Ok(Download {
        content_type: "message/rfc822".into(),
        filename: "sent.eml".into(),
        bytes,
        inline: false,
    })
}
