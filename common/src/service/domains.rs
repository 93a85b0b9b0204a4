//! Domains (spec 2.8, 3.1, 4.9, 4.10): add with a DKIM key and an immediate DNS
//! check, verify, instructions, list, and operator removal.
//!
//! Items (see `keys`): the domain record, the account's one-domain slot, the
//! claim on a hostname, and the registry of live domains the export walks.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::Call;
use super::accounts::{Account, OPS_UID};
use super::dkim;
use crate::clock::iso;
use crate::context::Context;
use crate::dns::Lookup;
use crate::error::{self, ApiError};
use crate::keys;
use crate::messages;
use crate::store::{Cond, Query, StoreError, StoreExt, StoreResult, Update, Write, item, record};
use crate::values::DomainName;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum DomainStatus {
    Failed,
    Verified,
    Removed,
}

/// Which DNS checks passed (DMARC is reported, never required).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Checks {
    pub mx: bool,
    pub spf: bool,
    pub dkim: bool,
    pub dmarc: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Domain {
    pub name: String,
    pub uid: String,
    pub status: DomainStatus,
    #[serde(default)]
    pub failure_reason: Option<String>,
    #[serde(default)]
    pub checks: Option<Checks>,
    pub dkim_public: String,
    /// Name of the secret holding the DKIM private key.
    pub dkim_secret: String,
    /// Active mailboxes: kept in step by the mailbox transactions, so "not the
    /// last active mailbox" is a condition, not a read.
    #[serde(default)]
    pub active_mailboxes: i64,
    pub created_at: String,
    #[serde(default)]
    pub checked_at: Option<String>,
    #[serde(default)]
    pub verified_at: Option<String>,
    #[serde(default)]
    pub protected: bool,
    /// When the daily look last checked its MX (`service::recheck`).
    #[serde(default)]
    pub mx_checked_at: Option<String>,
    /// Since when its MX has not named the mail host, while that lasts.
    #[serde(default)]
    pub mx_missing_since: Option<String>,
    /// When it left the mail host's export for an MX gone three days; a
    /// verify that passes brings it back.
    #[serde(default)]
    pub routing_dropped_at: Option<String>,
}

impl Domain {
    /// Whether the mail host receives for it: proved once, and not dropped
    /// since for an MX that went elsewhere (or verified again).
    pub fn routed(&self) -> bool {
        self.status == DomainStatus::Verified || (self.verified_at.is_some() && self.routing_dropped_at.is_none())
    }
}

pub fn dkim_secret_name(name: &str) -> String {
    format!("dkim-{name}-{:08x}", rand::random::<u32>())
}

/// The account that holds a hostname, if any.
pub async fn claimant(ctx: &Context, name: &str) -> StoreResult<Option<String>> {
    let found = ctx.store.get(&keys::claim(name)).await?;
    Ok(found.and_then(|i| i.get("uid").and_then(Value::as_str).map(String::from)))
}

pub async fn get(ctx: &Context, uid: &str, name: &str) -> StoreResult<Option<Domain>> {
    let found: Option<Domain> = ctx.store.read(&keys::domain(uid, name)).await?;
    Ok(found.filter(|d| d.status != DomainStatus::Removed))
}

pub async fn of_account(ctx: &Context, uid: &str) -> StoreResult<Vec<Domain>> {
    let page = ctx
        .store
        .query(
            &Query::partition(keys::account_partition(uid))
                .prefix(keys::DOMAIN_PREFIX)
                .limit(100),
        )
        .await?;
    let all: Vec<Domain> = page.items.into_iter().map(record).collect::<StoreResult<_>>()?;
    Ok(all.into_iter().filter(|d| d.status != DomainStatus::Removed).collect())
}

/// A domain the caller's account owns, or 404.
pub async fn owned(ctx: &Context, account: &Account, name: &str) -> Result<Domain, ApiError> {
    Ok(get(ctx, &account.uid, name).await?.ok_or(error::NOT_FOUND)?)
}

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

