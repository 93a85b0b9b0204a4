//! Mailboxes (spec 2.7, 3.2, 4.8): add, change mode, delete, and the IMAP/SMTP
//! app password.
//!
//! Items: `MBOX#<domain>/<localPart>` the mailbox (a removed one stays as a
//! tombstone so the mail-server export can carry its removal); `SEQ#mailbox/S`
//! the change counter whose values mark each change for the export.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::accounts::Account;
use super::domains::{self, DomainStatus};
use crate::clock::iso;
use crate::context::Context;
use crate::error::ApiError;
use crate::store::{Cond, Key, Query, StoreError, StoreResult, Update, Write, item, record};
use crate::validate::{self, Fields};

pub const MAX_FORWARD: usize = 5;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    Hosted,
    Forward,
    Both,
}

impl Mode {
    pub fn parse(value: Option<&str>) -> Result<Mode, ApiError> {
        match value {
            Some("hosted") => Ok(Mode::Hosted),
            Some("forward") => Ok(Mode::Forward),
            Some("both") => Ok(Mode::Both),
            _ => Err(ApiError::bad_request("mode must be hosted, forward, or both")),
        }
    }
    /// Stored mail and an IMAP/SMTP login.
    pub fn stores(self) -> bool {
        self != Mode::Forward
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MailboxStatus {
    Active,
    Removed,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Mailbox {
    pub domain_id: String,
    pub local_part: String,
    pub address: String,
    pub uid: String,
    pub mode: Mode,
    #[serde(default, deserialize_with = "one_or_many")]
    pub forward_to: Vec<String>,
    pub status: MailboxStatus,
    #[serde(default)]
    pub protected: bool,
    /// The change counter's value at this mailbox's latest change.
    pub change_seq: i64,
    #[serde(default)]
    pub mta_applied: bool,
    #[serde(default)]
    pub mta_applied_at: Option<String>,
    /// SHA512-CRYPT hash of the app password; never the password.
    #[serde(default)]
    pub password_hash: Option<String>,
    pub created_at: String,
    pub updated_at: String,
}

/// Legacy records hold a single string where a list is expected.
fn one_or_many<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum OneOrMany {
        One(String),
        Many(Vec<String>),
    }
    Ok(match Option::<OneOrMany>::deserialize(d)? {
        None => Vec::new(),
        Some(OneOrMany::One(s)) => vec![s],
        Some(OneOrMany::Many(v)) => v,
    })
}

impl Mailbox {
    /// A new active mailbox, its change numbered `change_seq`, not yet applied.
    fn new(
        domain: &str,
        local: &str,
        uid: &str,
        mode: Mode,
        forward_to: Vec<String>,
        change_seq: i64,
        now: &str,
    ) -> Self {
        Mailbox {
            domain_id: domain.into(),
            local_part: local.into(),
            address: format!("{local}@{domain}"),
            uid: uid.into(),
            mode,
            forward_to,
            status: MailboxStatus::Active,
            protected: false,
            change_seq,
            mta_applied: false,
            mta_applied_at: None,
            password_hash: None,
            created_at: now.into(),
            updated_at: now.into(),
        }
    }

    pub fn is_active(&self) -> bool {
        self.status == MailboxStatus::Active
    }
    /// May log in over IMAP/SMTP: stored mail and an issued password.
    pub fn login_hash(&self) -> Option<&str> {
        (self.is_active() && self.mode.stores())
            .then_some(self.password_hash.as_deref())
            .flatten()
    }
}

pub fn mailbox_key(domain: &str, local: &str) -> Key {
    Key::new(format!("MBOX#{domain}"), local)
}

fn seq_key() -> Key {
    Key::new("SEQ#mailbox", "S")
}

/// The delivery plan of 2.7.
pub fn delivery(m: &Mailbox) -> Value {
    if !m.is_active() {
        return json!({ "vmailbox": false, "virtualAlias": null });
    }
    let alias = |targets: Vec<String>| json!({ "address": m.address, "targets": targets });
    match m.mode {
        Mode::Hosted => json!({ "vmailbox": true, "virtualAlias": null }),
        Mode::Forward => json!({ "vmailbox": false, "virtualAlias": alias(m.forward_to.clone()) }),
        Mode::Both => {
            let mut targets = vec![m.address.clone()];
            targets.extend(m.forward_to.iter().cloned());
            json!({ "vmailbox": true, "virtualAlias": alias(targets) })
        }
    }
}

pub fn view(m: &Mailbox) -> Value {
    json!({
        "id": m.address,
        "address": m.address,
        "domainId": m.domain_id,
        "localPart": m.local_part,
        "mode": m.mode,
        "forwardTo": m.forward_to,
        "status": m.status,
        "protected": m.protected,
        "delivery": delivery(m),
        "hasCredential": m.password_hash.is_some() && m.mode.stores(),
        "mtaApplied": m.mta_applied,
        "mtaAppliedAt": m.mta_applied_at,
    })
}

pub async fn get(ctx: &Context, domain: &str, local: &str) -> StoreResult<Option<Mailbox>> {
    ctx.store
        .get(&mailbox_key(domain, local))
        .await?
        .map(record)
        .transpose()
}

pub async fn by_address(ctx: &Context, address: &str) -> StoreResult<Option<Mailbox>> {
    match address.rsplit_once('@') {
        Some((local, domain)) => get(ctx, domain, local).await,
        None => Ok(None),
    }
}

/// Every mailbox record of a domain, tombstones included.
pub async fn of_domain_all(ctx: &Context, domain: &str) -> StoreResult<Vec<Mailbox>> {
    let mut out = Vec::new();
    let mut query = Query::partition(format!("MBOX#{domain}")).limit(500);
    loop {
        let page = ctx.store.query(&query).await?;
        for found in page.items {
            out.push(record(found)?);
        }
        match page.next {
            Some(next) => query = query.after(Some(next)),
            None => return Ok(out),
        }
    }
}

pub async fn of_domain(ctx: &Context, domain: &str) -> StoreResult<Vec<Mailbox>> {
    Ok(of_domain_all(ctx, domain)
        .await?
        .into_iter()
        .filter(Mailbox::is_active)
        .collect())
}

async fn next_seq(ctx: &Context) -> StoreResult<i64> {
    let counted = ctx
        .store
        .update(&seq_key(), Update::new().add("value", 1), None)
        .await?;
    Ok(counted.get("value").and_then(Value::as_i64).unwrap_or(0))
}

/// The fields every change sets: a fresh change number, not yet applied.
fn changed(update: Update, seq: i64, now: &str) -> Update {
    update
        .set("changeSeq", seq)
        .set("mtaApplied", false)
        .remove("mtaAppliedAt")
        .set("updatedAt", now)
}

// ------------------------------------------------------------------ validation

pub fn parse_local_part(raw: Option<String>) -> Result<String, ApiError> {
    let local = raw
        .map(|s| s.to_ascii_lowercase())
        .ok_or_else(|| ApiError::bad_request("localPart is required"))?;
    let ok = local.len() <= 64
        && !local.starts_with('.')
        && !local.ends_with('.')
        && !local.contains("..")
        && local.bytes().all(|b| b.is_ascii_alphanumeric() || b"._+-".contains(&b));
    ok.then_some(local)
        .ok_or_else(|| ApiError::bad_request("That mailbox address is not valid"))
}

/// `forwardTo`: an array of addresses or a single string; lowercased, de-duplicated.
pub fn parse_forward_to(fields: &Fields) -> Result<Vec<String>, ApiError> {
    let raw: Vec<String> = match fields.get("forwardTo") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::String(s)) if s.trim().is_empty() => Vec::new(),
        Some(Value::String(s)) => vec![s.clone()],
        Some(Value::Array(list)) => {
            if list.len() > 50 {
                return Err(ApiError::bad_request("forwardTo may hold at most 5 addresses"));
            }
            list.iter()
                .map(|v| v.as_str().map(String::from))
                .collect::<Option<_>>()
                .ok_or_else(|| ApiError::bad_request("forwardTo must be an array of addresses"))?
        }
        Some(_) => return Err(ApiError::bad_request("forwardTo must be an array of addresses")),
    };
    let mut out: Vec<String> = Vec::new();
    for target in raw {
        let address = validate::email(&target)
            .ok_or_else(|| ApiError::bad_request(format!("Invalid forwarding address: {}", target.trim())))?;
        if !out.contains(&address) {
            out.push(address);
        }
    }
    if out.len() > MAX_FORWARD {
        return Err(ApiError::bad_request("forwardTo may hold at most 5 addresses"));
    }
    Ok(out)
}

