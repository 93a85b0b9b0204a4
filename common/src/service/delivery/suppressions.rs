//! The suppression list: per sender (an account; the service-domain sender),
//! the recipients mail no longer goes to. A hard bounce or a complaint adds
//! one; so do soft bounces on [`SOFT_BOUNCES`] sends in a row spread over at
//! least [`SOFT_BOUNCE_SPAN_DAYS`] days. A send to a listed recipient is
//! refused whole, before any credit is spent.
//!
//! Items: `SUPP#<owner>/<address>` the entry (looked up by a send),
//! `SUPPLIST#<owner>/<ms>-<hex>` the same entry in the newest-first list,
//! `SOFT#<owner>/<address>` a recipient's run of soft bounces.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::boundary::{Boundary, Envelope};
use super::sent::{Recipient, Reply, SentMessage, Status, owner_of_caller};
use crate::clock::iso;
use crate::context::Context;
use crate::error::{self, ApiError};
use crate::keys;
use crate::service::caller::Call;
use crate::service::webhooks;
use crate::store::{Cond, StoreError, StoreExt, Write, item};
use crate::values::Page;
use crate::values::{Cursor, EmailAddress, Limit, Line};

/// Soft bounces in a row that suppress a recipient ...
pub const SOFT_BOUNCES: i64 = 3;
/// ... when they span at least this many days.
pub const SOFT_BOUNCE_SPAN_DAYS: i64 = 3;

/// Why a recipient is listed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Reason {
    /// A permanent failure (5.x.x).
    HardBounce,
    /// Soft bounces on several sends over several days.
    SoftBounces,
    /// The recipient reported the mail as spam.
    Complaint,
    /// Added through the API.
    Manual,
}

impl Reason {
    fn words(self) -> &'static str {
        match self {
            Reason::HardBounce => "a hard bounce",
            Reason::SoftBounces => "repeated soft bounces",
            Reason::Complaint => "a spam complaint",
            Reason::Manual => "it was added by hand",
        }
    }
}

/// One listed recipient.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Suppression {
    pub address: String,
    pub reason: Reason,
    /// The note given when added by hand.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// The remote reply that caused it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reply: Option<Reply>,
    /// The Message-ID of the mail that caused it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_id: Option<String>,
    /// The mailbox whose mail caused it (absent when added by hand).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    pub created_at: String,
}

impl Suppression {
    /// Whether the caller sees it: a key narrowed to some mailboxes sees the
    /// entries added by hand (they judge its sends too) and those its own
    /// mailboxes' mail caused, not whom the account's other mailboxes mail.
    fn seen_by(&self, caller: &crate::auth::Caller) -> bool {
        let narrowed = caller.scope().is_some_and(|s| s.mailboxes.is_some());
        !narrowed || self.reason == Reason::Manual || self.from.as_deref().is_some_and(|f| caller.covers(f))
    }

    /// The entry with its remote reply inside `boundary`'s envelope.
    fn for_agent(self, boundary: Option<&Boundary>) -> Suppression {
        match boundary {
            Some(b) => Suppression {
                reply: self.reply.map(|r| b.reply(r)),
                ..self
            },
            None => self,
        }
    }
}

/// A listed recipient as stored: the entry, and where it sits in the list
/// (so a removal takes its list row too). Clients see the entry alone.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Listed {
    #[serde(flatten)]
    entry: Suppression,
    #[serde(default)]
    list_key: String,
}

// ------------------------------------------------------------- the check

/// The recipients' suppression items, for a send that reads them in its
/// own batch ([`refuse_found`] judges what it found).
pub fn keys_of(owner: &str, recipients: &[String]) -> Vec<crate::store::Key> {
    recipients
        .iter()
        .map(|r| keys::suppression(owner, &r.to_ascii_lowercase()))
        .collect()
}

/// Refuses a send to any listed recipient, naming each with why and since
/// when, on the items found at [`keys_of`] (one request for all of them).
pub fn refuse_found(found: Vec<Option<crate::store::Item>>) -> Result<(), ApiError> {
    let listed: Vec<Suppression> = found
        .into_iter()
        .flatten()
        .map(crate::store::record)
        .collect::<Result<_, _>>()?;
    if listed.is_empty() {
        return Ok(());
    }
    let each: Vec<String> = listed
        .iter()
        .map(|s| {
            let cause = s
                .reply
                .as_ref()
                .map(|r| format!(": {}", r.summary()))
                .unwrap_or_default();
            format!(
                "{} is suppressed since {} after {}{cause}",
                s.address,
                s.created_at,
                s.reason.words()
            )
        })
        .collect();
    let mut refused = error::RECIPIENT_SUPPRESSED.with(each.join("; "));
    refused.addresses = Some(listed.into_iter().map(|s| s.address).collect());
    Err(refused)
}

// ----------------------------------------------- following delivery status

