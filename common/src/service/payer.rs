//! Who pays for a send, and the checks before one (spec 3.5, 4.1, 8): the
//! global kill switch, the agent key's freeze, the rate windows, then the
//! credit. Every path that sends (sendMail, send_mail, a mailbox's SMTP
//! submission) goes through these in this order.

use super::credits::{self, AGENT_BUCKET, SEND_PER_DAY, SEND_PER_MINUTE};
use crate::auth::Caller;
use crate::context::Context;
use crate::error::{self, ApiError};
use crate::keys;
use crate::ratelimit::{self, DAY, Limit, MINUTE};

/// Whose switches, rate windows and balance a send counts against.
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

    fn credit_bucket(&self) -> Option<String> {
        match self {
            Payer::Person(_) => None,
            _ => Some(self.rate_bucket()),
        }
    }
}

/// The checks before a send's input is even read, in the spec's order: the
/// global kill switch, the agent key's freeze (its sends only), both rate
/// windows. Nothing here spends a credit.
pub async fn gate(ctx: &Context, payer: &Payer) -> Result<(), ApiError> {
    // The sending switch and (for the agent key) its own, in one request.
    let mut switches = vec![keys::sending_switch()];
    if matches!(payer, Payer::Agent) {
        switches.push(keys::agent_switch());
    }
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
    rate_limit(ctx, &payer.rate_bucket()).await
}

/// Takes the payer's credit (none for a person): the remaining balance.
/// A credit is not refunded when delivery fails (spec 8).
pub async fn charge(ctx: &Context, payer: &Payer) -> Result<Option<i64>, ApiError> {
    match payer.credit_bucket() {
        Some(bucket) => Ok(Some(credits::spend(ctx, &bucket).await?)),
        None => Ok(None),
    }
}

const SEND_MINUTE: Limit = Limit {
    max: SEND_PER_MINUTE,
    period_secs: MINUTE,
};
const SEND_DAY: Limit = Limit {
    max: SEND_PER_DAY,
    period_secs: DAY,
};

/// Counts one send in both windows, or neither.
async fn rate_limit(ctx: &Context, bucket: &str) -> Result<(), ApiError> {
    let (minute, day) = (format!("send:{bucket}:{MINUTE}"), format!("send:{bucket}:{DAY}"));
    ratelimit::hit_all(
        ctx.store.as_ref(),
        &[(&minute, SEND_MINUTE), (&day, SEND_DAY)],
        ctx.clock.epoch(),
    )
    .await
}
