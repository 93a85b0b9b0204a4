//! A send's last steps, the same for every path that sends: the account's
//! allow and block lists, the suppression check, the credit, the delivery record, then one SMTP transaction per
//! recipient, each with its own return path, so a bounce names its
//! recipient. Simulator recipients never leave: their story is told here,
//! through the same status code.

use super::sent::{SentMessage, Status};
use crate::context::Context;
use crate::error::{self, ApiError};
use crate::keys;
use crate::mail::{Outgoing, Started};
use crate::metrics;
use crate::service::accounts::payer::{self, Payer};
use crate::service::{delivery::suppressions, guardrails::lists, mail_store};
use crate::store::{Cond, Item, Key, StoreError, StoreResult, Write, item};

use super::record::{Event, apply, first_item};
use super::sent::Reply;
use super::{return_path, simulator};

/// What is about to go out.
pub struct Outbound<'a> {
    /// Whose outbox and suppression list it counts in ([`crate::service::delivery::sent::owner_of`]).
    pub owner: String,
    pub message_id: &'a str,
    pub from: &'a str,
    pub subject: &'a str,
    pub recipients: &'a [String],
    /// The signed message.
    pub raw: &'a [u8],
    /// `api` or `smtp`.
    pub source: &'static str,
}

/// What went out: the delivery's id and the payer's balance after it.
#[derive(Debug)]
pub struct Dispatched {
    pub delivery: String,
    pub credits_remaining: Option<i64>,
}

/// Checks, charges, records and sends. Nothing is spent when a recipient is
/// blocked, not allowed or suppressed; a credit is not refunded when the relay refuses (spec 8).
/// The answer is an error only when no recipient was accepted.
/// `payer` is `None` for a send paid when it was accepted (scheduled).
pub async fn dispatch(ctx: &Context, payer: Option<&Payer>, out: &Outbound<'_>) -> Result<Dispatched, ApiError> {
    check_recipients(ctx, &out.owner, out.from, out.recipients).await?;
    dispatch_checked(ctx, payer, out).await
}

/// The recipients against the owner's allow and block lists and its
/// suppressions: two reads at once, and nothing written, so a send may run
/// them beside its own earlier checks and take the answer in its turn. A
/// blocked or not-allowed recipient is named before a suppressed one.
pub async fn check_recipients(ctx: &Context, owner: &str, from: &str, recipients: &[String]) -> Result<(), ApiError> {
    Looked::read(ctx, owner, recipients, None)
        .await
        .check(from, recipients)
        .map(drop)
}

/// What the recipient checks read, and the payer's balance read in the same
/// batch: the lists' Query beside one BatchGetItem.
pub struct Looked {
    listed: StoreResult<Vec<lists::Entry>>,
    found: StoreResult<(Vec<Option<Item>>, Option<i64>)>,
}

impl Looked {
    /// Reads the owner's send lists, the recipients' suppressions and, when
    /// given, the payer's balance item; refuses nothing yet.
    pub async fn read(ctx: &Context, owner: &str, recipients: &[String], balance: Option<Key>) -> Looked {
        Self::read_with(ctx, owner, recipients, balance, &[]).await.0
    }

    /// [`Looked::read`] with more keys in its one batch: their items, in
    /// order, or none when the batch failed (the failure is the recipient
    /// check's to tell).
    pub async fn read_with(
        ctx: &Context,
        owner: &str,
        recipients: &[String],
        balance: Option<Key>,
        also: &[Key],
    ) -> (Looked, Option<Vec<Option<Item>>>) {
        let mut keys = suppressions::keys_of(owner, recipients);
        let suppressions = keys.len();
        let balanced = balance.is_some();
        keys.extend(balance);
        let theirs = keys.len();
        keys.extend_from_slice(also);
        let (listed, found) = tokio::join!(lists::send_entries(ctx, owner), ctx.store.get_many(&keys));
        let mut also_found = None;
        let found = found.map(|mut items| {
            also_found = Some(items.split_off(theirs));
            let balance = balanced
                .then(|| items.pop().flatten()?.get("remaining")?.as_i64())
                .flatten();
            items.truncate(suppressions);
            (items, balance)
        });
        (Looked { listed, found }, also_found)
    }

