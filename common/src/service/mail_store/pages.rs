//! Reading stored mail: a row by id or Message-ID, a thread's summary, and
//! cursor pages of a partition.

use super::ids::direction_of;
use super::shapes::{Direction, Row, Thread};
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

/// A row by Message-ID, of one direction, or the inbound copy before the
/// outbound one.
pub async fn by_message_id(
    ctx: &Context,
    scope: &str,
    message_id: &str,
    direction: Option<Direction>,
) -> Result<Option<Row>, ApiError> {
    let query = Query::partition(keys::message_ids_of(scope))
        .prefix(keys::message_id_prefix(message_id, None))
        .limit(10);
    let rows: Vec<Row> = ctx
        .store
        .query(&query)
        .await?
        .items
        .into_iter()
        .map(record)
        .collect::<Result<_, _>>()?;
    let now = ctx.clock.now().timestamp();
    let rows: Vec<Row> = rows.into_iter().filter(|r| !expired(r, now)).collect();
    let want = direction.unwrap_or(Direction::Inbound);
    let preferred = rows.iter().position(|r| r.direction == want);
    Ok(match (preferred, direction) {
        (Some(i), _) => rows.into_iter().nth(i),
        (None, None) => rows.into_iter().next(),
        (None, Some(_)) => None,
    })
}

pub async fn thread(ctx: &Context, scope: &str, thread_id: &str) -> Result<Option<Thread>, ApiError> {
    Ok(ctx.store.read(&keys::thread_summary(scope, thread_id)).await?)
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
                    v.get(field)?.as_str().map(|m| caller.covers(m) && !owner_only)
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
