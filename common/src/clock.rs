//! The service's notion of now. Tests move it forward to reach expiry without
//! waiting; nothing else does.

use std::sync::atomic::{AtomicI64, Ordering};

use chrono::{DateTime, Utc};

#[derive(Debug, Default)]
pub struct Clock {
    offset_secs: AtomicI64,
}

impl Clock {
    pub fn now(&self) -> DateTime<Utc> {
        Utc::now() + chrono::Duration::seconds(self.offset_secs.load(Ordering::Relaxed))
    }

    pub fn epoch(&self) -> i64 {
        self.now().timestamp()
    }

    pub fn advance(&self, secs: i64) {
        self.offset_secs.fetch_add(secs, Ordering::Relaxed);
    }
}

/// RFC 3339 with milliseconds and a Z, the one timestamp format in responses.
pub fn iso(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

pub fn iso_epoch(secs: i64) -> String {
    iso(DateTime::from_timestamp(secs, 0).unwrap_or_default())
}
