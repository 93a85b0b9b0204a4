//! Credits and the sending switches (spec 2.11, 3.5, 4.6).
//!
//! Items: `CREDITS#<bucket>/C` {remaining, initial} per paying caller (the agent
//! key's bucket is `agent:default`, a standard account's `acct:<uid>`);
//! `AGENT#default/A` {disabled, frozenUntil}; `SETTING#sending/S` {enabled}.

use chrono::{DateTime, Utc};
use serde_json::{Value, json};

use schemars::JsonSchema;
use serde::Serialize;

use crate::auth::Caller;
use crate::clock::iso;
use crate::context::Context;
use crate::error::{self, ApiError};
use crate::keys;
use crate::service::caller::Call;
use crate::store::{Cond, Item, StoreError, StoreResult, Update, Write, item};
use crate::validate::NoInput;
use crate::values::IsoTime;
use crate::values::Nullable;

pub const AGENT_BUCKET: &str = "agent:default";
pub const INITIAL_CREDITS: i64 = 100;
pub const SEND_PER_MINUTE: i64 = 5;
pub const SEND_PER_DAY: i64 = 50;

pub fn account_bucket(uid: &str) -> String {
    format!("acct:{uid}")
}

/// Opens a balance at the default credit; fails if one exists.
pub fn create_write(bucket: &str) -> Write {
    let balance = json!({ "remaining": INITIAL_CREDITS, "initial": INITIAL_CREDITS });
    Write::Put {
        item: item(&keys::credits(bucket), &balance),
        cond: Some(Cond::NotExists),
    }
}

/// Opens the agent key's balance on first start; leaves an existing one alone.
pub async fn ensure_agent_balance(ctx: &Context) -> StoreResult<()> {
    match ctx.store.transact(vec![create_write(AGENT_BUCKET)]).await {
        Ok(()) | Err(StoreError::ConditionFailed) => Ok(()),
        Err(e) => Err(e),
    }
}

pub async fn remaining(ctx: &Context, bucket: &str) -> StoreResult<i64> {
    Ok(balance(ctx, bucket).await?.0)
}

async fn balance(ctx: &Context, bucket: &str) -> StoreResult<(i64, i64)> {
    Ok(balance_of(ctx.store.get(&keys::credits(bucket)).await?.as_ref()))
}

/// (remaining, initial) of a balance item; 0 when there is none.
fn balance_of(found: Option<&Item>) -> (i64, i64) {
    let num = |name: &str| found.and_then(|i| i.get(name)).and_then(Value::as_i64).unwrap_or(0);
    (num("remaining"), num("initial"))
}

/// Takes one credit, never going below zero.
pub async fn spend(ctx: &Context, bucket: &str) -> Result<i64, ApiError> {
    let taken = ctx
        .store
        .update(
            &keys::credits(bucket),
            Update::new().add("remaining", -1),
            Some(Cond::Ge("remaining".into(), 1)),
        )
        .await;
    match taken {
        Ok(item) => Ok(item.get("remaining").and_then(Value::as_i64).unwrap_or(0)),
        Err(StoreError::ConditionFailed) => Err(error::INSUFFICIENT_CREDITS.into()),
        Err(e) => Err(e.into()),
    }
}

/// The global switch; on when no setting exists.
pub async fn sending_enabled(ctx: &Context) -> StoreResult<bool> {
    Ok(enabled_of(ctx.store.get(&keys::sending_switch()).await?.as_ref()))
}

pub fn enabled_of(found: Option<&Item>) -> bool {
    found
        .and_then(|i| i.get("enabled"))
        .and_then(Value::as_bool)
        .unwrap_or(true)
}

/// [`enabled_of`] as a condition on the switch's item, so a transaction
/// counting a send fails while sending is paused.
pub fn enabled_cond() -> Cond {
    Cond::ne("enabled", false)
}

pub struct AgentSwitch {
    pub disabled: bool,
    pub frozen_until: Option<DateTime<Utc>>,
}

impl AgentSwitch {
    /// The switch an item holds; none: on, not frozen.
    pub fn of(found: Option<&Item>) -> AgentSwitch {
        let disabled = found
            .and_then(|i| i.get("disabled"))
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let frozen_until = found
            .and_then(|i| i.get("frozenUntil"))
            .and_then(Value::as_str)
            .and_then(|s| DateTime::parse_from_rfc3339(s).ok())
            .map(|t| t.with_timezone(&Utc));
        AgentSwitch { disabled, frozen_until }
    }

