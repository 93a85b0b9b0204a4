//! The account view: what an account holds and how far its setup has come
//! (POST /getAccountStatus), and its domains with their mailboxes (GET
//! /listDomains). Read-only; each part is owned by its own service.

use schemars::JsonSchema;
use serde::Serialize;

use crate::auth::Caller;
use crate::error::{self, ApiError};
use crate::messages;
use crate::service::caller::Call;
use crate::service::caller::account::{self as accounts, AccountStatus};
use crate::service::domains;
use crate::service::mailboxes::{MailboxView, of_domain, view};
use crate::values::Uid;

// ------------------------------------------------------------- getAccountStatus

crate::input! {
    /// POST /getAccountStatus: optional `uid` or `email`, which must name the
    /// caller's own account.
    pub struct AccountStatusInput {
        pub uid: Option<String> = error::ACCOUNT_FIELDS_TYPE,
        pub email: Option<String> = error::ACCOUNT_FIELDS_TYPE,
    }
}

/// A DNS check's state in the account status.
#[derive(Debug, Clone, Copy, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CheckState {
    Verified,
    Missing,
    Unchecked,
}

impl CheckState {
    fn of(passed: Option<bool>) -> Self {
        match passed {
            None => CheckState::Unchecked,
            Some(true) => CheckState::Verified,
            Some(false) => CheckState::Missing,
        }
    }
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Verification {
    pub mx: CheckState,
    pub spf: CheckState,
    pub dkim: CheckState,
    pub dmarc: CheckState,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct DomainState {
    pub name: String,
    pub status: crate::service::domains::DomainStatus,
    pub verification: Verification,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct MailboxState {
    pub address: String,
    pub mode: crate::service::mailboxes::Mode,
    /// On a verified domain and live on the mail host.
    pub ready: bool,
}

/// The account status (spec 2.10).
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AccountStatusOutput {
    pub ok: bool,
    /// ready, setting_up or unavailable.
    pub status: &'static str,
    /// `standard` once ready, otherwise null.
    pub access_level: Option<&'static str>,
    pub ready: bool,
    pub domains: Vec<DomainState>,
    pub mailboxes: Vec<MailboxState>,
    pub can_send: bool,
    /// The next step, only when canSend is false; never a key or a DNS value.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<&'static str>,
}

/// The standard key's own account: its domains, mailboxes and whether it can send.
pub async fn get_account_status(call: &Call<'_>, input: AccountStatusInput) -> Result<AccountStatusOutput, ApiError> {
    let Caller::Standard(key) = call.caller else {
        return Err(error::ACCOUNT_KEY_ONLY.into());
    };
    let ctx = call.ctx;
    let account = accounts::get(ctx, &key.uid).await?.ok_or(error::NOT_FOUND)?;
    let names_other_uid = input.uid.is_some_and(|u| u != account.uid);
    let names_other_email = input.email.is_some_and(|e| !e.eq_ignore_ascii_case(&account.email));
    if names_other_uid || names_other_email {
        return Err(error::ACCOUNT_KEY_ONLY.into());
    }
    let ready = account.status == AccountStatus::Ready;
    let owned = crate::service::domains::of_account(ctx, &account.uid).await?;
    let mut domains = Vec::new();
    let mut mailboxes = Vec::new();
    let mut verified_domain = false;
    let mut sendable = false;
    for domain in &owned {
        let verified = domain.status == crate::service::domains::DomainStatus::Verified;
        verified_domain |= verified;
        let checks = domain.checks;
        domains.push(DomainState {
            name: domain.name.clone(),
            status: domain.status,
            verification: Verification {
                mx: CheckState::of(checks.map(|c| c.mx)),
                spf: CheckState::of(checks.map(|c| c.spf)),
                dkim: CheckState::of(checks.map(|c| c.dkim)),
                dmarc: CheckState::of(checks.map(|c| c.dmarc)),
            },
        });
        // A key narrowed to some mailboxes is told of those alone.
        let seen = crate::service::mailboxes::of_domain(ctx, &domain.name).await?;
        for mailbox in seen.into_iter().filter(|m| call.caller.covers(&m.address)) {
            sendable |= verified && mailbox.mode.stores();
            mailboxes.push(MailboxState {
                address: mailbox.address.clone(),
                mode: mailbox.mode,
                ready: verified && mailbox.mta_applied,
            });
        }
    }
    let can_send = ready && sendable;
    let reason = match account.status {
        AccountStatus::SettingUp => messages::NEXT_SETTING_UP.as_str(),
        AccountStatus::Unavailable => messages::NEXT_UNAVAILABLE.as_str(),
        AccountStatus::Ready if owned.is_empty() => messages::NEXT_ADD_DOMAIN.as_str(),
        AccountStatus::Ready if !verified_domain => messages::NEXT_VERIFY_DOMAIN.as_str(),
        AccountStatus::Ready => messages::NEXT_ADD_MAILBOX.as_str(),
    };
    Ok(AccountStatusOutput {
        ok: true,
        status: account.status.as_str(),
        access_level: ready.then_some("standard"),
        ready,
        domains,
        mailboxes,
        can_send,
        reason: (!can_send).then_some(reason),
    })
}

// ------------------------------------------------------------ listDomains

crate::input! {
    /// GET /listDomains: an operator may name another account's `uid`.
    pub struct ListDomainsInput {
        /// Operators only: read this account instead of their own.
        pub uid: Option<Uid> = error::UID_INVALID,
    }
}

/// A domain with its mailboxes.
#[derive(Debug, Serialize, JsonSchema)]
pub struct DomainRow {
    #[serde(flatten)]
    pub domain: domains::DomainView,
    pub mailboxes: Vec<MailboxView>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct DomainList {
    pub ok: bool,
    pub domains: Vec<DomainRow>,
}

/// The account's domains, each with its active mailboxes.
pub async fn list_domains(call: &Call<'_>, input: ListDomainsInput) -> Result<DomainList, ApiError> {
    let ctx = call.ctx;
    let account = call.account().await?;
    // An operator may read another account; everyone else reads their own.
    let uid = match input.uid {
        Some(uid) if call.is_operator() => uid.into_string(),
        _ => account.uid,
    };
    let mut rows = Vec::new();
    for domain in domains::of_account(ctx, &uid).await? {
        let mailboxes = of_domain(ctx, &domain.name).await?;
        rows.push(DomainRow {
            domain: domains::view(ctx, &domain),
            // A key narrowed to some mailboxes sees those alone (their
            // forwarding included), not the account's others.
            mailboxes: mailboxes
                .iter()
                .filter(|m| call.caller.covers(&m.address))
                .map(view)
                .collect(),
        });
    }
    Ok(DomainList {
        ok: true,
        domains: rows,
    })
}
