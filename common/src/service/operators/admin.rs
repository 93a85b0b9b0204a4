//! Operator routes: access-request decisions, the domain allowlist, deleting
//! access requests and previewing duplicates (spec 4.12, 4.13). Every one
//! leaves an audit row.

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{Value, json};

use crate::clock::iso;
use crate::context::Context;
use crate::error::{self, ApiError};
use crate::keys;
use crate::service::accounts::onboarding::{self, AccessRequest, RequestStatus};
use crate::service::caller::account::{self as accounts, AccountStatus};
use crate::service::{accounts::allowlist, caller::Call};
use crate::store::{Cond, Query, StoreError, StoreExt, StoreResult, Update, Write, item};
use crate::validate::{Fields, NoInput};
use crate::values::List;
use crate::values::{DomainName, EmailAddress, RequestId};

pub const MAX_DELETE_IDS: usize = 200;

// ----------------------------------------------------------------- allowlist

crate::input! {
    /// One allowlisted domain, by name.
    pub struct DomainInput {
        /// A hostname such as example.com.
        pub domain: DomainName = (error::ALLOWLIST_DOMAIN_REQUIRED, error::DOMAIN_INVALID),
    }
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Allowlist {
    pub ok: bool,
    pub domains: Vec<String>,
}

pub async fn list_allowlist(call: &Call<'_>, _: NoInput) -> Result<Allowlist, ApiError> {
    let items = call.ctx.store.all(Query::partition(keys::ALLOWLIST).limit(500)).await?;
    let domains = items
        .iter()
        .filter_map(|i| i.get("domain").and_then(Value::as_str).map(String::from))
        .collect();
    Ok(Allowlist { ok: true, domains })
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct AllowlistAdded {
    pub ok: bool,
    pub domain: String,
    /// False when the domain was already on the list.
    pub added: bool,
}

pub async fn add_allowlist(call: &Call<'_>, input: DomainInput) -> Result<AllowlistAdded, ApiError> {
    let (ctx, by) = (call.ctx, call.operator()?);
    let domain = input.domain.into_string();
    let row = json!({ "domain": domain, "addedBy": by.email, "addedAt": iso(ctx.clock.now()) });
    let added = ctx.store.put_new(item(&keys::allowlisted(&domain), &row)).await?;
    if added {
        call.touched(json!({ "domain": domain }));
    }
    Ok(AllowlistAdded {
        ok: true,
        domain,
        added,
    })
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct AllowlistRemoved {
    pub ok: bool,
    pub domain: String,
    /// False when the domain was not on the list.
    pub removed: bool,
}

pub async fn remove_allowlist(call: &Call<'_>, input: DomainInput) -> Result<AllowlistRemoved, ApiError> {
    let ctx = call.ctx;
    let domain = input.domain.into_string();
    let removed = ctx.store.delete(&keys::allowlisted(&domain), None).await?.is_some();
    if removed {
        call.touched(json!({ "domain": domain }));
    }
    Ok(AllowlistRemoved {
        ok: true,
        domain,
        removed,
    })
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct AllowlistCheck {
    pub ok: bool,
    pub domain: String,
    pub allowlisted: bool,
}

pub async fn check_allowlist(call: &Call<'_>, input: DomainInput) -> Result<AllowlistCheck, ApiError> {
    Ok(AllowlistCheck {
        ok: true,
        allowlisted: allowlist::contains(call.ctx, &input.domain).await?,
        domain: input.domain.into_string(),
    })
}

// ------------------------------------------------------------------ decisions

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    Approve,
    Deny,
}

impl crate::values::Value for Decision {
    fn parse(text: &str) -> Option<Decision> {
        match text.trim() {
            "approve" => Some(Decision::Approve),
            "deny" => Some(Decision::Deny),
            _ => None,
        }
    }
}

crate::input! {
    pub struct DecisionInput {
        /// The access request, `ar_` and 24 hex characters.
        pub id: RequestId = (error::ID_REQUIRED, error::DECISION_ID_INVALID),
        pub decision: Decision = (error::DECISION_INVALID, error::DECISION_INVALID),
    }
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct DecisionOutput {
    pub ok: bool,
    pub id: String,
    pub decision: Decision,
    /// The account's status now: ready or unavailable.
    pub status: &'static str,
}

/// Approves or denies a verified access request's account. A denial also
/// revokes the account's key in the same transaction.
pub async fn request_decision(call: &Call<'_>, input: DecisionInput) -> Result<DecisionOutput, ApiError> {
    let ctx = call.ctx;
    let id = input.id.into_string();
    let req = onboarding::load(ctx, &id).await?.ok_or(error::NOT_FOUND)?;
    let (RequestStatus::Ready | RequestStatus::SettingUp | RequestStatus::Unavailable, Some(uid)) =
        (req.status, &req.uid)
    else {
        return Err(error::NOT_READY_FOR_DECISION.into());
    };
    let approve = input.decision == Decision::Approve;
    let (account_status, request_status) = if approve {
        (AccountStatus::Ready, RequestStatus::Ready)
    } else {
        (AccountStatus::Unavailable, RequestStatus::Unavailable)
    };
    let account = accounts::get(ctx, uid).await?.ok_or(error::NOT_FOUND)?;
    let now = iso(ctx.clock.now());
    let mut writes = if approve {
        Vec::new()
    } else {
        accounts::revoke_key_writes(&account)
    };
    let status_update = Update::new()
        .set("status", account_status)
        .set("decidedAt", now.clone());
    match writes
        .iter_mut()
        .find(|w| matches!(w, Write::Update { key, .. } if *key == keys::account(uid)))
    {
        // The revocation already updates the account: one write per item.
        Some(Write::Update { update, .. }) => {
            update.set.extend(status_update.set);
        }
        _ => writes.push(Write::Update {
            key: keys::account(uid),
            update: status_update,
            cond: Some(Cond::Exists),
        }),
    }
    writes.push(Write::Update {
        key: keys::request(&id),
        update: Update::new().set("status", request_status).set("decidedAt", now),
        cond: Some(Cond::Exists),
    });
    match ctx.store.transact(writes).await {
        Ok(()) => {}
        Err(StoreError::ConditionFailed) => return Err(error::NOT_FOUND.into()),
        Err(e) => return Err(e.into()),
    }
    let action = if approve { "request.approve" } else { "request.deny" };
    call.touched(json!({ "action": action, "id": id, "uid": uid }));
    Ok(DecisionOutput {
        ok: true,
        id,
        decision: input.decision,
        status: account_status.as_str(),
    })
}

// ------------------------------------------------------------ request deletes

crate::input! {
    /// `id` and/or `ids`: at most 200 access requests.
    pub struct DeleteInput {
        pub id: Option<String> = error::ID_TYPE,
        pub ids: Option<List<String, MAX_DELETE_IDS>> = (error::DELETE_IDS_TYPE, error::DELETE_IDS_TOO_MANY),
    }
    check DeleteInput::some;
}

impl DeleteInput {
    fn all(&self) -> Vec<String> {
        let mut ids: Vec<String> = self
            .id
            .iter()
            .chain(self.ids.iter().flat_map(|l| &l.0))
            .cloned()
            .collect();
        ids.sort();
        ids.dedup();
        ids
    }
}

impl DeleteInput {
    fn some(self, _: &Fields) -> Result<Self, ApiError> {
        match self.all().len() {
            0 => Err(error::DELETE_IDS_REQUIRED.into()),
            n if n > MAX_DELETE_IDS => Err(error::DELETE_IDS_TOO_MANY.into()),
            _ => Ok(self),
        }
    }
}

#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeleteOutput {
    pub ok: bool,
    pub deleted: Vec<String>,
    pub not_found: Vec<String>,
}

/// Deletes exactly the named access requests; accounts and keys stay.
pub async fn request_delete(call: &Call<'_>, input: DeleteInput) -> Result<DeleteOutput, ApiError> {
    let ctx = call.ctx;
    let mut deleted = Vec::new();
    let mut not_found = Vec::new();
    for id in input.all() {
        let found = match onboarding::valid_request_id(&id) {
            true => onboarding::load(ctx, &id).await?,
            false => None,
        };
        match found {
            Some(req) => {
                delete_request(ctx, &req).await?;
                crate::ratelimit::clear(ctx.store.as_ref(), &onboarding::request_email_bucket(&req.email)).await?;
                call.touched(json!({ "id": id, "email": req.email, "found": true }));
                deleted.push(id);
            }
            None => {
                // An id that cannot be a request id is not written anywhere.
                let logged = if onboarding::valid_request_id(&id) {
                    id.as_str()
                } else {
                    "(invalid)"
                };
                call.touched(json!({ "id": logged, "found": false }));
                not_found.push(id);
            }
        }
    }
    Ok(DeleteOutput {
        ok: true,
        deleted,
        not_found,
    })
}

async fn delete_request(ctx: &Context, req: &AccessRequest) -> StoreResult<()> {
    let mut writes = vec![Write::Delete {
        key: keys::request(&req.id),
        cond: None,
    }];
    writes.extend(
        onboarding::index_keys(req)
            .into_iter()
            .map(|key| Write::Delete { key, cond: None }),
    );
    ctx.store.transact(writes).await
}

// ----------------------------------------------------------------- duplicates

crate::input! {
    /// Query `email` and/or `domain`.
    #[schemars(extend("anyOf" = [
        {"required": ["email"], "properties": {"email": {"type": "string"}}},
        {"required": ["domain"], "properties": {"domain": {"type": "string"}}}
    ]))]
    pub struct DuplicatesInput {
        pub email: Option<EmailAddress> = error::EMAIL_INVALID,
        pub domain: Option<DomainName> = error::DOMAIN_INVALID,
    }
    check DuplicatesInput::some;
}

