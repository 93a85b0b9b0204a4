//! The stored domain: its status and checks, and the reads of it.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::dkim;
use crate::context::Context;
use crate::error::{self, ApiError};
use crate::keys;
use crate::service::caller::account::Account;
use crate::store::{Query, StoreExt, StoreResult, record};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum DomainStatus {
    Failed,
    Verified,
    Removed,
}

crate::store::stored_as_json!(DomainStatus);

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

    /// A domain just added with its new DKIM key, its DNS not checked yet.
    pub fn added(name: &str, uid: &str, dkim_public: String, dkim_secret: String, now: String) -> Domain {
        Domain {
            name: name.to_string(),
            uid: uid.to_string(),
            status: DomainStatus::Failed,
            failure_reason: Some("DNS not checked yet".into()),
            checks: None,
            dkim_public,
            dkim_secret,
            active_mailboxes: 0,
            created_at: now,
            checked_at: None,
            verified_at: None,
            protected: false,
            mx_checked_at: None,
            mx_missing_since: None,
            routing_dropped_at: None,
        }
    }
}

pub fn dkim_secret_name(name: &str) -> String {
    format!("dkim-{name}-{:08x}", rand::random::<u32>())
}

/// A new DKIM key for a domain, its private half stored as a new secret:
/// (the public key in base64, the secret's name).
pub async fn new_dkim_key(ctx: &Context, name: &str) -> anyhow::Result<(String, String)> {
    let key = dkim::generate()?;
    let secret_name = dkim_secret_name(name);
    ctx.secrets.put(&secret_name, &key.private_pem).await?;
    Ok((key.public_b64, secret_name))
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