    /// [`check_recipients`]'s answer on what was read, and the balance read
    /// beside it (none when there is no balance item or none was asked).
    pub fn check(self, from: &str, recipients: &[String]) -> Result<Option<i64>, ApiError> {
        lists::refuse_send_among(&self.listed?, from, recipients)?;
        let (found, balance) = self.found?;
        suppressions::refuse_found(found)?;
        Ok(balance)
    }
}

/// [`dispatch`] once [`check_recipients`] passed for these recipients.
pub async fn dispatch_checked(
    ctx: &Context,
    payer: Option<&Payer>,
    out: &Outbound<'_>,
) -> Result<Dispatched, ApiError> {
    dispatch_recorded(ctx, payer, out, None).await
}

/// [`dispatch_checked`] with its delivery record already prepared (a send
/// whose one transaction was refused tries again the long way with it).
pub async fn dispatch_recorded(
    ctx: &Context,
    payer: Option<&Payer>,
    out: &Outbound<'_>,
    recorded: Option<Recorded>,
) -> Result<Dispatched, ApiError> {
    let real = real_recipients(ctx, out);
    let charged = async {
        let transport = transport(ctx, &real)?;
        // Mail that never leaves the service costs nothing; its answer
        // still says the balance (spec 2.2: only people get none).
        let credits_remaining = match (real.is_empty(), payer) {
            (false, Some(payer)) => payer::charge(ctx, payer).await?,
            (true, Some(payer)) => payer::balance(ctx, payer).await?,
            (_, None) => None,
        };
        Ok::<_, ApiError>((transport, credits_remaining))
    };
    let ((transport, credits_remaining), recorded) = match (charged.await, recorded) {
        (Ok(charged), recorded) => (charged, recorded),
        (Err(refused), Some(recorded)) => {
            recorded.discard(ctx).await;
            return Err(refused);
        }
        (Err(refused), None) => return Err(refused),
    };
    let mut recorded = recorded.unwrap_or_else(|| Recorded::prepare(ctx, out));
    recorded.commit(ctx, out, Vec::new()).await?;
    deliver(ctx, transport, out, recorded.sent, &real, credits_remaining, None).await
}

/// What goes to the relay for recipient `n`: its own envelope (the return
/// path that names it), the same bytes.
fn copy_for(ctx: &Context, out: &Outbound<'_>, delivery: &str, n: usize) -> Outgoing {
    Outgoing {
        envelope_from: return_path::for_recipient(ctx, delivery, n),
        recipients: vec![out.recipients[n].clone()],
        raw: out.raw.to_vec(),
    }
}

/// A send that goes now, whoever asked (sendMail and its kin, an SMTP
/// submission, a released waiting send): taken whole in one transaction with
/// `also` (the call's audit row) when it can be ([`take_at_once`]); that
/// transaction refused, it wrote nothing, and the long way says why: the
/// gate's transaction ([`payer::gate`]), then the credit and the record one
/// after the other ([`dispatch_recorded`]). `taken` runs once the one
/// transaction has committed.
pub async fn go_now(
    ctx: &Context,
    payer: &Payer,
    cap: Option<payer::KeyCap>,
    balance: Option<i64>,
    out: &Outbound<'_>,
    also: Vec<Write>,
    taken: impl FnOnce(),
) -> Result<Dispatched, ApiError> {
    let recorded = Recorded::prepare(ctx, out);
    let mut writes = payer::gate_writes(ctx, payer, cap.as_ref());
    writes.extend(also);
    match take_at_once(ctx, Some(payer), writes, balance, out, recorded).await? {
        Ok(at_once) => {
            taken();
            at_once.deliver(ctx, out).await
        }
        Err(recorded) => {
            if let Err(refused) = payer::gate(ctx, payer, cap).await {
                recorded.discard(ctx).await;
                return Err(refused);
            }
            dispatch_recorded(ctx, Some(payer), out, Some(recorded)).await
        }
    }
}

