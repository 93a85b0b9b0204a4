//! Who pays for a send, and the checks before one (spec 3.5, 4.1, 8): the
//! global kill switch, the agent key's freeze, the rate windows, then the
//! credit. Every path that sends (sendMail, send_mail, a mailbox's SMTP
//! submission) goes through these in this order.

use crate::auth::Caller;
use crate::context::Context;
use crate::error::{self, ApiError};
use crate::keys;
use crate::ratelimit::{self, DAY, Limit, MINUTE};
use crate::service::accounts::credits::{self, AGENT_BUCKET, SEND_PER_DAY, SEND_PER_MINUTE};
use crate::store::{Cond, Key, Write};

/// Whose switches, rate windows and balance a send counts against (kept
/// with a waiting send, which is charged later or refunded).
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "uid")]
pub enum Payer {
    /// The shared agent key (and the service-domain mailboxes' passwords):
    /// its freeze applies and its balance pays.
    Agent,
    /// A standard account: its windows and balance, whichever of its keys or
    /// mailbox passwords sends, so a fresh key starts none anew.
    Account(String),
    /// A person signed in: their own windows, never charged.
    Person(String),
}

impl Payer {
    pub fn of(caller: &Caller) -> Payer {
        match caller {
            Caller::Agent => Payer::Agent,
            Caller::Standard(key) => Payer::Account(key.uid.clone()),
            Caller::Identity(user) => Payer::Person(user.uid.clone()),
            // No other caller reaches a send.
            Caller::Public | Caller::Sync => Payer::Person("none".into()),
        }
    }

    pub fn rate_bucket(&self) -> String {
        match self {
            Payer::Agent => AGENT_BUCKET.into(),
            Payer::Account(uid) => credits::account_bucket(uid),
            Payer::Person(uid) => format!("user:{uid}"),
        }
    }

    pub fn credit_bucket(&self) -> Option<String> {
        match self {
            Payer::Person(_) => None,
            _ => Some(self.rate_bucket()),
        }
    }
}

/// A scoped key's own daily send cap, counted beside its account's windows.
pub struct KeyCap {
    pub key_id: String,
    pub per_day: i64,
}

impl KeyCap {
    pub fn of(caller: &Caller) -> Option<KeyCap> {
        match caller {
            Caller::Standard(key) => key.scope.as_ref()?.daily_send_cap.map(|per_day| KeyCap {
                key_id: key.key_id.clone(),
                per_day,
            }),
            _ => None,
        }
    }
}

/// The checks before a send's input is even read, in the spec's order: the
/// global kill switch, the agent key's freeze (its sends only), the rate
/// windows (and a scoped key's own cap, in the same transaction). Nothing
/// here spends a credit.
///
/// The switches are conditions of the windows' transaction, so a send that
/// passes waits for one store round trip; they are read only to say why a
/// refused one was refused.
pub async fn gate(ctx: &Context, payer: &Payer, cap: Option<KeyCap>) -> Result<(), ApiError> {
    let checks = switches(ctx, payer);
    match rate_limit(ctx, &payer.rate_bucket(), cap, &checks).await {
        Err(refused) if refused.status == 429 => {
            switched_off(ctx, &checks).await?;
            Err(refused)
        }
        passed => passed,
    }
}

/// The switches a send of this payer passes, as conditions on their items:
/// sending not paused, and for the agent key's sends its key not frozen.
/// Every door out checks these: [`gate`] for a send at once, and the one
/// transaction that takes a waiting send to go out
/// (`pending::going::take`), so a send that waited is held by them too.
pub fn switches(ctx: &Context, payer: &Payer) -> Vec<(Key, Cond)> {
    let mut checks = vec![(keys::sending_switch(), credits::enabled_cond())];
    if matches!(payer, Payer::Agent) {
        checks.push((
            keys::agent_switch(),
            credits::AgentSwitch::unfrozen_cond(ctx.clock.now()),
        ));
    }
    checks
}

/// The switches' refusal, in the spec's order: sending paused, then the
/// agent key frozen (read from the items [`switches`] named, in its order);
/// none when both let it go.
pub async fn switched_off(ctx: &Context, checks: &[(Key, Cond)]) -> Result<(), ApiError> {
    let switches: Vec<Key> = checks.iter().map(|(key, _)| key.clone()).collect();
    let mut found = ctx.store.get_many(&switches).await?.into_iter();
    if !credits::enabled_of(found.next().flatten().as_ref()) {
        return Err(error::SENDING_PAUSED.into());
    }
    if found
        .next()
        .is_some_and(|switch| credits::AgentSwitch::of(switch.as_ref()).frozen(ctx.clock.now()))
    {
        return Err(error::AGENT_KEY_DISABLED.into());
    }
    Ok(())
}

