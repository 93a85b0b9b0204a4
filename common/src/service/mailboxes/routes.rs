//! Mailboxes (spec 2.7, 3.2, 4.8): add, change mode, delete, and the IMAP/SMTP
//! app password.
//!
//! Items (see `keys`): the mailbox (a removed one stays as a tombstone so the
//! mail-server export can carry its removal) and the change counter whose
//! values mark each change for the export.

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{Value, json};

use crate::clock::iso;
use crate::context::Context;
use crate::error::{self, ApiError};
use crate::keys;
use crate::service::caller::Call;
use crate::service::caller::account::Account;
use crate::service::domains::{self, DomainStatus};
use crate::service::mailboxes::forwarding::{ROUTING_ATTEMPTS, check_targets, routing_guards, routing_version};
use crate::store::{Cond, StoreError, StoreResult, Update, Write, item};
use crate::validate::Fields;
use crate::values::{DomainName, EmailAddress, LocalPart, MailboxAddress, MailboxId, Nullable};

pub const MAX_FORWARD: usize = 5;

pub use crate::service::mailboxes::mailbox::*;
use crate::service::mailboxes::mailbox::{changed, next_seq};

// ------------------------------------------------------------------ validation

/// `forwardTo`: one address or an array of them, lower case, each once, at
/// most 5 (more than 50 given is refused before any is read).
#[derive(Debug, Clone, Default)]
pub struct ForwardTo(pub Vec<String>);

/// One address, or up to 5 (more than 5 given once each is refused; the
/// same address twice counts once); blank for none.
impl JsonSchema for ForwardTo {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "ForwardTo".into()
    }
    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let address = generator.subschema_for::<EmailAddress>();
        schemars::json_schema!({
            "anyOf": [
                { "type": "string", "pattern": "^\\s*$" },
                address,
                { "type": "array", "items": address, "maxItems": 50 },
            ]
        })
    }
}

impl crate::values::Field for ForwardTo {
    type Problems = ();
    fn read(value: &Value, _: crate::values::Origin, (): ()) -> Result<Option<Self>, ApiError> {
        let raw: Vec<&str> = match value {
            Value::Null => return Ok(None),
            Value::String(s) if s.trim().is_empty() => Vec::new(),
            Value::String(s) => vec![s],
            Value::Array(list) if list.len() > 50 => return Err(error::FORWARD_TO_TOO_MANY.into()),
            Value::Array(list) => list
                .iter()
                .map(Value::as_str)
                .collect::<Option<_>>()
                .ok_or(error::FORWARD_TO_TYPE)?,
            _ => return Err(error::FORWARD_TO_TYPE.into()),
        };
        let mut out: Vec<String> = Vec::new();
        for target in raw {
            let address = crate::values::email(target).ok_or_else(|| {
                // Cut, so the sentence stays short whatever was sent.
                let shown: String = target.trim().chars().take(254).collect();
                error::FORWARD_ADDRESS_INVALID.with(shown)
            })?;
            if !out.contains(&address) {
                out.push(address);
            }
        }
        if out.len() > MAX_FORWARD {
            return Err(error::FORWARD_TO_TOO_MANY.into());
        }
        Ok(Some(ForwardTo(out)))
    }
}

/// The domain a caller may manage mailboxes on: their own, or for an operator
/// the service domain.
async fn managed_domain(
    ctx: &Context,
    account: &Account,
    operator: bool,
    name: Option<&DomainName>,
) -> Result<domains::Domain, ApiError> {
    let name = name.ok_or(error::DOMAIN_ID_REQUIRED)?.as_str();
    if operator && name == ctx.config.service_domain.to_string() {
        return Ok(domains::get(ctx, crate::service::caller::account::OPS_UID, name)
            .await?
            .ok_or(error::NOT_FOUND)?);
    }
    domains::owned(ctx, account, name).await
}

// ----------------------------------------------------------------------- routes

