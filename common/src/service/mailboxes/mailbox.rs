//! The mailbox record: its mode and status, what the mail host is told
//! about it, how it is shown, and its lookups. Below both the mailbox routes
//! (`mailboxes`) and the forwarding rules (`forwarding`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::context::Context;
use crate::keys;
use crate::store::{Query, StoreExt, StoreResult, Update};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    Hosted,
    Forward,
    Both,
}

crate::store::stored_as_json!(Mode);

impl crate::values::Value for Mode {
    fn parse(text: &str) -> Option<Mode> {
        match text.trim() {
            "hosted" => Some(Mode::Hosted),
            "forward" => Some(Mode::Forward),
            "both" => Some(Mode::Both),
            _ => None,
        }
    }
}

impl Mode {
    /// Stored mail and an IMAP/SMTP login.
    pub fn stores(self) -> bool {
        self != Mode::Forward
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum MailboxStatus {
    Active,
    Removed,
}

crate::store::stored_as_json!(MailboxStatus);

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
    /// The owner's opt-in: spoofed mail is filed in the inbox (marked) and
    /// fires its webhook, instead of waiting in the quarantine.
    #[serde(default)]
    pub accept_spoofed: bool,
    /// The owner's spam settings: mail the mail host's rspamd judged spam
    /// goes to the spam folder (on unless turned off), above
    /// `spam_threshold` when one is set (`service::spam`).
    #[serde(default = "on")]
    pub spam_filter: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spam_threshold: Option<f64>,
    /// The change counter's value at this mailbox's latest change.
    pub change_seq: i64,
    #[serde(default)]
    pub mta_applied: bool,
    #[serde(default)]
    pub mta_applied_at: Option<String>,
    /// SHA512-CRYPT hash of the app password; never the password.
    #[serde(default)]
    pub password_hash: Option<String>,
    /// The scoped key (its id) that issued the app password, when one did:
    /// its submissions carry that key's scope, and it dies with the key
    /// (revoking clears the hash, and keeps this to say why).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credential_key: Option<String>,
    pub created_at: String,
    pub updated_at: String,
}

fn on() -> bool {
    true
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
    pub(in crate::service) fn new(
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
            accept_spoofed: false,
            spam_filter: true,
            spam_threshold: None,
            change_seq,
            mta_applied: false,
            mta_applied_at: None,
            password_hash: None,
            credential_key: None,
            created_at: now.into(),
            updated_at: now.into(),
        }
    }

    pub fn is_active(&self) -> bool {
        self.status == MailboxStatus::Active
    }
    /// Whose mail this mailbox's rows are: a service-domain mailbox is read on
    /// its own (by the agent key and operators), any other with its account.
    pub fn reading_scope(&self, service_domain: &str) -> String {
        if self.domain_id.eq_ignore_ascii_case(service_domain) {
            crate::keys::inbox_mailbox_scope(&self.address)
        } else {
            crate::keys::inbox_account_scope(&self.uid)
        }
    }
    /// May log in over IMAP/SMTP: stored mail and an issued password.
    pub fn login_hash(&self) -> Option<&str> {
        (self.is_active() && self.mode.stores())
            .then_some(self.password_hash.as_deref())
            .flatten()
    }
}