/// The mode rules of 4.8 for a mailbox at `address` on `domain`.
async fn check_targets(
    ctx: &Context,
    address: &str,
    domain: &str,
    mode: Mode,
    targets: &[String],
) -> Result<(), ApiError> {
    match (mode, targets.is_empty()) {
        (Mode::Hosted, false) => return Err(ApiError::bad_request("forwardTo must be empty for a hosted mailbox")),
        (Mode::Forward | Mode::Both, true) => {
            return Err(ApiError::bad_request("forwardTo is required for forward and both"));
        }
        _ => {}
    }
    let service = ctx.config.service_domain.to_ascii_lowercase();
    for target in targets {
        if target == address {
            return Err(ApiError::bad_request("A mailbox cannot forward to itself"));
        }
        let target_domain = validate::email_domain(target);
        if target_domain == service || target_domain.ends_with(&format!(".{service}")) {
            return Err(ApiError::bad_request(format!("Forwarding to {service} is not allowed")));
        }
        if target_domain == domain && !by_address(ctx, target).await?.is_some_and(|m| m.is_active()) {
            return Err(ApiError::bad_request(format!("{target} is not a mailbox on {domain}")));
        }
    }
    if forwards_back(ctx, address, targets).await? {
        return Err(ApiError::bad_request("That forwarding would create a forwarding loop"));
    }
    Ok(())
}