crate::input! {
    /// POST /addMailbox and /setMailboxMode. The mailbox may also be named by
    /// `mailboxId` (its address, or its local part), and the domain by
    /// `domain`.
    #[schemars(extend(
        "required" = ["mode"],
        "allOf" = [
            {"anyOf": [
                {"required": ["domainId"], "properties": {"domainId": {"type": "string"}}},
                {"required": ["domain"], "properties": {"domain": {"type": "string"}}},
                {"required": ["mailboxId"], "properties": {"mailboxId": {"type": "string", "pattern": "@"}}}
            ]},
            {"anyOf": [
                {"required": ["localPart"], "properties": {"localPart": {"type": "string"}}},
                {"required": ["mailboxId"], "properties": {"mailboxId": {"type": "string"}}}
            ]}
        ],
        "anyOf" = [
            {"properties": {"mode": {"const": "hosted"}, "forwardTo": {"anyOf": [
                {"type": "string", "pattern": "^\\s*$"}, {"type": "array", "maxItems": 0}, {"type": "null"}
            ]}}},
            {"properties": {"mode": {"enum": ["forward", "both"]}, "forwardTo": {"not": {"anyOf": [
                {"type": "string", "pattern": "^\\s*$"}, {"type": "array", "maxItems": 0}, {"type": "null"}
            ]}}}, "required": ["forwardTo"]}
        ]
    ))]
    pub struct MailboxInput {
        /// The domain's hostname.
        pub domain_id or "domain": Option<DomainName> = error::DOMAIN_INVALID,
        /// The part before the @.
        pub local_part: Option<LocalPart> = error::MAILBOX_ADDRESS_INVALID,
        /// The mailbox's address, in place of localPart (and domainId); or its
        /// local part.
        pub mailbox_id: Option<MailboxId> = error::MAILBOX_ADDRESS_INVALID,
        pub mode: Option<Mode> = error::MODE_INVALID,
        /// Required and non-empty for forward and both; empty for hosted; at most
        /// 5 addresses (one address may be given as a string).
        pub forward_to: Option<ForwardTo> = (),
        /// Spoofed mail to this mailbox is filed in the inbox, marked,
        /// instead of the quarantine. Left as it was when absent.
        pub accept_spoofed: Option<bool> = error::ACCEPT_SPOOFED_TYPE,
        /// false files mail the mail host's rspamd judged spam in the inbox
        /// (its verdict shown) instead of the spam folder. Left as it was
        /// when absent.
        pub spam_filter: Option<bool> = error::SPAM_FILTER_TYPE,
        /// The score above which mail goes to spam (-50 to 100); null goes
        /// back to rspamd's own judgement. Left as it was when absent.
        pub spam_threshold: Option<Nullable<super::mailbox::Threshold>> = error::SPAM_THRESHOLD_INVALID,
    }
    check MailboxInput::by_mailbox_id;
}

impl MailboxInput {
    /// Accepting spoofed mail loosens the quarantine, which is the owner's
    /// guardrail: a scoped key may only turn it off.
    fn refuse_loosening(&self, call: &Call<'_>) -> Result<(), ApiError> {
        match self.accept_spoofed {
            Some(true) => call.caller.may_loosen(),
            _ => Ok(()),
        }
    }

    /// `mailboxId` fills the local part, and the domain when it has one; a
    /// `localPart` or `domainId` given beside it must say the same.
    fn by_mailbox_id(mut self, _: &Fields) -> Result<Self, ApiError> {
        if let Some(id) = self.mailbox_id.take() {
            let local = agreeing([self.local_part.as_ref(), Some(id.local())], error::MAILBOX_ID_MISMATCH)?;
            let domain = agreeing([self.domain_id.as_ref(), id.domain()], error::MAILBOX_ID_MISMATCH)?;
            self.local_part = local.cloned();
            self.domain_id = domain.cloned();
        }
        Ok(self)
    }

