//! Going out: the one door every waiting send leaves by, for an approval and
//! for the scheduled-sends job alike. Whoever moves a send from `waiting` to
//! `sending` sends it. That transaction also checks what a send at once is
//! checked for (`payer::switches`: sending paused, the agent key frozen) and
//! that the scoped key that asked for it is still there; a send the switches
//! hold stays waiting, in its place in the queue, until they let it go or it
//! expires ([`LATE_HOURS`](super::record::LATE_HOURS) past its time).

use serde_json::Value;

use super::record::{FiledIn, Kind, Pending, PendingStatus, asking_key, blob, due_key, refund, waiting_key};
use super::settle::settle;
use crate::clock::iso;
use crate::context::Context;
use crate::error::{self, ApiError};
use crate::keys;
use crate::messages;
use crate::service::accounts::payer::{self, Payer};
use crate::service::delivery::dispatch::{self, Dispatched, Outbound};
use crate::store::{Cond, Key, Query, StoreError, StoreExt, Update, Write, key_of, record};

/// Sends a waiting send (`waiting`, as the caller read it) exactly once,
/// however many approvers and runners arrive together.
///
/// Its message's bytes, the recipients' lists and suppressions and the
/// payer's balance are read at once; then one transaction takes it (on the
/// conditions [`take`] states), marks it sent under its delivery's id,
/// charges it when it is paid now and writes the delivery record; then it
/// goes out. Three round trips from the caller's read, as sendMail's. A
/// refusal among the reads, or that transaction refused, goes the long way,
/// which says why: [`take`], then the send path's last steps one by one.
pub async fn release(ctx: &Context, waiting: Pending) -> Result<Pending, ApiError> {
    let id = waiting.hold.id.clone();
    let pays_now = (!waiting.charged).then_some(&waiting.payer);
    let balance_key = pays_now
        .and_then(Payer::credit_bucket)
        .map(|bucket| keys::credits(&bucket));
    let kept = blob(&id);
    let (raw, looked) = tokio::join!(
        ctx.blobs.get(&kept),
        dispatch::Looked::read(ctx, &waiting.owner, &waiting.hold.to, balance_key)
    );
    let Some(raw) = raw.map_err(ApiError::internal)? else {
        // Sent by another since the caller read it (its message is deleted
        // once it has gone): taking it says so.
        take(ctx, waiting).await?;
        return Err(ApiError::internal("a waiting send's message is missing"));
    };
    let out = outbound(&waiting, &raw);
    let Ok(balance) = looked.check(&waiting.hold.from, &waiting.hold.to) else {
        return release_step_by_step(ctx, waiting, raw).await;
    };
    let recorded = dispatch::Recorded::prepare(ctx, &out);
    let (writes, _, _) = taking(ctx, &waiting, PendingStatus::Sent, Some(recorded.delivery()));
    let taken = match dispatch::take_at_once(ctx, pays_now, writes, balance, &out, recorded).await? {
        Ok(taken) => taken,
        Err(recorded) => {
            recorded.discard(ctx).await;
            return release_step_by_step(ctx, waiting, raw).await;
        }
    };
    let outcome = taken.deliver(ctx, &out).await;
    let mut sent = waiting;
    sent.hold.status = PendingStatus::Sent;
    finish(ctx, sent, &raw, outcome, true).await
}

/// [`release`] the long way: taken first, then the send path's last steps
/// one after the other, each refusal in its turn.
async fn release_step_by_step(ctx: &Context, waiting: Pending, raw: Vec<u8>) -> Result<Pending, ApiError> {
    let taken = take(ctx, waiting).await?;
    let payer = (!taken.charged).then_some(&taken.payer);
    let sent = dispatch::dispatch(ctx, payer, &outbound(&taken, &raw)).await;
    finish(ctx, taken, &raw, sent, false).await
}

/// The send a waiting send becomes.
fn outbound<'a>(p: &'a Pending, raw: &'a [u8]) -> Outbound<'a> {
    Outbound {
        owner: p.owner.clone(),
        message_id: &p.hold.message_id,
        from: &p.hold.from,
        subject: &p.hold.subject,
        recipients: &p.hold.to,
        raw,
        source: "api",
    }
}

