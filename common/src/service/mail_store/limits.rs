//! The bounds of stored mail: what a row keeps, and how often a write that
//! lost a race is tried again.

/// The most of a body kept on the row (and searched); the whole body is then a
/// blob. Keeps 200 rows of a search near DynamoDB's 1 MB page.
pub const TEXT_ON_ROW: usize = 4 * 1024;
pub const PREVIEW_CHARS: usize = 200;
/// Recipients kept on a row.
pub(super) const MAX_TO: usize = 50;
/// Participants kept on a thread summary.
pub(super) const MAX_PARTICIPANTS: usize = 20;
/// The highest attachment index GET /attachment serves (spec 4.4: 0 to 2);
/// GET /inbox/attachment serves a received message's later files.
pub const MAX_SPEC_ATTACHMENT_INDEX: usize = 2;
/// A folder move loads at most this many rows of each direction (spec 8).
pub const MOVE_LIMIT: usize = 100;
/// Retries of a write that lost a race on a thread summary.
pub(super) const RETRIES: usize = 40;

pub(super) async fn backoff() {
    let ms = 2 + rand::random::<u64>() % 20;
    tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
}
