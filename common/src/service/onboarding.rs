//! Onboarding (spec 2.9, 2.10, 3.4, 4.11): an emailed one-time code, verified
//! once, hands out a standard key once.
//!
//! Items: `REQ#<id>/R` the access request; `REQBY#email#<email>` and
//! `REQBY#domain#<domain>` index rows (sort key `<createdAt>#<id>`) for the
//! operators' duplicate preview.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::accounts::{self, Account, AccountStatus};
use super::{admin, credits};
use crate::auth::keys::same_digest;
use crate::clock::iso;
use crate::context::Context;
use crate::error::ApiError;
use crate::ratelimit::{self, HOUR, Limit};
use crate::store::{Cond, Key, StoreError, TTL, Update, Write, item, record};
use crate::validate::{self, Fields};

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
const STATUS_PER_EMAIL: Limit = Limit {
    max: 6,
    period_secs: HOUR,
};
/// Finished requests are kept this long after their code expires.
const KEEP_FINISHED_SECS: i64 = 30 * 86_400;

pub const CODE_NOT_VALID: &str = "That code is not valid";
/// Lower case, exactly as part 7 of the spec writes it.
pub const CODE_NO_LONGER_VALID: &str = "that code is no longer valid";
pub const CODE_EXPIRED: &str = "That code has expired";
pub const CODE_NOT_SENT: &str = "Could not send the access code";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RequestStatus {
    /// The code went out and has not been used yet.
    CodeSent,
    Ready,
    SettingUp,
    Unavailable,
}

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

pub fn request_key(id: &str) -> Key {
    Key::new(format!("REQ#{id}"), "R")
}

pub fn index_keys(req: &AccessRequest) -> [Key; 2] {
    let sk = format!("{}#{}", req.created_at, req.id);
    [
        Key::new(format!("REQBY#email#{}", req.email), sk.clone()),
        Key::new(format!("REQBY#domain#{}", req.domain), sk),
    ]
}

/// The rate-limit bucket of requestAccess per email, which operators may clear.
pub fn request_email_bucket(email: &str) -> String {
    format!("requestAccess:email:{email}")
}

