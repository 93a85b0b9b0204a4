//! The routes of waiting sends: the owner's holds (list, approve, deny), the
//! owner's list of every send still waiting, and cancelling one before it
//! leaves.

use schemars::JsonSchema;
use serde::Serialize;

use super::going::{held_back, release};
use super::record::*;

use crate::clock::iso;
use crate::context::Context;
use crate::error::{self, ApiError};
use crate::keys;
use crate::service::caller::Call;
use crate::store::{Cond, Query, StoreError, StoreExt, Update, Write};

use super::settle::settle;
use crate::values::Page;
use crate::values::{Cursor, Limit};

#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HoldList {
    pub ok: bool,
    /// Newest first, the last 100, decided ones included.
    pub holds: Vec<Hold>,
}

/// GET /holds: the account's holds.
pub async fn list_holds(call: &Call<'_>, _: crate::validate::NoInput) -> Result<HoldList, ApiError> {
    let account = call.account().await?;
    let query = Query::partition(keys::holds(&account.uid))
        .between("0", "~")
        .backward()
        .limit(100);
    let rows = call.ctx.store.query(&query).await?.items;
    let ids: Vec<_> = rows
        .iter()
        .filter_map(|r| r.get("id").and_then(|v| v.as_str()))
        .map(keys::pending)
        .collect();
    if ids.is_empty() {
        return Ok(HoldList {
            ok: true,
            holds: Vec::new(),
        });
    }
    let holds = call
        .ctx
        .store
        .get_many(&ids)
        .await?
        .into_iter()
        .flatten()
        .map(|item| crate::store::record::<Pending>(item).map(|p| p.hold.as_of(call.ctx.clock.now())))
        .collect::<Result<_, _>>()?;
    Ok(HoldList { ok: true, holds })
}

crate::input! {
    /// POST /holds/approve and /holds/deny.
    pub struct Decision {
        /// The holdId sendMail answered with (and the approval email names).
        pub hold_id: crate::values::HoldId = (error::HOLD_ID_REQUIRED, error::HOLD_ID_INVALID),
        /// The emailed approval code: needed when no credential is sent.
        pub code: Option<crate::values::ApprovalCode> = error::HOLD_CODE_INVALID,
    }
}

#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HoldView {
    pub ok: bool,
    pub hold: Hold,
}

/// Approves a hold: it goes out now, exactly once however many approvals
/// arrive together; or, before its sendAt or while the switches hold it
/// (sending paused, the agent key frozen), it waits on as a scheduled send.
pub async fn approve(call: &Call<'_>, input: Decision) -> Result<HoldView, ApiError> {
    let ctx = call.ctx;
    let waiting = decidable(call, &input).await?;
    let now = ctx.clock.now();
    let later = waiting.hold.due_at.as_deref().is_some_and(|at| at > iso(now).as_str());
    let decided = if later {
        reschedule(ctx, waiting, None).await?
    } else {
        match release(ctx, waiting.clone()).await {
            Err(e) if held_back(&e) => reschedule(ctx, waiting, Some(now)).await?,
            released => released?,
        }
    };
    Ok(HoldView {
        ok: true,
        hold: decided.hold,
    })
}