/// Whether following forwards from `targets` through this service's mailboxes
/// comes back to `address`.
async fn forwards_back(ctx: &Context, address: &str, targets: &[String]) -> StoreResult<bool> {
    let mut seen: Vec<String> = Vec::new();
    let mut queue: Vec<String> = targets.to_vec();
    while let Some(next) = queue.pop() {
        if next == address {
            return Ok(true);
        }
        if seen.contains(&next) || seen.len() >= 200 {
            continue;
        }
        seen.push(next.clone());
        if let Some(m) = by_address(ctx, &next).await?
            && m.is_active()
            && m.mode != Mode::Hosted
        {
            queue.extend(m.forward_to.iter().filter(|t| **t != m.address).cloned());
        }
    }
    Ok(false)
}

/// The domain a caller may manage mailboxes on: their own, or for an operator
/// the service domain.
async fn managed_domain(
    ctx: &Context,
    account: &Account,
    operator: bool,
    raw: Option<String>,
) -> Result<domains::Domain, ApiError> {
    let raw = raw.ok_or_else(|| ApiError::bad_request("domainId is required"))?;
    let name = validate::hostname(&raw).ok_or_else(|| ApiError::bad_request("That domain name is not valid"))?;
    if operator && name == ctx.config.service_domain.to_ascii_lowercase() {
        return domains::get(ctx, super::accounts::OPS_UID, &name)
            .await?
            .ok_or_else(ApiError::not_found);
    }
    domains::owned(ctx, account, &name).await
}

// ----------------------------------------------------------------------- routes

pub struct MailboxInput {
    pub domain: Option<String>,
    pub local_part: Option<String>,
    pub mode: Option<String>,
    pub forward_to: Vec<String>,
}

impl MailboxInput {
    pub fn parse(fields: &Fields) -> Result<Self, ApiError> {
        let mut local_part = fields.str("localPart")?;
        let mut domain = fields.str("domainId")?.or(fields.str("domain")?);
        // mailboxId names the mailbox by address.
        if let Some(id) = fields.str("mailboxId")? {
            match id.rsplit_once('@') {
                Some((local, d)) => {
                    local_part.get_or_insert_with(|| local.to_string());
                    domain.get_or_insert_with(|| d.to_string());
                }
                None => {
                    local_part.get_or_insert(id);
                }
            }
        }
        Ok(Self {
            domain,
            local_part,
            mode: fields.str("mode")?,
            forward_to: parse_forward_to(fields)?,
        })
    }
}

