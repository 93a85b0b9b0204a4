//! Fixed-window rate limits kept in the store: one item per (bucket, window),
//! counted with an atomic conditional add, so concurrent callers can never pass
//! the limit between them.

use crate::error::ApiError;
use crate::store::{Cond, Key, Query, Store, StoreError, TTL, Update};

#[derive(Debug, Clone, Copy)]
pub struct Limit {
    pub max: i64,
    pub period_secs: i64,
}

pub const HOUR: i64 = 3600;
pub const MINUTE: i64 = 60;
/// Windows align to the epoch, so a day window is a UTC day.
pub const DAY: i64 = 86_400;

fn partition(bucket: &str) -> String {
    format!("RATE#{bucket}")
}

/// Counts one hit, or refuses with 429 and the seconds until the window ends.
pub async fn hit(store: &dyn Store, bucket: &str, limit: Limit, now: i64) -> Result<(), ApiError> {
    let window = now - now.rem_euclid(limit.period_secs);
    let end = window + limit.period_secs;
    let key = Key::new(partition(bucket), format!("{window:012}"));
    let under = Cond::Or(vec![Cond::missing("count"), Cond::Lt("count".into(), limit.max)]);
    let update = Update::new().add("count", 1).set(TTL, end + HOUR);
    match store.update(&key, update, Some(under)).await {
        Ok(_) => Ok(()),
        Err(StoreError::ConditionFailed) => Err(ApiError::rate_limited((end - now) as u64)),
        Err(e) => Err(e.into()),
    }
}

/// Forgets every window of a bucket (an operator clearing a counter).
pub async fn clear(store: &dyn Store, bucket: &str) -> Result<(), StoreError> {
    let page = store.query(&Query::partition(partition(bucket)).limit(1000)).await?;
    for item in page.items {
        if let Some(key) = crate::store::key_of(&item) {
            store.delete(&key, None).await?;
        }
    }
    Ok(())
}
