//! Full-text search over every message of a scope (an account, or one
//! service-domain mailbox): the engine beneath `GET /search` and the MCP
//! tool `search_mail` (`service::search`), which the filing and the inbox's
//! changes keep current in their own transactions.
//!
//! The design (docs/decisions.md, Search, has the numbers behind it):
//!
//! - **Fresh messages in the store.** Filing a message puts one item holding
//!   its words (normalized, deflated) in the filing's own transaction: it is
//!   searchable as soon as it is listed, for one write of about a kilobyte.
//! - **Segments in the blob store.** The poller writes every 64 fresh
//!   messages into an immutable segment (postings with positions, split into
//!   buckets by word), and merges four segments of a size into one: a scope
//!   holds a few segments whatever its size, and a query reads only the
//!   heads and the buckets of its words (cached in the process).
//! - **State beside the words.** A message's folder and unread flag live in
//!   one byte per message (a state blob), and a change since in a small item
//!   written in the change's own transaction: moves, read flags and purges
//!   show at once. Quarantined mail is never indexed.
//! - **A manifest** (one item) names the segments and the state blob; a
//!   compaction writes on condition its version is unchanged, and deletes
//!   what it replaced only after [`compact::GRACE_MS`].
//!
//! Words are SQLite FTS5's `unicode61 remove_diacritics 2` tokens (`text`),
//! so a test holds every query's answer equal to FTS5's on the same text.
//! The query language is Gmail's (`grammar`).

pub mod cache;
pub mod compact;
pub mod doc;
pub mod exec;
pub mod grammar;
pub mod items;
pub mod load;
mod phrase;
pub mod segment;
pub mod text;
mod unicode61;

use std::collections::HashSet;

use crate::blob::BlobStore;
use crate::error::ApiError;
use crate::store::Store;

pub use doc::{Doc, Folder, Message, State};
pub use exec::{Found, Hit, Reader, Sort};
pub use grammar::{Query, Unreadable};

/// Fresh messages a scope holds before the poller writes them into a
/// segment (a query reads them all from the store).
pub const TAIL_LIMIT: usize = 64;
/// Changes held as items before they are folded into a new state blob.
pub const OVERRIDE_LIMIT: usize = 256;
/// Segments of a size merged into one.
pub const MERGE_FACTOR: usize = 4;

/// The fields a message is searched in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Field {
    Subject = 0,
    From = 1,
    To = 2,
    Cc = 3,
    Body = 4,
    /// Attachment file names.
    Filename = 5,
}

impl Field {
    pub const ALL: [Field; 6] = [
        Field::Subject,
        Field::From,
        Field::To,
        Field::Cc,
        Field::Body,
        Field::Filename,
    ];

    pub fn code(self) -> u8 {
        self as u8
    }

    /// Its operator's name (`from:`); the body has none.
    pub fn operator(self) -> &'static str {
        match self {
            Field::Subject => "subject",
            Field::From => "from",
            Field::To => "to",
            Field::Cc => "cc",
            Field::Body => "body",
            Field::Filename => "filename",
        }
    }
}

/// What a search asks.
pub struct Request<'a> {
    pub query: &'a Query,
    pub reader: Reader<'a>,
    pub sort: Sort,
    pub cursor: Option<&'a str>,
    pub limit: usize,
    pub now_ms: i64,
}

/// Runs a search over a scope's index.
pub async fn search(
    store: &dyn Store,
    blobs: &dyn BlobStore,
    scope: &str,
    request: &Request<'_>,
) -> Result<Found, ApiError> {
    // A compaction may delete what the manifest named just before it was
    // read (past its grace): read again.
    for _ in 0..3 {
        let stored = items::read(store, scope).await?;
        let Some(loaded) = load::load_from(blobs, scope, stored).await? else {
            continue;
        };
        if loaded.unfolded >= 2 * TAIL_LIMIT || loaded.stored.overrides.len() >= OVERRIDE_LIMIT {
            // The poller has not caught up: ask it to.
            if let Err(e) = items::flag_due(store, scope, request.now_ms).await {
                tracing::warn!(error = %e, "a search index could not be flagged for compaction");
            }
        }
        let Some(buckets) = exec::buckets(blobs, scope, &loaded.views, request.query).await? else {
            continue;
        };
        let purged = |mailbox: &str, id: &str| loaded.stored.purged(mailbox, id);
        // Most scopes never had a mailbox purged: no message asks then.
        let purged: Option<exec::Purged<'_>> = (!loaded.stored.tombstones.is_empty()).then_some(&purged);
        let mut found = exec::run(
            &loaded.views,
            &buckets,
            request.query,
            &request.reader,
            purged,
            request.sort,
            request.cursor,
            request.limit,
        )?;
        found.backfilled = loaded.stored.backfill.done;
        found.oldest = loaded
            .views
            .iter()
            .filter(|v| v.head.n > 0)
            .map(|v| v.head.id(0).to_string())
            .min();
        return Ok(found);
    }
    Err(ApiError::internal("the search index changed under every read"))
}

/// After the poller filed mail: compacts the scopes it filed into whose fresh
/// messages are due, then (with `due`) the scopes flagged due. Returns the scopes flagged
/// due whose mail filed before the index existed is still to index (the
/// poller's to do: it knows the rows).
pub async fn maintain(
    store: &dyn Store,
    blobs: &dyn BlobStore,
    now_ms: i64,
    touched: &[String],
    due: bool,
) -> Result<Vec<String>, ApiError> {
    let mut backfills = Vec::new();
    let mut seen = HashSet::new();
    for scope in touched {
        if !seen.insert(scope.as_str()) {
            continue;
        }
        let stored = items::read(store, scope).await?;
        let folded: HashSet<&str> = stored
            .manifest
            .pending
            .iter()
            .flat_map(|p| p.docs.iter().map(String::as_str))
            .collect();
        let unfolded = stored.docs.iter().filter(|d| !folded.contains(d.id.as_str())).count();
        if compact::due(&stored, unfolded) {
            compact::compact(store, blobs, scope, now_ms, compact::Options::default()).await?;
        }
    }
    if !due {
        return Ok(backfills);
    }
    for (scope, at) in items::due(store, 100).await? {
        if at > now_ms {
            continue;
        }
        // Cleared first: the compaction may ask again, for later.
        items::clear_due(store, &scope, at).await?;
        if let Err(e) = compact::compact(store, blobs, &scope, now_ms, compact::Options::default()).await {
            items::flag_due(store, &scope, now_ms).await?;
            return Err(e);
        }
        if !items::read(store, &scope).await?.backfill.done {
            backfills.push(scope);
        }
    }
    Ok(backfills)
}