/// Where mail to an address goes (spec 2.7).
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Delivery {
    /// Stored in the mailbox (hosted and both).
    pub vmailbox: bool,
    /// Relayed (forward and both); null otherwise.
    pub virtual_alias: Option<Alias>,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Alias {
    pub address: String,
    /// For `both`, the mailbox's own address first.
    pub targets: Vec<String>,
}

/// The delivery plan of 2.7; a removed mailbox's is the removal plan.
pub fn delivery(m: &Mailbox) -> Delivery {
    let alias = |targets: Vec<String>| {
        Some(Alias {
            address: m.address.clone(),
            targets,
        })
    };
    let (vmailbox, virtual_alias) = match (m.is_active(), m.mode) {
        (false, _) => (false, None),
        (true, Mode::Hosted) => (true, None),
        (true, Mode::Forward) => (false, alias(m.forward_to.clone())),
        (true, Mode::Both) => {
            let mut targets = vec![m.address.clone()];
            targets.extend(m.forward_to.iter().cloned());
            (true, alias(targets))
        }
    };
    Delivery {
        vmailbox,
        virtual_alias,
    }
}

/// A mailbox as the routes show it (spec 2.7).
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MailboxView {
    pub id: String,
    pub address: String,
    pub domain_id: String,
    pub local_part: String,
    pub mode: Mode,
    pub forward_to: Vec<String>,
    pub status: MailboxStatus,
    pub protected: bool,
    /// Spoofed mail (its From domain's DMARC policy is quarantine or reject,
    /// and it fails) is filed in the inbox, marked; false: it is kept in the
    /// quarantine (GET /inbox?view=quarantine) with no webhook.
    pub accept_spoofed: bool,
    /// Mail whose content the mail host's rspamd judged spam goes to the
    /// spam folder (GET /inbox?view=spam), not the inbox; false files it in
    /// the inbox, its verdict shown.
    pub spam_filter: bool,
    /// The score above which mail goes to spam; null: rspamd's own
    /// judgement (it would reject the message, or mark it as spam).
    pub spam_threshold: Option<f64>,
    pub delivery: Delivery,
    /// An IMAP/SMTP app password has been issued.
    pub has_credential: bool,
    /// False until the mail server applied the latest change.
    pub mta_applied: bool,
    pub mta_applied_at: Option<String>,
}

pub fn view(m: &Mailbox) -> MailboxView {
    MailboxView {
        id: m.address.clone(),
        address: m.address.clone(),
        domain_id: m.domain_id.clone(),
        local_part: m.local_part.clone(),
        mode: m.mode,
        forward_to: m.forward_to.clone(),
        status: m.status,
        protected: m.protected,
        accept_spoofed: m.accept_spoofed,
        spam_filter: m.spam_filter,
        spam_threshold: m.spam_threshold,
        delivery: delivery(m),
        has_credential: m.password_hash.is_some() && m.mode.stores(),
        mta_applied: m.mta_applied,
        mta_applied_at: m.mta_applied_at.clone(),
    }
}

pub async fn get(ctx: &Context, domain: &str, local: &str) -> StoreResult<Option<Mailbox>> {
    ctx.store.read(&keys::mailbox(domain, local)).await
}

pub async fn by_address(ctx: &Context, address: &str) -> StoreResult<Option<Mailbox>> {
    match address.rsplit_once('@') {
        Some((local, domain)) => get(ctx, domain, local).await,
        None => Ok(None),
    }
}

/// Every mailbox record of a domain, tombstones included.
pub async fn of_domain_all(ctx: &Context, domain: &str) -> StoreResult<Vec<Mailbox>> {
    ctx.store
        .all_records(Query::partition(keys::mailboxes_of(domain)).limit(500))
        .await
}

pub async fn of_domain(ctx: &Context, domain: &str) -> StoreResult<Vec<Mailbox>> {
    Ok(of_domain_all(ctx, domain)
        .await?
        .into_iter()
        .filter(Mailbox::is_active)
        .collect())
}

/// The lowest and highest `spamThreshold` an owner may set.
pub const THRESHOLD_RANGE: (f64, f64) = (-50.0, 100.0);

/// `spamThreshold`: the score above which a mailbox's mail goes to spam (a
/// number from -50 to 100); null goes back to rspamd's own judgement.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Threshold(pub f64);

impl crate::values::Field for Threshold {
    type Problems = crate::error::Problem;
    fn read(
        value: &serde_json::Value,
        _: crate::values::Origin,
        invalid: crate::error::Problem,
    ) -> Result<Option<Self>, crate::error::ApiError> {
        match value {
            serde_json::Value::Null => Ok(None),
            serde_json::Value::Number(n) => n
                .as_f64()
                .filter(|x| x.is_finite() && (THRESHOLD_RANGE.0..=THRESHOLD_RANGE.1).contains(x))
                .map(|x| Some(Threshold(x)))
                .ok_or_else(|| invalid.into()),
            _ => Err(invalid.into()),
        }
    }
}

impl JsonSchema for Threshold {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "SpamThreshold".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "number",
            "minimum": THRESHOLD_RANGE.0,
            "maximum": THRESHOLD_RANGE.1,
            "description": "The score above which mail goes to spam; null: rspamd's own judgement (it would reject it, or mark it as spam)."
        })
    }
}

/// The next change number: each change of a mailbox takes one, and the
/// mail-server export applies them in order.
pub(super) async fn next_seq(ctx: &Context) -> StoreResult<i64> {
    ctx.store.add(&keys::mailbox_changes(), "value", 1).await
}

/// The fields every change sets: a fresh change number, not yet applied.
pub(super) fn changed(update: Update, seq: i64, now: &str) -> Update {
    update
        .set("changeSeq", seq)
        .set("mtaApplied", false)
        .remove("mtaAppliedAt")
        .set("updatedAt", now)
}
