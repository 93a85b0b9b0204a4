//! Search every message: `GET /search` and the MCP tool `search_mail`, over
//! every message of the caller's mailboxes (a scoped key's mailboxes only;
//! never quarantined mail, nor owner-only mail a key may not read), with
//! Gmail's operators. The index is `crate::search`; this module reads the
//! caller's request, runs it, and answers with list rows, each with the
//! snippet where it matched (inside the agent envelope for agents).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::error::{self, ApiError};
use crate::keys;
use crate::search::{self as index, Field};
use crate::service::caller::Call;
use crate::service::mail_store::{self, Direction, Row};
use crate::service::receiving::inbox::{self, Boundary, Envelope, Summary};
use crate::store::{Key, record};
use crate::validate::{Fields, Origin};
use crate::values::{Chars, Cursor, EmailAddress};

mod snippet;

/// The most characters a query holds.
pub const MAX_QUERY: usize = 500;

/// `sort=`: newest first (the default), or best matches first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SortBy {
    Newest,
    Relevance,
}

impl crate::values::Value for SortBy {
    fn parse(text: &str) -> Option<SortBy> {
        match text {
            "newest" => Some(SortBy::Newest),
            "relevance" => Some(SortBy::Relevance),
            _ => None,
        }
    }
}

crate::input! {
    /// GET /search and the tool `search_mail`.
    pub struct SearchInput {
        /// The query: words (all must match, whole words, any case and
        /// accent), "exact phrases", -word to leave out, OR, parentheses, and
        /// from:, to:, cc:, subject:, filename:, has:attachment, is:unread,
        /// is:read, in:inbox|archive|trash|spam|sent|anywhere, before:YYYY-MM-DD,
        /// after:YYYY-MM-DD, newer_than:7d, older_than:1y. 1 to 500
        /// characters.
        pub q: Chars<1, MAX_QUERY> = (error::SEARCH_QUERY_INVALID, error::SEARCH_QUERY_INVALID),
        /// 1 to 50, default 25.
        pub limit: Option<inbox::Limit>,
        /// The nextCursor of the previous page (same q and sort).
        pub cursor: Option<Cursor> = error::SEARCH_CURSOR_INVALID,
        /// newest (default) or relevance.
        pub sort: Option<SortBy> = error::SEARCH_SORT_INVALID,
        /// Agent key and operators only: an address at the service domain
        /// (default inbox@ the service domain).
        pub mailbox: Option<EmailAddress> = error::INBOX_MAILBOX_INVALID,
        /// For agents: wrap what senders wrote (subjects, previews,
        /// snippets, attachment names) in a random per-response delimiter.
        /// The tool always does.
        pub envelope: Option<bool> = error::INBOX_ENVELOPE_INVALID,
    }
    check SearchInput::for_agents;
}

impl SearchInput {
    /// What a tool answers an agent is always inside the envelope.
    fn for_agents(mut self, fields: &Fields) -> Result<Self, ApiError> {
        if fields.origin == Origin::Tool {
            self.envelope = Some(true);
        }
        Ok(self)
    }
}

/// One match: its list row and where it matched.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SearchHit {
    #[serde(flatten)]
    pub summary: Summary,
    /// The query's words where they first occur, with the text around them
    /// (the preview when the query asked only operators).
    pub snippet: String,
    /// The field the snippet is from: subject, from, to, cc, body or
    /// filename; absent for the preview.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub matched_in: Option<MatchedIn>,
}

#[derive(Debug, Clone, Copy, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum MatchedIn {
    Subject,
    From,
    To,
    Cc,
    Body,
    Filename,
}

impl From<Field> for MatchedIn {
    fn from(f: Field) -> MatchedIn {
        match f {
            Field::Subject => MatchedIn::Subject,
            Field::From => MatchedIn::From,
            Field::To => MatchedIn::To,
            Field::Cc => MatchedIn::Cc,
            Field::Body => MatchedIn::Body,
            Field::Filename => MatchedIn::Filename,
        }
    }
}

/// A page of matches.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SearchResults {
    pub ok: bool,
    /// Newest first, or best first with sort=relevance.
    pub messages: Vec<SearchHit>,
    /// Matches on every page.
    pub total: usize,
    /// Present when more matches follow: pass it back as `cursor`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
    /// With envelope (and from the tool): subjects, previews, snippets and
    /// attachment names are wrapped in this response's random delimiter.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub envelope: Option<Envelope>,
    /// Present (true) while mail filed before search existed is still being
    /// indexed: older matches may be missing; they are found within minutes.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub indexing: bool,
}