/// The service domain and its subdomains are not customers' to add.
fn refuse_product_domain(ctx: &Context, name: &str) -> Result<(), ApiError> {
    let service = ctx.config.service_domain.as_str();
    if name == service || name.ends_with(&format!(".{service}")) {
        return Err(error::PRODUCT_DOMAIN.into());
    }
    Ok(())
}

// ------------------------------------------------------------------ instructions

/// One DNS record to publish.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct DnsRecord {
    /// MX or TXT.
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub host: String,
    /// Copy this value exactly.
    pub value: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub priority: Option<u16>,
    /// mx, spf, dkim or dmarc.
    pub purpose: &'static str,
    /// DMARC is recommended, not required.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub optional: Option<bool>,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Instructions {
    pub records: Vec<DnsRecord>,
}

pub fn instructions(ctx: &Context, domain: &Domain) -> Instructions {
    let name = &domain.name;
    let record = |kind, host: String, value: String, purpose| DnsRecord {
        kind,
        host,
        value,
        priority: None,
        purpose,
        optional: None,
    };
    Instructions {
        records: vec![
            DnsRecord {
                priority: Some(10),
                ..record("MX", name.clone(), ctx.config.mail_host.clone(), "mx")
            },
            record("TXT", name.clone(), spf_value(ctx), "spf"),
            record(
                "TXT",
                format!("{}._domainkey.{name}", dkim::SELECTOR),
                dkim::record_value(&domain.dkim_public),
                "dkim",
            ),
            DnsRecord {
                optional: Some(true),
                ..record(
                    "TXT",
                    format!("_dmarc.{name}"),
                    format!("v=DMARC1; p=none; rua=mailto:dmarc@{}", ctx.config.service_domain),
                    "dmarc",
                )
            },
        ],
    }
}

fn spf_value(ctx: &Context) -> String {
    format!("v=spf1 a:{} ~all", ctx.config.mail_host)
}

/// A domain as the domain routes show it (spec 2.8).
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DomainView {
    /// The hostname; `id` and `name` are the same.
    pub id: String,
    pub name: String,
    pub status: DomainStatus,
    pub dns_instructions: Instructions,
    pub created_at: String,
    pub verified_at: Option<String>,
    pub checked_at: Option<String>,
    /// Why verification failed, naming the row that missed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure_reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub checks: Option<Checks>,
}

pub fn view(ctx: &Context, domain: &Domain) -> DomainView {
    DomainView {
        id: domain.name.clone(),
        name: domain.name.clone(),
        status: domain.status,
        dns_instructions: instructions(ctx, domain),
        created_at: domain.created_at.clone(),
        verified_at: domain.verified_at.clone(),
        checked_at: domain.checked_at.clone(),
        failure_reason: domain.failure_reason.clone(),
        checks: domain.checks,
    }
}

// ---------------------------------------------------------------------- checks

enum Outcome {
    /// A lookup did not finish: nothing is known, nothing changes.
    Transient,
    Checked {
        checks: Checks,
        reasons: Vec<String>,
    },
}

/// Whether the preferred MX (every record of the lowest preference) is the
/// mail host: `Ok`, or the reason it is not; `None` when the lookup did not
/// finish.
pub(crate) fn mx_names_mail_host(
    name: &str,
    mail_host: &str,
    mx: Lookup<Vec<(u16, String)>>,
) -> Option<Result<(), String>> {
    let publish = || messages::MX_MISSING.with_each(&[&name, &mail_host]);
    Some(match mx {
        Lookup::Transient(_) => return None,
        Lookup::Missing => Err(publish()),
        Lookup::Found(records) => {
            let lowest = records.iter().map(|(pref, _)| *pref).min().unwrap_or(0);
            let preferred: Vec<&String> = records.iter().filter(|(p, _)| *p == lowest).map(|(_, h)| h).collect();
            match preferred.iter().find(|h| h.as_str() != mail_host) {
                None if !preferred.is_empty() => Ok(()),
                None => Err(publish()),
                Some(other) => Err(messages::MX_PREVIOUS_HOST.with_each(&[&name, other, &mail_host])),
            }
        }
    })
}