    fn forward_to(&self) -> &[String] {
        self.forward_to.as_ref().map_or(&[], |f| &f.0)
    }
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct MailboxOutput {
    pub ok: bool,
    pub mailbox: MailboxView,
}

/// Adds a mailbox on the caller's verified domain (operators also on the
/// service domain, hosted only).
pub async fn add_mailbox(call: &Call<'_>, input: MailboxInput) -> Result<MailboxOutput, ApiError> {
    let ctx = call.ctx;
    let account = call.account().await?;
    let domain = managed_domain(ctx, &account, call.is_operator(), input.domain_id.as_ref()).await?;
    let local = input.local_part.as_ref().ok_or(error::LOCAL_PART_REQUIRED)?.as_str();
    let mode = input.mode.ok_or(error::MODE_INVALID)?;
    if domain.protected && mode != Mode::Hosted {
        return Err(error::HOSTED_ONLY.with(&domain.name));
    }
    let address = format!("{local}@{}", domain.name);
    call.caller.may_use(&address)?;
    refuse_owner_mailbox(call, &account, &address)?;
    input.refuse_loosening(call)?;
    if domain.status != DomainStatus::Verified {
        return Err(error::DOMAIN_NOT_VERIFIED.into());
    }
    for _ in 0..ROUTING_ATTEMPTS {
        let routing = routing_version(ctx, mode).await?;
        check_targets(ctx, &address, &domain.name, mode, input.forward_to()).await?;
        let now = iso(ctx.clock.now());
        let seq = next_seq(ctx).await?;
        let mailbox = Mailbox {
            accept_spoofed: input.accept_spoofed.unwrap_or(false),
            spam_filter: input.spam_filter.unwrap_or(true),
            spam_threshold: input.spam_threshold.and_then(|t| t.0).map(|t| t.0),
            ..Mailbox::new(
                &domain.name,
                local,
                &domain.uid,
                mode,
                input.forward_to().to_vec(),
                seq,
                &now,
            )
        };
        let mut writes = add_writes(&mailbox, &domain, local);
        writes.extend(routing_guards(routing, &domain.name, input.forward_to()));
        match ctx.store.transact(writes).await {
            Ok(()) => {
                return Ok(MailboxOutput {
                    ok: true,
                    mailbox: view(&mailbox),
                });
            }
            // Forwarding changed meanwhile, unless this says otherwise:
            // validate again against what is there now.
            Err(StoreError::ConditionFailed) => why_not_added(ctx, &domain, local).await?,
            Err(e) => return Err(e.into()),
        }
    }
    Err(error::FORWARDING_BUSY.into())
}

/// The mailbox, where no active one is, and its domain's count, while the
/// domain is verified.
fn add_writes(mailbox: &Mailbox, domain: &domains::Domain, local: &str) -> Vec<Write> {
    let free = Cond::Or(vec![Cond::NotExists, Cond::eq("status", MailboxStatus::Removed)]);
    vec![
        Write::Put {
            item: item(&keys::mailbox(&domain.name, local), mailbox),
            cond: Some(free),
        },
        Write::Update {
            key: keys::domain(&domain.uid, &domain.name),
            update: Update::new().add("activeMailboxes", 1),
            cond: Some(Cond::eq("status", DomainStatus::Verified)),
        },
    ]
}

/// Why an add's transaction failed, when it is not a forwarding change: the
/// mailbox exists, or the domain is no longer verified.
async fn why_not_added(ctx: &Context, domain: &domains::Domain, local: &str) -> Result<(), ApiError> {
    if get(ctx, &domain.name, local).await?.is_some_and(|m| m.is_active()) {
        return Err(error::MAILBOX_EXISTS.into());
    }
    if !domains::get(ctx, &domain.uid, &domain.name)
        .await?
        .is_some_and(|d| d.status == DomainStatus::Verified)
    {
        return Err(error::DOMAIN_NOT_VERIFIED.into());
    }
    Ok(())
}

/// A caller's active mailbox, or 404 (also for another account's); 403 for
/// a scoped key's mailbox outside its scope.
pub(super) async fn owned_mailbox(
    call: &Call<'_>,
    account: &Account,
    domain: Option<&DomainName>,
    local: Option<&str>,
) -> Result<Mailbox, ApiError> {
    let ctx = call.ctx;
    let domain = managed_domain(ctx, account, call.is_operator(), domain).await?;
    let local = local.ok_or(error::LOCAL_PART_REQUIRED)?;
    match get(ctx, &domain.name, local).await? {
        Some(m) if m.is_active() && m.uid == domain.uid => {
            call.caller.may_use(&m.address)?;
            refuse_owner_mailbox(call, account, &m.address)?;
            Ok(m)
        }
        _ => Err(error::NOT_FOUND.into()),
    }
}

/// The owner's own address (the account's contact email) receives its access
/// codes, which mint the account key: a scoped key may not create, forward,
/// delete or log in to a mailbox there, which would hand it those codes.
fn refuse_owner_mailbox(call: &Call<'_>, account: &Account, address: &str) -> Result<(), ApiError> {
    if call.caller.scope().is_none() || !address.eq_ignore_ascii_case(&account.email) {
        return Ok(());
    }
    let mut refused: ApiError = error::KEY_OWNER_MAILBOX.into();
    refused.addresses = Some(vec![address.to_ascii_lowercase()]);
    Err(refused)
}

/// Changes a mailbox's mode and forwarding; stored mail is kept.
pub async fn set_mailbox_mode(call: &Call<'_>, input: MailboxInput) -> Result<MailboxOutput, ApiError> {
    let ctx = call.ctx;
    let account = call.account().await?;
    let mode = input.mode.ok_or(error::MODE_INVALID)?;
    let mailbox = owned_mailbox(call, &account, input.domain_id.as_ref(), input.local_part.as_deref()).await?;
    input.refuse_loosening(call)?;
    if mailbox.protected && mode != Mode::Hosted {
        return Err(error::PROTECTED_MODE.into());
    }
    for _ in 0..ROUTING_ATTEMPTS {
        let routing = routing_version(ctx, mode).await?;
        check_targets(ctx, &mailbox.address, &mailbox.domain_id, mode, input.forward_to()).await?;
        let now = iso(ctx.clock.now());
        let mut update = Update::new()
            .set("mode", mode)
            .set("forwardTo", json!(input.forward_to()));
        if let Some(accept) = input.accept_spoofed {
            update = update.set("acceptSpoofed", accept);
        }
        if let Some(filter) = input.spam_filter {
            update = update.set("spamFilter", filter);
        }
        update = match input.spam_threshold {
            Some(Nullable(Some(threshold))) => update.set("spamThreshold", threshold.0),
            Some(Nullable(None)) => update.remove("spamThreshold"),
            None => update,
        };
        let still = Cond::And(vec![
            Cond::eq("status", MailboxStatus::Active),
            Cond::eq("uid", mailbox.uid.clone()),
        ]);
        let seq = next_seq(ctx).await?;
        let key = keys::mailbox(&mailbox.domain_id, &mailbox.local_part);
        let mut writes = vec![Write::Update {
            key: key.clone(),
            update: changed(update, seq, &now),
            cond: Some(still),
        }];
        writes.extend(routing_guards(routing, &mailbox.domain_id, input.forward_to()));
        match ctx.store.transact(writes).await {
            Ok(()) => {
                let updated = get(ctx, &mailbox.domain_id, &mailbox.local_part)
                    .await?
                    .ok_or(error::NOT_FOUND)?;
                return Ok(MailboxOutput {
                    ok: true,
                    mailbox: view(&updated),
                });
            }
            Err(StoreError::ConditionFailed) => {
                if !get(ctx, &mailbox.domain_id, &mailbox.local_part)
                    .await?
                    .is_some_and(|m| m.is_active())
                {
                    return Err(error::NOT_FOUND.into());
                }
            }
            Err(e) => return Err(e.into()),
        }
    }
    Err(error::FORWARDING_BUSY.into())
}

crate::input! {
    /// POST /deleteMailbox: `{address}` or `{domain, localPart}` (`domainId`,
    /// `mailboxId` accepted). An address and a local part given together
    /// must name one mailbox, which no schema can check: they are not given
    /// together.
    #[schemars(extend(
      "not" = {"anyOf": [
        {"required": ["address", "localPart"], "properties": {"address": {"type": "string"}, "localPart": {"type": "string"}}},
        {"required": ["mailboxId", "localPart"], "properties": {"mailboxId": {"type": "string", "pattern": "@"}, "localPart": {"type": "string"}}},
        {"required": ["address", "mailboxId"], "properties": {"address": {"type": "string"}, "mailboxId": {"type": "string", "pattern": "^[^@]*$"}}}
      ]},
      "anyOf" = [
        {"required": ["address"], "properties": {"address": {"type": "string"}}},
        {"required": ["mailboxId"], "properties": {"mailboxId": {"type": "string", "pattern": "@"}}},
        {"required": ["domain", "localPart"], "properties": {"domain": {"type": "string"}, "localPart": {"type": "string"}}},
        {"required": ["domainId", "localPart"], "properties": {"domainId": {"type": "string"}, "localPart": {"type": "string"}}},
        {"required": ["domain", "mailboxId"], "properties": {"domain": {"type": "string"}, "mailboxId": {"type": "string"}}},
        {"required": ["domainId", "mailboxId"], "properties": {"domainId": {"type": "string"}, "mailboxId": {"type": "string"}}}
    ]))]
    pub struct DeleteTarget {
        pub address: Option<MailboxAddress> = error::MAILBOX_ADDRESS_INVALID,
        pub domain or "domainId": Option<DomainName> = error::MAILBOX_ADDRESS_INVALID,
        pub domain_id: Option<DomainName> = error::MAILBOX_ADDRESS_INVALID,
        pub local_part: Option<LocalPart> = error::MAILBOX_ADDRESS_INVALID,
        /// The address, or the local part (with domain).
        pub mailbox_id: Option<MailboxId> = error::MAILBOX_ADDRESS_INVALID,
    }
    check DeleteTarget::one_mailbox;
}

