//! The domain routes: add (with a new DKIM key and a DNS check at once),
//! verify and the DNS instructions; an add may release another account's
//! lapsed claim on the name.

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{Value, json};

use super::check::check_and_store;
use super::instructions::{DomainView, Instructions, instructions, view};
use super::record::{Checks, Domain, DomainStatus, claimant, get, new_dkim_key, owned};
use super::service_domain::refuse_product_domain;
use crate::clock::iso;
use crate::context::Context;
use crate::error::{self, ApiError};
use crate::keys;
use crate::messages;
use crate::service::caller::Call;
use crate::service::caller::account::Account;
use crate::store::{Cond, StoreError, Update, Write, item};
use crate::values::DomainName;

crate::input! {
    /// POST /addDomain.
    pub struct AddDomainInput {
        /// The hostname you own, such as example.com.
        pub domain: DomainName = (error::DOMAIN_REQUIRED, error::DOMAIN_INVALID),
    }
}

crate::input! {
    /// A domain named by `domainId` (`domain` is read when it is absent).
    pub struct DomainIdInput {
        /// The domain's hostname.
        pub domain_id or "domain": DomainName = (error::DOMAIN_ID_REQUIRED, error::DOMAIN_INVALID),
    }
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct AddDomainOutput {
    pub ok: bool,
    /// False when the account already held this name (nothing changed).
    pub created: bool,
    pub verified: bool,
    pub domain: DomainView,
}

/// Adds the account's one domain with a new DKIM key and checks its DNS at once.
pub async fn add_domain(call: &Call<'_>, input: AddDomainInput) -> Result<AddDomainOutput, ApiError> {
    let ctx = call.ctx;
    let account = call.account().await?;
    let name = input.domain.into_string();
    refuse_product_domain(ctx, &name)?;
    if let Some(existing) = existing_add(ctx, &account, &name).await? {
        return Ok(existing);
    }
    let (dkim_public, secret_name) = new_dkim_key(ctx, &name).await.map_err(ApiError::internal)?;
    let domain = Domain::added(
        &name,
        &account.uid,
        dkim_public,
        secret_name.clone(),
        iso(ctx.clock.now()),
    );
    let writes = add_writes(&domain);
    match ctx.store.transact(writes).await {
        Ok(()) => {}
        Err(StoreError::ConditionFailed) => {
            // Lost a race: the key we made is not used.
            let _ = ctx.secrets.delete(&secret_name).await;
            return match existing_add(ctx, &account, &name).await? {
                Some(existing) => Ok(existing),
                None => Err(error::DOMAIN_CHANGED.into()),
            };
        }
        Err(e) => return Err(e.into()),
    }
    let checked = check_and_store(ctx, &domain).await?.unwrap_or(domain);
    Ok(AddDomainOutput {
        ok: true,
        created: true,
        verified: checked.status == DomainStatus::Verified,
        domain: view(ctx, &checked),
    })
}

/// The account's one-domain slot and the claim on the name, both new, with
/// the domain and its entry in the registry the export walks.
fn add_writes(domain: &Domain) -> Vec<Write> {
    let (uid, name) = (&domain.uid, &domain.name);
    vec![
        Write::Put {
            item: item(&keys::domain_slot(uid), &json!({ "name": name })),
            cond: Some(Cond::NotExists),
        },
        Write::Put {
            item: item(&keys::claim(name), &json!({ "uid": uid })),
            cond: Some(Cond::NotExists),
        },
        Write::Put {
            item: item(&keys::domain(uid, name), domain),
            cond: None,
        },
        Write::Put {
            item: item(&keys::registered(name), &json!({ "uid": uid })),
            cond: None,
        },
    ]
}

/// What an add answers when the account or the name is already taken: 200
/// `created: false` for the account's own domain, 409 otherwise; `None` when free.
async fn existing_add(ctx: &Context, account: &Account, name: &str) -> Result<Option<AddDomainOutput>, ApiError> {
    if let Some(slot) = ctx.store.get(&keys::domain_slot(&account.uid)).await? {
        let held = slot.get("name").and_then(Value::as_str).unwrap_or_default();
        if held == name
            && let Some(domain) = get(ctx, &account.uid, name).await?
        {
            return Ok(Some(AddDomainOutput {
                ok: true,
                created: false,
                verified: domain.status == DomainStatus::Verified,
                domain: view(ctx, &domain),
            }));
        }
        return Err(error::ONE_DOMAIN_PER_ACCOUNT.into());
    }
    match claimant(ctx, name).await? {
        Some(holder) if release_lapsed_claim(ctx, &holder, name).await? => Ok(None),
        Some(_) => Err(error::DOMAIN_CLAIMED.into()),
        None => Ok(None),
    }
}

/// How long a domain may hold its name without ever being verified.
pub const UNVERIFIED_CLAIM_DAYS: i64 = 7;

/// Releases another account's claim on a name it added more than
/// [`UNVERIFIED_CLAIM_DAYS`] ago and never verified, so a squatter cannot
/// keep a name from its owner: that domain is removed (it has no mailboxes:
/// they need a verified domain). Whether the claim is gone now.
async fn release_lapsed_claim(ctx: &Context, holder: &str, name: &str) -> Result<bool, ApiError> {
    let Some(domain) = get(ctx, holder, name).await? else {
        return Ok(false);
    };
    let added = chrono::DateTime::parse_from_rfc3339(&domain.created_at).map(|t| t.timestamp());
    let lapsed = domain.verified_at.is_none()
        && domain.status != DomainStatus::Verified
        && domain.active_mailboxes == 0
        && added.is_ok_and(|t| ctx.clock.epoch() - t > UNVERIFIED_CLAIM_DAYS * 86_400);
    if !lapsed {
        return Ok(false);
    }
    let writes = vec![
        Write::Delete {
            key: keys::claim(name),
            cond: Some(Cond::eq("uid", holder)),
        },
        Write::Update {
            key: keys::domain(holder, name),
            update: Update::new()
                .set("status", DomainStatus::Removed)
                .set("removedAt", iso(ctx.clock.now()))
                .set("failureReason", messages::CLAIM_LAPSED.as_str()),
            cond: Some(Cond::And(vec![
                Cond::missing("verifiedAt"),
                Cond::eq("activeMailboxes", 0),
            ])),
        },
        Write::Delete {
            key: keys::domain_slot(holder),
            cond: Some(Cond::eq("name", name)),
        },
        Write::Delete {
            key: keys::registered(name),
            cond: None,
        },
    ];
    match ctx.store.transact(writes).await {
        Ok(()) => {
            let _ = ctx.secrets.delete(&domain.dkim_secret).await;
            tracing::info!(domain = %name, "an unverified claim lapsed and was released");
            Ok(true)
        }
        Err(StoreError::ConditionFailed) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DomainState {
    pub id: String,
    pub status: DomainStatus,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure_reason: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct VerifyDomainOutput {
    pub ok: bool,
    pub created: bool,
    pub verified: bool,
    /// A lookup did not finish: nothing changed; try again shortly.
    pub transient: bool,
    pub domain: DomainState,
    pub checks: Option<Checks>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure_reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<&'static str>,
}

/// Checks the domain's MX, SPF and DKIM records again.
pub async fn verify_domain(call: &Call<'_>, input: DomainIdInput) -> Result<VerifyDomainOutput, ApiError> {
    let ctx = call.ctx;
    let account = call.account().await?;
    let domain = owned(ctx, &account, &input.domain_id).await?;
    Ok(match check_and_store(ctx, &domain).await? {
        None => VerifyDomainOutput {
            ok: true,
            created: false,
            verified: domain.status == DomainStatus::Verified,
            transient: true,
            domain: DomainState {
                id: domain.name,
                status: domain.status,
                failure_reason: None,
            },
            checks: domain.checks,
            failure_reason: None,
            message: Some("A DNS lookup did not finish; nothing changed. Try again shortly."),
        },
        Some(checked) => VerifyDomainOutput {
            ok: true,
            created: false,
            verified: checked.status == DomainStatus::Verified,
            transient: false,
            domain: DomainState {
                id: checked.name,
                status: checked.status,
                failure_reason: checked.failure_reason.clone(),
            },
            checks: checked.checks,
            failure_reason: checked.failure_reason,
            message: None,
        },
    })
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct DnsInstructionsOutput {
    pub ok: bool,
    pub domain: DomainView,
    pub status: DomainStatus,
    pub instructions: Instructions,
}

/// The records to publish for a domain of the caller's account.
pub async fn dns_instructions(call: &Call<'_>, input: DomainIdInput) -> Result<DnsInstructionsOutput, ApiError> {
    let ctx = call.ctx;
    let account = call.account().await?;
    let domain = owned(ctx, &account, &input.domain_id).await?;
    Ok(DnsInstructionsOutput {
        ok: true,
        status: domain.status,
        instructions: instructions(ctx, &domain),
        domain: view(ctx, &domain),
    })
}
