//! The local server's sign-in for operators: an address of
//! `--operator-emails` asks for a code, mailed like an access code (locally,
//! to the outbox), and trades it once for an identity token (the route,
//! `http::web_sign_in`, mints it).
//!
//! Item: `SIGNIN#<email>/C`, the address's code: its digest, expiry and the
//! tries spent on it. In the store, so a restart forgets nothing, and every
//! rule below is a conditional write:
//! - an ask makes a code only when the address has none live (never asked,
//!   used, or expired); asking again while one is live mails nothing and
//!   leaves it as it is, tries and all, so asking never buys more guesses;
//! - a try is counted before the code is compared, and a code takes
//!   [`TRIES`] of them; a right one is used up by deleting it;
//! - asks are limited per client address and per email, whether or not the
//!   email is an operator's (so a 429 tells nothing either), and tries per
//!   client address.

use serde::{Deserialize, Serialize};

use crate::auth::keys::same_digest;
use crate::context::Context;
use crate::error::{self, ApiError};
use crate::keys;
use crate::ratelimit::{self, HOUR, Limit};
use crate::service::system_mail::{self, Relay};
use crate::store::{Cond, StoreError, StoreExt, TTL, Update, item};

/// How long a code lives.
pub const CODE_LIFETIME_SECS: i64 = 600;
/// Tries a code takes, right or wrong.
pub const TRIES: i64 = 5;
const ASK_PER_IP: Limit = Limit {
    max: 10,
    period_secs: HOUR,
};
const ASK_PER_EMAIL: Limit = Limit {
    max: 5,
    period_secs: HOUR,
};
const TRY_PER_IP: Limit = Limit {
    max: 30,
    period_secs: HOUR,
};

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct SignInCode {
    code_digest: String,
    expires_at: i64,
    tries: i64,
}

fn code_digest(ctx: &Context, email: &str, code: &str) -> String {
    ctx.hasher.digest(&format!("sign-in:{email}"), code)
}

/// Mails a code to `email` when it is an operator's and has no live code;
/// the same outcome for anyone else.
pub async fn ask(ctx: &Context, ip: &str, email: &str) -> Result<(), ApiError> {
    let now = ctx.clock.epoch();
    let (by_ip, by_email) = (
        format!("localSignIn:ip:{}", ratelimit::client(ip)),
        format!("localSignIn:email:{email}"),
    );
    // One after the other, as requestAccess counts: a conditional add each,
    // which a flood of asks never makes conflict (a transaction of the two
    // would, on DynamoDB).
    ratelimit::hit(ctx.store.as_ref(), &by_ip, ASK_PER_IP, now).await?;
    ratelimit::hit(ctx.store.as_ref(), &by_email, ASK_PER_EMAIL, now).await?;
    if !ctx.config.is_operator_email(email) {
        return Ok(());
    }
    let code = format!("{:08}", rand::random_range(0..100_000_000u32));
    let stored = SignInCode {
        code_digest: code_digest(ctx, email, &code),
        expires_at: now + CODE_LIFETIME_SECS,
        tries: 0,
    };
    let key = keys::sign_in_code(email);
    let mut row = item(&key, &stored);
    row.insert(TTL.into(), serde_json::json!(stored.expires_at + HOUR));
    let none_live = Cond::Or(vec![Cond::NotExists, Cond::Le("expiresAt".into(), now)]);
    match ctx.store.put(row, Some(none_live)).await {
        Ok(()) => {}
        // The live code stays, and its mail was sent when it was made.
        Err(StoreError::ConditionFailed) => return Ok(()),
        Err(e) => return Err(e.into()),
    }
    if let Err(e) = send_code(ctx, email, &code).await {
        // A code no one received would only block the next ask: taken back.
        ctx.store
            .delete(&key, Some(Cond::eq("codeDigest", stored.code_digest)))
            .await
            .ok();
        return Err(ApiError::internal(e));
    }
    Ok(())
}

/// Whether `code` is the live code of `email`, using it up when it is.
pub async fn verify(ctx: &Context, ip: &str, email: &str, code: &str) -> Result<(), ApiError> {
    let now = ctx.clock.epoch();
    let by_ip = format!("localSignIn:try:{}", ratelimit::client(ip));
    ratelimit::hit(ctx.store.as_ref(), &by_ip, TRY_PER_IP, now).await?;
    let key = keys::sign_in_code(email);
    let Some(stored) = ctx.store.read::<SignInCode>(&key).await? else {
        return Err(error::SIGN_IN_CODE_INVALID.into());
    };
    // Counted first, on the code read: however many tries arrive at once,
    // at most TRIES of them are ever compared with it.
    let this_code = Cond::eq("codeDigest", stored.code_digest.as_str());
    let counted = ctx
        .store
        .update(
            &key,
            Update::new().add("tries", 1),
            Some(Cond::And(vec![
                this_code.clone(),
                Cond::Lt("tries".into(), TRIES),
                Cond::Ge("expiresAt".into(), now + 1),
            ])),
        )
        .await;
    match counted {
        Ok(_) => {}
        Err(StoreError::ConditionFailed) => return Err(error::SIGN_IN_CODE_INVALID.into()),
        Err(e) => return Err(e.into()),
    }
    if !same_digest(&code_digest(ctx, email, code), &stored.code_digest) {
        return Err(error::SIGN_IN_CODE_INVALID.into());
    }
    // Used once: of two right tries at once, one deletes it.
    match ctx.store.delete(&key, Some(this_code)).await {
        Ok(_) => Ok(()),
        Err(StoreError::ConditionFailed) => Err(error::SIGN_IN_CODE_INVALID.into()),
        Err(e) => Err(e.into()),
    }
}

async fn send_code(ctx: &Context, to: &str, code: &str) -> anyhow::Result<()> {
    let body = format!(
        "Your sign-in code is {code}\r\n\r\nEnter it in the web app within 10 minutes. \
         If you did not ask to sign in, ignore this message.\r\n"
    );
    system_mail::send(ctx, Relay::System, to, "Your sign-in code", &body).await
}
