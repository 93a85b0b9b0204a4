//! The delivery record and each recipient's status: read, and moved
//! forward by [`apply`] (its answer felt once: suppressions and the webhook).

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::sent::{Change, DeliveryBrief, Recipient, Reply, SentMessage, Status};
use super::suppressions;
use crate::context::Context;
use crate::error::ApiError;
use crate::keys;
use crate::service::webhooks;
use crate::store::{Cond, StoreError, StoreExt, item};

/// A report about one recipient of one delivery.
#[derive(Debug, Clone)]
pub struct Event {
    /// Stable for one report, so a report seen twice changes nothing.
    pub id: String,
    pub status: Status,
    pub reply: Option<Reply>,
    pub at: String,
    /// Whether it counts as an attempt (a relay's or remote's answer).
    pub attempt: bool,
    /// The report's raw copy, when one was kept.
    pub evidence: Option<String>,
}

/// What [`apply`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Applied {
    Changed,
    /// The same report again.
    Duplicate,
    /// A status the recipient has already gone past.
    Stale,
    /// No such delivery or recipient.
    Unknown,
}

/// Event ids kept per recipient to recognise a report seen again.
const SEEN: usize = 32;
/// Writes raced before giving up (each a conditional put on the version).
const ATTEMPTS: usize = 8;

/// A recipient's stored item: the record, the event ids seen and its version.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Stored {
    #[serde(flatten)]
    recipient: Recipient,
    #[serde(default)]
    seen: Vec<String>,
    #[serde(default)]
    version: i64,
}

/// Moves one recipient forward, once per report: a conditional write on the
/// item's version, so two reports racing both count or one retries. Its
/// consequences (suppression, the webhook) follow only a change.
pub async fn apply(ctx: &Context, delivery: &str, n: usize, event: &Event) -> Result<Applied, ApiError> {
    let key = keys::delivery_recipient(delivery, n);
    for _ in 0..ATTEMPTS {
        let found = ctx
            .store
            .get_many(&[keys::delivery_message(delivery), key.clone()])
            .await?;
        let [Some(sent), Some(stored)] = <[_; 2]>::try_from(found).map_err(|_| ApiError::internal("get_many"))? else {
            return Ok(Applied::Unknown);
        };
        let sent: SentMessage = crate::store::record(sent)?;
        let mut stored: Stored = crate::store::record(stored)?;
        if stored.seen.contains(&event.id) {
            return Ok(Applied::Duplicate);
        }
        let before = stored.recipient.status;
        let repeat = before == Status::Deferred && event.status == Status::Deferred;
        if event.status.rank() <= before.rank() && !repeat {
            return Ok(Applied::Stale);
        }
        let version = stored.version;
        advance(&mut stored, event);
        let mut written = item(&key, &stored);
        written.insert("rank".into(), Value::from(event.status.rank()));
        match ctx.store.put(written, Some(Cond::eq("version", version))).await {
            Ok(()) => {
                count_outcome(ctx, &stored.recipient, before);
                consequences(ctx, &sent, &stored.recipient, before).await;
                return Ok(Applied::Changed);
            }
            Err(StoreError::ConditionFailed) => continue,
            Err(e) => return Err(e.into()),
        }
    }
    Err(ApiError::internal("a delivery status kept changing under its writer"))
}

fn advance(stored: &mut Stored, event: &Event) {
    let recipient = &mut stored.recipient;
    if recipient.status != event.status {
        recipient.history.push(Change {
            status: event.status,
            at: event.at.clone(),
        });
    }
    recipient.status = event.status;
    if event.reply.is_some() {
        recipient.reply = event.reply.clone();
    }
    if event.attempt {
        recipient.attempts += 1;
    }
    recipient.updated_at = event.at.clone();
    recipient.evidence.extend(event.evidence.clone());
    stored.seen.push(event.id.clone());
    if stored.seen.len() > SEEN {
        stored.seen.remove(0);
    }
    stored.version += 1;
}

/// A recipient that has just bounced or complained, counted once (here the
/// status changed, on the write that changed it). The simulator's outcomes
/// are not counted: they are tests, and would move the bounce rate.
fn count_outcome(ctx: &Context, recipient: &Recipient, before: Status) {
    let name = match recipient.status {
        Status::Bounced => crate::metrics::BOUNCES,
        Status::Complained => crate::metrics::COMPLAINTS,
        _ => return,
    };
    if recipient.status != before && super::scenarios::scenario(ctx, &recipient.address).is_none() {
        crate::metrics::emit(ctx, &[crate::metrics::count(name, 1)]);
    }
}