async fn check_dns(ctx: &Context, domain: &Domain) -> Outcome {
    let name = &domain.name;
    let mail_host = ctx.config.mail_host.trim_end_matches('.').to_ascii_lowercase();
    let dkim_host = format!("{}._domainkey.{name}", dkim::SELECTOR);
    let dmarc_host = format!("_dmarc.{name}");
    let (mx, txt, dkim_txt, dmarc_txt) = tokio::join!(
        ctx.dns.mx(name),
        ctx.dns.txt(name),
        ctx.dns.txt(&dkim_host),
        ctx.dns.txt(&dmarc_host)
    );
    let mut reasons = Vec::new();
    let mut checks = Checks::default();

    match mx_names_mail_host(name, &mail_host, mx) {
        None => return Outcome::Transient,
        Some(Ok(())) => checks.mx = true,
        Some(Err(reason)) => reasons.push(reason),
    }
    match txt {
        Lookup::Transient(_) => return Outcome::Transient,
        Lookup::Missing => reasons.push(messages::SPF_MISSING.with_each(&[name, &spf_value(ctx)])),
        Lookup::Found(records) => {
            let spf: Vec<&String> = records
                .iter()
                .filter(|r| r.trim().to_ascii_lowercase().starts_with("v=spf1"))
                .collect();
            match spf.as_slice() {
                [] => reasons.push(messages::SPF_MISSING.with_each(&[name, &spf_value(ctx)])),
                [one] if spf_allows(one, &mail_host, &ctx.config.service_domain) => checks.spf = true,
                [_] => reasons.push(messages::SPF_NOT_ALLOWING.with_each(&[name, &mail_host])),
                _ => reasons.push(messages::SPF_MANY.with_each(&[name, &spf.len()])),
            }
        }
    }
    match dkim_txt {
        Lookup::Transient(_) => return Outcome::Transient,
        Lookup::Missing => reasons.push(messages::DKIM_MISSING.with_each(&[&dkim_host])),
        Lookup::Found(records) => {
            if records
                .iter()
                .any(|r| dkim::published_key(r).as_deref() == Some(domain.dkim_public.as_str()))
            {
                checks.dkim = true;
            } else {
                reasons.push(messages::DKIM_MISMATCH.with_each(&[&dkim_host]));
            }
        }
    }
    // DMARC is optional: it is reported but never fails the domain.
    if let Lookup::Found(records) = dmarc_txt {
        checks.dmarc = records
            .iter()
            .any(|r| r.trim().to_ascii_uppercase().starts_with("V=DMARC1"));
    }
    Outcome::Checked { checks, reasons }
}

fn spf_allows(record: &str, mail_host: &str, service_domain: &str) -> bool {
    record.split_whitespace().skip(1).any(|term| {
        let term = term.trim_start_matches('+').to_ascii_lowercase();
        term == format!("a:{mail_host}") || term == "mx" || term == format!("include:{service_domain}")
    })
}

/// Runs the checks and stores the result; `None` when a lookup did not finish.
async fn check_and_store(ctx: &Context, domain: &Domain) -> Result<Option<Domain>, ApiError> {
    let Outcome::Checked { checks, reasons } = check_dns(ctx, domain).await else {
        return Ok(None);
    };
    let now = iso(ctx.clock.now());
    let verified = checks.mx && checks.spf && checks.dkim;
    let mut update = Update::new()
        .set("checks", serde_json::to_value(checks).expect("checks serialize"))
        .set("checkedAt", now.clone())
        .set(
            "status",
            if verified {
                DomainStatus::Verified
            } else {
                DomainStatus::Failed
            },
        );
    update = if verified {
        // Verified again: routed again, whatever the daily look found before.
        let update = update
            .remove("failureReason")
            .remove("mxMissingSince")
            .remove("routingDroppedAt");
        if domain.verified_at.is_none() {
            update.set("verifiedAt", now)
        } else {
            update
        }
    } else {
        update.set("failureReason", reasons.join(" "))
    };
    let live = Cond::And(vec![Cond::Exists, Cond::ne("status", DomainStatus::Removed)]);
    match ctx
        .store
        .update(&keys::domain(&domain.uid, &domain.name), update, Some(live))
        .await
    {
        Ok(updated) => Ok(Some(record(updated)?)),
        Err(StoreError::ConditionFailed) => Err(error::NOT_FOUND.into()),
        Err(e) => Err(e.into()),
    }
}