/// Keeps the list in step with a recipient's new status.
pub async fn after_change(ctx: &Context, sent: &SentMessage, recipient: &Recipient) -> Result<(), ApiError> {
    let address = recipient.address.to_ascii_lowercase();
    let soft = keys::soft_bounces(&sent.owner, &address);
    let reason = match recipient.status {
        Status::Complained => Reason::Complaint,
        Status::Bounced if recipient.reply.as_ref().is_none_or(Reply::permanent) => Reason::HardBounce,
        Status::Bounced => match soft_bounce(ctx, &soft, &sent.id).await? {
            true => Reason::SoftBounces,
            false => return Ok(()),
        },
        // A delivery ends a run of soft bounces.
        Status::Delivered => {
            ctx.store.delete(&soft, None).await?;
            return Ok(());
        }
        Status::Sent | Status::Deferred | Status::Failed => return Ok(()),
    };
    let entry = Suppression {
        address,
        reason,
        note: None,
        reply: recipient.reply.clone(),
        message_id: Some(sent.message_id.clone()),
        from: Some(sent.from.to_ascii_lowercase()),
        created_at: iso(ctx.clock.now()),
    };
    add(ctx, &sent.owner, entry).await.map(drop)
}

/// Counts one soft bounce (once per delivery); true when the run is long
/// and old enough to suppress.
async fn soft_bounce(ctx: &Context, key: &crate::store::Key, delivery: &str) -> Result<bool, ApiError> {
    use crate::store::Update;
    let now = ctx.clock.epoch();
    let update = Update::new()
        .add("count", 1)
        .set("lastDelivery", delivery)
        .set("updatedAt", now);
    // Once per delivery: the same send's second report is not a second bounce.
    let fresh = Cond::ne("lastDelivery", delivery);
    let counted = match ctx.store.update(key, update, Some(fresh)).await {
        Ok(counted) => counted,
        Err(StoreError::ConditionFailed) => return Ok(false),
        Err(e) => return Err(e.into()),
    };
    let first = match counted.get("firstAt").and_then(serde_json::Value::as_i64) {
        Some(first) => first,
        None => {
            // The run's start: set once, by whichever write gets there first.
            let start = Update::new().set("firstAt", now);
            match ctx.store.update(key, start, Some(Cond::missing("firstAt"))).await {
                Ok(_) | Err(StoreError::ConditionFailed) => now,
                Err(e) => return Err(e.into()),
            }
        }
    };
    let count = counted.get("count").and_then(serde_json::Value::as_i64).unwrap_or(0);
    Ok(count >= SOFT_BOUNCES && now - first >= SOFT_BOUNCE_SPAN_DAYS * 86_400)
}

/// Lists a recipient unless it already is; the entry and its place in the
/// list are written together. Announces `suppression.added`.
async fn add(ctx: &Context, owner: &str, entry: Suppression) -> Result<Option<Suppression>, ApiError> {
    let ms = ctx.clock.now().timestamp_millis().max(0);
    let stored = Listed {
        list_key: format!("{ms:013}-{}", hex::encode(rand::random::<[u8; 4]>())),
        entry,
    };
    let listed = item(&keys::suppression(owner, &stored.entry.address), &stored);
    let in_list = item(
        &crate::store::Key::new(keys::suppression_list(owner), &stored.list_key),
        &stored,
    );
    let entry = stored.entry;
    let writes = vec![
        Write::Put {
            item: listed,
            cond: Some(Cond::NotExists),
        },
        Write::Put {
            item: in_list,
            cond: None,
        },
    ];
    match ctx.store.transact(writes).await {
        Ok(()) => {}
        Err(StoreError::ConditionFailed) => return Ok(None),
        Err(e) => return Err(e.into()),
    }
    let body = json!({
        "type": "suppression.added",
        "address": entry.address,
        "reason": entry.reason,
        "messageId": entry.message_id,
        "reply": entry.reply,
        "timestamp": entry.created_at,
    });
    webhooks::publish(
        ctx,
        owner,
        "suppression.added",
        &entry.address,
        entry.message_id.as_deref(),
        body,
    )
    .await;
    Ok(Some(entry))
}

// ------------------------------------------------------------------ routes

crate::input! {
    pub struct ListQuery {
        pub limit: Option<Limit<50>>,
        /// The nextCursor of the previous page.
        pub cursor: Option<Cursor> = error::CURSOR_INVALID,
        /// Look up one address (any case).
        pub address: Option<EmailAddress> = error::SUPPRESSION_ADDRESS_INVALID,
    }
}

#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SuppressionList {
    pub ok: bool,
    /// Newest first; with `address`, that one entry or none.
    pub suppressions: Vec<Suppression>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
    /// The MCP tool: each remote reply's text and host (a stranger's) is
    /// wrapped in this response's random delimiter (see notice).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub envelope: Option<Envelope>,
}