/// After a taken send went out (or failed): filed on its thread, its record
/// says how it ended (written already when its taking marked it sent and
/// it was), a credit taken when it was accepted given back if it failed, its
/// kept message deleted.
async fn finish(
    ctx: &Context,
    mut taken: Pending,
    raw: &[u8],
    sent: Result<Dispatched, ApiError>,
    marked_sent: bool,
) -> Result<Pending, ApiError> {
    let id = taken.hold.id.clone();
    if let (Ok(d), Some(place)) = (&sent, &taken.filed_in) {
        file_sent(ctx, &taken, place, raw, &d.delivery).await;
    }
    if sent.is_err() && taken.charged {
        refund(ctx, &taken).await;
    }
    let after = match (&sent, marked_sent) {
        (Ok(d), true) => {
            taken.hold.delivery = Some(d.delivery.clone());
            taken
        }
        _ => {
            let (status, update) = match &sent {
                Ok(d) => (PendingStatus::Sent, Update::new().set("delivery", d.delivery.clone())),
                Err(e) => (PendingStatus::Failed, Update::new().set("error", e.error.to_string())),
            };
            let after = ctx
                .store
                .update(&keys::pending(&id), update.set("status", status), None)
                .await?;
            record(after)?
        }
    };
    let _ = ctx.blobs.delete(&blob(&id)).await;
    sent?;
    Ok(after)
}

/// Whether a send was held back by the switches (sending paused, the agent
/// key frozen): it still waits, and goes once they let it.
pub fn held_back(e: &ApiError) -> bool {
    e.is(error::SENDING_PAUSED) || e.is(error::AGENT_KEY_DISABLED)
}

/// Files a reply that went out on its stored conversation, from the signed
/// message it kept (nothing when it answers none).
async fn file_sent(ctx: &Context, taken: &Pending, place: &FiledIn, raw: &[u8], delivery: &str) {
    let Some(parsed) = mail_parser::MessageParser::default().parse(raw) else {
        tracing::error!(send = %taken.hold.id, "a waiting send's message could not be read to file it");
        return;
    };
    let sent = crate::service::sending::replies::SentBytes {
        delivery,
        from: &taken.hold.from,
        message_id: &taken.hold.message_id,
        to: &taken.hold.to,
        parsed: &parsed,
    };
    crate::service::sending::replies::file_bytes_on_thread(ctx, &place.scope, &place.mailbox, &sent).await;
}

/// Moves a send from waiting to sending, out of the account's waiting sends
/// and the queue: the one transaction that decides who sends it, on
/// condition that it is as the caller read it (a hold approved for later
/// since is charged and queued: taken afresh), that the switches let it go,
/// and that the scoped key that asked is not revoked.
async fn take(ctx: &Context, mut p: Pending) -> Result<Pending, ApiError> {
    let (writes, switches, asker) = taking(ctx, &p, PendingStatus::Sending, None);
    match ctx.store.transact(writes).await {
        Ok(()) => {
            p.hold.status = PendingStatus::Sending;
            Ok(p)
        }
        Err(StoreError::ConditionFailed) => Err(not_taken(ctx, &p, &switches, asker).await),
        Err(e) => Err(e.into()),
    }
}

/// [`take`]'s writes, moving the send to `status` (sent at once: under its
/// `delivery`'s id), with the switches' conditions and the asking key they
/// check.
fn taking(
    ctx: &Context,
    p: &Pending,
    status: PendingStatus,
    delivery: Option<&str>,
) -> (Vec<Write>, Vec<(Key, Cond)>, Option<Key>) {
    let switches = payer::switches(ctx, &p.payer);
    let asker = asking_key(p);
    let mut update = Update::new().set("status", status);
    if let Some(delivery) = delivery {
        update = update.set("delivery", delivery);
    }
    let mut writes = vec![
        Write::Update {
            key: keys::pending(&p.hold.id),
            update,
            cond: Some(Cond::And(vec![
                Cond::eq("status", PendingStatus::Waiting),
                Cond::eq("kind", p.hold.kind),
                Cond::eq("charged", p.charged),
            ])),
        },
        Write::Delete {
            key: waiting_key(p),
            cond: None,
        },
    ];
    if p.hold.kind == Kind::Scheduled {
        writes.push(Write::Delete {
            key: due_key(p),
            cond: None,
        });
    }
    writes.extend(switches.iter().map(|(key, cond)| Write::Check {
        key: key.clone(),
        cond: cond.clone(),
    }));
    writes.extend(asker.clone().map(|key| Write::Check {
        key,
        cond: Cond::Exists,
    }));
    (writes, switches, asker)
}

/// Why [`take`] failed: decided by another (409); its key revoked (it is
/// cancelled now, its credit back: 409); else the switches (503), and it
/// waits on. A switch turned back on since the transaction still answers
/// paused: the send waits for the next run, never lost.
async fn not_taken(ctx: &Context, p: &Pending, switches: &[(Key, Cond)], asker: Option<Key>) -> ApiError {
    let found = match ctx.store.read::<Pending>(&keys::pending(&p.hold.id)).await {
        Ok(found) => found,
        Err(e) => return e.into(),
    };
    let unchanged = found.is_some_and(|now| {
        now.hold.status == PendingStatus::Waiting && now.hold.kind == p.hold.kind && now.charged == p.charged
    });
    if !unchanged {
        return error::HOLD_DECIDED.into();
    }
    if let Some(key) = asker {
        match ctx.store.get(&key).await {
            Ok(Some(_)) => {}
            Ok(None) => {
                let revoked = Some(messages::SEND_KEY_REVOKED);
                if let Err(e) = settle(ctx, &p.hold.id, PendingStatus::Cancelled, None, revoked).await
                    && !e.is(error::HOLD_DECIDED)
                {
                    return e;
                }
                return error::HOLD_DECIDED.into();
            }
            Err(e) => return e.into(),
        }
    }
    match payer::switched_off(ctx, switches).await {
        Err(e) => e,
        Ok(()) => error::SENDING_PAUSED.into(),
    }
}