pub async fn add_mailbox(
    ctx: &Context,
    account: &Account,
    operator: bool,
    input: MailboxInput,
) -> Result<Value, ApiError> {
    let domain = managed_domain(ctx, account, operator, input.domain).await?;
    let local = parse_local_part(input.local_part)?;
    let mode = Mode::parse(input.mode.as_deref())?;
    if domain.protected && mode != Mode::Hosted {
        return Err(ApiError::bad_request(format!(
            "Only hosted mailboxes can be added on {}",
            domain.name
        )));
    }
    let address = format!("{local}@{}", domain.name);
    if domain.status != DomainStatus::Verified {
        return Err(ApiError::new(409, "Verify the domain before adding mailboxes."));
    }
    for _ in 0..ROUTING_ATTEMPTS {
        let routing = routing_version(ctx, mode).await?;
        check_targets(ctx, &address, &domain.name, mode, &input.forward_to).await?;
        let now = iso(ctx.clock.now());
        let seq = next_seq(ctx).await?;
        let mailbox = Mailbox::new(
            &domain.name,
            &local,
            &domain.uid,
            mode,
            input.forward_to.clone(),
            seq,
            &now,
        );
        let free = Cond::Or(vec![Cond::NotExists, Cond::eq("status", "removed")]);
        let mut writes = vec![
            Write::Put {
                item: item(&mailbox_key(&domain.name, &local), &mailbox),
                cond: Some(free),
            },
            Write::Update {
                key: domains::domain_key(&domain.uid, &domain.name),
                update: Update::new().add("activeMailboxes", 1),
                cond: Some(Cond::eq("status", "verified")),
            },
        ];
        writes.extend(routing_guards(routing, &domain.name, &input.forward_to));
        match ctx.store.transact(writes).await {
            Ok(()) => return Ok(json!({ "ok": true, "mailbox": view(&mailbox) })),
            Err(StoreError::ConditionFailed) => {
                if get(ctx, &domain.name, &local).await?.is_some_and(|m| m.is_active()) {
                    return Err(ApiError::new(409, "That mailbox already exists on this domain."));
                }
                if !domains::get(ctx, &domain.uid, &domain.name)
                    .await?
                    .is_some_and(|d| d.status == DomainStatus::Verified)
                {
                    return Err(ApiError::new(409, "Verify the domain before adding mailboxes."));
                }
                // Forwarding changed meanwhile: validate again against what is there now.
            }
            Err(e) => return Err(e.into()),
        }
    }
    Err(ApiError::new(409, "Forwarding is changing; try again."))
}

/// How many times a forwarding change is validated again after losing a race.
const ROUTING_ATTEMPTS: usize = 5;

fn routing_key() -> Key {
    Key::new("ROUTING#forwards", "S")
}

/// The forwarding version a change was validated against: `None` for a change
/// that adds no forwarding (it cannot close a loop).
async fn routing_version(ctx: &Context, mode: Mode) -> StoreResult<Option<i64>> {
    if mode == Mode::Hosted {
        return Ok(None);
    }
    let found = ctx.store.get(&routing_key()).await?;
    Ok(Some(
        found
            .and_then(|i| i.get("version").and_then(Value::as_i64))
            .unwrap_or(0),
    ))
}

/// What a forwarding change commits with: the forwarding version unchanged since
/// validation (so two changes can never form a loop between them), and every
/// same-domain target still an active mailbox.
fn routing_guards(version: Option<i64>, domain: &str, targets: &[String]) -> Vec<Write> {
    let Some(version) = version else { return Vec::new() };
    let unchanged = match version {
        0 => Cond::missing("version"),
        v => Cond::eq("version", v),
    };
    let mut writes = vec![Write::Update {
        key: routing_key(),
        update: Update::new().add("version", 1),
        cond: Some(unchanged),
    }];
    for target in targets {
        if let Some((local, target_domain)) = target.rsplit_once('@')
            && target_domain == domain
        {
            writes.push(Write::Check {
                key: mailbox_key(domain, local),
                cond: Cond::eq("status", "active"),
            });
        }
    }
    writes
}

/// A caller's active mailbox, or 404 (also for another account's).
async fn owned_mailbox(
    ctx: &Context,
    account: &Account,
    operator: bool,
    domain: Option<String>,
    local: Option<String>,
) -> Result<Mailbox, ApiError> {
    let domain = managed_domain(ctx, account, operator, domain).await?;
    let local = parse_local_part(local)?;
    match get(ctx, &domain.name, &local).await? {
        Some(m) if m.is_active() && m.uid == domain.uid => Ok(m),
        _ => Err(ApiError::not_found()),
    }
}