    pub fn frozen(&self, now: DateTime<Utc>) -> bool {
        self.disabled || self.frozen_until.is_some_and(|t| t > now)
    }

    /// Not [`frozen`](Self::frozen) at `now`, as a condition on the
    /// switch's item: `frozenUntil` is always written by `iso`, so its text
    /// sorts as its time.
    pub fn unfrozen_cond(now: DateTime<Utc>) -> Cond {
        Cond::And(vec![
            Cond::ne("disabled", true),
            Cond::Or(vec![
                Cond::missing("frozenUntil"),
                Cond::TextAtMost("frozenUntil".into(), iso(now)),
            ]),
        ])
    }
}

pub async fn agent_switch(ctx: &Context) -> StoreResult<AgentSwitch> {
    Ok(AgentSwitch::of(ctx.store.get(&keys::agent_switch()).await?.as_ref()))
}

/// The credits payload (spec 2.11).
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CreditsPayload {
    pub ok: bool,
    pub credits: Credits,
    pub agent_key: AgentKeyView,
    pub sending: Sending,
    /// The caller may set `disabled` and `frozenUntil`.
    pub can_control: bool,
    /// The caller may also set `sendingEnabled`.
    pub can_pause_all: bool,
    /// Where the API is documented.
    pub docs: String,
}

#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Credits {
    pub remaining: i64,
    pub initial: i64,
    /// People signed in to the web app are not charged.
    pub humans_charged: bool,
    /// A failed authentication never spends a credit.
    pub auth_failure_burns_credit: bool,
}

/// The key whose balance this is; never the key itself.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AgentKeyView {
    pub id: String,
    pub last4: String,
    /// active, disabled or frozen.
    pub status: &'static str,
    pub disabled: bool,
    pub frozen_until: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Sending {
    /// False while an operator has paused all sending.
    pub enabled: bool,
}

/// The balance a caller spends from: a standard key its account's, everyone
/// else the agent key's.
fn bucket_of(caller: &Caller) -> String {
    match caller {
        Caller::Standard(key) => account_bucket(&key.uid),
        _ => AGENT_BUCKET.to_string(),
    }
}

/// GET /credits: the payload for the caller. A standard key sees its own
/// account's balance and key; the agent key and identity users see the agent
/// key's.
pub async fn get_credits(call: &Call<'_>, _: NoInput) -> Result<CreditsPayload, ApiError> {
    payload(call).await
}

async fn payload(call: &Call<'_>) -> Result<CreditsPayload, ApiError> {
    let (ctx, caller) = (call.ctx, call.caller);
    let now = ctx.clock.now();
    let bucket = bucket_of(caller);
    // The balance, the sending switch and (for the agent key) its switch, in
    // one request.
    let mut wanted = vec![keys::credits(&bucket), keys::sending_switch()];
    if !matches!(caller, Caller::Standard(_)) {
        wanted.push(keys::agent_switch());
    }
    let mut found = ctx.store.get_many(&wanted).await?.into_iter();
    let (remaining, initial) = balance_of(found.next().flatten().as_ref());
    let enabled = enabled_of(found.next().flatten().as_ref());
    let switch = found.next().map(|item| AgentSwitch::of(item.as_ref()));
    let agent_key = match (caller, switch) {
        (Caller::Standard(key), _) => AgentKeyView {
            id: key.key_id.clone(),
            last4: key.last4.clone(),
            status: "active",
            disabled: false,
            frozen_until: None,
        },
        (_, switch) => {
            let switch = switch.unwrap_or(AgentSwitch {
                disabled: false,
                frozen_until: None,
            });
            let status = if switch.disabled {
                "disabled"
            } else if switch.frozen(now) {
                "frozen"
            } else {
                "active"
            };
            AgentKeyView {
                id: AGENT_BUCKET.into(),
                last4: ctx.agent_key_last4.clone(),
                status,
                disabled: switch.disabled,
                frozen_until: switch.frozen_until.map(iso),
            }
        }
    };
    Ok(CreditsPayload {
        ok: true,
        credits: Credits {
            remaining,
            initial,
            humans_charged: false,
            auth_failure_burns_credit: false,
        },
        agent_key,
        sending: Sending { enabled },
        can_control: matches!(caller, Caller::Agent) || caller.is_operator(),
        can_pause_all: caller.is_operator(),
        docs: call.docs_url(),
    })
}

