//! Reading stored mail: a row by id or Message-ID, a thread's summary, the
//! rows its pointers name, and cursor pages of a partition.

use super::ids::direction_of;
use super::shapes::{Direction, Folder, Row, RowRef, Thread, readable};
use crate::context::Context;
use crate::error::ApiError;
use crate::keys;
use crate::store::{Key, Query, RawItem, StoreExt, record};
use crate::values::Page;

/// A row by id, from its direction's partition, else (an inbound id) from
/// the quarantine or the spam folder while it is kept (one batch read).
pub async fn by_id(ctx: &Context, scope: &str, id: &str) -> Result<Option<Row>, ApiError> {
    let outbound = direction_of(id) == Direction::Outbound;
    let row: Option<Row> = ctx
        .store
        .read(&Key::new(keys::mail_partition(scope, outbound), id))
        .await?;
    if row.is_some() || outbound {
        return Ok(row);
    }
    let kept = ctx
        .store
        .get_many(&[
            Key::new(keys::quarantine_partition(scope), id),
            Key::new(keys::spam_partition(scope), id),
        ])
        .await?;
    let now = ctx.clock.now().timestamp();
    match kept.into_iter().flatten().next() {
        Some(item) => Ok(Some(record::<Row>(item)?).filter(|r| !expired(r, now))),
        None => Ok(None),
    }
}

/// A quarantined row past its 30 days (the store may not have dropped it
/// yet); `now` in epoch seconds.
pub fn expired(row: &Row, now: i64) -> bool {
    row.ttl.is_some_and(|ttl| ttl <= now)
}

/// One page of a scope's quarantined rows that `keep` keeps (a scoped key's
/// mailboxes), newest first, past the cursor; rows past their 30 days are
/// left out.
pub async fn quarantined(
    ctx: &Context,
    scope: &str,
    cursor: Option<&str>,
    limit: usize,
    keep: impl Fn(&RawItem) -> bool,
) -> Result<Page<Row>, ApiError> {
    kept_page(ctx, keys::quarantine_partition(scope), cursor, limit, keep).await
}

/// [`quarantined`], of the spam folder.
pub async fn in_spam(
    ctx: &Context,
    scope: &str,
    cursor: Option<&str>,
    limit: usize,
    keep: impl Fn(&RawItem) -> bool,
) -> Result<Page<Row>, ApiError> {
    kept_page(ctx, keys::spam_partition(scope), cursor, limit, keep).await
}

async fn kept_page(
    ctx: &Context,
    pk: String,
    cursor: Option<&str>,
    limit: usize,
    keep: impl Fn(&RawItem) -> bool,
) -> Result<Page<Row>, ApiError> {
    let mut rows = page_raw_where(ctx, pk, true, cursor, limit, keep)
        .await?
        .try_map(|i| i.record::<Row>())?;
    let now = ctx.clock.now().timestamp();
    rows.items.retain(|r| !expired(r, now));
    Ok(rows)
}

/// A row by Message-ID among the copies `wanted` keeps (one Message-ID may
/// be filed in several mailboxes of a scope, and a caller may read some
/// alone), of one direction, or the inbound copy before the outbound one.
pub async fn by_message_id(
    ctx: &Context,
    scope: &str,
    message_id: &str,
    direction: Option<Direction>,
    wanted: impl Fn(&RowRef) -> bool,
) -> Result<Option<Row>, ApiError> {
    // Every copy's pointer, not the first few: the copy wanted may be in
    // any mailbox, and the first few may all be in mailboxes it is not.
    let query = Query::partition(keys::message_ids_of(scope)).prefix(keys::message_id_prefix(message_id, None));
    let mut pointers: Vec<RowRef> = ctx.store.all_records(query).await?;
    pointers.retain(|p| wanted(p));
    let rows = rows(ctx, scope, pointers).await?;
    let want = direction.unwrap_or(Direction::Inbound);
    let preferred = rows.iter().position(|r| r.direction == want);
    Ok(match (preferred, direction) {
        (Some(i), _) => rows.into_iter().nth(i),
        (None, None) => rows.into_iter().next(),
        (None, Some(_)) => None,
    })
}

