//! Where a mailbox's stored mail lives, so removal can delete all of it.
//!
//! Items: `MSG#<address>/<sort key>` message rows of a mailbox. Blobs:
//! `mail/<address>/...` raw messages and attachments.

use crate::context::Context;
use crate::error::ApiError;
use crate::store::Query;

pub fn rows_partition(address: &str) -> String {
    format!("MSG#{address}")
}

pub fn blob_prefix(address: &str) -> String {
    format!("mail/{address}/")
}

/// Permanently deletes a mailbox's stored mail: every row, then every blob.
pub async fn purge_mailbox(ctx: &Context, address: &str) -> Result<usize, ApiError> {
    let mut deleted = 0;
    loop {
        let page = ctx
            .store
            .query(&Query::partition(rows_partition(address)).limit(200))
            .await?;
        if page.items.is_empty() {
            break;
        }
        for row in &page.items {
            if let Some(key) = crate::store::key_of(row) {
                ctx.store.delete(&key, None).await?;
                deleted += 1;
            }
        }
    }
    let blobs = ctx
        .blobs
        .list(&blob_prefix(address))
        .await
        .map_err(|e| ApiError::internal(e.to_string()))?;
    for key in blobs {
        ctx.blobs
            .delete(&key)
            .await
            .map_err(|e| ApiError::internal(e.to_string()))?;
        deleted += 1;
    }
    Ok(deleted)
}