pub async fn list(call: &Call<'_>, input: ListQuery) -> Result<SuppressionList, ApiError> {
    let owner = owner_of_caller(call.caller);
    let boundary = Boundary::for_tool(call);
    let envelope = boundary.as_ref().map(|b| b.describe(None));
    if let Some(address) = input.address {
        let found: Option<Suppression> = call.ctx.store.read(&keys::suppression(&owner, &address)).await?;
        return Ok(SuppressionList {
            ok: true,
            suppressions: found
                .into_iter()
                .filter(|s| s.seen_by(call.caller))
                .map(|s| s.for_agent(boundary.as_ref()))
                .collect(),
            next_cursor: None,
            envelope,
        });
    }
    let limit = Limit::rows(input.limit, 25);
    let seen = |item: &crate::store::RawItem| item.record::<Suppression>().is_ok_and(|s| s.seen_by(call.caller));
    let Page { items, next_cursor } = crate::service::mail_store::page_raw_where(
        call.ctx,
        keys::suppression_list(&owner),
        true,
        input.cursor.as_deref(),
        limit,
        seen,
    )
    .await?;
    let suppressions: Vec<Suppression> = items.iter().map(|i| i.record()).collect::<Result<_, _>>()?;
    Ok(SuppressionList {
        ok: true,
        suppressions: suppressions
            .into_iter()
            .map(|s| s.for_agent(boundary.as_ref()))
            .collect(),
        next_cursor,
        envelope,
    })
}

crate::input! {
    pub struct AddInput {
        pub address: EmailAddress = (error::ADDRESS_REQUIRED, error::SUPPRESSION_ADDRESS_INVALID),
        /// A note for yourself, at most 200 characters.
        pub reason: Option<Line<200>> = error::SUPPRESSION_REASON_INVALID,
    }
}

#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SuppressionView {
    pub ok: bool,
    pub suppression: Suppression,
    /// false when the address was already listed (the entry shown is the first).
    pub added: bool,
    /// The MCP tool, for an entry a bounce made: its remote reply wrapped in
    /// this response's random delimiter (see notice).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub envelope: Option<Envelope>,
}

pub async fn add_by_hand(call: &Call<'_>, input: AddInput) -> Result<SuppressionView, ApiError> {
    let owner = owner_of_caller(call.caller);
    let entry = Suppression {
        address: input.address.into_string(),
        reason: Reason::Manual,
        note: input.reason.map(Line::into_string),
        reply: None,
        message_id: None,
        from: None,
        created_at: iso(call.ctx.clock.now()),
    };
    let address = entry.address.clone();
    if let Some(added) = add(call.ctx, &owner, entry).await? {
        return Ok(SuppressionView {
            ok: true,
            suppression: added,
            added: true,
            envelope: None,
        });
    }
    let first: Suppression = call
        .ctx
        .store
        .read(&keys::suppression(&owner, &address))
        .await?
        .ok_or_else(|| ApiError::internal("a listed address vanished"))?;
    let boundary = Boundary::for_tool(call);
    Ok(SuppressionView {
        ok: true,
        envelope: boundary.as_ref().map(|b| b.describe(None)),
        suppression: first.for_agent(boundary.as_ref()),
        added: false,
    })
}

crate::input! {
    pub struct RemoveQuery {
        pub address: EmailAddress = (error::ADDRESS_REQUIRED, error::SUPPRESSION_ADDRESS_INVALID),
    }
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Removed {
    pub ok: bool,
    pub removed: Suppression,
    /// The MCP tool: the removed entry's remote reply wrapped in this
    /// response's random delimiter (see notice).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub envelope: Option<Envelope>,
}

/// Takes an address off the list (and its run of soft bounces with it).
/// The account key's alone: a removal loosens a guardrail.
pub async fn remove(call: &Call<'_>, input: RemoveQuery) -> Result<Removed, ApiError> {
    call.caller.may_loosen()?;
    let owner = owner_of_caller(call.caller);
    let ctx = call.ctx;
    let key = keys::suppression(&owner, &input.address);
    let removed: Listed = match ctx.store.delete(&key, Some(Cond::Exists)).await {
        Ok(Some(gone)) => crate::store::record(gone)?,
        Ok(None) | Err(StoreError::ConditionFailed) => return Err(error::SUPPRESSION_NOT_FOUND.into()),
        Err(e) => return Err(e.into()),
    };
    let list = crate::store::Key::new(keys::suppression_list(&owner), &removed.list_key);
    ctx.store.delete(&list, None).await?;
    ctx.store
        .delete(&keys::soft_bounces(&owner, &input.address), None)
        .await?;
    let boundary = Boundary::for_tool(call);
    Ok(Removed {
        ok: true,
        envelope: boundary.as_ref().map(|b| b.describe(None)),
        removed: removed.entry.for_agent(boundary.as_ref()),
    })
}
