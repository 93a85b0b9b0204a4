//! GET /attachment and GET /inbox/attachment: one stored file of a message.

use super::fields::*;
use super::scope::*;
use crate::error::{self, ApiError};
use crate::service::mail_store::{self, Direction};
use crate::service::{caller::Call, caller::Download};
use crate::validate::Fields;
use crate::values::Bounded;
use crate::values::{EmailAddress, Inline, RowId, StoredMessageId};

// ---------------------------------------------------------- GET /attachment

crate::input! {
    pub struct AttachmentQuery {
        /// The message's id; wins over messageId.
        pub id: Option<RowId> = error::INBOX_ID_INVALID,
        pub message_id: Option<StoredMessageId> = error::INBOX_MESSAGE_ID_INVALID,
        /// Spec 4.4: 0 to 2 (GET /inbox/attachment serves every file).
        pub index: Bounded<0, MAX_SPEC_ATTACHMENT_INDEX> = (error::ATTACHMENT_INDEX_INVALID, error::ATTACHMENT_INDEX_INVALID),
        /// inbound (default), or outbound for a threaded send's files.
        pub r#box: Option<Direction> = error::ATTACHMENT_BOX_INVALID,
        /// `inline`: shown in the browser, for raster images, PDF and plain text.
        pub disposition: Option<Inline> = error::ATTACHMENT_DISPOSITION_INVALID,
        /// Agent key and operators only: an address at the service domain.
        pub mailbox: Option<EmailAddress> = error::INBOX_MAILBOX_INVALID,
    }
    check AttachmentQuery::named;
}

// ---------------------------------------------------- GET /inbox/attachment

crate::input! {
    /// GET /attachment's query, but any file a message keeps: a received
    /// message keeps up to 20, where the spec's route bounds index at 2.
    pub struct FileQuery {
        /// The message's id; wins over messageId.
        pub id: Option<RowId> = error::INBOX_ID_INVALID,
        pub message_id: Option<StoredMessageId> = error::INBOX_MESSAGE_ID_INVALID,
        pub index: Bounded<0, MAX_ATTACHMENT_INDEX> = (error::FILE_INDEX_INVALID, error::FILE_INDEX_INVALID),
        /// inbound (default), or outbound for a threaded send's files.
        pub r#box: Option<Direction> = error::ATTACHMENT_BOX_INVALID,
        /// `inline`: shown in the browser, for raster images, PDF and plain text.
        pub disposition: Option<Inline> = error::ATTACHMENT_DISPOSITION_INVALID,
        /// Agent key and operators only: an address at the service domain.
        pub mailbox: Option<EmailAddress> = error::INBOX_MAILBOX_INVALID,
    }
    check FileQuery::named;
}

impl AttachmentQuery {
    fn named(self, _: &Fields) -> Result<Self, ApiError> {
        one_message_named(&self.id, &self.message_id)?;
        Ok(self)
    }
}

impl FileQuery {
    fn named(self, _: &Fields) -> Result<Self, ApiError> {
        one_message_named(&self.id, &self.message_id)?;
        Ok(self)
    }
}

impl From<AttachmentQuery> for FileQuery {
    fn from(q: AttachmentQuery) -> Self {
        FileQuery {
            id: q.id,
            message_id: q.message_id,
            index: q.index.widen(),
            r#box: q.r#box,
            disposition: q.disposition,
            mailbox: q.mailbox,
        }
    }
}

/// Types a browser shows without running anything: raster images, PDF and
/// plain text. Everything else is a download, whatever was asked.
fn previewable(content_type: &str) -> bool {
    let essence = content_type
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    matches!(
        essence.as_str(),
        "image/png" | "image/jpeg" | "image/gif" | "image/webp" | "image/bmp" | "application/pdf" | "text/plain"
    )
}

/// GET /attachment: files 0 to 2, as the spec bounds them.
pub async fn attachment(call: &Call<'_>, input: AttachmentQuery) -> Result<Download, ApiError> {
    file(call, input.into()).await
}

/// GET /inbox/attachment: any file a message keeps.
pub async fn file(call: &Call<'_>, input: FileQuery) -> Result<Download, ApiError> {
    let scope = scope(call, input.mailbox.as_deref())?;
    let direction = input.r#box.unwrap_or(Direction::Inbound);
    let row = match (input.id, input.message_id) {
        (Some(id), _) => mail_store::by_id(call.ctx, &scope, &id).await?,
        (None, Some(mid)) => {
            mail_store::by_message_id(call.ctx, &scope, &mid, Some(direction), |p| p.readable_by(call.caller)).await?
        }
        (None, None) => None,
    };
    let row = row
        .filter(|r| r.direction == direction && r.readable_by(call.caller))
        .ok_or(error::NOT_FOUND)?;
    let index = input.index.get() as usize;
    let meta = row
        .attachments
        .iter()
        .find(|a| a.index == index)
        .ok_or(error::NOT_FOUND)?;
    let key = format!("{}/att-{index}", row.blob_prefix);
    let bytes = call
        .ctx
        .blobs
        .get(&key)
        .await
        .map_err(|e| ApiError::internal(e.to_string()))?
        .ok_or(error::NOT_FOUND)?;
    Ok(Download {
        content_type: meta.content_type.clone(),
        // Mail filed before names lost their bidirectional controls.
        filename: crate::mail::shown::neutral(&meta.filename).into_owned(),
        bytes,
        inline: input.disposition.is_some() && previewable(&meta.content_type),
    })
}