pub fn valid_request_id(id: &str) -> bool {
    id.len() == 27 && id.starts_with("ar_") && id[3..].bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

fn code_digest(ctx: &Context, request_id: &str, code: &str) -> String {
    ctx.hasher.digest(&format!("code:{request_id}"), code)
}

pub async fn load(ctx: &Context, id: &str) -> Result<Option<AccessRequest>, StoreError> {
    ctx.store.get(&request_key(id)).await?.map(record).transpose()
}

// ---------------------------------------------------------------- requestAccess

pub struct RequestAccessInput {
    pub contact_email: String,
    pub domain: String,
    pub agent_name: String,
    pub intended_use: String,
}

impl RequestAccessInput {
    pub fn parse(fields: &Fields) -> Result<Self, ApiError> {
        let (email, domain, agent, usage) = (
            fields.str("contactEmail")?,
            fields.str("domain")?,
            fields.str("agentName")?,
            fields.str("intendedUse")?,
        );
        let (Some(email), Some(domain), Some(agent_name), Some(intended_use)) = (email, domain, agent, usage) else {
            return Err(ApiError::bad_request(
                "contactEmail, domain, agentName, and intendedUse are required",
            ));
        };
        let contact_email = validate::email(&email)
            .ok_or_else(|| ApiError::bad_request("contactEmail is not a valid email address"))?;
        let domain =
            validate::hostname(&domain).ok_or_else(|| ApiError::bad_request("domain is not a valid hostname"))?;
        if agent_name.chars().count() > 100 || agent_name.chars().any(char::is_control) {
            return Err(ApiError::bad_request("agentName must be at most 100 characters"));
        }
        if intended_use.chars().count() > 1000 {
            return Err(ApiError::bad_request("intendedUse must be at most 1000 characters"));
        }
        Ok(Self {
            contact_email,
            domain,
            agent_name,
            intended_use,
        })
    }
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RequestAccessOutput {
    pub ok: bool,
    pub request_id: String,
    pub expires_in: i64,
    pub message: &'static str,
}

pub async fn request_access(
    ctx: &Context,
    input: RequestAccessInput,
    ip: &str,
) -> Result<RequestAccessOutput, ApiError> {
    let now = ctx.clock.now();
    ratelimit::hit(
        ctx.store.as_ref(),
        &format!("requestAccess:ip:{ip}"),
        REQUEST_PER_IP,
        now.timestamp(),
    )
    .await?;
    ratelimit::hit(
        ctx.store.as_ref(),
        &request_email_bucket(&input.contact_email),
        REQUEST_PER_EMAIL,
        now.timestamp(),
    )
    .await?;

    let id = format!("ar_{}", hex::encode(rand::random::<[u8; 12]>()));
    let code = format!("{:08}", rand::random_range(0..100_000_000u32));
    let expires_at = now.timestamp() + CODE_TTL_SECS;
    let req = AccessRequest {
        code_digest: code_digest(ctx, &id, &code),
        id,
        email: input.contact_email,
        domain: input.domain,
        agent_name: input.agent_name,
        intended_use: input.intended_use,
        attempts: 0,
        expires_at,
        status: RequestStatus::CodeSent,
        created_at: iso(now),
        uid: None,
    };
    let mut row = item(&request_key(&req.id), &req);
    row.insert(TTL.into(), json!(expires_at + KEEP_FINISHED_SECS));
    let mut writes = vec![Write::Put {
        item: row,
        cond: Some(Cond::NotExists),
    }];
    for key in index_keys(&req) {
        writes.push(Write::Put {
            item: item(&key, &json!({ "id": req.id, "ttl": expires_at + KEEP_FINISHED_SECS })),
            cond: None,
        });
    }
    ctx.store.transact(writes).await?;

    if let Err(e) = send_code(ctx, &req.email, &code).await {
        tracing::error!(error = %e, request_id = %req.id, "access code email failed");
        // The request is useless without its code: take it back.
        let mut undo = vec![Write::Delete {
            key: request_key(&req.id),
            cond: None,
        }];
        undo.extend(
            index_keys(&req)
                .into_iter()
                .map(|key| Write::Delete { key, cond: None }),
        );
        ctx.store.transact(undo).await?;
        return Err(ApiError::internal(CODE_NOT_SENT));
    }
    Ok(RequestAccessOutput {
        ok: true,
        request_id: req.id,
        expires_in: CODE_TTL_SECS,
        message: "If that address can receive mail, an 8-digit code is on its way. It expires in 24 hours.",
    })
}

async fn send_code(ctx: &Context, to: &str, code: &str) -> anyhow::Result<()> {
    let transport = ctx
        .system_mail
        .as_ref()
        .ok_or_else(|| anyhow::anyhow!("no system mail transport"))?;
    let from = format!("noreply@{}", ctx.config.service_domain);
    let body = format!(
        "Your access code is {code}\r\n\r\nEnter it with verifyAccessRequest within 24 hours. \
         If you did not ask for access, ignore this message.\r\n"
    );
    let message = crate::mail::plain_text(&from, to, "Your access code", &body)?;
    transport.send(&message).await?;
    Ok(())
}

// ---------------------------------------------------------- verifyAccessRequest

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Quotas {
    pub credits: i64,
    pub burst_per_minute: i64,
    pub per_utc_day: i64,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct VerifyOutput {
    pub ok: bool,
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

pub fn parse_verify(fields: &Fields) -> Result<(String, String), ApiError> {
    let (Some(id), Some(code)) = (fields.str("requestId")?, fields.str("code")?) else {
        return Err(ApiError::bad_request("requestId and code are required"));
    };
    if !valid_request_id(&id) {
        return Err(ApiError::bad_request("requestId is not valid"));
    }
    Ok((id, code))
}

enum Finish {
    Done(VerifyOutput),
    /// Something changed under us (a concurrent verify or attempt): read again.
    Retry,
}

pub async fn verify_access_request(ctx: &Context, id: &str, code: &str) -> Result<VerifyOutput, ApiError> {
    for _ in 0..5 {
        let req = load(ctx, id).await?.ok_or_else(ApiError::not_found)?;
        if req.status != RequestStatus::CodeSent {
            return Err(ApiError::conflict(
                "This request is already complete. Get a key through a fresh request and verify.",
                "already_complete",
            ));
        }
        if req.attempts >= MAX_ATTEMPTS {
            return Err(ApiError::unauthorized(CODE_NO_LONGER_VALID));
        }
        if ctx.clock.epoch() >= req.expires_at {
            return Err(ApiError::new(410, CODE_EXPIRED));
        }
        if !same_digest(&code_digest(ctx, id, code), &req.code_digest) {
            let counted = ctx
                .store
                .update(&request_key(id), Update::new().add("attempts", 1), Some(still_open()))
                .await;
            match counted {
                Ok(_) => return Err(ApiError::unauthorized(CODE_NOT_VALID)),
                Err(StoreError::ConditionFailed) => continue,
                Err(e) => return Err(e.into()),
            }
        }
        match finish(ctx, &req).await? {
            Finish::Done(out) => return Ok(out),
            Finish::Retry => continue,
        }
    }
    Err(ApiError::internal("The request is busy; try again"))
}

/// The request is still waiting for its code and not locked.
fn still_open() -> Cond {
    Cond::And(vec![
        Cond::eq("status", "code_sent"),
        Cond::Lt("attempts".into(), MAX_ATTEMPTS),
    ])
}

fn close_request(req: &AccessRequest, status: RequestStatus, uid: &str, now: &str) -> Write {
    let update = Update::new()
        .set("status", serde_json::to_value(status).expect("status serializes"))
        .set("uid", uid)
        .set("finishedAt", now);
    Write::Update {
        key: request_key(&req.id),
        update,
        cond: Some(still_open()),
    }
}

async fn finish(ctx: &Context, req: &AccessRequest) -> Result<Finish, ApiError> {
    let now = iso(ctx.clock.now());
    let existing = accounts::by_email(ctx, &req.email).await?;
    let (status, api_key, uid, writes) = match existing {
        None => {
            let allowlisted = admin::is_allowlisted(ctx, validate::email_domain(&req.email)).await?;
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
            (status, api_key, account.uid, writes)
        }
        Some(account) => match account.status {
            AccountStatus::Ready => {
                let (key, _, mut writes) = accounts::issue_key_writes(&ctx.hasher, &account, &now, false);
                writes.push(close_request(req, RequestStatus::Ready, &account.uid, &now));
                (AccountStatus::Ready, Some(key), account.uid, writes)
            }
            other => {
                let writes = vec![
                    Write::Check {
                        key: accounts::account_key(&account.uid),
                        cond: Cond::eq("status", other.as_str()),
                    },
                    close_request(req, request_status(other), &account.uid, &now),
                ];
                (other, None, account.uid, writes)
            }
        },
    };
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
            message: "Your key is shown once. Store it now; send it as Authorization: Bearer <key>.",
            quotas: Some(Quotas {
                credits: credits::remaining(ctx, &credits::account_bucket(&uid)).await?,
                burst_per_minute: credits::SEND_PER_MINUTE,
                per_utc_day: credits::SEND_PER_DAY,
            }),
        },
        (AccountStatus::SettingUp, _) => neutral(
            req,
            "setting_up",
            "Your account is being set up. Check back with getRequestStatus; no key is issued yet.",
        ),
        _ => neutral(
            req,
            "unavailable",
            "This request cannot be completed. No key was issued.",
        ),
    };
    Ok(Finish::Done(out))
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

pub async fn get_request_status(ctx: &Context, fields: &Fields, ip: &str) -> Result<Value, ApiError> {
    // Wrong types read as "not on file": this route never tells anything apart.
    let id = fields.str("requestId").ok().flatten().unwrap_or_default();
    let email = fields
        .str("email")
        .ok()
        .flatten()
        .or_else(|| fields.str("contactEmail").ok().flatten())
        .map(|e| e.to_ascii_lowercase())
        .unwrap_or_default();
    let now = ctx.clock.epoch();
    ratelimit::hit(
        ctx.store.as_ref(),
        &format!("getRequestStatus:ip:{ip}"),
        STATUS_PER_IP,
        now,
    )
    .await?;
    if !email.is_empty() {
        ratelimit::hit(
            ctx.store.as_ref(),
            &format!("getRequestStatus:email:{email}"),
            STATUS_PER_EMAIL,
            now,
        )
        .await?;
    }
    let pending = json!({ "ok": true, "status": "pending", "ready": false });
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
    Ok(json!({ "ok": true, "status": status, "ready": status == "ready", "requestId": req.id }))
}

// ------------------------------------------------------------- getAccountStatus

pub async fn get_account_status(ctx: &Context, uid: &str, fields: &Fields) -> Result<Value, ApiError> {
    let account = accounts::get(ctx, uid).await?.ok_or_else(ApiError::not_found)?;
    let names_other_uid = fields.str("uid")?.is_some_and(|u| u != account.uid);
    let names_other_email = fields
        .str("email")?
        .is_some_and(|e| !e.eq_ignore_ascii_case(&account.email));
    if names_other_uid || names_other_email {
        return Err(crate::error::ACCOUNT_KEY_ONLY.into());
    }
    let ready = account.status == AccountStatus::Ready;
    let owned = super::domains::of_account(ctx, &account.uid).await?;
    let mut domains = Vec::new();
    let mut mailboxes = Vec::new();
    let mut verified_domain = false;
    let mut sendable = false;
    for domain in &owned {
        let verified = domain.status == super::domains::DomainStatus::Verified;
        verified_domain |= verified;
        let state = |passed: Option<bool>| match passed {
            None => "unchecked",
            Some(true) => "verified",
            Some(false) => "missing",
        };
        let checks = domain.checks;
        domains.push(json!({
            "name": domain.name,
            "status": domain.status,
            "verification": {
                "mx": state(checks.map(|c| c.mx)),
                "spf": state(checks.map(|c| c.spf)),
                "dkim": state(checks.map(|c| c.dkim)),
                "dmarc": state(checks.map(|c| c.dmarc)),
            },
        }));
        for mailbox in super::mailboxes::of_domain(ctx, &domain.name).await? {
            sendable |= verified && mailbox.mode.stores();
            mailboxes.push(json!({
                "address": mailbox.address,
                "mode": mailbox.mode,
                "ready": verified && mailbox.mta_applied,
            }));
        }
    }
    let can_send = ready && sendable;
    let reason = match account.status {
        AccountStatus::SettingUp => "Your account is being set up. Check back with getRequestStatus.",
        AccountStatus::Unavailable => "This account is not available. Contact support.",
        AccountStatus::Ready if owned.is_empty() => "Add your domain with POST /addDomain.",
        AccountStatus::Ready if !verified_domain => {
            "Publish the DNS records from GET /getDnsInstructions, then call POST /verifyDomain."
        }
        AccountStatus::Ready => "Add a hosted mailbox on your verified domain with POST /addMailbox.",
    };
    let mut out = json!({
        "ok": true,
        "status": account.status.as_str(),
        "accessLevel": if ready { json!("standard") } else { Value::Null },
        "ready": ready,
        "domains": domains,
        "mailboxes": mailboxes,
        "canSend": can_send,
    });
    if !can_send {
        out["reason"] = json!(reason);
    }
    Ok(out)
}