/// A hold approved that cannot go now waits on as a scheduled send, charged
/// now: until its sendAt, or, due `now`, until the switches let it go (the
/// scheduled-sends job sends it), expiring [`LATE_HOURS`] past its time. One
/// conditional transaction moves it; a credit taken for a move that lost is
/// given back.
async fn reschedule(
    ctx: &Context,
    waiting: Pending,
    now: Option<chrono::DateTime<chrono::Utc>>,
) -> Result<Pending, ApiError> {
    let due = match now {
        Some(now) => now,
        None => waiting
            .hold
            .due_at
            .as_deref()
            .and_then(|at| chrono::DateTime::parse_from_rfc3339(at).ok())
            .map(|at| at.with_timezone(&chrono::Utc))
            .ok_or_else(|| ApiError::internal("a hold approved for later has no time"))?,
    };
    // Simulator mail is never charged (its release pays nothing either).
    let credit = match crate::service::delivery::dispatch::costs_credit(ctx, &waiting.hold.to) {
        true => crate::service::accounts::payer::charge(ctx, &waiting.payer).await?,
        false => None,
    };
    let scheduled = Pending {
        hold: Hold {
            kind: Kind::Scheduled,
            due_at: Some(iso(due)),
            expires_at: Some(late_after(due)),
            ..waiting.hold
        },
        charged: credit.is_some(),
        ..waiting
    };
    let writes = vec![
        Write::Update {
            key: keys::pending(&scheduled.hold.id),
            update: Update::new()
                .set("kind", Kind::Scheduled)
                .set("charged", scheduled.charged)
                .set("dueAt", scheduled.hold.due_at.clone())
                .set("expiresAt", scheduled.hold.expires_at.clone()),
            cond: Some(Cond::And(vec![
                Cond::eq("status", PendingStatus::Waiting),
                Cond::eq("kind", Kind::Held),
            ])),
        },
        due_write(&scheduled),
    ];
    let moved = ctx.store.transact(writes).await;
    if moved.is_err() && scheduled.charged {
        refund(ctx, &scheduled).await;
    }
    match moved {
        Ok(()) => Ok(scheduled),
        Err(StoreError::ConditionFailed) => Err(error::HOLD_DECIDED.into()),
        Err(e) => Err(e.into()),
    }
}

/// Denies a hold: it never goes out.
pub async fn deny(call: &Call<'_>, input: Decision) -> Result<HoldView, ApiError> {
    let waiting = decidable(call, &input).await?;
    let denied = settle(
        call.ctx,
        &waiting.hold.id,
        PendingStatus::Denied,
        Some(Kind::Held),
        None,
    )
    .await?;
    Ok(HoldView {
        ok: true,
        hold: denied.hold,
    })
}

/// A waiting hold the caller may decide: the owner's (by its account key or
/// an operator), or anyone's who holds the emailed code. Five wrong codes
/// lock the code out; a lapsed hold is expired here.
async fn decidable(call: &Call<'_>, input: &Decision) -> Result<Pending, ApiError> {
    let ctx = call.ctx;
    let key = keys::pending(input.hold_id.as_str());
    let waiting: Pending = ctx.store.read(&key).await?.ok_or(error::HOLD_NOT_FOUND)?;
    let by_code = matches!(call.caller, crate::auth::Caller::Public);
    if by_code {
        // Attempts on a hold, right or wrong, are its account's to see.
        call.concerns(&waiting.uid);
        let code = input.code.as_ref().ok_or(error::HOLD_CODE_REQUIRED)?;
        let counted = ctx
            .store
            .update(
                &key,
                Update::new().add("attempts", 1),
                Some(Cond::Lt("attempts".into(), HOLD_CODE_ATTEMPTS)),
            )
            .await;
        match counted {
            Ok(_) => {}
            Err(StoreError::ConditionFailed) => return Err(error::HOLD_CODE_LOCKED.into()),
            Err(e) => return Err(e.into()),
        }
        let given = ctx.hasher.digest("hold", code.as_str());
        let right = waiting
            .code_digest
            .as_deref()
            .is_some_and(|d| crate::auth::keys::same_digest(d, &given));
        if !right {
            return Err(error::HOLD_CODE_WRONG.into());
        }
        if let Some(account) = crate::service::caller::account::get(ctx, &waiting.uid).await? {
            call.act_for(account);
        }
    } else if call.account().await?.uid != waiting.uid {
        return Err(error::HOLD_NOT_FOUND.into());
    }
    if waiting.hold.kind != Kind::Held || waiting.hold.status != PendingStatus::Waiting {
        return Err(error::HOLD_DECIDED.into());
    }
    if waiting
        .hold
        .expires_at
        .as_deref()
        .is_some_and(|at| at <= iso(ctx.clock.now()).as_str())
    {
        settle(ctx, &waiting.hold.id, PendingStatus::Expired, Some(Kind::Held), None).await?;
        return Err(error::HOLD_EXPIRED.into());
    }
    Ok(waiting)
}

