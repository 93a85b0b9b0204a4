//! Onboarding (spec 2.9, 2.10, 3.4, 4.11): an emailed one-time code, verified
//! once, hands out a standard key once.
//!
//! Items: `REQ#<id>/R` the access request; `REQBY#email#<email>` and
//! `REQBY#domain#<domain>` index rows (sort key `<createdAt>#<id>`) for the
//! operators' duplicate preview.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::service::caller::account::{self as accounts, Account, AccountStatus};
use crate::service::{accounts::allowlist, accounts::credits, caller::Call};

use crate::auth::keys::same_digest;
use crate::clock::iso;
use crate::context::Context;
use crate::error::{self, ApiError};
use crate::keys;
use crate::messages;
use crate::ratelimit::{self, HOUR, Limit};
use crate::service::system_mail::{self, Relay};
use crate::store::{Cond, Key, StoreError, StoreExt, TTL, Update, Write, item};
use crate::validate::Fields;
use crate::values::{DomainName, EmailAddress, Line, RequestId, Text};

pub const CODE_TTL_SECS: i64 = 86_400;
pub const MAX_ATTEMPTS: i64 = 5;
const REQUEST_PER_IP: Limit = Limit {
    max: 5,
    period_secs: HOUR,
};
const REQUEST_PER_EMAIL: Limit = Limit {
    max: 3,
    period_secs: HOUR,
};
const STATUS_PER_IP: Limit = Limit {
    max: 10,
    period_secs: HOUR,
};
/// verifyAccessRequest reads a request without a credential: bounded per IP.
const VERIFY_PER_IP: Limit = Limit {
    max: 30,
    period_secs: HOUR,
};
const STATUS_PER_EMAIL: Limit = Limit {
    max: 6,
    period_secs: HOUR,
};
/// Finished requests are kept this long after their code expires.
const KEEP_FINISHED_SECS: i64 = 30 * 86_400;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RequestStatus {
    /// The code went out and has not been used yet.
    CodeSent,
    Ready,
    SettingUp,
    Unavailable,
}

crate::store::stored_as_json!(RequestStatus);

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AccessRequest {
    pub id: String,
    pub email: String,
    pub domain: String,
    pub agent_name: String,
    pub intended_use: String,
    pub code_digest: String,
    pub attempts: i64,
    pub expires_at: i64,
    pub status: RequestStatus,
    pub created_at: String,
    #[serde(default)]
    pub uid: Option<String>,
}

pub fn index_keys(req: &AccessRequest) -> [Key; 2] {
    let sk = format!("{}#{}", req.created_at, req.id);
    [
        Key::new(keys::requests_by_email(&req.email), sk.clone()),
        Key::new(keys::requests_by_domain(&req.domain), sk),
    ]
}

/// The rate-limit bucket of requestAccess per email, which operators may clear.
pub fn request_email_bucket(email: &str) -> String {
    format!("requestAccess:email:{email}")
}

pub use crate::values::valid_request_id;

fn code_digest(ctx: &Context, request_id: &str, code: &str) -> String {
    ctx.hasher.digest(&format!("code:{request_id}"), code)
}

pub async fn load(ctx: &Context, id: &str) -> Result<Option<AccessRequest>, StoreError> {
    ctx.store.read(&keys::request(id)).await
}

// ---------------------------------------------------------------- requestAccess

crate::input! {
    /// POST /requestAccess.
    pub struct RequestAccessInput {
        /// Where the 8-digit code is sent.
        pub contact_email: EmailAddress = (error::ACCESS_FIELDS_REQUIRED, error::CONTACT_EMAIL_INVALID),
        /// The organization's hostname (a name only; nothing is created).
        pub domain: DomainName = (error::ACCESS_FIELDS_REQUIRED, error::ORG_DOMAIN_INVALID),
        pub agent_name: Line<100> = (error::ACCESS_FIELDS_REQUIRED, error::AGENT_NAME_TOO_LONG),
        /// A note on what the account is for.
        pub intended_use: Text<1000> = (error::ACCESS_FIELDS_REQUIRED, error::INTENDED_USE_TOO_LONG),
    }
}

#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RequestAccessOutput {
    pub ok: bool,
    pub request_id: String,
    pub expires_in: i64,
    pub message: &'static str,
}