/// A send taken whole in one transaction: `writes` (a send's gate, its
/// windows and switches, [`payer::gate_writes`], and its audit row; or a
/// released send's taking), the payer's credit when it pays now, on
/// condition the balance is still the one `balance` read, and the delivery
/// record. The spec's order of checks holds because the transaction is all
/// or nothing: refused (a window full, a switch off, the balance moved or
/// short, the send taken by another), it wrote nothing, and the record comes
/// back for the caller's long way, which says why. The first recipient's
/// envelope goes to the relay meanwhile ([`crate::mail::Transport::start`]);
/// the relay delivers nothing until its data, sent once the transaction
/// wrote, and a refused transaction gives the envelope up.
pub(crate) async fn take_at_once<'c>(
    ctx: &'c Context,
    payer: Option<&Payer>,
    writes: Vec<Write>,
    balance: Option<i64>,
    out: &Outbound<'_>,
    recorded: Recorded,
) -> Result<Result<Taken<'c>, Recorded>, ApiError> {
    let real = real_recipients(ctx, out);
    if !real.is_empty() && ctx.customer_mail.is_none() {
        return Ok(Err(recorded));
    }
    let paying = payer.filter(|p| p.credit_bucket().is_some());
    let (charge, credits_remaining) = match (real.is_empty(), paying, balance) {
        // Free (simulator mail): the balance as read, unchanged.
        (true, Some(_), seen) => (None, seen),
        (true, None, _) | (false, None, _) => (None, None),
        (false, Some(payer), Some(seen)) if seen >= 1 => (payer::charge_write(payer, seen), Some(seen - 1)),
        // No balance, or none left: the long way refuses it in its turn.
        (false, Some(_), _) => return Ok(Err(recorded)),
    };
    let mut writes = writes;
    writes.extend(charge);
    let mut recorded = recorded;
    // The first recipient's envelope goes to the relay while the
    // transaction commits; its data only once it has.
    let delivery = recorded.sent.id.clone();
    let starting = async {
        match (transport(ctx, &real), real.first()) {
            (Ok(Some(transport)), Some(&n)) => Some(transport.start(copy_for(ctx, out, &delivery, n)).await),
            _ => None,
        }
    };
    let (committed, started) = tokio::join!(recorded.commit(ctx, out, writes), starting);
    if let Err(refused) = committed {
        if let Some(started) = started {
            started.abandon().await;
        }
        return match refused {
            StoreError::ConditionFailed => Ok(Err(recorded)),
            e => Err(e.into()),
        };
    }
    Ok(Ok(Taken {
        sent: recorded.sent,
        real,
        credits_remaining,
        started,
    }))
}

/// A send [`take_at_once`] took: paid for and recorded, not yet out (but
/// for its first recipient's envelope).
pub(crate) struct Taken<'t> {
    sent: SentMessage,
    real: Vec<usize>,
    credits_remaining: Option<i64>,
    started: Option<Box<dyn Started + 't>>,
}

impl Taken<'_> {
    /// Out through the relay (and the simulator), as [`dispatch`] sends.
    pub(crate) async fn deliver(self, ctx: &Context, out: &Outbound<'_>) -> Result<Dispatched, ApiError> {
        let transport = transport(ctx, &self.real)?;
        deliver(
            ctx,
            transport,
            out,
            self.sent,
            &self.real,
            self.credits_remaining,
            self.started,
        )
        .await
    }
}

/// Whether mail to `recipients` costs a credit: some leave the service
/// (simulator mail is free, spec'd beside the simulator in delivery.md).
pub fn costs_credit(ctx: &Context, recipients: &[String]) -> bool {
    recipients.iter().any(|r| simulator::scenario(ctx, r).is_none())
}

/// The recipients that leave the service (not the simulator's), by index.
fn real_recipients(ctx: &Context, out: &Outbound<'_>) -> Vec<usize> {
    (0..out.recipients.len())
        .filter(|&n| simulator::scenario(ctx, &out.recipients[n]).is_none())
        .collect()
}