/// Snippets read at once (each may read a body from the blob store).
const SNIPPETS_AT_ONCE: usize = 8;

pub async fn search(call: &Call<'_>, input: SearchInput) -> Result<SearchResults, ApiError> {
    let ctx = call.ctx;
    let scope = inbox::scope(call, input.mailbox.as_deref())?;
    let now = ctx.clock.now().timestamp_millis();
    let query = index::grammar::parse(&input.q, now).map_err(|e| error::SEARCH_QUERY_UNREADABLE.with(e.0))?;
    let sort = match input.sort {
        Some(SortBy::Relevance) => index::Sort::Relevance,
        _ => index::Sort::Newest,
    };
    if input
        .cursor
        .as_deref()
        .is_some_and(|c| !index::exec::cursor_fits(c, sort))
    {
        return Err(error::SEARCH_CURSOR_INVALID.into());
    }
    let limit = inbox::Limit::rows(input.limit, inbox::DEFAULT_LIMIT);
    let covers = |mailbox: &str| call.caller.covers(mailbox);
    let request = index::Request {
        query: &query,
        reader: index::Reader {
            covers: &covers,
            owner: call.caller.scope().is_none(),
        },
        sort,
        cursor: input.cursor.as_deref(),
        limit,
        now_ms: now,
    };
    let found = index::search(&*ctx.store, &*ctx.blobs, &scope, &request).await?;
    let indexing = !found.backfilled && !mail_store::backfilled(ctx, &scope, found.oldest.as_deref()).await?;

    // The rows, as they are now (one batch read).
    let keys: Vec<Key> = found
        .hits
        .iter()
        .map(|h| {
            if h.spam {
                return Key::new(keys::spam_partition(&scope), &h.id);
            }
            let outbound = mail_store::direction_of(&h.id) == Direction::Outbound;
            Key::new(keys::mail_partition(&scope, outbound), &h.id)
        })
        .collect();
    let items = if keys.is_empty() {
        Vec::new()
    } else {
        ctx.store.get_many(&keys).await?
    };
    let mut hits = Vec::with_capacity(items.len());
    let mut rows = Vec::with_capacity(items.len());
    let now_s = now / 1000;
    for (hit, item) in found.hits.iter().zip(items) {
        // A row gone (spam past its 30 days; or moved meanwhile) is left
        // out, and the index told when it is gone for good.
        let row = item.map(record::<Row>).transpose()?;
        let Some(row) = row.filter(|r| !mail_store::expired(r, now_s)) else {
            mail_store::forget_gone(ctx, &scope, &hit.id).await?;
            continue;
        };
        if row.readable_by(call.caller) {
            hits.push(hit);
            rows.push(row);
        }
    }
    let summaries = inbox::summaries(ctx, &rows).await?;
    let mut wanted = Vec::new();
    snippet::wanted(&query.root, true, &mut wanted);
    let pending: Vec<_> = rows
        .iter()
        .zip(&hits)
        .map(|(row, hit)| snippet::of(ctx, row, &wanted, hit.fields))
        .collect();
    let snippets: Vec<Result<(String, Option<Field>), ApiError>> = futures::StreamExt::collect(
        futures::StreamExt::buffered(futures::stream::iter(pending), SNIPPETS_AT_ONCE),
    )
    .await;
    let boundary = input.envelope.unwrap_or(false).then(Boundary::new);
    let mut messages = Vec::with_capacity(rows.len());
    for (summary, snippet) in summaries.into_iter().zip(snippets) {
        let (snippet, field) = snippet?;
        messages.push(match &boundary {
            None => SearchHit {
                summary,
                snippet,
                matched_in: field.map(MatchedIn::from),
            },
            Some(b) => SearchHit {
                summary: b.summary(summary),
                snippet: b.wrap(&snippet),
                matched_in: field.map(MatchedIn::from),
            },
        });
    }
    Ok(SearchResults {
        ok: true,
        messages,
        total: found.total,
        next_cursor: found.next,
        envelope: boundary.map(|b| b.describe(None)),
        indexing,
    })
}