/// Takes the payer's credit (none for a person): the remaining balance.
/// A credit is not refunded when delivery fails (spec 8).
pub async fn charge(ctx: &Context, payer: &Payer) -> Result<Option<i64>, ApiError> {
    match payer.credit_bucket() {
        Some(bucket) => Ok(Some(credits::spend(ctx, &bucket).await?)),
        None => Ok(None),
    }
}

/// The balance a send's answer reports when it spends nothing (None for a
/// person, who has none).
pub async fn balance(ctx: &Context, payer: &Payer) -> Result<Option<i64>, ApiError> {
    match payer.credit_bucket() {
        Some(bucket) => Ok(Some(credits::remaining(ctx, &bucket).await?)),
        None => Ok(None),
    }
}

/// Gives a credit back: a scheduled send cancelled or refused when due.
pub async fn refund(ctx: &Context, payer: &Payer) -> Result<(), ApiError> {
    if let Some(bucket) = payer.credit_bucket() {
        let update = crate::store::Update::new().add("remaining", 1);
        ctx.store.update(&keys::credits(&bucket), update, None).await?;
    }
    Ok(())
}

const SEND_MINUTE: Limit = Limit {
    max: SEND_PER_MINUTE,
    period_secs: MINUTE,
};
const SEND_DAY: Limit = Limit {
    max: SEND_PER_DAY,
    period_secs: DAY,
};

/// The windows one send counts in: the account's minute and day, in one
/// item (named as its day alone was), and a scoped key's own day.
fn windows(bucket: &str, cap: Option<&KeyCap>) -> Vec<(String, Vec<Limit>)> {
    let mut windows = vec![(format!("send:{bucket}:{DAY}"), vec![SEND_MINUTE, SEND_DAY])];
    if let Some(cap) = cap {
        let limit = Limit {
            max: cap.per_day,
            period_secs: DAY,
        };
        windows.push((format!("send:key:{}:{DAY}", cap.key_id), vec![limit]));
    }
    windows
}

/// [`gate`]'s writes, for a send that takes them in its own transaction
/// with its credit and delivery record: the window counts and the switches'
/// conditions. Refused, that transaction wrote nothing, and [`gate`] then
/// says why in the spec's order.
pub fn gate_writes(ctx: &Context, payer: &Payer, cap: Option<&KeyCap>) -> Vec<Write> {
    let windows = windows(&payer.rate_bucket(), cap);
    let named: Vec<(&str, &[Limit])> = windows
        .iter()
        .map(|(bucket, limits)| (bucket.as_str(), limits.as_slice()))
        .collect();
    ratelimit::hits(&named, &switches(ctx, payer), ctx.clock.epoch())
}

/// The payer's credit taken inside a transaction, on condition the balance
/// is still the `seen` one (the caller asks with 1 or more): the balance after is then exactly
/// `seen - 1`, as [`charge`] would answer. None for a person.
pub fn charge_write(payer: &Payer, seen: i64) -> Option<Write> {
    let bucket = payer.credit_bucket()?;
    Some(Write::Update {
        key: keys::credits(&bucket),
        update: crate::store::Update::new().add("remaining", -1),
        cond: Some(Cond::eq("remaining", seen)),
    })
}

/// Counts one send in every window (the account's two, a scoped key's
/// day), or in none. A full key window is named as such.
async fn rate_limit(ctx: &Context, bucket: &str, cap: Option<KeyCap>, checks: &[(Key, Cond)]) -> Result<(), ApiError> {
    let windows = windows(bucket, cap.as_ref());
    let named: Vec<(&str, &[Limit])> = windows
        .iter()
        .map(|(bucket, limits)| (bucket.as_str(), limits.as_slice()))
        .collect();
    let key_window = cap.is_some().then(|| (windows[1].0.clone(), windows[1].1[0]));
    let now = ctx.clock.epoch();
    match ratelimit::hit_all(ctx.store.as_ref(), &named, checks, now).await {
        Err(refused) if refused.status == 429 => match &key_window {
            Some((bucket, limit)) if ratelimit::full(ctx.store.as_ref(), bucket, *limit, now).await? => Err(ApiError {
                retry_after: refused.retry_after,
                ..error::KEY_DAILY_CAP.into()
            }),
            _ => Err(refused),
        },
        other => other,
    }
}
