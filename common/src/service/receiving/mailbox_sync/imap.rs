//! `POST /mtaImapChanges`: what IMAP clients did, as the mail host read it
//! in Dovecot's log, applied to the store. Each change says the state it
//! left (seen or not, the folder the message is in, gone), or brings the
//! bytes of mail a client appended. Each mailbox's changes carry growing
//! numbers, and a change at or below the last one applied is not applied
//! again: a batch sent twice (the mail host stopped before it saved where
//! it was) changes nothing the second time. Changes over IMAP are audited
//! with the mailbox login as the actor.

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{Map, Value, json};

use super::imap_batch::{self, Known};
pub use super::imap_single::ImapChange;
use super::imap_single::{self, Outcome};
use crate::error::{self, ApiError};
use crate::keys;
use crate::service::caller::Call;
use crate::service::guardrails::audit::{Actor, Change as AuditChange, KEPT_DAYS};
use crate::service::mailboxes::{self, Mailbox};
use crate::store::{Cond, StoreError, TTL, Update, item};
use crate::values::{Field, Origin};

/// The most changes one request carries: a backlog's worth of a log read
/// (a client's STORE on thousands of messages is one line each).
pub const MAX_IMAP_CHANGES: usize = 500;

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
    let scope = mailbox.reading_scope(&ctx.config.service_domain);
    // A report sent again after its answer was lost: a change about a
    // message the store still does not hold was answered unknown the first
    // time, and is again (skipped as applied, the agent would drop it).
    let again = imap_single::unheld(ctx, &scope, &mailbox.address, seen).await?;
    ignored += again.ignored;
    unknown.extend(again.unknown);
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