pub async fn set_mailbox_mode(
    ctx: &Context,
    account: &Account,
    operator: bool,
    input: MailboxInput,
) -> Result<Value, ApiError> {
    let mode = Mode::parse(input.mode.as_deref())?;
    let mailbox = owned_mailbox(ctx, account, operator, input.domain, input.local_part).await?;
    if mailbox.protected && mode != Mode::Hosted {
        return Err(ApiError::new(409, "That address is protected; it stays hosted.").with_code("protected"));
    }
    for _ in 0..ROUTING_ATTEMPTS {
        let routing = routing_version(ctx, mode).await?;
        check_targets(ctx, &mailbox.address, &mailbox.domain_id, mode, &input.forward_to).await?;
        let now = iso(ctx.clock.now());
        let update = Update::new()
            .set("mode", serde_json::to_value(mode).expect("mode serializes"))
            .set("forwardTo", json!(input.forward_to));
        let still = Cond::And(vec![Cond::eq("status", "active"), Cond::eq("uid", mailbox.uid.clone())]);
        let seq = next_seq(ctx).await?;
        let key = mailbox_key(&mailbox.domain_id, &mailbox.local_part);
        let mut writes = vec![Write::Update {
            key: key.clone(),
            update: changed(update, seq, &now),
            cond: Some(still),
        }];
        writes.extend(routing_guards(routing, &mailbox.domain_id, &input.forward_to));
        match ctx.store.transact(writes).await {
            Ok(()) => {
                let updated = get(ctx, &mailbox.domain_id, &mailbox.local_part)
                    .await?
                    .ok_or_else(ApiError::not_found)?;
                return Ok(json!({ "ok": true, "mailbox": view(&updated) }));
            }
            Err(StoreError::ConditionFailed) => {
                if !get(ctx, &mailbox.domain_id, &mailbox.local_part)
                    .await?
                    .is_some_and(|m| m.is_active())
                {
                    return Err(ApiError::not_found());
                }
            }
            Err(e) => return Err(e.into()),
        }
    }
    Err(ApiError::new(409, "Forwarding is changing; try again."))
}

/// `{address}` or `{domain, localPart}` (`domainId`, `mailboxId` accepted).
pub fn parse_delete_target(fields: &Fields) -> Result<(String, String), ApiError> {
    let address = fields
        .str("address")?
        .or(fields.str("mailboxId")?.filter(|m| m.contains('@')));
    let domain = fields.str("domain")?.or(fields.str("domainId")?);
    let local = fields
        .str("localPart")?
        .or(fields.str("mailboxId")?.filter(|m| !m.contains('@')));
    let from_parts = match (&domain, &local) {
        (Some(d), Some(l)) => Some(format!("{}@{}", l, d.trim_end_matches('.'))),
        _ => None,
    };
    let address = match (address, from_parts) {
        (Some(a), Some(p)) if !a.eq_ignore_ascii_case(&p) => {
            return Err(ApiError::bad_request("address does not match domain and localPart"));
        }
        (Some(a), _) | (None, Some(a)) => a,
        (None, None) => return Err(ApiError::bad_request("address, or domain and localPart, is required")),
    };
    let address =
        validate::email(&address).ok_or_else(|| ApiError::bad_request("That mailbox address is not valid"))?;
    let (local, domain) = address.rsplit_once('@').expect("a valid email has an @");
    Ok((domain.to_string(), local.to_string()))
}

pub async fn delete_mailbox(
    ctx: &Context,
    account: &Account,
    operator: bool,
    target: (String, String),
) -> Result<Value, ApiError> {
    let (domain_name, local) = target;
    let mailbox = owned_mailbox(ctx, account, operator, Some(domain_name), Some(local)).await?;
    if mailbox.protected {
        return Err(ApiError::new(409, "That address is protected and cannot be deleted.").with_code("protected"));
    }
    let now = iso(ctx.clock.now());
    let seq = next_seq(ctx).await?;
    let removal = changed(Update::new().set("status", "removed"), seq, &now);
    let last_guard = Cond::Or(vec![
        Cond::Ne("status".into(), json!("verified")),
        Cond::Ge("activeMailboxes".into(), 2),
    ]);
    let writes = vec![
        Write::Update {
            key: mailbox_key(&mailbox.domain_id, &mailbox.local_part),
            update: removal,
            cond: Some(Cond::And(vec![
                Cond::eq("status", "active"),
                Cond::eq("uid", mailbox.uid.clone()),
            ])),
        },
        Write::Update {
            key: domains::domain_key(&mailbox.uid, &mailbox.domain_id),
            update: Update::new().add("activeMailboxes", -1),
            cond: Some(Cond::And(vec![Cond::Exists, last_guard])),
        },
    ];
    match ctx.store.transact(writes).await {
        Ok(()) => {}
        Err(StoreError::ConditionFailed) => {
            return match get(ctx, &mailbox.domain_id, &mailbox.local_part).await? {
                Some(m) if m.is_active() => Err(ApiError::new(
                    409,
                    format!(
                        "This is the last mailbox on {}. Add another mailbox first, or contact support to remove the domain.",
                        mailbox.domain_id
                    ),
                )
                .with_code("last_mailbox")),
                _ => Err(ApiError::not_found()),
            };
        }
        Err(e) => return Err(e.into()),
    }
    let removed = get(ctx, &mailbox.domain_id, &mailbox.local_part)
        .await?
        .ok_or_else(ApiError::not_found)?;
    Ok(json!({ "ok": true, "mailbox": view(&removed), "maildir": "leave" }))
}

