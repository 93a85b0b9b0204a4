//! Domains (spec 2.8, 3.1, 4.9, 4.10): add with a DKIM key and an immediate DNS
//! check, verify, instructions, list, and operator removal.
//!
//! Items: `ACCT#<uid>/DOMAIN#<name>` the domain record; `ACCT#<uid>/SLOT#domain`
//! {name} the account's one domain; `CLAIM#<name>/C` {uid} the account holding a
//! hostname; `DOMAINS/<name>` {uid} every live domain (the export walks it).

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::accounts::{Account, OPS_UID};
use super::dkim;
use crate::clock::iso;
use crate::context::Context;
use crate::dns::Lookup;
use crate::error::ApiError;
use crate::store::{Cond, Key, Query, StoreError, StoreResult, Update, Write, item, record};
use crate::validate;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum DomainStatus {
    Failed,
    Verified,
    Removed,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
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
}

pub fn domain_key(uid: &str, name: &str) -> Key {
    Key::new(format!("ACCT#{uid}"), format!("DOMAIN#{name}"))
}

fn slot_key(uid: &str) -> Key {
    Key::new(format!("ACCT#{uid}"), "SLOT#domain")
}

fn claim_key(name: &str) -> Key {
    Key::new(format!("CLAIM#{name}"), "C")
}

pub const REGISTRY_PK: &str = "DOMAINS";

fn registry_key(name: &str) -> Key {
    Key::new(REGISTRY_PK, name)
}

pub fn dkim_secret_name(name: &str) -> String {
    format!("dkim-{name}-{:08x}", rand::random::<u32>())
}

/// The account that holds a hostname, if any.
pub async fn claimant(ctx: &Context, name: &str) -> StoreResult<Option<String>> {
    let found = ctx.store.get(&claim_key(name)).await?;
    Ok(found.and_then(|i| i.get("uid").and_then(Value::as_str).map(String::from)))
}

pub async fn get(ctx: &Context, uid: &str, name: &str) -> StoreResult<Option<Domain>> {
    let found: Option<Domain> = ctx.store.get(&domain_key(uid, name)).await?.map(record).transpose()?;
    Ok(found.filter(|d| d.status != DomainStatus::Removed))
}

pub async fn of_account(ctx: &Context, uid: &str) -> StoreResult<Vec<Domain>> {
    let page = ctx
        .store
        .query(&Query::partition(format!("ACCT#{uid}")).prefix("DOMAIN#").limit(100))
        .await?;
    let all: Vec<Domain> = page.items.into_iter().map(record).collect::<StoreResult<_>>()?;
    Ok(all.into_iter().filter(|d| d.status != DomainStatus::Removed).collect())
}

/// A domain the caller's account owns, or 404.
pub async fn owned(ctx: &Context, account: &Account, name: &str) -> Result<Domain, ApiError> {
    get(ctx, &account.uid, name).await?.ok_or_else(ApiError::not_found)
}

/// Normalizes a hostname from a request, with the spec's 400 sentences.
pub fn parse_name(ctx: &Context, raw: Option<String>) -> Result<String, ApiError> {
    let raw = raw.ok_or_else(|| ApiError::bad_request("Enter a domain you own, such as example.com"))?;
    let name = validate::hostname(&raw).ok_or_else(|| ApiError::bad_request("That domain name is not valid"))?;
    let service = ctx.config.service_domain.to_ascii_lowercase();
    if name == service || name.ends_with(&format!(".{service}")) {
        return Err(ApiError::bad_request("product domain cannot be added"));
    }
    Ok(name)
}

// ------------------------------------------------------------------ instructions

pub fn instructions(ctx: &Context, domain: &Domain) -> Value {
    let name = &domain.name;
    json!({
        "records": [
            { "type": "MX", "host": name, "value": ctx.config.mail_host, "priority": 10, "purpose": "mx" },
            { "type": "TXT", "host": name, "value": spf_value(ctx), "purpose": "spf" },
            { "type": "TXT", "host": format!("{}._domainkey.{name}", dkim::SELECTOR),
              "value": dkim::record_value(&domain.dkim_public), "purpose": "dkim" },
            { "type": "TXT", "host": format!("_dmarc.{name}"),
              "value": format!("v=DMARC1; p=none; rua=mailto:dmarc@{}", ctx.config.service_domain),
              "purpose": "dmarc", "optional": true },
        ]
    })
}

fn spf_value(ctx: &Context) -> String {
    format!("v=spf1 a:{} ~all", ctx.config.mail_host)
}