/// Due entries one run goes through at most, in pages of 100: sends the
/// agent key's freeze holds at the head of the queue do not keep the
/// accounts' sends behind them waiting.
const RUN_PAGES: usize = 10;

/// What one run of the scheduled sends did (the job's summary).
#[derive(Debug, Default, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DueRun {
    pub sent: u64,
    /// Refused when due (a recipient suppressed since, the relay): credit back.
    pub failed: u64,
    /// Sent, cancelled or decided by another since it was queued.
    pub already_taken: u64,
    /// Held back by the switches: they go once sending is allowed again.
    pub waiting: u64,
    /// Held back past their expiry: not sent, credit back.
    pub expired: u64,
}

enum Outcome {
    Sent,
    Failed,
    Taken,
    /// Held back by the switches: it keeps its place in the queue.
    Waiting,
    Expired,
}

/// One run of the scheduled sends: every send due by now goes out, once,
/// unless the switches hold it; one they held past its expiry expires, its
/// credit back.
pub async fn run_due(ctx: &Context) -> Result<DueRun, ApiError> {
    let now = ctx.clock.now();
    // Read once to spare a run the sends it could not take anyway; each
    // taking checks the switches again, in its transaction.
    let held = payer::switched_off(ctx, &payer::switches(ctx, &Payer::Agent))
        .await
        .err();
    let mut query = Query::partition(keys::DUE)
        .between("0", format!("{}~", iso(now)))
        .limit(100);
    let mut run = DueRun::default();
    for _ in 0..RUN_PAGES {
        let page = ctx.store.query(&query).await?;
        for entry in &page.items {
            match run_one(ctx, entry, now, held.as_ref()).await? {
                Outcome::Sent => run.sent += 1,
                Outcome::Failed => run.failed += 1,
                Outcome::Taken => run.already_taken += 1,
                Outcome::Waiting => run.waiting += 1,
                Outcome::Expired => run.expired += 1,
            }
        }
        match page.next {
            Some(next) => query = query.after(Some(next)),
            None => break,
        }
    }
    Ok(run)
}

/// One due entry. Taking a send removes its entry in the same transaction,
/// and ending one removes it after; an entry whose send no longer waits (a
/// run cut short) is dropped here.
async fn run_one(
    ctx: &Context,
    entry: &crate::store::Item,
    now: chrono::DateTime<chrono::Utc>,
    held: Option<&ApiError>,
) -> Result<Outcome, ApiError> {
    let (Some(id), Some(key)) = (entry.get("id").and_then(Value::as_str), key_of(entry)) else {
        return Ok(Outcome::Taken);
    };
    let waiting = ctx
        .store
        .read::<Pending>(&keys::pending(id))
        .await?
        .filter(|p| p.hold.status == PendingStatus::Waiting);
    let Some(p) = waiting else {
        ctx.store.delete(&key, None).await?;
        return Ok(Outcome::Taken);
    };
    let lapsed = p.lapses_at().is_some_and(|at| at <= iso(now));
    let outcome = match held {
        Some(e) if e.is(error::SENDING_PAUSED) || matches!(p.payer, Payer::Agent) => Err(e.clone()),
        _ => release(ctx, p).await,
    };
    Ok(match outcome {
        Ok(_) => Outcome::Sent,
        // Held back past its expiry, it will not go late: it expires. (A
        // send late for any other reason, the job itself stopped, still goes.)
        Err(e) if held_back(&e) && lapsed => {
            let late = Some(messages::SEND_HELD_TOO_LONG);
            match settle(ctx, id, PendingStatus::Expired, Some(Kind::Scheduled), late).await {
                Ok(_) => Outcome::Expired,
                Err(e) if e.is(error::HOLD_DECIDED) => Outcome::Taken,
                Err(e) => return Err(e),
            }
        }
        Err(e) if held_back(&e) => Outcome::Waiting,
        Err(e) if e.is(error::HOLD_DECIDED) => Outcome::Taken,
        Err(e) => {
            tracing::warn!(error = %e.error, send = %id, "a scheduled send failed");
            Outcome::Failed
        }
    })
}