/// The relay, when any recipient leaves the service.
fn transport<'c>(ctx: &'c Context, real: &[usize]) -> Result<Option<&'c dyn crate::mail::Transport>, ApiError> {
    if real.is_empty() {
        return Ok(None);
    }
    let transport = ctx
        .customer_mail
        .as_ref()
        .ok_or(error::NO_OUTBOUND_HOST)
        .inspect_err(|_| sent_metrics(ctx, 0, real.len()))?;
    Ok(Some(transport.as_ref()))
}

/// One SMTP transaction per real recipient, after the record is written;
/// the refusals recorded, the simulator's recipients played.
async fn deliver(
    ctx: &Context,
    transport: Option<&dyn crate::mail::Transport>,
    out: &Outbound<'_>,
    sent: SentMessage,
    real: &[usize],
    credits_remaining: Option<i64>,
    first_started: Option<Box<dyn Started + '_>>,
) -> Result<Dispatched, ApiError> {
    let mut refusals = Vec::new();
    let mut first_started = first_started;
    for &n in real {
        let Some(transport) = transport else { break };
        let started = match first_started.take() {
            Some(started) => started,
            None => transport.start(copy_for(ctx, out, &sent.id, n)).await,
        };
        if let Err(e) = started.finish().await {
            tracing::warn!(error = %e, delivery = %sent.id, recipient = n, "the relay refused a recipient");
            refusals.push((n, e));
        }
    }
    // Counted before the refusals are recorded, so a store failure there
    // cannot lose what the relay said.
    if !real.is_empty() {
        sent_metrics(ctx, real.len() - refusals.len(), refusals.len());
    }
    let accepted = out.recipients.len() - refusals.len();
    for (n, e) in refusals {
        let event = Event {
            id: format!("relay-{n}"),
            status: Status::Failed,
            reply: Some(relay_reply(&e.0)),
            at: crate::clock::iso(ctx.clock.now()),
            attempt: true,
            evidence: None,
        };
        apply(ctx, &sent.id, n, &event).await?;
    }
    for n in (0..out.recipients.len()).filter(|n| !real.contains(n)) {
        simulator::play(ctx, &sent, n).await?;
    }
    if accepted == 0 {
        mail_store::sync_marks::withdraw_sent(ctx, out.source, out.from, &sent.id, out.raw).await;
        return Err(error::SEND_FAILED.caused_by("the relay refused every recipient"));
    }
    Ok(Dispatched {
        delivery: sent.id,
        credits_remaining,
    })
}

/// The relay's answers to one send: recipients accepted and refused
/// (simulator recipients never reach the relay and are not counted).
fn sent_metrics(ctx: &Context, accepted: usize, failed: usize) {
    metrics::emit(
        ctx,
        &[
            metrics::count(metrics::SEND_ACCEPTED, accepted),
            metrics::count(metrics::SEND_FAILED, failed),
        ],
    );
}

/// The delivery, its recipients at `sent`, its outbox row and its
/// Message-ID, written together before anything goes out, so a report that
/// comes back at once finds them.
pub struct Recorded {
    sent: SentMessage,
    writes: Vec<Write>,
    /// The Sent copy (when the sender keeps one), and whether its bytes are
    /// stored already (a refused transaction's record tried again).
    copy: Option<(mail_store::sync_marks::SentCopy, bool)>,
}