/// Emails an 8-digit code; the answer never says whether an account exists.
pub async fn request_access(call: &Call<'_>, input: RequestAccessInput) -> Result<RequestAccessOutput, ApiError> {
    let (ctx, ip) = (call.ctx, call.ip);
    let now = ctx.clock.now();
    let (ip_bucket, email_bucket) = (
        format!("requestAccess:ip:{}", ratelimit::client(ip)),
        request_email_bucket(&input.contact_email),
    );
    ratelimit::hit(ctx.store.as_ref(), &ip_bucket, REQUEST_PER_IP, now.timestamp()).await?;
    ratelimit::hit(ctx.store.as_ref(), &email_bucket, REQUEST_PER_EMAIL, now.timestamp()).await?;

    let id = RequestId::mint().into_string();
    let code = format!("{:08}", rand::random_range(0..100_000_000u32));
    let req = AccessRequest {
        code_digest: code_digest(ctx, &id, &code),
        id,
        email: input.contact_email.into_string(),
        domain: input.domain.into_string(),
        agent_name: input.agent_name.into_string(),
        intended_use: input.intended_use.into_string(),
        attempts: 0,
        expires_at: now.timestamp() + CODE_TTL_SECS,
        status: RequestStatus::CodeSent,
        created_at: iso(now),
        uid: None,
    };
    store_request(ctx, &req).await?;
    if let Err(e) = send_code(ctx, &req.email, &code).await {
        tracing::error!(error = %e, request_id = %req.id, "access code email failed");
        // The request is useless without its code: take it back.
        withdraw_request(ctx, &req).await?;
        return Err(error::CODE_NOT_SENT.into());
    }
    Ok(RequestAccessOutput {
        ok: true,
        request_id: req.id,
        expires_in: CODE_TTL_SECS,
        message: messages::CODE_SENT.as_str(),
    })
}

/// The request and its index items, kept a while after the code expires.
async fn store_request(ctx: &Context, req: &AccessRequest) -> Result<(), ApiError> {
    let ttl = req.expires_at + KEEP_FINISHED_SECS;
    let mut row = item(&keys::request(&req.id), req);
    row.insert(TTL.into(), json!(ttl));
    let mut writes = vec![Write::Put {
        item: row,
        cond: Some(Cond::NotExists),
    }];
    for key in index_keys(req) {
        writes.push(Write::Put {
            item: item(&key, &json!({ "id": req.id, "ttl": ttl })),
            cond: None,
        });
    }
    Ok(ctx.store.transact(writes).await?)
}

/// Deletes a request and its index items.
async fn withdraw_request(ctx: &Context, req: &AccessRequest) -> Result<(), ApiError> {
    let mut undo = vec![Write::Delete {
        key: keys::request(&req.id),
        cond: None,
    }];
    undo.extend(index_keys(req).into_iter().map(|key| Write::Delete { key, cond: None }));
    Ok(ctx.store.transact(undo).await?)
}

async fn send_code(ctx: &Context, to: &str, code: &str) -> anyhow::Result<()> {
    let body = format!(
        "Your access code is {code}\r\n\r\nEnter it on the page where you asked for access (an agent: \
         POST /verifyAccessRequest, or the verify_access_request tool) within 24 hours. \
         If you did not ask for access, ignore this message.\r\n"
    );
    system_mail::send(ctx, Relay::System, to, "Your access code", &body).await
}

// ---------------------------------------------------------- verifyAccessRequest

#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Quotas {
    pub credits: i64,
    pub burst_per_minute: i64,
    pub per_utc_day: i64,
}

/// The verify result (spec 2.9): `ready` with the key (once), or
/// `setting_up` / `unavailable` without one.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct VerifyOutput {
    pub ok: bool,
    /// ready, setting_up or unavailable.
    pub status: &'static str,
    pub request_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub access: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api_key: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token_type: Option<&'static str>,
    pub message: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quotas: Option<Quotas>,
}

crate::input! {
    /// POST /verifyAccessRequest.
    pub struct VerifyInput {
        /// From requestAccess.
        pub request_id: RequestId = (error::VERIFY_FIELDS_REQUIRED, error::REQUEST_ID_INVALID),
        /// The 8-digit code from the email.
        pub code: Text<64> = (error::VERIFY_FIELDS_REQUIRED, error::CODE_NOT_VALID),
    }
    before both_given;
}

/// Both must be there, the code a string, before either is judged.
fn both_given(fields: &Fields) -> Result<(), ApiError> {
    let given = |name| match fields.get(name) {
        None | Some(serde_json::Value::Null) => false,
        Some(serde_json::Value::String(s)) => !s.trim().is_empty(),
        Some(_) => true,
    };
    if !(given("requestId") && given("code")) {
        return Err(error::VERIFY_FIELDS_REQUIRED.into());
    }
    // A code of another type is invalid input (400), not a wrong code (401):
    // the spec's body is strings.
    match fields.get("code") {
        Some(serde_json::Value::String(_)) => Ok(()),
        _ => Err(error::CODE_NOT_A_STRING.into()),
    }
}

enum Finish {
    Done(VerifyOutput),
    /// Something changed under us (a concurrent verify or attempt): read again.
    Retry,
}

