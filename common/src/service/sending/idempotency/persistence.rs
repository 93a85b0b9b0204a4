//! An Idempotency-Key's record: one per caller (each key its own,
//! [`crate::auth::Caller::holder`]) and key, claimed with a conditional
//! write (so concurrent requests with one key send once), holding the first
//! answer for 24 hours.

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use super::key;
use crate::context::Context;
use crate::error::{self, ApiError};
use crate::service::caller::Call;
use crate::store::{Cond, StoreError, TTL, Update, item};
use crate::validate::{Input, Later};

const IDEMPOTENCY_SECS: i64 = 86_400;

/// A claim to settle once the answer is known.
pub struct Idempotency {
    key: crate::store::Key,
}

/// A request's start under its Idempotency-Key: the first answer to give
/// again, or the claim to settle once it is known (none without a key).
pub enum Begun<T> {
    Replay(T),
    Fresh(Option<Idempotency>),
}

impl Idempotency {
    /// Claims the request's `idempotencyKey`, when it has one. `operation`
    /// names a route beside sendMail (a reply, a forward), so the same body
    /// sent to two of them is two requests.
    pub async fn begin<I: Input, T: DeserializeOwned>(
        call: &Call<'_>,
        input: &Later<I>,
        operation: Option<&str>,
    ) -> Result<Begun<T>, ApiError> {
        let Some(requested) = key::of(input)? else {
            return Ok(Begun::Fresh(None));
        };
        // The claim is a write, and it is the caller's.
        call.confirmed().await?;
        let ctx = call.ctx;
        let fingerprint = key::fingerprint(input.fields(), operation);
        // Each key's own: another key of the account replays nothing of it.
        let record = key::record(&call.caller.holder(), &requested);
        let now = ctx.clock.epoch();
        let claim = json!({ "state": "in_flight", "fingerprint": fingerprint, TTL: now + IDEMPOTENCY_SECS });
        // A record past its 24 hours counts as absent (DynamoDB's TTL deletes lazily).
        let free = Cond::Or(vec![Cond::NotExists, Cond::Lt(TTL.into(), now)]);
        match ctx.store.put(item(&record, &claim), Some(free)).await {
            Ok(()) => return Ok(Begun::Fresh(Some(Idempotency { key: record }))),
            Err(StoreError::ConditionFailed) => {}
            Err(e) => return Err(e.into()),
        }
        let Some(held) = ctx.store.get(&record).await? else {
            return Err(error::IDEMPOTENCY_IN_PROGRESS.into());
        };
        if held.get("fingerprint").and_then(Value::as_str) != Some(fingerprint.as_str()) {
            return Err(error::IDEMPOTENCY_KEY_REUSED.into());
        }
        match held.get("response") {
            Some(first) => Ok(Begun::Replay(
                serde_json::from_value(first.clone()).map_err(ApiError::internal)?,
            )),
            None => Err(error::IDEMPOTENCY_IN_PROGRESS.into()),
        }
    }

    /// Keeps the answer of a request that went through; forgets the claim
    /// of one that did not, so the same key can be tried again.
    pub async fn settle<T: Serialize>(self, ctx: &Context, answered: Option<&T>) {
        let done = match answered {
            Some(out) => ctx
                .store
                .update(
                    &self.key,
                    Update::new().set("state", "completed").set("response", json!(out)),
                    None,
                )
                .await
                .map(drop),
            None => ctx.store.delete(&self.key, None).await.map(drop),
        };
        if let Err(e) = done {
            tracing::error!(error = %e, "an idempotency record could not be settled");
        }
    }
}
