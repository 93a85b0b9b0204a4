//! Fixed-window rate limits kept in the store: one item per (bucket, window),
//! counted with an atomic conditional add, so concurrent callers can never pass
//! the limit between them.

use serde_json::Value;

use crate::error::ApiError;
use crate::store::{Cond, Key, Query, Store, StoreError, TTL, Update, Write};

#[derive(Debug, Clone, Copy)]
pub struct Limit {
    pub max: i64,
    pub period_secs: i64,
}

pub const HOUR: i64 = 3600;
pub const MINUTE: i64 = 60;
/// Windows align to the epoch, so a day window is a UTC day.
pub const DAY: i64 = 86_400;

/// The bucket name of a client address for per-IP limits: an IPv4 address
/// as it is, an IPv6 address by its /64 (one host usually holds the whole
/// prefix, so counting single addresses would not limit it).
pub fn client(ip: &str) -> String {
    match ip.parse::<std::net::IpAddr>() {
        Ok(std::net::IpAddr::V6(v6)) => match v6.to_ipv4_mapped() {
            Some(v4) => v4.to_string(),
            None => {
                let s = v6.segments();
                format!("{:x}:{:x}:{:x}:{:x}::/64", s[0], s[1], s[2], s[3])
            }
        },
        Ok(std::net::IpAddr::V4(v4)) => v4.to_string(),
        // Not an address (a missing peer): one shared bucket, bounded in size.
        Err(_) => "unknown".into(),
    }
}

fn partition(bucket: &str) -> String {
    format!("RATE#{bucket}")
}

/// The window `now` falls in: its item and the time it ends.
fn window(bucket: &str, limit: Limit, now: i64) -> (Key, i64) {
    let start = now - now.rem_euclid(limit.period_secs);
    (
        Key::new(partition(bucket), format!("{start:012}")),
        start + limit.period_secs,
    )
}

/// The conditional add that counts one hit while the window is under its limit.
fn count(end: i64, limit: Limit) -> (Update, Cond) {
    let under = Cond::Or(vec![Cond::missing("count"), Cond::Lt("count".into(), limit.max)]);
    (Update::new().add("count", 1).set(TTL, end + HOUR), under)
}

/// Counts one hit, or refuses with 429 and the seconds until the window ends.
pub async fn hit(store: &dyn Store, bucket: &str, limit: Limit, now: i64) -> Result<(), ApiError> {
    let (key, end) = window(bucket, limit, now);
    let (update, under) = count(end, limit);
    match store.update(&key, update, Some(under)).await {
        Ok(_) => Ok(()),
        Err(StoreError::ConditionFailed) => Err(ApiError::rate_limited((end - now) as u64)),
        Err(e) => Err(e.into()),
    }
}

/// Counts one hit in every window at once, or in none: a transaction, so a
/// refused call never uses up the others. The 429 waits for the longest full one.
/// `checks` must hold too (they write nothing): a failed check is also a 429
/// here (waiting 1 s when no window is full), which the caller, knowing what
/// it checked, answers in its own words first.
pub async fn hit_all(
    store: &dyn Store,
    windows: &[(&str, Limit)],
    checks: &[(Key, Cond)],
    now: i64,
) -> Result<(), ApiError> {
    let keyed: Vec<(Key, i64, Limit)> = windows
        .iter()
        .map(|(bucket, limit)| {
            let (key, end) = window(bucket, *limit, now);
            (key, end, *limit)
        })
        .collect();
    match store.transact(hits(windows, checks, now)).await {
        Ok(()) => Ok(()),
        Err(StoreError::ConditionFailed) => {
            let mut wait = 1;
            for (key, end, limit) in &keyed {
                let used = store
                    .get(key)
                    .await?
                    .and_then(|i| i.get("count").and_then(Value::as_i64));
                if used.is_some_and(|c| c >= limit.max) {
                    wait = wait.max(end - now);
                }
            }
            Err(ApiError::rate_limited(wait as u64))
        }
        Err(e) => Err(e.into()),
    }
}

/// The writes of [`hit_all`]: a conditional add per window, then `checks`,
/// for a caller that counts the windows inside its own transaction (a send
/// taken whole in one; refused, it asks [`hit_all`] why).
pub fn hits(windows: &[(&str, Limit)], checks: &[(Key, Cond)], now: i64) -> Vec<Write> {
    let counts = windows.iter().map(|(bucket, limit)| {
        let (key, end) = window(bucket, *limit, now);
        let (update, under) = count(end, *limit);
        Write::Update {
            key,
            update,
            cond: Some(under),
        }
    });
    let checked = checks.iter().map(|(key, cond)| Write::Check {
        key: key.clone(),
        cond: cond.clone(),
    });
    counts.chain(checked).collect()
}

/// Whether the window `now` falls in has reached its limit.
pub async fn full(store: &dyn Store, bucket: &str, limit: Limit, now: i64) -> Result<bool, StoreError> {
    let (key, _) = window(bucket, limit, now);
    let used = store
        .get(&key)
        .await?
        .and_then(|i| i.get("count").and_then(Value::as_i64));
    Ok(used.is_some_and(|c| c >= limit.max))
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

#[cfg(test)]
mod client_tests {
    use super::client;

    #[test]
    fn ipv6_clients_are_counted_by_their_64() {
        assert_eq!(client("2001:db8:1:2:aaaa::1"), client("2001:db8:1:2:bbbb::9"));
        assert_ne!(client("2001:db8:1:2::1"), client("2001:db8:1:3::1"));
        assert_eq!(client("::ffff:192.0.2.7"), "192.0.2.7");
        assert_eq!(client("192.0.2.7"), "192.0.2.7");
        assert_eq!(client(&"x".repeat(5000)), "unknown");
    }
}