crate::input! {
    /// POST /outbox/cancel.
    pub struct CancelInput {
        /// The Message-ID sendMail answered with.
        pub message_id: crate::values::StoredMessageId =
            (error::INBOX_MESSAGE_ID_INVALID, error::INBOX_MESSAGE_ID_INVALID),
    }
}

#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Cancelled {
    pub ok: bool,
    pub cancelled: Hold,
    /// The balance after the credit came back.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub credits_remaining: Option<i64>,
}

/// Cancels a scheduled or held send until it leaves; a scheduled send's
/// credit comes back.
pub async fn cancel(call: &Call<'_>, input: CancelInput) -> Result<Cancelled, ApiError> {
    let ctx = call.ctx;
    let owner = crate::service::delivery::sent::owner_of_caller(call.caller);
    let pointer: Option<serde_json::Value> = ctx
        .store
        .read(&keys::pending_message_id(&owner, &input.message_id))
        .await?;
    let id = pointer
        .as_ref()
        .and_then(|p| p.get("id"))
        .and_then(|v| v.as_str())
        .ok_or(error::WAITING_SEND_NOT_FOUND)?;
    let p = ctx
        .store
        .read::<Pending>(&keys::pending(id))
        .await?
        .filter(|p| call.caller.covers(&p.hold.from))
        .ok_or(error::WAITING_SEND_NOT_FOUND)?;
    let cancelled = settle(ctx, &p.hold.id, PendingStatus::Cancelled, None, None).await?;
    let credits_remaining = match (cancelled.charged, cancelled.payer.credit_bucket()) {
        (true, Some(bucket)) => Some(crate::service::accounts::credits::remaining(ctx, bucket.as_str()).await?),
        _ => None,
    };
    Ok(Cancelled {
        ok: true,
        cancelled: cancelled.hold,
        credits_remaining,
    })
}

crate::input! {
    /// GET /outbox/waiting.
    pub struct WaitingQuery {
        pub limit: Option<Limit<100>>,
        /// The nextCursor of the previous page.
        pub cursor: Option<Cursor> = error::CURSOR_INVALID,
    }
}

#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WaitingSends {
    pub ok: bool,
    /// Newest first: every send of the account that has not gone out yet,
    /// held for approval or scheduled, by any of its keys.
    pub sends: Vec<Hold>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// GET /outbox/waiting: the account's sends still waiting, each with the
/// messageId POST /outbox/cancel takes.
pub async fn list_waiting(call: &Call<'_>, input: WaitingQuery) -> Result<WaitingSends, ApiError> {
    let account = call.account().await?;
    let limit = Limit::rows(input.limit, 50);
    let Page {
        items: rows,
        next_cursor,
    } = crate::service::mail_store::page_raw(
        call.ctx,
        keys::waiting_sends(&account.uid),
        true,
        input.cursor.as_deref(),
        limit,
    )
    .await?;
    let ids = rows
        .iter()
        .map(|row| row.record::<serde_json::Value>())
        .collect::<Result<Vec<_>, _>>()?
        .iter()
        .filter_map(|row| row.get("id").and_then(|v| v.as_str()).map(keys::pending))
        .collect::<Vec<_>>();
    let mut sends = Vec::new();
    for chunk in ids.chunks(100) {
        for found in call.ctx.store.get_many(chunk).await?.into_iter().flatten() {
            let p: Pending = crate::store::record(found)?;
            // A row outlives its send only when a run was cut short, or
            // while a lapsed one waits to be written so.
            let hold = p.hold.as_of(call.ctx.clock.now());
            if hold.status == PendingStatus::Waiting {
                sends.push(hold);
            }
        }
    }
    Ok(WaitingSends {
        ok: true,
        sends,
        next_cursor,
    })
}