// ----------------------------------------------------------------------- routes

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
    let key = dkim::generate().map_err(ApiError::internal)?;
    let secret_name = dkim_secret_name(&name);
    ctx.secrets
        .put(&secret_name, &key.private_pem)
        .await
        .map_err(ApiError::internal)?;
    let now = iso(ctx.clock.now());
    let domain = Domain {
        name: name.clone(),
        uid: account.uid.clone(),
        status: DomainStatus::Failed,
        failure_reason: Some("DNS not checked yet".into()),
        checks: None,
        dkim_public: key.public_b64,
        dkim_secret: secret_name.clone(),
        active_mailboxes: 0,
        created_at: now,
        checked_at: None,
        verified_at: None,
        protected: false,
        mx_checked_at: None,
        mx_missing_since: None,
        routing_dropped_at: None,
    };
    let writes = vec![
        Write::Put {
            item: item(&keys::domain_slot(&account.uid), &json!({ "name": name })),
            cond: Some(Cond::NotExists),
        },
        Write::Put {
            item: item(&keys::claim(&name), &json!({ "uid": account.uid })),
            cond: Some(Cond::NotExists),
        },
        Write::Put {
            item: item(&keys::domain(&account.uid, &name), &domain),
            cond: None,
        },
        Write::Put {
            item: item(&keys::registered(&name), &json!({ "uid": account.uid })),
            cond: None,
        },
    ];
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

/// The service domain exists from the start and belongs to the operators; it
/// is their account's one domain.
pub async fn ensure_service_domain(ctx: &Context) -> anyhow::Result<()> {
    let name = ctx.config.service_domain.as_str();
    if ctx.store.get(&keys::domain(OPS_UID, name)).await?.is_none() {
        let key = dkim::generate()?;
        let secret_name = dkim_secret_name(name);
        ctx.secrets.put(&secret_name, &key.private_pem).await?;
        let now = iso(ctx.clock.now());
        let domain = Domain {
            name: name.to_string(),
            uid: OPS_UID.into(),
            status: DomainStatus::Verified,
            failure_reason: None,
            checks: None,
            dkim_public: key.public_b64,
            dkim_secret: secret_name,
            active_mailboxes: 0,
            created_at: now.clone(),
            checked_at: None,
            verified_at: Some(now),
            protected: true,
            mx_checked_at: None,
            mx_missing_since: None,
            routing_dropped_at: None,
        };
        let writes = vec![
            Write::Put {
                item: item(&keys::domain(OPS_UID, name), &domain),
                cond: Some(Cond::NotExists),
            },
            Write::Put {
                item: item(&keys::claim(name), &json!({ "uid": OPS_UID })),
                cond: None,
            },
            Write::Put {
                item: item(&keys::registered(name), &json!({ "uid": OPS_UID })),
                cond: None,
            },
        ];
        match ctx.store.transact(writes).await {
            Ok(()) | Err(StoreError::ConditionFailed) => {}
            Err(e) => return Err(e.into()),
        }
    }
    // The operators' one-domain slot: an operator acting for their account
    // cannot add a second domain (spec 1.6).
    ctx.store
        .put(item(&keys::domain_slot(OPS_UID), &json!({ "name": name })), None)
        .await?;
    Ok(())
}
