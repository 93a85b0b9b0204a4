//! Waiting for mail holds a request open (up to 25 seconds) and costs the
//! caller nothing, so each key may hold at most [`MAX_WAITS`] at once: a wait
//! claims one of its key's slots with a conditional write and gives it back
//! when it ends. A slot also lapses by itself shortly after its wait's
//! deadline, so a process that died mid-wait never keeps it.
//!
//! Items: `WAIT#<holder>/<slot>` {token, ttl}.

use std::time::Duration;

use serde_json::json;

use crate::auth::Caller;
use crate::context::Context;
use crate::error::{self, ApiError};
use crate::store::{Cond, StoreError, TTL, item};

use crate::keys;

/// Waits one key may hold at once.
pub const MAX_WAITS: usize = 5;
/// How long past its deadline a slot stays claimed if it is never given back.
const GRACE_SECS: i64 = 5;

/// A claimed slot; give it back with [`Slot::release`].
pub struct Slot {
    key: crate::store::Key,
    token: String,
}

/// Claims a slot for a wait of `seconds`, or 429 when all are held.
pub async fn claim(ctx: &Context, caller: &Caller, seconds: i64) -> Result<Slot, ApiError> {
    let holder = caller.holder();
    let now = ctx.clock.epoch();
    let token = hex::encode(rand::random::<[u8; 8]>());
    let first = rand::random::<u64>() as usize % MAX_WAITS;
    for i in 0..MAX_WAITS {
        let key = keys::wait_slot(&holder, (first + i) % MAX_WAITS);
        let claimed = json!({ "token": token, TTL: now + seconds + GRACE_SECS });
        // Free, or left behind by a wait that never gave it back.
        let free = Cond::Or(vec![Cond::NotExists, Cond::Lt(TTL.into(), now)]);
        match ctx.store.put(item(&key, &claimed), Some(free)).await {
            Ok(()) => return Ok(Slot { key, token }),
            Err(StoreError::ConditionFailed) => continue,
            Err(e) => return Err(e.into()),
        }
    }
    Err(ApiError {
        retry_after: Some(Duration::from_secs(5).as_secs()),
        ..error::WAITS_BUSY.into()
    })
}

impl Slot {
    /// Gives the slot back (only if it is still this wait's).
    pub async fn release(self, ctx: &Context) {
        let mine = Cond::eq("token", self.token.as_str());
        match ctx.store.delete(&self.key, Some(mine)).await {
            Ok(_) | Err(StoreError::ConditionFailed) => {}
            Err(e) => tracing::warn!(error = %e, "a wait slot could not be given back; it lapses by itself"),
        }
    }
}
