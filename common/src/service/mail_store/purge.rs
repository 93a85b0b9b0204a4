//! Removing a mailbox's stored mail for good.

use super::blobs::blob_prefix;
use super::pages::thread;
use super::shapes::{Folder, Row};
use crate::context::Context;
use crate::error::ApiError;
use crate::keys;
use crate::store::{Query, StoreExt};

/// Permanently deletes the stored mail of these mailboxes of a scope: every
/// row and its pointers, their threads and list copies, and every blob under
/// `mail/<mailbox>/`.
pub async fn purge(ctx: &Context, scope: &str, addresses: &[String]) -> Result<usize, ApiError> {
    let owned = |row: &Row| addresses.contains(&row.mailbox);
    let mut deleted = 0;
    let mut threads = std::collections::BTreeSet::new();
    let mut both = Vec::new();
    for outbound in [false, true] {
        let rows: Vec<Row> = ctx
            .store
            .all_records(Query::partition(keys::mail_partition(scope, outbound)))
            .await?;
        both.push(rows);
    }
    // Gone from search first: each mailbox up to its newest row.
    let mut newest: std::collections::BTreeMap<String, String> = Default::default();
    for row in both.iter().flatten().filter(|r| owned(r)) {
        let up_to = newest.entry(row.mailbox.clone()).or_default();
        if row.id > *up_to {
            *up_to = row.id.clone();
        }
    }
    let newest: Vec<(String, String)> = newest.into_iter().collect();
    super::searchable::purged(ctx, scope, &newest).await?;
    for rows in both {
        for row in rows.iter().filter(|r| owned(r)) {
            threads.insert(row.thread_id.clone());
            let mut keys = vec![row.home(scope)];
            keys.extend(row.pointers(scope));
            // A pointer may sit in any folder if a move was cut short.
            if !row.outbound() {
                keys.extend(Folder::ALL.iter().map(|f| row.folder_pointer(scope, *f)));
            }
            for key in &keys {
                ctx.store.delete(key, None).await?;
            }
            deleted += 1;
        }
    }
    for thread_id in threads {
        if let Some(t) = thread(ctx, scope, &thread_id).await? {
            ctx.store.delete(&t.list_copy(scope), None).await?;
        }
        deleted += ctx
            .store
            .delete_partition(&keys::thread_partition(scope, &thread_id))
            .await?;
    }
    for address in addresses {
        let blobs = ctx
            .blobs
            .list(&blob_prefix(address))
            .await
            .map_err(ApiError::internal)?;
        for key in blobs {
            ctx.blobs.delete(&key).await.map_err(ApiError::internal)?;
            deleted += 1;
        }
    }
    Ok(deleted)
}
