//! A message's body: the preview and the head kept on the row, the blobs
//! beside it under `mail/<mailbox>/`, and the body read back whole.

use super::{PREVIEW_CHARS, Row};
use crate::context::Context;
use crate::error::ApiError;

pub fn preview(text: &str) -> String {
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

pub(super) fn blob_err(e: crate::blob::BlobError) -> ApiError {
    ApiError::internal(e.to_string())
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
    use super::super::TEXT_ON_ROW;
    use super::*;

    #[test]
    fn a_long_body_is_cut_on_a_character_boundary() {
        let text = "é".repeat(TEXT_ON_ROW);
        let cut = head(&text, TEXT_ON_ROW);
        assert!(cut.len() <= TEXT_ON_ROW);
        assert!(cut.chars().all(|c| c == 'é'));
    }
}
