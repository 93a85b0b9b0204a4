//! How a waiting send ends without going out: cancelled (by its sender, its
//! owner, or its key's revocation), denied, expired. One conditional update
//! from `waiting` decides, and the item it answers with says whether a credit
//! was taken: the refund follows that write, never a read made before it (an
//! approval may charge a hold between the two).

use serde_json::Value;

use super::record::{Kind, Pending, PendingStatus, blob, due_key, refund, waiting_key};
use crate::context::Context;
use crate::error::{self, ApiError};
use crate::keys;
use crate::messages::Message;
use crate::store::{Cond, Query, StoreError, StoreExt, Update, record};

/// Ends a send still waiting (and of `kind`, when given) with `status`, and
/// `why` as its error; 409 when it no longer waits.
pub(super) async fn settle(
    ctx: &Context,
    id: &str,
    status: PendingStatus,
    kind: Option<Kind>,
    why: Option<Message>,
) -> Result<Pending, ApiError> {
    let mut cond = vec![Cond::eq("status", PendingStatus::Waiting)];
    cond.extend(kind.map(|kind| Cond::eq("kind", kind)));
    let mut update = Update::new().set("status", status);
    if let Some(why) = why {
        update = update.set("error", why.as_str());
    }
    let ended: Pending = match ctx
        .store
        .update(&keys::pending(id), update, Some(Cond::And(cond)))
        .await
    {
        Ok(item) => record(item)?,
        Err(StoreError::ConditionFailed) => return Err(error::HOLD_DECIDED.into()),
        Err(e) => return Err(e.into()),
    };
    if ended.charged {
        refund(ctx, &ended).await;
    }
    clear(ctx, &ended).await;
    Ok(ended)
}

/// What an ended send no longer needs: its row among the waiting sends, its
/// place in the queue, its message. A failure is logged, not returned: the
/// send has ended either way, the listing shows only sends that wait, and
/// the queue's runner drops an entry whose send no longer waits.
async fn clear(ctx: &Context, p: &Pending) {
    let mut rows = vec![waiting_key(p)];
    if p.hold.kind == Kind::Scheduled {
        rows.push(due_key(p));
    }
    for row in rows {
        if let Err(e) = ctx.store.delete(&row, None).await {
            tracing::error!(error = %e, send = %p.hold.id, "an ended send's row was not removed");
        }
    }
    let _ = ctx.blobs.delete(&blob(&p.hold.id)).await;
}

/// Cancels every send a scoped key asked for that still waits, held or
/// scheduled, each one's credit back: its revocation. How many.
pub async fn cancel_asked_by(ctx: &Context, uid: &str, key_id: &str) -> Result<usize, ApiError> {
    let rows = ctx.store.all(Query::partition(keys::waiting_sends(uid))).await?;
    let mut cancelled = 0;
    for row in &rows {
        if row.get("keyId").and_then(Value::as_str) != Some(key_id) {
            continue;
        }
        let Some(id) = row.get("id").and_then(Value::as_str) else {
            continue;
        };
        let revoked = Some(crate::messages::SEND_KEY_REVOKED);
        match settle(ctx, id, PendingStatus::Cancelled, None, revoked).await {
            Ok(_) => cancelled += 1,
            Err(e) if e.is(error::HOLD_DECIDED) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(cancelled)
}
