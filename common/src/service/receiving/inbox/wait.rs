//! Waiting for mail (GET /inbox?wait= and the `wait_for_message` tool):
//! looking until a matching message is there or the deadline passes.

use std::time::Duration;

use super::fields::*;
use crate::error::ApiError;
use crate::keys;
use crate::service::caller::Call;
use crate::service::mail_store::{self, Row};
use crate::service::receiving::waits;
use crate::values::Page;
use crate::values::{Cursor, Needle};

// ------------------------------------------------------------ waiting

pub(super) struct WaitFilter {
    pub(super) after: Option<Cursor>,
    pub(super) from: Option<Needle>,
    pub(super) subject: Option<Needle>,
}

impl WaitFilter {
    fn admits(&self, row: &Row) -> bool {
        let fresh = match &self.after {
            Some(after) => row.id.as_str() > after.as_str(),
            None => row.unread,
        };
        fresh
            && self
                .from
                .as_ref()
                .is_none_or(|f| row.from.to_lowercase().contains(&**f))
            && self
                .subject
                .as_ref()
                .is_none_or(|s| row.subject.to_lowercase().contains(&**s))
    }
}

/// Matching inbound rows, newest first, as soon as there are any, or none at
/// the deadline: at most `limit`, with the last one's id as the next cursor
/// when more matched, as a list's page. Looks every half second: the poller
/// may run in another process (another Lambda function), so the store is
/// what they share.
pub(super) async fn wait_rows(
    call: &Call<'_>,
    scope: &str,
    filter: &WaitFilter,
    seconds: i64,
    limit: usize,
) -> Result<Page<Row>, ApiError> {
    let slot = waits::claim(call.ctx, call.caller, seconds).await?;
    let found = watch(call, scope, filter, seconds, limit).await;
    slot.release(call.ctx).await;
    found
}

async fn watch(
    call: &Call<'_>,
    scope: &str,
    filter: &WaitFilter,
    seconds: i64,
    limit: usize,
) -> Result<Page<Row>, ApiError> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(seconds as u64);
    loop {
        let Page { items: rows, .. } = match &filter.after {
            // Oldest first past `after`, so nothing newer is skipped.
            Some(after) => {
                mail_store::page::<Row>(call.ctx, keys::mail_partition(scope, false), false, Some(after), 50).await?
            }
            None => mail_store::page::<Row>(call.ctx, keys::mail_partition(scope, false), true, None, 50).await?,
        };
        let mut hits: Vec<Row> = rows
            .into_iter()
            .filter(|r| filter.admits(r) && r.readable_by(call.caller))
            .collect();
        if !hits.is_empty() {
            hits.sort_by(|a, b| b.id.cmp(&a.id));
            return Ok(Page::first(hits, limit, |r| r.id.clone()));
        }
        let now = tokio::time::Instant::now();
        if now >= deadline {
            return Ok(Page {
                items: Vec::new(),
                next_cursor: None,
            });
        }
        tokio::time::sleep(WAIT_POLL.min(deadline - now)).await;
    }
}
