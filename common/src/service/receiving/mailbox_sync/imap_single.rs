//! One IMAP change applied alone: the row it is about found by its
//! Message-ID, then its state set (read, a folder, spam or not, gone), or
//! the mail a client appended filed as appended. The batch
//! ([`super::imap_batch`]) falls back to this path, which reads the rows as
//! they are now and so says how a lost race ends.

use base64::Engine;
use futures::StreamExt;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::place::Place;
use crate::context::Context;
use crate::error::{self, ApiError};
use crate::keys;
use crate::mail::inbound::{self, Limits};
use crate::service::mail_store::{self, Direction, NewMessage, Quarantine, Row};
use crate::service::{caller::Call, receiving::poller, receiving::spam};
use crate::store::Query;

/// What a row filed from an IMAP APPEND says it came from.
pub const APPENDED: &str = "appended";

/// One change an IMAP client made to one message.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ImapChange {
    /// The mail host's number for it: a later change of the same mailbox
    /// has a larger one.
    pub seq: i64,
    /// The mailbox (its IMAP login).
    #[schemars(length(max = 254))]
    pub mailbox: String,
    #[schemars(length(min = 3, max = 998))]
    pub message_id: String,
    /// Its `\Seen` flag now, when the change was about flags.
    #[serde(default)]
    pub seen: Option<bool>,
    /// The folder it is in now, or gone.
    #[serde(default)]
    pub place: Option<Place>,
    /// outbound when the message is a sent one (in Sent).
    #[serde(default)]
    pub direction: Option<Direction>,
    /// A flag change that every IMAP copy of the message holds (the mail
    /// host looked after it was logged): the store marks nothing back for
    /// IMAP when it applies it.
    #[serde(default)]
    pub settled: bool,
    /// Mail a client appended, standard base64: filed as appended, never as
    /// received, and never believed authenticated.
    #[serde(default)]
    pub raw: Option<String>,
}

/// What became of one change.
#[derive(Debug)]
pub enum Outcome {
    Applied(Map<String, Value>),
    Ignored,
    Unknown,
}

/// Messages of one mailbox whose changes are applied at once when they go
/// one at a time (each message's own changes stay in order). The embedded
/// store commits the writes waiting together, so the more at once, the
/// fewer commits.
const AT_ONCE: usize = 64;

/// Changes applied one at a time: each message's in order, different
/// messages at once.
pub async fn apply_singly(
    call: &Call<'_>,
    scope: &str,
    address: &str,
    changes: Vec<ImapChange>,
) -> Result<Vec<(i64, Outcome)>, ApiError> {
    let mut by_message: Vec<Vec<ImapChange>> = Vec::new();
    for change in changes {
        match by_message.iter_mut().find(|l| l[0].message_id == change.message_id) {
            Some(list) => list.push(change),
            None => by_message.push(vec![change]),
        }
    }
    let outcomes: Vec<Result<Vec<(i64, Outcome)>, ApiError>> = futures::stream::iter(by_message)
        .map(|list| async move {
            let mut done = Vec::new();
            for change in list {
                done.push((change.seq, apply(call, scope, address, &change).await?));
            }
            Ok(done)
        })
        .buffer_unordered(AT_ONCE)
        .collect()
        .await;
    let mut done = Vec::new();
    for outcome in outcomes {
        done.extend(outcome?);
    }
    Ok(done)
}

/// Changes already applied (at or below the mailbox's number) sorted out:
/// those about a message the store does not hold are unknown (none of them
/// can have changed anything: the first time they were unknown too, or their
/// row is gone since, and then they wait for nothing and are dropped).
pub struct Unheld {
    pub ignored: usize,
    pub unknown: Vec<i64>,
}

pub async fn unheld(ctx: &Context, scope: &str, mailbox: &str, changes: Vec<ImapChange>) -> Result<Unheld, ApiError> {
    // What the first time answered unknown: not a deletion, not the app's
    // own folders, not an append (filed, or unreadable).
    let (maybe, ignored): (Vec<ImapChange>, Vec<ImapChange>) = changes
        .into_iter()
        .partition(|c| c.raw.is_none() && !matches!(c.place, Some(Place::Gone | Place::Sent | Place::Drafts)));
    let held: Vec<Result<(i64, bool), ApiError>> = futures::stream::iter(maybe)
        .map(|change| async move { Ok((change.seq, row_of(ctx, scope, mailbox, &change).await?.is_some())) })
        .buffer_unordered(AT_ONCE)
        .collect()
        .await;
    let mut answer = Unheld {
        ignored: ignored.len(),
        unknown: Vec::new(),
    };
    for one in held {
        match one? {
            (_, true) => answer.ignored += 1,
            (seq, false) => answer.unknown.push(seq),
        }
    }
    Ok(answer)
}

/// The direction of the row a change is about.
pub fn direction_of(change: &ImapChange) -> Direction {
    match (change.direction, change.place) {
        (Some(d), _) => d,
        (None, Some(Place::Sent)) => Direction::Outbound,
        _ => Direction::Inbound,
    }
}

