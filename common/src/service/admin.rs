//! Operator routes: access-request decisions, the domain allowlist, deleting
//! access requests and previewing duplicates (spec 4.12, 4.13).
//!
//! Items: `ALLOW#domains/<domain>` one allowlisted domain each.

use serde_json::{Value, json};

use super::accounts::{self, AccountStatus};
use super::onboarding::{self, AccessRequest, RequestStatus};
use crate::auth::IdentityUser;
use crate::clock::iso;
use crate::context::Context;
use crate::error::ApiError;
use crate::store::{Cond, Key, Query, StoreError, StoreResult, Update, Write, item, record};
use crate::validate::{self, Fields};

pub const MAX_DELETE_IDS: usize = 200;
const ALLOW_PK: &str = "ALLOW#domains";

fn allow_key(domain: &str) -> Key {
    Key::new(ALLOW_PK, domain)
}

pub async fn is_allowlisted(ctx: &Context, domain: &str) -> StoreResult<bool> {
    Ok(ctx.store.get(&allow_key(domain)).await?.is_some())
}

fn parse_domain(fields: &Fields) -> Result<String, ApiError> {
    let raw = fields
        .str("domain")?
        .ok_or_else(|| ApiError::bad_request("domain is required"))?;
    validate::hostname(&raw).ok_or_else(|| ApiError::bad_request("That domain name is not valid"))
}

pub async fn list_allowlist(ctx: &Context) -> Result<Value, ApiError> {
    let mut domains = Vec::new();
    let mut query = Query::partition(ALLOW_PK).limit(500);
    loop {
        let page = ctx.store.query(&query).await?;
        domains.extend(page.items.iter().filter_map(|i| i.get("domain").cloned()));
        match page.next {
            Some(next) => query = query.after(Some(next)),
            None => break,
        }
    }
    Ok(json!({ "ok": true, "domains": domains }))
}

pub async fn add_allowlist(ctx: &Context, by: &IdentityUser, fields: &Fields) -> Result<Value, ApiError> {
    let domain = parse_domain(fields)?;
    let row = json!({ "domain": domain, "addedBy": by.email, "addedAt": iso(ctx.clock.now()) });
    let added = match ctx
        .store
        .put(item(&allow_key(&domain), &row), Some(Cond::NotExists))
        .await
    {
        Ok(()) => true,
        Err(StoreError::ConditionFailed) => false,
        Err(e) => return Err(e.into()),
    };
    if added {
        super::audit::record(ctx, "allowlist.add", &by.email, json!({ "domain": domain })).await?;
    }
    Ok(json!({ "ok": true, "domain": domain, "added": added }))
}

pub async fn remove_allowlist(ctx: &Context, by: &IdentityUser, fields: &Fields) -> Result<Value, ApiError> {
    let domain = parse_domain(fields)?;
    let removed = ctx.store.delete(&allow_key(&domain), None).await?.is_some();
    if removed {
        super::audit::record(ctx, "allowlist.remove", &by.email, json!({ "domain": domain })).await?;
    }
    Ok(json!({ "ok": true, "domain": domain, "removed": removed }))
}

pub async fn check_allowlist(ctx: &Context, fields: &Fields) -> Result<Value, ApiError> {
    let domain = parse_domain(fields)?;
    Ok(json!({ "ok": true, "domain": domain, "allowlisted": is_allowlisted(ctx, &domain).await? }))
}

/// Approves or denies a verified access request's account.
pub async fn request_decision(ctx: &Context, by: &IdentityUser, fields: &Fields) -> Result<Value, ApiError> {
    let id = fields
        .str("id")?
        .ok_or_else(|| ApiError::bad_request("id is required"))?;
    let approve = match fields.str("decision")?.as_deref() {
        Some("approve") => true,
        Some("deny") => false,
        _ => return Err(ApiError::bad_request("decision must be approve or deny")),
    };
    if !onboarding::valid_request_id(&id) {
        return Err(ApiError::bad_request("id is not a valid request id"));
    }
    let req = onboarding::load(ctx, &id).await?.ok_or_else(ApiError::not_found)?;
    let (RequestStatus::Ready | RequestStatus::SettingUp | RequestStatus::Unavailable, Some(uid)) =
        (req.status, &req.uid)
    else {
        return Err(ApiError::new(409, "This request is not ready for a decision."));
    };
    let (account_status, request_status) = if approve {
        (AccountStatus::Ready, "ready")
    } else {
        (AccountStatus::Unavailable, "unavailable")
    };
    let now = iso(ctx.clock.now());
    let writes = vec![
        Write::Update {
            key: accounts::account_key(uid),
            update: Update::new()
                .set("status", account_status.as_str())
                .set("decidedAt", now.clone()),
            cond: Some(Cond::Exists),
        },
        Write::Update {
            key: onboarding::request_key(&id),
            update: Update::new().set("status", request_status).set("decidedAt", now),
            cond: Some(Cond::Exists),
        },
    ];
    match ctx.store.transact(writes).await {
        Ok(()) => {}
        Err(StoreError::ConditionFailed) => return Err(ApiError::not_found()),
        Err(e) => return Err(e.into()),
    }
    let action = if approve { "request.approve" } else { "request.deny" };
    super::audit::record(ctx, action, &by.email, json!({ "id": id, "uid": uid })).await?;
    Ok(
        json!({ "ok": true, "id": id, "decision": if approve { "approve" } else { "deny" }, "status": account_status.as_str() }),
    )
}