/// Checks the code once: a wrong, expired or locked code never gives a key.
pub async fn verify_access_request(call: &Call<'_>, input: VerifyInput) -> Result<VerifyOutput, ApiError> {
    let (ctx, id, code) = (call.ctx, input.request_id.as_str(), input.code.as_str());
    ratelimit::hit(
        ctx.store.as_ref(),
        &format!("verifyAccessRequest:ip:{}", ratelimit::client(call.ip)),
        VERIFY_PER_IP,
        ctx.clock.epoch(),
    )
    .await?;
    for _ in 0..5 {
        let req = load(ctx, id).await?.ok_or(error::NOT_FOUND)?;
        if req.status != RequestStatus::CodeSent {
            return Err(error::ALREADY_COMPLETE.into());
        }
        if req.attempts >= MAX_ATTEMPTS {
            return Err(error::CODE_NO_LONGER_VALID.into());
        }
        if ctx.clock.epoch() >= req.expires_at {
            return Err(error::CODE_EXPIRED.into());
        }
        if !same_digest(&code_digest(ctx, id, code), &req.code_digest) {
            let counted = ctx
                .store
                .update(&keys::request(id), Update::new().add("attempts", 1), Some(still_open()))
                .await;
            match counted {
                Ok(_) => return Err(error::CODE_NOT_VALID.into()),
                Err(StoreError::ConditionFailed) => continue,
                Err(e) => return Err(e.into()),
            }
        }
        match finish(ctx, &req).await? {
            Finish::Done(out) => return Ok(out),
            Finish::Retry => continue,
        }
    }
    Err(error::REQUEST_BUSY.into())
}

/// The request is still waiting for its code and not locked.
fn still_open() -> Cond {
    Cond::And(vec![
        Cond::eq("status", RequestStatus::CodeSent),
        Cond::Lt("attempts".into(), MAX_ATTEMPTS),
    ])
}

fn close_request(req: &AccessRequest, status: RequestStatus, uid: &str, now: &str) -> Write {
    let update = Update::new()
        .set("status", status)
        .set("uid", uid)
        .set("finishedAt", now);
    Write::Update {
        key: keys::request(&req.id),
        update,
        cond: Some(still_open()),
    }
}

async fn finish(ctx: &Context, req: &AccessRequest) -> Result<Finish, ApiError> {
    let Outcome {
        status,
        api_key,
        uid,
        writes,
    } = outcome(ctx, req).await?;
    match ctx.store.transact(writes).await {
        Ok(()) => {}
        Err(StoreError::ConditionFailed) => return Ok(Finish::Retry),
        Err(e) => return Err(e.into()),
    }
    let out = match (status, api_key) {
        (AccountStatus::Ready, Some(key)) => VerifyOutput {
            ok: true,
            status: "ready",
            request_id: req.id.clone(),
            access: Some("standard"),
            api_key: Some(key),
            token_type: Some("Bearer"),
            message: messages::KEY_SHOWN_ONCE.as_str(),
            quotas: Some(Quotas {
                credits: credits::remaining(ctx, &credits::account_bucket(&uid)).await?,
                burst_per_minute: credits::SEND_PER_MINUTE,
                per_utc_day: credits::SEND_PER_DAY,
            }),
        },
        (AccountStatus::SettingUp, _) => neutral(req, "setting_up", messages::REQUEST_SETTING_UP.as_str()),
        _ => neutral(req, "unavailable", messages::REQUEST_UNAVAILABLE.as_str()),
    };
    Ok(Finish::Done(out))
}

/// What a verified request comes to, and the writes that make it so in one
/// transaction (the request closed with them).
struct Outcome {
    status: AccountStatus,
    /// A key issued now, shown once.
    api_key: Option<String>,
    uid: String,
    writes: Vec<Write>,
}

async fn outcome(ctx: &Context, req: &AccessRequest) -> Result<Outcome, ApiError> {
    let now = iso(ctx.clock.now());
    let Some(account) = accounts::by_email(ctx, &req.email).await? else {
        return new_account(ctx, req, now).await;
    };
    Ok(match account.status {
        AccountStatus::Ready => {
            let (key, _, mut writes) = accounts::issue_key_writes(&ctx.hasher, &account, &now, false);
            writes.push(close_request(req, RequestStatus::Ready, &account.uid, &now));
            Outcome {
                status: AccountStatus::Ready,
                api_key: Some(key),
                uid: account.uid,
                writes,
            }
        }
        other => {
            let writes = vec![
                Write::Check {
                    key: keys::account(&account.uid),
                    cond: Cond::eq("status", other),
                },
                close_request(req, request_status(other), &account.uid, &now),
            ];
            Outcome {
                status: other,
                api_key: None,
                uid: account.uid,
                writes,
            }
        }
    })
}