/// Marks a mailbox removed without the last-mailbox rule (operator domain removal).
pub async fn mark_removed(ctx: &Context, mailbox: &Mailbox) -> StoreResult<()> {
    let now = iso(ctx.clock.now());
    let seq = next_seq(ctx).await?;
    let removal = changed(Update::new().set("status", "removed"), seq, &now);
    ctx.store
        .update(
            &mailbox_key(&mailbox.domain_id, &mailbox.local_part),
            removal,
            Some(Cond::Exists),
        )
        .await?;
    Ok(())
}

/// Issues (or resets) the IMAP/SMTP app password: returned once, stored hashed.
pub async fn issue_credential(
    ctx: &Context,
    account: &Account,
    operator: bool,
    address: Option<String>,
) -> Result<Value, ApiError> {
    let address = address.ok_or_else(|| ApiError::bad_request("address is required"))?;
    let address =
        validate::email(&address).ok_or_else(|| ApiError::bad_request("That mailbox address is not valid"))?;
    let (local, domain) = address.rsplit_once('@').expect("a valid email has an @");
    let mailbox = owned_mailbox(ctx, account, operator, Some(domain.into()), Some(local.into())).await?;
    if !mailbox.mode.stores() {
        return Err(ApiError::bad_request("Forward-only mailboxes have no IMAP/SMTP login"));
    }
    let password = crate::auth::keys::new_password();
    let hash = crate::auth::keys::sha512_crypt(&password);
    let now = iso(ctx.clock.now());
    let seq = next_seq(ctx).await?;
    let update = changed(
        Update::new()
            .set("passwordHash", hash)
            .set("credentialIssuedAt", now.clone()),
        seq,
        &now,
    );
    let still = Cond::And(vec![
        Cond::eq("status", "active"),
        Cond::Ne("mode".into(), json!("forward")),
    ]);
    match ctx
        .store
        .update(
            &mailbox_key(&mailbox.domain_id, &mailbox.local_part),
            update,
            Some(still),
        )
        .await
    {
        Ok(_) => {}
        Err(StoreError::ConditionFailed) => return Err(ApiError::not_found()),
        Err(e) => return Err(e.into()),
    }
    Ok(json!({
        "ok": true,
        "address": mailbox.address,
        "username": mailbox.address,
        "password": password,
        "imap": { "host": ctx.config.mail_host, "port": 993, "security": "tls" },
        "smtp": { "host": ctx.config.mail_host, "port": 587, "security": "starttls" },
        "mtaApplied": false,
        "message": "The password is shown once. It works once the mail server applies the next export.",
    }))
}

/// A protected hosted mailbox on the service domain, created once.
pub async fn ensure_protected(ctx: &Context, domain: &str, local: &str) -> anyhow::Result<()> {
    if get(ctx, domain, local).await?.is_some() {
        return Ok(());
    }
    let now = iso(ctx.clock.now());
    let seq = next_seq(ctx).await?;
    let mailbox = Mailbox {
        protected: true,
        ..Mailbox::new(
            domain,
            local,
            super::accounts::OPS_UID,
            Mode::Hosted,
            Vec::new(),
            seq,
            &now,
        )
    };
    let writes = vec![
        Write::Put {
            item: item(&mailbox_key(domain, local), &mailbox),
            cond: Some(Cond::NotExists),
        },
        Write::Update {
            key: domains::domain_key(super::accounts::OPS_UID, domain),
            update: Update::new().add("activeMailboxes", 1),
            cond: Some(Cond::Exists),
        },
    ];
    match ctx.store.transact(writes).await {
        Ok(()) | Err(StoreError::ConditionFailed) => Ok(()),
        Err(e) => Err(e.into()),
    }
}