/// What a change sets off. The status is already stored: a failure here is
/// logged, and the report is not asked for again.
async fn consequences(ctx: &Context, sent: &SentMessage, recipient: &Recipient, before: Status) {
    if let Err(e) = suppressions::after_change(ctx, sent, recipient).await {
        tracing::error!(error = %e, delivery = %sent.id, "the suppression list could not follow a delivery status");
    }
    if recipient.status != before
        && let Some(kind) = recipient.status.event_type()
    {
        let body = json!({
            "type": kind,
            "id": sent.id,
            "messageId": sent.message_id,
            "from": sent.from,
            "recipient": recipient.address,
            "status": recipient.status,
            "reply": recipient.reply,
            "attempts": recipient.attempts,
            "timestamp": recipient.updated_at,
        });
        webhooks::publish(ctx, &sent.owner, kind, &sent.id, Some(&sent.message_id), body).await;
    }
}

/// A delivery's record and its recipients, in order.
pub async fn read(ctx: &Context, delivery: &str) -> Result<Option<(SentMessage, Vec<Recipient>)>, ApiError> {
    let Some(sent) = ctx.store.read::<SentMessage>(&keys::delivery_message(delivery)).await? else {
        return Ok(None);
    };
    let recipients = recipients_of(ctx, std::slice::from_ref(&sent)).await?.remove(0);
    Ok(Some((sent, recipients)))
}

/// Each delivery's brief (overall and per-recipient status), by id; `None`
/// for an id with no record. Two batch reads, whatever the count.
pub async fn briefs(ctx: &Context, ids: &[&str]) -> Result<Vec<Option<DeliveryBrief>>, ApiError> {
    let keys: Vec<_> = ids.iter().map(|id| keys::delivery_message(id)).collect();
    let mut found = Vec::with_capacity(keys.len());
    for chunk in keys.chunks(100) {
        found.extend(ctx.store.get_many(chunk).await?);
    }
    let sent = found
        .into_iter()
        .map(|item| item.map(crate::store::record::<SentMessage>).transpose())
        .collect::<Result<Vec<_>, _>>()?;
    let present: Vec<SentMessage> = sent.iter().flatten().cloned().collect();
    let mut recipients = recipients_of(ctx, &present).await?.into_iter();
    Ok(sent
        .iter()
        .map(|s| {
            s.as_ref()
                .and_then(|_| recipients.next())
                .map(|r| DeliveryBrief::of(&r))
        })
        .collect())
}

/// The recipients of each sent message, in order, read in as few requests
/// as the store allows.
pub async fn recipients_of(ctx: &Context, sent: &[SentMessage]) -> Result<Vec<Vec<Recipient>>, ApiError> {
    let keys: Vec<_> = sent
        .iter()
        .flat_map(|s| (0..s.to.len()).map(|n| keys::delivery_recipient(&s.id, n)))
        .collect();
    let mut found = Vec::with_capacity(keys.len());
    for chunk in keys.chunks(100) {
        found.extend(ctx.store.get_many(chunk).await?);
    }
    let mut found = found.into_iter();
    let mut all = Vec::with_capacity(sent.len());
    for s in sent {
        let mut recipients = Vec::with_capacity(s.to.len());
        for _ in 0..s.to.len() {
            if let Some(stored) = found.next().flatten() {
                recipients.push(crate::store::record::<Stored>(stored)?.recipient);
            }
        }
        all.push(recipients);
    }
    Ok(all)
}

/// The stored item of a new recipient at `sent`.
pub(crate) fn first_item(delivery: &str, n: usize, address: &str, at: &str) -> crate::store::Item {
    let stored = Stored {
        recipient: Recipient {
            address: address.to_string(),
            status: Status::Sent,
            reply: None,
            attempts: 0,
            updated_at: at.to_string(),
            history: vec![Change {
                status: Status::Sent,
                at: at.to_string(),
            }],
            evidence: Vec::new(),
        },
        seen: Vec::new(),
        version: 0,
    };
    let mut written = item(&keys::delivery_recipient(delivery, n), &stored);
    written.insert("rank".into(), Value::from(Status::Sent.rank()));
    written
}