impl Recorded {
    /// The record's writes; nothing is written yet.
    pub fn prepare(ctx: &Context, out: &Outbound<'_>) -> Recorded {
        let now = ctx.clock.now();
        let at = crate::clock::iso(now);
        let sent = SentMessage {
            id: return_path::new_delivery_id(),
            owner: out.owner.clone(),
            message_id: out.message_id.to_string(),
            from: out.from.to_string(),
            subject: out.subject.to_string(),
            to: out.recipients.to_vec(),
            created_at: at.clone(),
            source: out.source.to_string(),
        };
        let fresh = |item| Write::Put {
            item,
            cond: Some(Cond::NotExists),
        };
        let listed = crate::store::Key::new(
            keys::outbox(&sent.owner),
            format!("{:013}-{}", now.timestamp_millis().max(0), sent.id),
        );
        let mut writes = vec![
            fresh(item(&keys::delivery_message(&sent.id), &sent)),
            fresh(item(&listed, &sent)),
            // A Message-ID sent again (a resubmission) points at its newest send.
            Write::Put {
                item: item(
                    &keys::outbox_message_id(&sent.owner, &sent.message_id),
                    &serde_json::json!({ "delivery": sent.id }),
                ),
                cond: None,
            },
        ];
        for (n, address) in sent.to.iter().enumerate() {
            writes.push(fresh(first_item(&sent.id, n, address, &at)));
        }
        // The recipients become the sender's contacts (a first-contact hold
        // asks about anyone else).
        writes.extend(crate::service::delivery::contacts::contact_writes(
            &sent.owner,
            &sent.to,
            &at,
        ));
        // A send from a hosted mailbox is saved to its IMAP Sent.
        let copy = mail_store::sync_marks::sent_copy(ctx, out.source, out.from, out.message_id, &sent.id, out.raw).map(
            |copy| {
                let stored = copy.inline();
                (copy, stored)
            },
        );
        Recorded { sent, writes, copy }
    }

    /// Writes the record in one transaction with `with` (what goes in it
    /// beside the record), its Sent copy's bytes stored at the same time.
    /// A copy that could not be stored is dropped (its mark withdrawn when
    /// the transaction wrote it); a refused transaction keeps stored bytes
    /// for the record's next try, or for [`Recorded::discard`].
    async fn commit(&mut self, ctx: &Context, out: &Outbound<'_>, with: Vec<Write>) -> StoreResult<()> {
        let mut writes = with;
        writes.extend(self.writes.iter().cloned());
        writes.extend(self.copy.as_ref().map(|(copy, _)| copy.mark.clone()));
        let storing = async {
            match &self.copy {
                Some((copy, false)) => Some(copy.store(ctx, out.raw).await),
                _ => None,
            }
        };
        let (written, stored) = tokio::join!(ctx.store.transact(writes), storing);
        match stored {
            Some(true) => {
                if let Some((_, kept)) = &mut self.copy {
                    *kept = true;
                }
            }
            Some(false) => {
                if let Some((copy, _)) = self.copy.take()
                    && written.is_ok()
                {
                    copy.unmark(ctx).await;
                }
            }
            None => {}
        }
        written
    }

    /// The delivery's id (`DLV#<id>`).
    pub fn delivery(&self) -> &str {
        &self.sent.id
    }

    /// A record never written (its send refused): its Sent copy's bytes go.
    pub async fn discard(self, ctx: &Context) {
        if let Some((copy, true)) = &self.copy {
            copy.discard(ctx).await;
        }
    }
}

/// The relay's refusal as a reply: lettre's error text holds the SMTP code
/// and the server's words (`permanent error (550): 5.1.1 ...`).
fn relay_reply(error: &str) -> Reply {
    let code = error
        .split(|c: char| !c.is_ascii_digit())
        .find(|w| w.len() == 3 && matches!(w.as_bytes()[0], b'4' | b'5'))
        .and_then(|w| w.parse().ok());
    let enhanced = error
        .split_whitespace()
        .map(|w| w.trim_matches(|c: char| !c.is_ascii_digit() && c != '.'))
        .find(|w| {
            let parts: Vec<&str> = w.split('.').collect();
            parts.len() == 3 && matches!(parts[0], "2" | "4" | "5") && parts.iter().all(|p| !p.is_empty())
        })
        .map(str::to_string);
    Reply {
        smtp_code: code,
        enhanced_status: enhanced,
        text: Some(error.chars().take(1000).collect()),
        remote_host: None,
    }
}

#[cfg(test)]
mod tests {
    use super::relay_reply;

    #[test]
    fn a_relay_refusal_reads_as_a_reply() {
        let reply = relay_reply("permanent error (550): 5.1.1 <x@example.com>: Recipient address rejected");
        assert_eq!(reply.smtp_code, Some(550));
        assert_eq!(reply.enhanced_status.as_deref(), Some("5.1.1"));
        assert!(reply.permanent());
        let reply = relay_reply("connection refused");
        assert_eq!((reply.smtp_code, reply.enhanced_status), (None, None));
    }
}