/// The rows these pointers name, in their order: one batch read of their
/// homes (100 keys a request), and for inbound rows not found there one of
/// the quarantine and spam (a Message-ID's pointer follows its row there).
/// A row gone, or kept past its 30 days, is left out.
pub async fn rows(ctx: &Context, scope: &str, pointers: Vec<RowRef>) -> Result<Vec<Row>, ApiError> {
    let homes: Vec<Key> = pointers
        .iter()
        .map(|p| Key::new(keys::mail_partition(scope, p.direction == Direction::Outbound), &p.id))
        .collect();
    let mut found = read_all(ctx, &homes).await?;
    let kept: Vec<usize> = (0..pointers.len())
        .filter(|i| found[*i].is_none() && pointers[*i].direction == Direction::Inbound)
        .collect();
    if !kept.is_empty() {
        let keys: Vec<Key> = kept
            .iter()
            .flat_map(|i| {
                let id = &pointers[*i].id;
                [
                    Key::new(keys::quarantine_partition(scope), id),
                    Key::new(keys::spam_partition(scope), id),
                ]
            })
            .collect();
        let mut elsewhere = read_all(ctx, &keys).await?.into_iter();
        for i in kept {
            let (quarantined, spam) = (elsewhere.next().flatten(), elsewhere.next().flatten());
            found[i] = quarantined.or(spam);
        }
    }
    let now = ctx.clock.now().timestamp();
    let mut rows = Vec::with_capacity(found.len());
    for item in found.into_iter().flatten() {
        let row: Row = record(item)?;
        if !expired(&row, now) {
            rows.push(row);
        }
    }
    Ok(rows)
}

/// Items by key, in order, 100 keys to a request, the requests at once; a
/// key named twice is read once (a batch read refuses a key twice).
async fn read_all(ctx: &Context, keys: &[Key]) -> Result<Vec<Option<crate::store::Item>>, ApiError> {
    let mut unique: Vec<Key> = Vec::with_capacity(keys.len());
    let mut at = std::collections::HashMap::with_capacity(keys.len());
    let places: Vec<usize> = keys
        .iter()
        .map(|k| {
            *at.entry((k.pk.clone(), k.sk.clone())).or_insert_with(|| {
                unique.push(k.clone());
                unique.len() - 1
            })
        })
        .collect();
    let reads = unique.chunks(100).map(|chunk| ctx.store.get_many(chunk));
    let found: Vec<Option<crate::store::Item>> = futures::future::try_join_all(reads)
        .await?
        .into_iter()
        .flatten()
        .collect();
    Ok(places.into_iter().map(|i| found[i].clone()).collect())
}

/// A page of a thread's rows (oldest first, or newest first), past the cursor.
pub async fn thread_rows(
    ctx: &Context,
    scope: &str,
    thread_id: &str,
    newest_first: bool,
    cursor: Option<&str>,
    limit: usize,
) -> Result<Page<Row>, ApiError> {
    let Page { items, next_cursor } = page::<RowRef>(
        ctx,
        keys::thread_partition(scope, thread_id),
        newest_first,
        cursor,
        limit,
    )
    .await?;
    Ok(Page {
        items: rows(ctx, scope, items).await?,
        next_cursor,
    })
}

/// Every row of a thread, oldest first.
pub async fn all_thread_rows(ctx: &Context, scope: &str, thread_id: &str) -> Result<Vec<Row>, ApiError> {
    let pointers: Vec<RowRef> = ctx
        .store
        .all_records(Query::partition(keys::thread_partition(scope, thread_id)).between("0", "~"))
        .await?;
    rows(ctx, scope, pointers).await
}

/// One page of a folder's received rows, newest first, each the row's own
/// stored text: the folder's pointers that `keep` keeps (a scoped key's
/// mailboxes), then their rows in one batch read. A row moved away between
/// the two reads is left out.
pub async fn folder_page_raw(
    ctx: &Context,
    scope: &str,
    folder: Folder,
    cursor: Option<&str>,
    limit: usize,
    keep: impl Fn(&RawItem) -> bool,
) -> Result<Page<RawItem>, ApiError> {
    let pk = keys::folder_partition(scope, folder.as_str());
    let Page { items, next_cursor } = page_raw_where(ctx, pk, true, cursor, limit, keep).await?;
    let homes: Vec<Key> = items
        .iter()
        .map(|i| Key::new(keys::mail_partition(scope, false), &i.sk))
        .collect();
    let found = read_all(ctx, &homes).await?;
    let mut rows = Vec::with_capacity(homes.len());
    for (key, item) in homes.into_iter().zip(found) {
        let Some(item) = item else { continue };
        if item
            .get("folder")
            .and_then(serde_json::Value::as_str)
            .unwrap_or("inbox")
            != folder.as_str()
        {
            continue;
        }
        let json = serde_json::to_vec(&item).map_err(ApiError::internal)?;
        rows.push(RawItem { sk: key.sk, json });
    }
    Ok(Page {
        items: rows,
        next_cursor,
    })
}

pub async fn thread(ctx: &Context, scope: &str, thread_id: &str) -> Result<Option<Thread>, ApiError> {
    Ok(ctx.store.read(&keys::thread_summary(scope, thread_id)).await?)
}