impl DuplicatesInput {
    fn some(self, _: &Fields) -> Result<Self, ApiError> {
        if self.email.is_none() && self.domain.is_none() {
            return Err(error::DUPLICATES_FILTER_REQUIRED.into());
        }
        Ok(self)
    }
}

#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DuplicateRequest {
    pub id: String,
    pub email: String,
    pub domain: String,
    pub agent_name: String,
    pub status: RequestStatus,
    pub created_at: String,
    pub uid: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct DuplicatesOutput {
    pub ok: bool,
    pub count: usize,
    /// Newest first.
    pub requests: Vec<DuplicateRequest>,
}

/// Access requests that share an email and/or an organization domain.
pub async fn request_duplicates(call: &Call<'_>, input: DuplicatesInput) -> Result<DuplicatesOutput, ApiError> {
    let ctx = call.ctx;
    let mut partitions = Vec::new();
    if let Some(e) = &input.email {
        partitions.push(keys::requests_by_email(e));
    }
    if let Some(d) = &input.domain {
        partitions.push(keys::requests_by_domain(d));
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
        if let Some(req) = onboarding::load(ctx, &id).await? {
            requests.push(DuplicateRequest {
                id: req.id,
                email: req.email,
                domain: req.domain,
                agent_name: req.agent_name,
                status: req.status,
                created_at: req.created_at,
                uid: req.uid,
            });
        }
    }
    requests.sort_by(|a, b| b.created_at.cmp(&a.created_at));
    Ok(DuplicatesOutput {
        ok: true,
        count: requests.len(),
        requests,
    })
}
