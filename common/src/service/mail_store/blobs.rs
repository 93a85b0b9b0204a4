//! A message's body: the preview and the head kept on the row, the blobs
//! beside it under `mail/<mailbox>/`, and the body read back whole.

use super::limits::{MAX_SPEC_ATTACHMENT_INDEX, PREVIEW_CHARS, TEXT_ON_ROW};
use super::shapes::{AttachmentInfo, NewMessage, Row};
use crate::context::Context;
use crate::error::ApiError;

pub fn preview(text: &str) -> String {
    let text = crate::mail::shown::neutral(text);
    let flat: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    flat.chars().take(PREVIEW_CHARS).collect()
}

pub(super) fn head(text: &str, bytes: usize) -> &str {
    if text.len() <= bytes {
        return text;
    }
    let mut end = bytes;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

pub fn blob_prefix(address: &str) -> String {
    format!("mail/{address}/")
}

fn blob_err(e: crate::blob::BlobError) -> ApiError {
    ApiError::internal(e.to_string())
}

/// What [`put_blobs`] stored beside the row.
pub(super) struct StoredBody {
    pub attachments: Vec<AttachmentInfo>,
    /// The text was longer than the row keeps: it is the blob `body.txt`.
    pub text_in_blob: bool,
}

/// Stores a message's attachments (`att-<index>`), its text when the row
/// cannot hold it all (`body.txt`) and its HTML (`body.html`) under `prefix`.
pub(super) async fn put_blobs(
    ctx: &Context,
    m: &NewMessage<'_>,
    id: &str,
    prefix: &str,
) -> Result<StoredBody, ApiError> {
    let mut attachments = Vec::new();
    for (index, (filename, content_type, bytes)) in m.attachments.iter().enumerate() {
        let key = format!("{prefix}/att-{index}");
        ctx.blobs
            .put(&key, bytes.to_vec(), content_type)
            .await
            .map_err(blob_err)?;
        attachments.push(AttachmentInfo {
            index,
            filename: filename.to_string(),
            content_type: content_type.to_string(),
            size: bytes.len(),
            download_path: download_path(m, id, index),
            content_id: m.content_ids.get(index).copied().flatten().map(String::from),
        });
    }
    let text_in_blob = m.text.len() > TEXT_ON_ROW;
    if text_in_blob {
        let key = format!("{prefix}/body.txt");
        ctx.blobs
            .put(&key, m.text.as_bytes().to_vec(), "text/plain; charset=utf-8")
            .await
            .map_err(blob_err)?;
    }
    if let Some(html) = m.html {
        let key = format!("{prefix}/body.html");
        ctx.blobs
            .put(&key, html.as_bytes().to_vec(), "text/html; charset=utf-8")
            .await
            .map_err(blob_err)?;
    }
    Ok(StoredBody {
        attachments,
        text_in_blob,
    })
}

/// Where an attachment of the row `id` is served: GET /attachment for the
/// spec's indexes, GET /inbox/attachment for a received message's later files.
fn download_path(m: &NewMessage<'_>, id: &str, index: usize) -> String {
    let route = match index <= MAX_SPEC_ATTACHMENT_INDEX {
        true => "/attachment",
        false => "/inbox/attachment",
    };
    let mut path = format!("{route}?id={id}&index={index}");
    if m.direction == super::shapes::Direction::Outbound {
        path.push_str("&box=outbound");
    }
    if let Some(address) = m.scope.strip_prefix("mailbox:") {
        path.push_str(&format!("&mailbox={address}"));
    }
    path
}

/// The whole text of a row's body (a blob read when it is over 4 KB).
pub async fn whole_text(ctx: &Context, row: &Row) -> Result<String, ApiError> {
    if !row.text_in_blob {
        return Ok(row.text.clone());
    }
    let key = format!("{}/body.txt", row.blob_prefix);
    let bytes = ctx.blobs.get(&key).await.map_err(blob_err)?;
    Ok(String::from_utf8_lossy(&bytes.unwrap_or_default()).into_owned())
}

/// The body of a row: the text (whole) and the HTML when it had some.
pub async fn body(ctx: &Context, row: &Row) -> Result<(String, Option<String>), ApiError> {
    let blob = |name: &'static str| {
        let key = format!("{}/{name}", row.blob_prefix);
        async move {
            let bytes = ctx.blobs.get(&key).await.map_err(blob_err)?;
            Ok::<_, ApiError>(String::from_utf8_lossy(&bytes.unwrap_or_default()).into_owned())
        }
    };
    let text = if row.text_in_blob {
        blob("body.txt").await?
    } else {
        row.text.clone()
    };
    let html = if row.has_html {
        Some(blob("body.html").await?)
    } else {
        None
    };
    Ok((text, html))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_body_is_cut_on_a_character_boundary() {
        let text = "é".repeat(TEXT_ON_ROW);
        let cut = head(&text, TEXT_ON_ROW);
        assert!(cut.len() <= TEXT_ON_ROW);
        assert!(cut.chars().all(|c| c == 'é'));
    }
}