/// The summaries of threads a folder's list names, in its order: a list
/// copy is written when its thread's place in the list changes, not when
/// its rows are read or unread, so its counts are read from the summary
/// (one batch read). A thread gone or moved to another folder since is left
/// out, and so is a copy its summary has left behind (a filing deletes the
/// place it replaced after its transaction): that one is deleted here.
pub async fn summaries_of(ctx: &Context, scope: &str, listed: Vec<Thread>) -> Result<Vec<Thread>, ApiError> {
    let keys: Vec<Key> = listed
        .iter()
        .map(|t| keys::thread_summary(scope, &t.thread_id))
        .collect();
    let mut threads = Vec::with_capacity(listed.len());
    for (was, item) in listed.iter().zip(read_all(ctx, &keys).await?) {
        let Some(item) = item else { continue };
        let now: Thread = record(item)?;
        if now.folder != was.folder {
            continue;
        }
        if now.last_ms > was.last_ms {
            ctx.store.delete(&was.list_copy(scope), None).await?;
            continue;
        }
        threads.push(now);
    }
    Ok(threads)
}

/// One page of a partition whose sort keys are ids or `<ms>-<thread>`, newest
/// first (or oldest first), strictly past the cursor: the sort key of the last
/// item of the previous page. Follows the store's pages until the page is full
/// or the partition ends, so a page is never short while more exists.
pub async fn page<T: serde::de::DeserializeOwned + Send>(
    ctx: &Context,
    pk: String,
    newest_first: bool,
    cursor: Option<&str>,
    limit: usize,
) -> Result<Page<T>, ApiError> {
    Ok(page_raw(ctx, pk, newest_first, cursor, limit)
        .await?
        .try_map(|i| i.record())?)
}

/// [`page`], each item left as its stored text.
pub async fn page_raw(
    ctx: &Context,
    pk: String,
    newest_first: bool,
    cursor: Option<&str>,
    limit: usize,
) -> Result<Page<RawItem>, ApiError> {
    page_raw_where(ctx, pk, newest_first, cursor, limit, |_| true).await
}

/// Keeps the stored items whose `field` (a mailbox address) the caller
/// covers: everything, but for a scoped key narrowed to some mailboxes
/// (only then is an item's text read here).
pub fn covered<'c>(caller: &'c crate::auth::Caller, field: &'static str) -> impl Fn(&RawItem) -> bool + 'c {
    move |item| {
        caller.scope().is_none()
            || serde_json::from_slice::<serde_json::Value>(&item.json)
                .ok()
                .and_then(|v| {
                    let owner_only = v.get("ownerOnly").and_then(serde_json::Value::as_bool) == Some(true);
                    v.get(field)?.as_str().map(|m| readable(caller, m, owner_only))
                })
                .unwrap_or(false)
    }
}

/// The most items one filtered page reads: a page whose items are mostly
/// left out comes back short, with a cursor to go on from.
pub const FILTER_SCAN: usize = 1000;

/// [`page_raw`] of the items `keep` keeps (a scoped key's mailboxes).
pub async fn page_raw_where(
    ctx: &Context,
    pk: String,
    newest_first: bool,
    cursor: Option<&str>,
    limit: usize,
    keep: impl Fn(&RawItem) -> bool,
) -> Result<Page<RawItem>, ApiError> {
    // Message ids and list keys start with a digit; `#` (a thread summary)
    // sorts before them and `~` after.
    let (low, high) = match (cursor, newest_first) {
        (Some(c), true) => ("0".to_string(), c.to_string()),
        (Some(c), false) => (c.to_string(), "~".to_string()),
        (None, _) => ("0".to_string(), "~".to_string()),
    };
    let mut query = Query::partition(pk).between(low, high).limit(limit + 1);
    if newest_first {
        query = query.backward();
    }
    let mut items = Vec::new();
    let mut scanned = 0;
    let mut last_scanned = None;
    loop {
        let page = ctx.store.query_raw(&query).await?;
        for item in page.items.into_iter().filter(|i| Some(i.sk.as_str()) != cursor) {
            scanned += 1;
            last_scanned = Some(item.sk.clone());
            if keep(&item) {
                items.push(item);
            }
            if items.len() > limit || scanned >= FILTER_SCAN {
                break;
            }
        }
        match page.next {
            Some(next) if items.len() <= limit && scanned < FILTER_SCAN => query = query.after(Some(next)),
            _ => break,
        }
    }
    let more = items.len() > limit;
    items.truncate(limit);
    let next_cursor = if more {
        items.last().map(|i| i.sk.clone())
    } else if scanned >= FILTER_SCAN {
        last_scanned
    } else {
        None
    };
    Ok(Page { items, next_cursor })
}

/// The newest `n` rows of a direction (search reads 200 of each).
pub async fn newest(ctx: &Context, scope: &str, outbound: bool, n: usize) -> Result<Vec<Row>, ApiError> {
    Ok(page(ctx, keys::mail_partition(scope, outbound), true, None, n)
        .await?
        .items)
}