pub fn view(ctx: &Context, domain: &Domain) -> Value {
    let mut out = json!({
        "id": domain.name,
        "name": domain.name,
        "status": domain.status,
        "dnsInstructions": instructions(ctx, domain),
        "createdAt": domain.created_at,
        "verifiedAt": domain.verified_at,
        "checkedAt": domain.checked_at,
    });
    if let Some(reason) = &domain.failure_reason {
        out["failureReason"] = json!(reason);
    }
    if let Some(checks) = domain.checks {
        out["checks"] = json!(checks);
    }
    out
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

    match mx {
        Lookup::Transient(_) => return Outcome::Transient,
        Lookup::Missing => reasons.push(format!(
            "Publish an MX record on {name} pointing at {mail_host} (priority 10)."
        )),
        Lookup::Found(records) => {
            let lowest = records.iter().map(|(pref, _)| *pref).min().unwrap_or(0);
            let preferred: Vec<&String> = records.iter().filter(|(p, _)| *p == lowest).map(|(_, h)| h).collect();
            match preferred.iter().find(|h| **h != &mail_host) {
                None if !preferred.is_empty() => checks.mx = true,
                None => reasons.push(format!("Publish an MX record on {name} pointing at {mail_host} (priority 10).")),
                Some(other) => reasons.push(format!(
                    "The preferred MX of {name} is still {other}, a previous email-routing host. Point it at {mail_host}."
                )),
            }
        }
    }
    match txt {
        Lookup::Transient(_) => return Outcome::Transient,
        Lookup::Missing => reasons.push(format!("Publish the SPF TXT record on {name}: {}", spf_value(ctx))),
        Lookup::Found(records) => {
            let spf: Vec<&String> = records
                .iter()
                .filter(|r| r.trim().to_ascii_lowercase().starts_with("v=spf1"))
                .collect();
            match spf.as_slice() {
                [] => reasons.push(format!("Publish the SPF TXT record on {name}: {}", spf_value(ctx))),
                [one] if spf_allows(one, &mail_host, &ctx.config.service_domain) => checks.spf = true,
                [_] => reasons.push(format!("The SPF record on {name} does not allow a:{mail_host}.")),
                _ => reasons.push(format!("Publish one SPF TXT record on {name}; it has {}.", spf.len())),
            }
        }
    }
    match dkim_txt {
        Lookup::Transient(_) => return Outcome::Transient,
        Lookup::Missing => reasons.push(format!("Publish the DKIM TXT record at {dkim_host}.")),
        Lookup::Found(records) => {
            if records
                .iter()
                .any(|r| dkim::published_key(r).as_deref() == Some(domain.dkim_public.as_str()))
            {
                checks.dkim = true;
            } else {
                reasons.push(format!(
                    "The DKIM record at {dkim_host} does not match; copy the value from the instructions."
                ));
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
        .set("status", if verified { "verified" } else { "failed" });
    update = if verified {
        let update = update.remove("failureReason");
        if domain.verified_at.is_none() {
            update.set("verifiedAt", now)
        } else {
            update
        }
    } else {
        update.set("failureReason", reasons.join(" "))
    };
    let live = Cond::And(vec![Cond::Exists, Cond::Ne("status".into(), json!("removed"))]);
    match ctx
        .store
        .update(&domain_key(&domain.uid, &domain.name), update, Some(live))
        .await
    {
        Ok(updated) => Ok(Some(record(updated)?)),
        Err(StoreError::ConditionFailed) => Err(ApiError::not_found()),
        Err(e) => Err(e.into()),
    }
}

// ----------------------------------------------------------------------- routes

pub async fn add_domain(ctx: &Context, account: &Account, raw: Option<String>) -> Result<Value, ApiError> {
    let name = parse_name(ctx, raw)?;
    if let Some(existing) = existing_add(ctx, account, &name).await? {
        return Ok(existing);
    }
    let key = dkim::generate().map_err(|e| ApiError::internal(e.to_string()))?;
    let secret_name = dkim_secret_name(&name);
    ctx.secrets
        .put(&secret_name, &key.private_pem)
        .await
        .map_err(|e| ApiError::internal(e.to_string()))?;
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
    };
    let writes = vec![
        Write::Put {
            item: item(&slot_key(&account.uid), &json!({ "name": name })),
            cond: Some(Cond::NotExists),
        },
        Write::Put {
            item: item(&claim_key(&name), &json!({ "uid": account.uid })),
            cond: Some(Cond::NotExists),
        },
        Write::Put {
            item: item(&domain_key(&account.uid, &name), &domain),
            cond: None,
        },
        Write::Put {
            item: item(&registry_key(&name), &json!({ "uid": account.uid })),
            cond: None,
        },
    ];
    match ctx.store.transact(writes).await {
        Ok(()) => {}
        Err(StoreError::ConditionFailed) => {
            // Lost a race: the key we made is not used.
            let _ = ctx.secrets.delete(&secret_name).await;
            return match existing_add(ctx, account, &name).await? {
                Some(existing) => Ok(existing),
                None => Err(ApiError::internal("The domain changed while adding it; try again")),
            };
        }
        Err(e) => return Err(e.into()),
    }
    let checked = check_and_store(ctx, &domain).await?.unwrap_or(domain);
    Ok(json!({
        "ok": true,
        "created": true,
        "verified": checked.status == DomainStatus::Verified,
        "domain": view(ctx, &checked),
    }))
}

/// What an add answers when the account or the name is already taken: 200
/// `created: false` for the account's own domain, 409 otherwise; `None` when free.
async fn existing_add(ctx: &Context, account: &Account, name: &str) -> Result<Option<Value>, ApiError> {
    if let Some(slot) = ctx.store.get(&slot_key(&account.uid)).await? {
        let held = slot.get("name").and_then(Value::as_str).unwrap_or_default();
        if held == name
            && let Some(domain) = get(ctx, &account.uid, name).await?
        {
            return Ok(Some(json!({
                "ok": true,
                "created": false,
                "verified": domain.status == DomainStatus::Verified,
                "domain": view(ctx, &domain),
            })));
        }
        return Err(ApiError::conflict(
            "This account already has a domain. Each account may hold one domain.",
            "one_domain_per_account",
        ));
    }
    match claimant(ctx, name).await? {
        Some(_) => Err(ApiError::conflict(
            "That domain is already claimed by another account.",
            "domain_claimed",
        )),
        None => Ok(None),
    }
}

pub async fn verify_domain(ctx: &Context, account: &Account, name: &str) -> Result<Value, ApiError> {
    let domain = owned(ctx, account, name).await?;
    match check_and_store(ctx, &domain).await? {
        None => Ok(json!({
            "ok": true,
            "created": false,
            "verified": domain.status == DomainStatus::Verified,
            "transient": true,
            "domain": { "id": domain.name, "status": domain.status },
            "checks": domain.checks,
            "message": "A DNS lookup did not finish; nothing changed. Try again shortly.",
        })),
        Some(checked) => {
            let mut out = json!({
                "ok": true,
                "created": false,
                "verified": checked.status == DomainStatus::Verified,
                "transient": false,
                "domain": { "id": checked.name, "status": checked.status },
                "checks": checked.checks,
            });
            if let Some(reason) = &checked.failure_reason {
                out["domain"]["failureReason"] = json!(reason);
                out["failureReason"] = json!(reason);
            }
            Ok(out)
        }
    }
}

pub async fn dns_instructions(ctx: &Context, account: &Account, name: &str) -> Result<Value, ApiError> {
    let domain = owned(ctx, account, name).await?;
    Ok(json!({
        "ok": true,
        "domain": view(ctx, &domain),
        "status": domain.status,
        "instructions": instructions(ctx, &domain),
    }))
}

pub async fn list_domains(ctx: &Context, uid: &str) -> Result<Value, ApiError> {
    let mut rows = Vec::new();
    for domain in of_account(ctx, uid).await? {
        let mailboxes = super::mailboxes::of_domain(ctx, &domain.name).await?;
        let mut row = view(ctx, &domain);
        row["mailboxes"] = json!(mailboxes.iter().map(super::mailboxes::view).collect::<Vec<_>>());
        rows.push(row);
    }
    Ok(json!({ "ok": true, "domains": rows }))
}

// --------------------------------------------------------- operator removal

pub struct RemoveInput {
    pub uid: Option<String>,
    pub owner_email: Option<String>,
    pub domain: Option<String>,
    pub confirm: Option<String>,
}

pub async fn operator_remove_domain(ctx: &Context, actor: &str, input: RemoveInput) -> Result<Value, ApiError> {
    if input.uid.is_none() && input.owner_email.is_none() {
        return Err(ApiError::bad_request("uid or ownerEmail is required"));
    }
    let raw = input
        .domain
        .ok_or_else(|| ApiError::bad_request("domainId is required"))?;
    let name = validate::hostname(&raw).ok_or_else(|| ApiError::bad_request("That domain name is not valid"))?;
    if name == ctx.config.service_domain.to_ascii_lowercase() {
        return Err(ApiError::conflict(
            "The service domain cannot be removed.",
            "system_domain",
        ));
    }
    let by_email = match &input.owner_email {
        Some(email) => {
            let email = validate::email(email).ok_or_else(|| ApiError::bad_request("ownerEmail is not valid"))?;
            Some(
                super::accounts::by_email(ctx, &email)
                    .await?
                    .map(|a| a.uid)
                    .ok_or_else(ApiError::not_found)?,
            )
        }
        None => None,
    };
    let uid = match (&input.uid, by_email) {
        (Some(uid), Some(found)) if *uid != found => {
            return Err(ApiError::bad_request("uid and ownerEmail name different accounts"));
        }
        (Some(uid), _) => uid.clone(),
        (None, Some(found)) => found,
        (None, None) => unreachable!("checked above"),
    };
    let owner_missing = super::accounts::get(ctx, &uid).await?.is_none();
    let domain = get(ctx, &uid, &name).await?.ok_or_else(ApiError::not_found)?;
    let mailboxes = super::mailboxes::of_domain_all(ctx, &name).await?;
    if domain.protected || mailboxes.iter().any(|m| m.protected) {
        return Err(ApiError::conflict(
            "That domain holds a protected address and cannot be removed.",
            "protected",
        ));
    }
    let live: Vec<_> = mailboxes.iter().filter(|m| m.is_active()).collect();
    if !live.is_empty() && input.confirm.as_deref().map(str::to_ascii_lowercase) != Some(name.clone()) {
        return Err(ApiError::bad_request(format!(
            "confirm must equal {name} to remove a domain with mailboxes"
        )));
    }
    let now = iso(ctx.clock.now());
    // Mailboxes first: each becomes a removal the export will carry.
    for mailbox in &live {
        super::mailboxes::mark_removed(ctx, mailbox).await?;
    }
    for mailbox in &mailboxes {
        super::mail_store::purge_mailbox(ctx, &mailbox.address).await?;
    }
    let mut writes = vec![
        Write::Update {
            key: domain_key(&uid, &name),
            update: Update::new()
                .set("status", "removed")
                .set("removedAt", now.clone())
                .set("activeMailboxes", 0),
            cond: Some(Cond::Exists),
        },
        Write::Delete {
            key: registry_key(&name),
            cond: None,
        },
    ];
    let slot = ctx.store.get(&slot_key(&uid)).await?;
    if slot
        .and_then(|s| s.get("name").and_then(Value::as_str).map(String::from))
        .as_deref()
        == Some(name.as_str())
    {
        writes.push(Write::Delete {
            key: slot_key(&uid),
            cond: Some(Cond::eq("name", name.clone())),
        });
    }
    ctx.store.transact(writes).await?;
    // The claim goes only while it still names this account.
    let released = match ctx
        .store
        .delete(&claim_key(&name), Some(Cond::eq("uid", uid.clone())))
        .await
    {
        Ok(_) => true,
        Err(StoreError::ConditionFailed) => false,
        Err(e) => return Err(e.into()),
    };
    let _ = ctx.secrets.delete(&domain.dkim_secret).await;
    let details = json!({ "uid": uid, "domain": name, "mailboxes": live.len(), "ownerMissing": owner_missing, "claimReleased": released });
    super::audit::record(ctx, "domain.remove", actor, details).await?;
    Ok(json!({
        "ok": true,
        "domain": { "id": name, "status": "removed" },
        "mailboxesRemoved": live.len(),
        "claimReleased": released,
        "ownerMissing": owner_missing,
        "maildir": "leave",
    }))
}

/// The service domain and its protected mailboxes exist from the start and
/// belong to the operators.
pub async fn ensure_service_domain(ctx: &Context) -> anyhow::Result<()> {
    let name = ctx.config.service_domain.to_ascii_lowercase();
    if ctx.store.get(&domain_key(OPS_UID, &name)).await?.is_none() {
        let key = dkim::generate()?;
        let secret_name = dkim_secret_name(&name);
        ctx.secrets.put(&secret_name, &key.private_pem).await?;
        let now = iso(ctx.clock.now());
        let domain = Domain {
            name: name.clone(),
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
        };
        let writes = vec![
            Write::Put {
                item: item(&domain_key(OPS_UID, &name), &domain),
                cond: Some(Cond::NotExists),
            },
            Write::Put {
                item: item(&claim_key(&name), &json!({ "uid": OPS_UID })),
                cond: None,
            },
            Write::Put {
                item: item(&registry_key(&name), &json!({ "uid": OPS_UID })),
                cond: None,
            },
        ];
        match ctx.store.transact(writes).await {
            Ok(()) | Err(StoreError::ConditionFailed) => {}
            Err(e) => return Err(e.into()),
        }
    }
    for local in &ctx.config.protected_local_parts {
        super::mailboxes::ensure_protected(ctx, &name, local).await?;
    }
    Ok(())
}