/// Deletes exactly the named access requests; accounts and keys stay.
pub async fn request_delete(ctx: &Context, by: &IdentityUser, fields: &Fields) -> Result<Value, ApiError> {
    let ids = parse_ids(fields)?;
    let mut deleted = Vec::new();
    let mut not_found = Vec::new();
    for id in ids {
        let found = match onboarding::valid_request_id(&id) {
            true => onboarding::load(ctx, &id).await?,
            false => None,
        };
        match found {
            Some(req) => {
                delete_request(ctx, &req).await?;
                crate::ratelimit::clear(ctx.store.as_ref(), &onboarding::request_email_bucket(&req.email)).await?;
                super::audit::record(
                    ctx,
                    "request.delete",
                    &by.email,
                    json!({ "id": id, "email": req.email, "found": true }),
                )
                .await?;
                deleted.push(id);
            }
            None => {
                super::audit::record(ctx, "request.delete", &by.email, json!({ "id": id, "found": false })).await?;
                not_found.push(id);
            }
        }
    }
    Ok(json!({ "ok": true, "deleted": deleted, "notFound": not_found }))
}

fn parse_ids(fields: &Fields) -> Result<Vec<String>, ApiError> {
    let mut ids = Vec::new();
    if let Some(id) = fields.str("id")? {
        ids.push(id);
    }
    match fields.get("ids") {
        None | Some(Value::Null) => {}
        Some(Value::Array(list)) => {
            if list.len() > MAX_DELETE_IDS {
                return Err(ApiError::bad_request("At most 200 ids per request"));
            }
            for v in list {
                match v.as_str() {
                    Some(s) if !s.trim().is_empty() => ids.push(s.trim().to_string()),
                    _ => return Err(ApiError::bad_request("ids must be an array of request ids")),
                }
            }
        }
        Some(_) => return Err(ApiError::bad_request("ids must be an array of request ids")),
    }
    ids.sort();
    ids.dedup();
    if ids.is_empty() {
        return Err(ApiError::bad_request("id or ids is required"));
    }
    if ids.len() > MAX_DELETE_IDS {
        return Err(ApiError::bad_request("At most 200 ids per request"));
    }
    Ok(ids)
}

async fn delete_request(ctx: &Context, req: &AccessRequest) -> StoreResult<()> {
    let mut writes = vec![Write::Delete {
        key: onboarding::request_key(&req.id),
        cond: None,
    }];
    writes.extend(
        onboarding::index_keys(req)
            .into_iter()
            .map(|key| Write::Delete { key, cond: None }),
    );
    ctx.store.transact(writes).await
}

/// Access requests that share an email and/or an organization domain.
pub async fn request_duplicates(ctx: &Context, email: Option<&str>, domain: Option<&str>) -> Result<Value, ApiError> {
    let email = match email.map(str::trim).filter(|e| !e.is_empty()) {
        Some(e) => Some(validate::email(e).ok_or_else(|| ApiError::bad_request("email is not a valid email address"))?),
        None => None,
    };
    let domain = match domain.map(str::trim).filter(|d| !d.is_empty()) {
        Some(d) => Some(validate::hostname(d).ok_or_else(|| ApiError::bad_request("That domain name is not valid"))?),
        None => None,
    };
    let mut partitions = Vec::new();
    if let Some(e) = &email {
        partitions.push(format!("REQBY#email#{e}"));
    }
    if let Some(d) = &domain {
        partitions.push(format!("REQBY#domain#{d}"));
    }
    if partitions.is_empty() {
        return Err(ApiError::bad_request("email or domain is required"));
    }
    let mut ids = Vec::new();
    for pk in partitions {
        let page = ctx.store.query(&Query::partition(pk).backward().limit(200)).await?;
        ids.extend(
            page.items
                .iter()
                .filter_map(|i| i.get("id").and_then(Value::as_str).map(String::from)),
        );
    }
    ids.sort();
    ids.dedup();
    let mut requests = Vec::new();
    for id in ids {
        if let Some(found) = ctx.store.get(&onboarding::request_key(&id)).await? {
            let req: AccessRequest = record(found)?;
            requests.push(json!({
                "id": req.id, "email": req.email, "domain": req.domain, "agentName": req.agent_name,
                "status": req.status, "createdAt": req.created_at, "uid": req.uid,
            }));
        }
    }
    requests.sort_by(|a, b| b["createdAt"].as_str().cmp(&a["createdAt"].as_str()));
    Ok(json!({ "ok": true, "count": requests.len(), "requests": requests }))
}
