//! `POST /mtaImapChanges`: what IMAP clients did, as the mail host read it
//! in Dovecot's log, applied to the store. Each change says the state it
//! left (seen or not, the folder the message is in, gone), or brings the
//! bytes of mail a client appended. Each mailbox's changes carry growing
//! numbers, and a change at or below the last one applied is not applied
//! again: a batch sent twice (the mail host stopped before it saved where
//! it was) changes nothing the second time. Changes over IMAP are audited
//! with the mailbox login as the actor.

use base64::Engine;
use futures::StreamExt;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::imap_batch::{self, Known};
use super::place::Place;
use crate::context::Context;
use crate::error::{self, ApiError};
use crate::keys;
use crate::mail::inbound::{self, Limits};
use crate::service::guardrails::audit::{Actor, Change as AuditChange, KEPT_DAYS};
use crate::service::mail_store::{self, Direction, NewMessage, Quarantine, Row};
use crate::service::mailboxes::{self, Mailbox};
use crate::service::{caller::Call, receiving::poller, receiving::spam};
use crate::store::{Cond, Query, StoreError, TTL, Update, item};
use crate::values::{Field, Origin};

/// The most changes one request carries: a backlog's worth of a log read
/// (a client's STORE on thousands of messages is one line each).
pub const MAX_IMAP_CHANGES: usize = 500;
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
    /// Mail a client appended, standard base64: filed as appended, never as
    /// received, and never believed authenticated.
    #[serde(default)]
    pub raw: Option<String>,
}