/// The stored row this change is about, in this mailbox.
async fn row_of(ctx: &Context, scope: &str, mailbox: &str, change: &ImapChange) -> Result<Option<Row>, ApiError> {
    let direction = direction_of(change);
    let message_id = change.message_id.trim();
    // Dovecot's log cuts a Message-ID past 80 characters, ending it in
    // `...`: the one row of this mailbox it begins, if only one.
    if let Some(head) = message_id.strip_suffix("...") {
        let query = Query::partition(keys::message_ids_of(scope)).prefix(head).limit(10);
        let pointers: Vec<mail_store::RowRef> = ctx
            .store
            .query(&query)
            .await?
            .items
            .into_iter()
            .map(crate::store::record)
            .collect::<Result<_, _>>()?;
        let rows = mail_store::rows(ctx, scope, pointers).await?;
        let mut mine = rows
            .into_iter()
            .filter(|r| r.mailbox == mailbox && r.direction == direction && r.quarantine.is_none());
        return Ok(match (mine.next(), mine.next()) {
            (Some(row), None) => Some(row),
            _ => None,
        });
    }
    mail_store::by_message_id(ctx, scope, message_id, Some(direction), |p| p.mailbox == mailbox).await
}

async fn apply(call: &Call<'_>, scope: &str, mailbox: &str, change: &ImapChange) -> Result<Outcome, ApiError> {
    let ctx = call.ctx;
    let mut detail = Map::new();
    detail.insert(
        "messageId".into(),
        json!(change.message_id.chars().take(200).collect::<String>()),
    );
    let row = match row_of(ctx, scope, mailbox, change).await? {
        Some(row) => row,
        None => match (&change.raw, change.place) {
            (Some(raw), Some(place)) if place.folder().is_some() || place == Place::Junk => {
                match appended(ctx, scope, mailbox, raw).await? {
                    Some(row) => {
                        detail.insert("appended".into(), json!(true));
                        row
                    }
                    None => return Ok(Outcome::Ignored),
                }
            }
            // Nothing to delete, or the app's own Sent and Drafts.
            _ if matches!(change.place, Some(Place::Gone | Place::Sent | Place::Drafts)) => {
                return Ok(Outcome::Ignored);
            }
            _ => return Ok(Outcome::Unknown),
        },
    };
    // A quarantined row is out of every folder: IMAP moves nothing of it,
    // but spam, which is in Junk.
    let spam = match &row.quarantine {
        Some(kept) if kept.reason != Quarantine::Spam => return Ok(Outcome::Ignored),
        kept => kept.is_some(),
    };
    let mut changed = detail.contains_key("appended");
    if change.place == Some(Place::Gone) {
        mail_store::delete_row(ctx, scope, &row).await?;
        detail.insert("deleted".into(), json!(true));
        return Ok(Outcome::Applied(detail));
    }
    let mut row = row;
    // Into Junk, a report that it is spam; out of it into a folder of the
    // store's, that it is not (then it moves on as any message).
    let reported = match (change.place, spam) {
        (Some(Place::Junk), false) if !row.outbound() => Some(true),
        (Some(place), true) if place.folder().is_some() => Some(false),
        _ => None,
    };
    if let Some(is_spam) = reported {
        row = spam::report::apply(call, scope, row, is_spam).await?.row;
        detail.insert("spam".into(), json!(is_spam));
        changed = true;
    }
    // Spam is never unread, and has no folder to move in.
    if row.quarantine.is_some() {
        return Ok(match changed {
            true => Outcome::Applied(detail),
            false => Outcome::Ignored,
        });
    }
    if let Some(folder) = change.place.and_then(Place::folder)
        && !row.outbound()
        && row.folder() != folder
    {
        // A move in a mail app moves its conversation, as the API does.
        mail_store::move_thread(ctx, scope, &row.thread_id, folder).await?;
        detail.insert("folder".into(), json!(folder.as_str()));
        changed = true;
        row = mail_store::by_id(ctx, scope, &row.id).await?.ok_or(error::NOT_FOUND)?;
    }
    if let Some(seen) = change.seen
        && !row.outbound()
        && row.unread == seen
    {
        mail_store::set_unread(ctx, scope, vec![row], !seen).await?;
        detail.insert("unread".into(), json!(!seen));
        changed = true;
    }
    Ok(match changed {
        true => Outcome::Applied(detail),
        false => Outcome::Ignored,
    })
}

/// Files mail a client appended (a migration tool's old mail, a message
/// dragged in): parsed like received mail, but marked appended, with no
/// verdicts (nothing vouches for its sender), and announced to no webhook.
/// `None` when it cannot be read.
async fn appended(ctx: &Context, scope: &str, mailbox: &str, raw: &str) -> Result<Option<Row>, ApiError> {
    let Ok(bytes) = base64::engine::general_purpose::STANDARD.decode(raw.trim()) else {
        return Err(error::IMAP_CHANGES_INVALID.into());
    };
    let parsed = match inbound::parse(&bytes, &Limits::default()) {
        Ok(parsed) => parsed,
        Err(refused) => {
            tracing::warn!(mailbox, reason = %refused.0, "appended mail not filed");
            return Ok(None);
        }
    };
    let filing = NewMessage {
        source: APPENDED,
        authentication: None,
        ..poller::as_new(&parsed, scope, mailbox)
    };
    if let Some(row) = mail_store::file(ctx, &filing).await? {
        return Ok(Some(row));
    }
    // Already there (the same Message-ID): the change applies to that row.
    mail_store::by_message_id(ctx, scope, &parsed.message_id, Some(Direction::Inbound), |p| {
        p.mailbox == mailbox
    })
    .await
}