/// The MCP `get_credits` result.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Remaining {
    pub ok: bool,
    /// Credits left on the caller's balance.
    pub remaining: i64,
}

pub async fn get_remaining(call: &Call<'_>, _: NoInput) -> Result<Remaining, ApiError> {
    Ok(Remaining {
        ok: true,
        remaining: remaining(call.ctx, &bucket_of(call.caller)).await?,
    })
}

crate::input! {
    /// The fields of POST /credits, each optional.
    pub struct Control {
        /// Freezes the agent key until this ISO time; null clears it.
        pub frozen_until: Option<Nullable<IsoTime>> = error::FROZEN_UNTIL_INVALID,
        /// Freezes (true) or unfreezes (false) the agent key.
        pub disabled: Option<bool> = error::DISABLED_TYPE,
        /// Pauses (false) or resumes (true) all sending; operators only.
        pub sending_enabled: Option<bool> = error::SENDING_ENABLED_TYPE,
    }
}

/// POST /credits: the sending switches, then the payload.
pub async fn control(call: &Call<'_>, control: Control) -> Result<CreditsPayload, ApiError> {
    let (ctx, caller) = (call.ctx, call.caller);
    if control.sending_enabled.is_some() && !caller.is_operator() {
        return Err(error::CONTROL_REFUSED.into());
    }
    let now = iso(ctx.clock.now());
    let mut agent = Update::new();
    if let Some(disabled) = control.disabled {
        agent = agent.set("disabled", disabled);
    }
    match control.frozen_until {
        Some(Nullable(Some(t))) => agent = agent.set("frozenUntil", iso(t.0)),
        Some(Nullable(None)) => agent = agent.remove("frozenUntil"),
        None => {}
    }
    if agent != Update::new() {
        ctx.store
            .update(&keys::agent_switch(), agent.set("updatedAt", now.clone()), None)
            .await?;
    }
    if let Some(enabled) = control.sending_enabled {
        ctx.store
            .update(
                &keys::sending_switch(),
                Update::new().set("enabled", enabled).set("updatedAt", now),
                None,
            )
            .await?;
    }
    if control.disabled.is_some() || control.frozen_until.is_some() || control.sending_enabled.is_some() {
        let details = json!({
            "disabled": control.disabled,
            "frozenUntil": control.frozen_until.map(|t| t.0.map(|t| iso(t.0))),
            "sendingEnabled": control.sending_enabled,
        });
        call.touched(details);
    }
    payload(call).await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(v: Value) -> Item {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn the_switch_conditions_say_what_the_switches_say() {
        for found in [
            None,
            Some(item(json!({"enabled": true}))),
            Some(item(json!({"enabled": false}))),
            Some(item(json!({"enabled": "no"}))),
        ] {
            assert_eq!(
                enabled_cond().holds(found.as_ref()),
                enabled_of(found.as_ref()),
                "{found:?}"
            );
        }
        let now = DateTime::parse_from_rfc3339("2026-11-27T10:00:00Z")
            .unwrap()
            .with_timezone(&Utc);
        let at = |secs: i64| iso(now + chrono::Duration::seconds(secs));
        for found in [
            None,
            Some(item(json!({"disabled": true}))),
            Some(item(json!({"disabled": false}))),
            Some(item(json!({"frozenUntil": at(-1)}))),
            Some(item(json!({"frozenUntil": at(0)}))),
            Some(item(json!({"frozenUntil": at(1)}))),
            Some(item(json!({"frozenUntil": at(86_400 * 400)}))),
            Some(item(json!({"disabled": true, "frozenUntil": at(-60)}))),
            Some(item(json!({"disabled": false, "frozenUntil": at(60)}))),
        ] {
            assert_eq!(
                AgentSwitch::unfrozen_cond(now).holds(found.as_ref()),
                !AgentSwitch::of(found.as_ref()).frozen(now),
                "{found:?}"
            );
        }
    }
}
