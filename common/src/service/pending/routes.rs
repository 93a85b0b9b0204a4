//! The routes of waiting sends: the owner's holds (list, approve, deny) and
//! cancelling a send before it leaves.

use schemars::JsonSchema;
use serde::Serialize;

use super::*;

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
        .map(|item| crate::store::record::<Pending>(item).map(|p| p.hold))
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

/// Approves a hold: it goes out now (or at its sendAt), exactly once however
/// many approvals arrive together.
pub async fn approve(call: &Call<'_>, input: Decision) -> Result<HoldView, ApiError> {
    let ctx = call.ctx;
    let waiting = decidable(call, &input).await?;
    let due = waiting
        .hold
        .due_at
        .as_deref()
        .is_some_and(|at| at > iso(ctx.clock.now()).as_str());
    let waiting = if due {
        reschedule(ctx, waiting).await?
    } else {
        release(ctx, &waiting.hold.id).await?
    };
    Ok(HoldView {
        ok: true,
        hold: waiting.hold,
    })
}

/// A hold approved before its sendAt waits on as a scheduled send, charged now.
async fn reschedule(ctx: &Context, waiting: Pending) -> Result<Pending, ApiError> {
    let credit = crate::service::payer::charge(ctx, &waiting.payer).await?;
    let scheduled = Pending {
        hold: Hold {
            kind: Kind::Scheduled,
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
                .set("charged", scheduled.charged),
            cond: Some(Cond::And(vec![
                Cond::eq("status", PendingStatus::Waiting),
                Cond::eq("kind", Kind::Held),
            ])),
        },
        due_write(&scheduled),
    ];
    match ctx.store.transact(writes).await {
        Ok(()) => Ok(scheduled),
        Err(StoreError::ConditionFailed) => {
            refund(ctx, &scheduled).await;
            Err(error::HOLD_DECIDED.into())
        }
        Err(e) => {
            refund(ctx, &scheduled).await;
            Err(e.into())
        }
    }
}

/// Denies a hold: it never goes out.
pub async fn deny(call: &Call<'_>, input: Decision) -> Result<HoldView, ApiError> {
    let ctx = call.ctx;
    let waiting = decidable(call, &input).await?;
    let waiting = settle(ctx, &waiting, PendingStatus::Denied).await?;
    let _ = ctx.blobs.delete(&blob(&waiting.hold.id)).await;
    Ok(HoldView {
        ok: true,
        hold: waiting.hold,
    })
}

/// Moves a waiting send to a final status, if it is still waiting.
async fn settle(ctx: &Context, p: &Pending, status: PendingStatus) -> Result<Pending, ApiError> {
    let update = Update::new().set("status", status);
    match ctx
        .store
        .update(
            &keys::pending(&p.hold.id),
            update,
            Some(Cond::eq("status", PendingStatus::Waiting)),
        )
        .await
    {
        Ok(_) => {
            let mut settled = p.clone();
            settled.hold.status = status;
            Ok(settled)
        }
        Err(StoreError::ConditionFailed) => Err(error::HOLD_DECIDED.into()),
        Err(e) => Err(e.into()),
    }
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
        if let Some(account) = crate::service::accounts::get(ctx, &waiting.uid).await? {
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
        settle(ctx, &waiting, PendingStatus::Expired).await?;
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
    let owner = crate::service::sent::owner_of_caller(call.caller);
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
    let cancelled = settle(ctx, &p, PendingStatus::Cancelled).await?;
    if p.hold.kind == Kind::Scheduled {
        ctx.store.delete(&due_key(&p), None).await?;
    }
    let _ = ctx.blobs.delete(&blob(&p.hold.id)).await;
    if p.charged {
        refund(ctx, &p).await;
    }
    let credits_remaining = match (p.charged, p.payer.credit_bucket()) {
        (true, Some(bucket)) => Some(crate::service::credits::remaining(ctx, bucket.as_str()).await?),
        _ => None,
    };
    Ok(Cancelled {
        ok: true,
        cancelled: cancelled.hold,
        credits_remaining,
    })
}