impl DeleteTarget {
    fn one_mailbox(self, _: &Fields) -> Result<Self, ApiError> {
        self.named()?;
        Ok(self)
    }

    /// The mailbox named: by address (or an address `mailboxId`), by domain
    /// and local part (or a local-part `mailboxId`); every name given must
    /// say the same mailbox.
    fn named(&self) -> Result<(DomainName, String), ApiError> {
        let (address_by_id, local_by_id) = match &self.mailbox_id {
            Some(MailboxId::Address(l, d)) => (Some((l.as_str(), d)), None),
            Some(MailboxId::Local(l)) => (None, Some(l.as_str())),
            None => (None, None),
        };
        let address = self.address.as_ref().map(|a| (a.local(), a.domain()));
        let mismatch = error::DELETE_TARGET_MISMATCH;
        let domain = agreeing(
            [
                address.map(|a| a.1),
                address_by_id.map(|a| a.1),
                self.domain.as_ref(),
                self.domain_id.as_ref(),
            ],
            mismatch,
        )?;
        let local = agreeing(
            [
                address.map(|a| a.0),
                address_by_id.map(|a| a.0),
                self.local_part.as_ref().map(|l| l.as_str()),
                local_by_id,
            ],
            mismatch,
        )?;
        match (domain, local) {
            (Some(d), Some(l)) => Ok((d.clone(), l.to_string())),
            _ => Err(error::DELETE_TARGET_REQUIRED.into()),
        }
    }
}

