//! Fixed-window rate limits kept in the store: one item per (bucket, window),
//! counted with an atomic conditional add, so concurrent callers can never pass
//! the limit between them. Shorter windows of the same bucket ride in the
//! longest one's item ([`counted`]), so a hit in all of them writes one item.

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

/// One bucket's windows as one item: the conditional add that counts a
/// hit in each while each is under its limit, and each window's attribute
/// and end.
struct Counted {
    key: Key,
    update: Update,
    under: Cond,
    windows: Vec<(String, i64, Limit)>,
}

/// The longest of `limits` is the item (its `count`, as a bucket of one
/// window has); each shorter one, whose period must divide the longest's,
/// is an attribute `n<period>_<its place in the longest>`. Those stay in
/// the item until it expires: at most as many as the longest window
/// allows hits (a day of 50 sends, its minutes: under 1 KB).
fn counted(bucket: &str, limits: &[Limit], now: i64) -> Counted {
    let longest = limits
        .iter()
        .copied()
        .max_by_key(|l| l.period_secs)
        .expect("a bucket counts at least one window");
    let (key, end) = window(bucket, longest, now);
    let start = end - longest.period_secs;
    let mut update = Update::new().set(TTL, end + HOUR);
    let mut under = Vec::new();
    let mut windows = Vec::new();
    for limit in limits {
        debug_assert_eq!(longest.period_secs % limit.period_secs, 0);
        let (attr, ends) = if limit.period_secs == longest.period_secs {
            ("count".to_string(), end)
        } else {
            let place = (now - start) / limit.period_secs;
            (
                format!("n{}_{place}", limit.period_secs),
                start + (place + 1) * limit.period_secs,
            )
        };
        update = update.add(&attr, 1);
        under.push(Cond::Or(vec![Cond::missing(&attr), Cond::Lt(attr.clone(), limit.max)]));
        windows.push((attr, ends, *limit));
    }
    let under = match under.len() {
        1 => under.remove(0),
        _ => Cond::And(under),
    };
    Counted {
        key,
        update,
        under,
        windows,
    }
}

/// Counts one hit, or refuses with 429 and the seconds until the window ends.
pub async fn hit(store: &dyn Store, bucket: &str, limit: Limit, now: i64) -> Result<(), ApiError> {
    let Counted {
        key,
        update,
        under,
        windows,
    } = counted(bucket, &[limit], now);
    let end = windows[0].1;
    match store.update(&key, update, Some(under)).await {
        Ok(_) => Ok(()),
        Err(StoreError::ConditionFailed) => Err(ApiError::rate_limited((end - now) as u64)),
        Err(e) => Err(e.into()),
    }
}

/// Counts one hit in every window of every bucket at once, or in none: a
/// transaction, so a refused call never uses up the others. The 429 waits
/// for the longest full one. `checks` must hold too (they write nothing): a
/// failed check is also a 429 here (waiting 1 s when no window is full),
/// which the caller, knowing what it checked, answers in its own words first.
pub async fn hit_all(
    store: &dyn Store,
    buckets: &[(&str, &[Limit])],
    checks: &[(Key, Cond)],
    now: i64,
) -> Result<(), ApiError> {
    match store.transact(hits(buckets, checks, now)).await {
        Ok(()) => Ok(()),
        Err(StoreError::ConditionFailed) => {
            let mut wait = 1;
            for (bucket, limits) in buckets {
                let Counted { key, windows, .. } = counted(bucket, limits, now);
                let item = store.get(&key).await?;
                for (attr, end, limit) in windows {
                    let used = item.as_ref().and_then(|i| i.get(&attr).and_then(Value::as_i64));
                    if used.is_some_and(|c| c >= limit.max) {
                        wait = wait.max(end - now);
                    }
                }
            }
            Err(ApiError::rate_limited(wait as u64))
        }
        Err(e) => Err(e.into()),
    }
}

/// The writes of [`hit_all`]: a conditional add per bucket, then `checks`,
/// for a caller that counts the windows inside its own transaction (a send
/// taken whole in one; refused, it asks [`hit_all`] why).
pub fn hits(buckets: &[(&str, &[Limit])], checks: &[(Key, Cond)], now: i64) -> Vec<Write> {
    let counts = buckets.iter().map(|(bucket, limits)| {
        let Counted { key, update, under, .. } = counted(bucket, limits, now);
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

#[cfg(test)]
mod window_tests {
    use super::*;

    const MINUTE_5: Limit = Limit {
        max: 5,
        period_secs: MINUTE,
    };
    const DAY_50: Limit = Limit {
        max: 50,
        period_secs: DAY,
    };

    #[test]
    fn a_minute_rides_in_its_days_item() {
        // 10:02:30 into a UTC day that began at 1_796_601_600.
        let now = 1_796_601_600 + 10 * 3600 + 2 * 60 + 30;
        let c = counted("send:acct:u1:86400", &[MINUTE_5, DAY_50], now);
        assert_eq!(
            c.key,
            Key::new("RATE#send:acct:u1:86400", format!("{:012}", 1_796_601_600))
        );
        let names: Vec<(&str, i64)> = c.windows.iter().map(|(a, end, _)| (a.as_str(), *end)).collect();
        assert_eq!(names, [("n60_602", now - 30 + 60), ("count", 1_796_601_600 + DAY)]);
        assert_eq!(c.update.add, [("n60_602".to_string(), 1), ("count".to_string(), 1)]);
        // Each window holds its own limit.
        let item = |pairs: &[(&str, i64)]| -> crate::store::Item {
            pairs.iter().map(|(k, v)| (k.to_string(), Value::from(*v))).collect()
        };
        assert!(c.under.holds(None));
        assert!(
            c.under
                .holds(Some(&item(&[("count", 49), ("n60_602", 4), ("n60_601", 5)])))
        );
        assert!(!c.under.holds(Some(&item(&[("count", 49), ("n60_602", 5)]))));
        assert!(!c.under.holds(Some(&item(&[("count", 50), ("n60_602", 0)]))));
        // A bucket of one window is the item it always was.
        let one = counted("ip:x", &[DAY_50], now);
        assert_eq!(one.key, Key::new("RATE#ip:x", c.key.sk.clone()));
        assert_eq!(
            one.under,
            Cond::Or(vec![Cond::missing("count"), Cond::Lt("count".into(), 50)])
        );
    }
}