/// A first request from this address: a new account, ready with a key when
/// its domain is on the allowlist, else setting up.
async fn new_account(ctx: &Context, req: &AccessRequest, now: String) -> Result<Outcome, ApiError> {
    let allowlisted = allowlist::contains(ctx, crate::values::email_domain(&req.email)).await?;
    let status = if allowlisted {
        AccountStatus::Ready
    } else {
        AccountStatus::SettingUp
    };
    let account = Account {
        uid: accounts::new_uid(),
        email: req.email.clone(),
        status,
        created_at: now.clone(),
        key_digest: None,
        key_id: None,
        key_last4: None,
    };
    let mut writes = Vec::new();
    let (api_key, account) = if allowlisted {
        let (key, account, key_writes) = accounts::issue_key_writes(&ctx.hasher, &account, &now, true);
        writes.extend(key_writes);
        (Some(key), account)
    } else {
        (None, account)
    };
    writes.extend(accounts::create_writes(&account));
    writes.push(credits::create_write(&credits::account_bucket(&account.uid)));
    writes.push(close_request(req, request_status(status), &account.uid, &now));
    Ok(Outcome {
        status,
        api_key,
        uid: account.uid,
        writes,
    })
}

fn neutral(req: &AccessRequest, status: &'static str, message: &'static str) -> VerifyOutput {
    VerifyOutput {
        ok: true,
        status,
        request_id: req.id.clone(),
        access: None,
        api_key: None,
        token_type: None,
        message,
        quotas: None,
    }
}

fn request_status(status: AccountStatus) -> RequestStatus {
    match status {
        AccountStatus::Ready => RequestStatus::Ready,
        AccountStatus::SettingUp => RequestStatus::SettingUp,
        AccountStatus::Unavailable => RequestStatus::Unavailable,
    }
}

// ------------------------------------------------------------- getRequestStatus

crate::input! {
    /// POST /getRequestStatus. Any string, or none, is answered (a value that
    /// matches nothing reads as "not on file", so the answer tells nothing
    /// apart); a value that is not a string is 400, which says nothing about
    /// what is on file either.
    pub struct StatusInput {
        /// The request's id (`ar_` and 24 hex). Any other string, or none, reads
        /// as a request not on file.
        pub request_id: Option<String> = error::STATUS_FIELDS_TYPE,
        /// The contact email; `contactEmail` is accepted in its place.
        pub email: Option<String> = error::STATUS_FIELDS_TYPE,
        /// In place of `email`.
        pub contact_email: Option<String> = error::STATUS_FIELDS_TYPE,
    }
}

#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StatusOutput {
    pub ok: bool,
    /// ready, setting_up, pending or unavailable.
    pub status: &'static str,
    /// True only when the account is ready.
    pub ready: bool,
    /// Present only when the request id and email match.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
}

pub async fn get_request_status(call: &Call<'_>, input: StatusInput) -> Result<StatusOutput, ApiError> {
    let (ctx, ip) = (call.ctx, call.ip);
    let id = input.request_id.unwrap_or_default();
    let email = input
        .email
        .or(input.contact_email)
        .unwrap_or_default()
        .to_ascii_lowercase();
    let now = ctx.clock.epoch();
    ratelimit::hit(
        ctx.store.as_ref(),
        &format!("getRequestStatus:ip:{}", ratelimit::client(ip)),
        STATUS_PER_IP,
        now,
    )
    .await?;
    // Only a well-formed address is counted under its own name: anything
    // else cannot be on file, and must not become part of a key.
    if crate::values::email(&email).is_some() {
        ratelimit::hit(
            ctx.store.as_ref(),
            &format!("getRequestStatus:email:{email}"),
            STATUS_PER_EMAIL,
            now,
        )
        .await?;
    }
    let pending = StatusOutput {
        ok: true,
        status: "pending",
        ready: false,
        request_id: None,
    };
    if !valid_request_id(&id) {
        return Ok(pending);
    }
    let Some(req) = load(ctx, &id).await? else {
        return Ok(pending);
    };
    if email.is_empty() || !same_digest(&req.email, &email) {
        return Ok(pending);
    }
    // Once verified, the account's current status is the answer (an approval
    // after verify turns setting_up into ready).
    let status = match &req.uid {
        Some(uid) if req.status != RequestStatus::CodeSent => match accounts::get(ctx, uid).await? {
            Some(account) => account.status.as_str(),
            None => "unavailable",
        },
        _ => "pending",
    };
    Ok(StatusOutput {
        ok: true,
        status,
        ready: status == "ready",
        request_id: Some(req.id),
    })
}