/// The one value the given names agree on (None when none is given), or
/// `mismatch` when two of them differ.
fn agreeing<T: PartialEq + ?Sized, const N: usize>(
    names: [Option<&T>; N],
    mismatch: crate::error::Problem,
) -> Result<Option<&T>, ApiError> {
    let mut given = names.into_iter().flatten();
    let first = given.next();
    match first {
        Some(f) if given.any(|other| other != f) => Err(mismatch.into()),
        _ => Ok(first),
    }
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct DeleteOutput {
    pub ok: bool,
    /// With the removal plan: vmailbox false, virtualAlias null.
    pub mailbox: MailboxView,
    /// Always `leave`: stored mail is kept.
    pub maildir: &'static str,
}

/// Removes a mailbox (not a protected one, not a verified domain's last).
pub async fn delete_mailbox(call: &Call<'_>, input: DeleteTarget) -> Result<DeleteOutput, ApiError> {
    let ctx = call.ctx;
    let account = call.account().await?;
    let (domain_name, local) = input.named()?;
    let mailbox = owned_mailbox(call, &account, Some(&domain_name), Some(&local)).await?;
    if mailbox.protected {
        return Err(error::PROTECTED_DELETE.into());
    }
    let now = iso(ctx.clock.now());
    let seq = next_seq(ctx).await?;
    let removal = changed(Update::new().set("status", MailboxStatus::Removed), seq, &now);
    let last_guard = Cond::Or(vec![
        Cond::ne("status", DomainStatus::Verified),
        Cond::Ge("activeMailboxes".into(), 2),
    ]);
    let writes = vec![
        Write::Update {
            key: keys::mailbox(&mailbox.domain_id, &mailbox.local_part),
            update: removal,
            cond: Some(Cond::And(vec![
                Cond::eq("status", MailboxStatus::Active),
                Cond::eq("uid", mailbox.uid.clone()),
            ])),
        },
        Write::Update {
            key: keys::domain(&mailbox.uid, &mailbox.domain_id),
            update: Update::new().add("activeMailboxes", -1),
            cond: Some(Cond::And(vec![Cond::Exists, last_guard])),
        },
    ];
    match ctx.store.transact(writes).await {
        Ok(()) => {}
        Err(StoreError::ConditionFailed) => {
            return match get(ctx, &mailbox.domain_id, &mailbox.local_part).await? {
                Some(m) if m.is_active() => Err(error::LAST_MAILBOX.with(&mailbox.domain_id)),
                _ => Err(error::NOT_FOUND.into()),
            };
        }
        Err(e) => return Err(e.into()),
    }
    let removed = get(ctx, &mailbox.domain_id, &mailbox.local_part)
        .await?
        .ok_or(error::NOT_FOUND)?;
    Ok(DeleteOutput {
        ok: true,
        mailbox: view(&removed),
        maildir: "leave",
    })
}

/// Marks a mailbox removed without the last-mailbox rule (operator domain removal).
pub async fn mark_removed(ctx: &Context, mailbox: &Mailbox) -> StoreResult<()> {
    let now = iso(ctx.clock.now());
    let seq = next_seq(ctx).await?;
    let removal = changed(Update::new().set("status", MailboxStatus::Removed), seq, &now);
    ctx.store
        .update(
            &keys::mailbox(&mailbox.domain_id, &mailbox.local_part),
            removal,
            Some(Cond::Exists),
        )
        .await?;
    Ok(())
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
            crate::service::caller::account::OPS_UID,
            Mode::Hosted,
            Vec::new(),
            seq,
            &now,
        )
    };
    let writes = vec![
        Write::Put {
            item: item(&keys::mailbox(domain, local), &mailbox),
            cond: Some(Cond::NotExists),
        },
        Write::Update {
            key: keys::domain(crate::service::caller::account::OPS_UID, domain),
            update: Update::new().add("activeMailboxes", 1),
            cond: Some(Cond::Exists),
        },
    ];
    match ctx.store.transact(writes).await {
        Ok(()) | Err(StoreError::ConditionFailed) => Ok(()),
        Err(e) => Err(e.into()),
    }
}