/// 1 to 500 changes.
#[derive(Debug, JsonSchema)]
pub struct ImapChanges(#[schemars(length(min = 1, max = 500))] pub Vec<ImapChange>);

impl Field for ImapChanges {
    type Problems = ();
    fn read(value: &Value, _: Origin, (): ()) -> Result<Option<Self>, ApiError> {
        let list: Vec<ImapChange> = serde_json::from_value(value.clone()).map_err(|_| error::IMAP_CHANGES_INVALID)?;
        let sound = |c: &ImapChange| {
            c.seq > 0
                && crate::values::email(&c.mailbox).is_some()
                && (3..=998).contains(&c.message_id.len())
                && !c.message_id.chars().any(char::is_control)
                && (c.seen.is_some() || c.place.is_some() || c.raw.is_some())
        };
        if list.is_empty() || list.len() > MAX_IMAP_CHANGES || !list.iter().all(sound) {
            return Err(error::IMAP_CHANGES_INVALID.into());
        }
        Ok(Some(ImapChanges(list)))
    }
}

crate::input! {
    /// POST /mtaImapChanges.
    pub struct ImapInput {
        pub changes: ImapChanges = (error::IMAP_CHANGES_INVALID, ()),
    }
}

#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ImapApplied {
    pub ok: bool,
    /// Changes that changed the store.
    pub applied: usize,
    /// Already applied, already so, or about no mailbox here.
    pub ignored: usize,
    /// The numbers of changes about messages the store does not hold yet
    /// (the mail host's copy came first): send them again later, numbered
    /// anew.
    pub unknown: Vec<i64>,
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

pub async fn report(call: &Call<'_>, input: ImapInput) -> Result<ImapApplied, ApiError> {
    let ctx = call.ctx;
    let mut answer = ImapApplied {
        ok: true,
        applied: 0,
        ignored: 0,
        unknown: Vec::new(),
    };
    // Each mailbox's changes, in order.
    let mut by_mailbox: Vec<(String, Vec<ImapChange>)> = Vec::new();
    for change in input.changes.0 {
        let address = change.mailbox.to_ascii_lowercase();
        match by_mailbox.iter_mut().find(|(a, _)| *a == address) {
            Some((_, list)) => list.push(change),
            None => by_mailbox.push((address, vec![change])),
        }
    }
    for (address, changes) in by_mailbox {
        let mailbox = match mailboxes::by_address(ctx, &address).await? {
            Some(m) if m.is_active() && m.mode.stores() => m,
            _ => {
                answer.ignored += changes.len();
                continue;
            }
        };
        let one = report_mailbox(call, &mailbox, changes, None).await?;
        answer.applied += one.applied;
        answer.ignored += one.ignored;
        answer.unknown.extend(one.unknown);
    }
    answer.unknown.sort_unstable();
    Ok(answer)
}

/// One mailbox's changes: those at or below its last number are not
/// applied again, the others are (`imap_batch`), and the number moves to the
/// highest. `known`: the rows as read before (a test's, read earlier); none,
/// read now.
pub async fn report_mailbox(
    call: &Call<'_>,
    mailbox: &Mailbox,
    changes: Vec<ImapChange>,
    known: Option<Known>,
) -> Result<ImapApplied, ApiError> {
    let ctx = call.ctx;
    let (mut applied, mut ignored, mut unknown) = (0, 0, Vec::new());
    let seq_key = keys::mailbox_sync_seq(&mailbox.address);
    let last = ctx
        .store
        .get(&seq_key)
        .await?
        .and_then(|i| i.get("seq").and_then(Value::as_i64))
        .unwrap_or(0);
    let Some(highest) = changes.iter().map(|c| c.seq).max() else {
        return Ok(ImapApplied {
            ok: true,
            applied,
            ignored,
            unknown,
        });
    };
    let (fresh, seen): (Vec<ImapChange>, Vec<ImapChange>) = changes.into_iter().partition(|c| c.seq > last);
    ignored += seen.len();
    let scope = mailbox.reading_scope(&ctx.config.service_domain);
    let outcomes = imap_batch::apply(call, &scope, &mailbox.address, fresh, known).await?;
    let mut details = Vec::new();
    for (seq, outcome) in outcomes {
        match outcome {
            // Not applied: it comes again with a new number.
            Outcome::Unknown => unknown.push(seq),
            Outcome::Ignored => ignored += 1,
            Outcome::Applied(detail) => {
                applied += 1;
                details.push(detail);
            }
        }
    }
    // Numbered only once every change of the batch is applied (those
    // applied together moved it as far as they go): a batch cut short is
    // applied again from there (each change sets a state).
    let numbered = Update::new().set("seq", highest);
    let newer = Cond::Or(vec![Cond::NotExists, Cond::Lt("seq".into(), highest)]);
    match ctx.store.update(&seq_key, numbered, Some(newer)).await {
        Ok(_) | Err(StoreError::ConditionFailed) => {}
        Err(e) => return Err(e.into()),
    }
    if !details.is_empty() {
        audit(call, &mailbox.address, &mailbox.uid, details).await;
    }
    unknown.sort_unstable();
    Ok(ImapApplied {
        ok: true,
        applied,
        ignored,
        unknown,
    })
}

/// Changes applied one at a time: each message's in order, different
/// messages at once.
pub(super) async fn apply_singly(
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

/// The direction of the row a change is about.
pub(super) fn direction_of(change: &ImapChange) -> Direction {
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
        let rows: Vec<Row> = ctx
            .store
            .query(&query)
            .await?
            .items
            .into_iter()
            .map(crate::store::record)
            .collect::<Result<_, _>>()?;
        let mut mine = rows
            .into_iter()
            .filter(|r| r.mailbox == mailbox && r.direction == direction && r.quarantine.is_none());
        return Ok(match (mine.next(), mine.next()) {
            (Some(row), None) => Some(row),
            _ => None,
        });
    }
    let row = mail_store::by_message_id(ctx, scope, message_id, Some(direction)).await?;
    Ok(row.filter(|r| r.mailbox == mailbox))
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
    let row = mail_store::by_message_id(ctx, scope, &parsed.message_id, Some(Direction::Inbound)).await?;
    Ok(row.filter(|r| r.mailbox == mailbox))
}

/// One audit row for a mailbox's changes in one request, the mailbox login
/// as the actor. A failure to write is logged: the changes happened.
async fn audit(call: &Call<'_>, address: &str, uid: &str, details: Vec<Map<String, Value>>) {
    let ctx = call.ctx;
    let now = ctx.clock.now();
    let mut target = Map::new();
    target.insert("mailbox".into(), json!(address));
    target.insert("count".into(), json!(details.len()));
    let change = AuditChange {
        at: crate::clock::iso(now),
        actor: Actor {
            kind: "mailbox_login".into(),
            key_id: None,
            name: None,
            email: Some(address.to_string()),
        },
        operation: "imapChanges".into(),
        target,
        status: 200,
        error: None,
        count: None,
        last_at: None,
        details: details.into_iter().take(100).collect(),
        via: "imap".into(),
        request_id: call.request_id.clone(),
        ip: call.ip.into(),
    };
    let key = keys::audit_change(
        uid,
        &format!(
            "{:013}-{}",
            now.timestamp_millis(),
            hex::encode(rand::random::<[u8; 4]>())
        ),
    );
    let mut row = item(&key, &change);
    row.insert(TTL.into(), json!(now.timestamp() + KEPT_DAYS * 86_400));
    if let Err(e) = ctx.store.put(row, None).await {
        tracing::error!(error = %e, "the IMAP changes' audit row was not written");
    }
}
