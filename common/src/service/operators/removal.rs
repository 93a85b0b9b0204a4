//! Operator removal of a domain (spec 3.1, 4.9): the domain and every mailbox
//! on it marked removed, their stored mail permanently deleted, the claim
//! released while it still names the account.

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::json;

use crate::clock::iso;
use crate::context::Context;
use crate::error::{self, ApiError};
use crate::keys;
use crate::service::caller::Call;
use crate::service::domains::{self, DomainStatus};
use crate::store::{Cond, StoreError, Update, Write};
use crate::validate::Fields;
use crate::values::{DomainName, EmailAddress, Uid};

crate::input! {
    /// POST /operatorRemoveDomain.
    #[schemars(extend("anyOf" = [
        {"required": ["uid"], "properties": {"uid": {"type": "string"}}},
        {"required": ["ownerEmail"], "properties": {"ownerEmail": {"type": "string"}}}
    ]))]
    pub struct RemoveInput {
        /// The owning account (or give ownerEmail; both must agree).
        pub uid: Option<Uid> = error::UID_INVALID,
        pub owner_email: Option<EmailAddress> = error::OWNER_EMAIL_INVALID,
        /// The domain's hostname (`domain` is read when it is absent).
        pub domain_id or "domain": DomainName = (error::DOMAIN_ID_REQUIRED, error::DOMAIN_INVALID),
        /// Must equal the domain name when the domain has any mailbox.
        pub confirm: Option<String> = error::CONFIRM_TYPE,
    }
    check RemoveInput::owner_named;
}

impl RemoveInput {
    fn owner_named(self, _: &Fields) -> Result<Self, ApiError> {
        if self.uid.is_none() && self.owner_email.is_none() {
            return Err(error::REMOVE_OWNER_REQUIRED.into());
        }
        Ok(self)
    }
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct RemovedDomain {
    pub id: String,
    /// Always `removed`.
    pub status: DomainStatus,
}

#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RemoveOutput {
    pub ok: bool,
    pub domain: RemovedDomain,
    pub mailboxes_removed: usize,
    pub claim_released: bool,
    /// The account record was already gone.
    pub owner_missing: bool,
    /// Always `leave`: the mail host keeps its maildirs.
    pub maildir: &'static str,
}

/// Removes a customer's domain. The domain is marked removed first, in a
/// conditional write, so an addMailbox racing with the removal either lands
/// before (and is removed with the rest) or is refused.
pub async fn operator_remove_domain(call: &Call<'_>, input: RemoveInput) -> Result<RemoveOutput, ApiError> {
    let ctx = call.ctx;
    let name = input.domain_id.into_string();
    if name == ctx.config.service_domain.to_string() {
        return Err(error::SYSTEM_DOMAIN.into());
    }
    let uid = owner_uid(ctx, input.uid, input.owner_email.as_ref()).await?;
    let owner_missing = crate::service::caller::account::get(ctx, &uid).await?.is_none();
    let domain = domains::get(ctx, &uid, &name).await?.ok_or(error::NOT_FOUND)?;
    let mailboxes = crate::service::mailboxes::of_domain_all(ctx, &name).await?;
    if domain.protected || mailboxes.iter().any(|m| m.protected) {
        return Err(error::PROTECTED_DOMAIN.into());
    }
    let live_before = mailboxes.iter().filter(|m| m.is_active()).count();
    if live_before > 0 && input.confirm.as_deref().map(str::to_ascii_lowercase) != Some(name.clone()) {
        return Err(error::CONFIRM_REQUIRED.with(&name));
    }
    mark_removed(ctx, &uid, &name).await?;
    let removed = remove_mailboxes(ctx, &uid, &name).await?;
    let released = release_claim(ctx, &uid, &name).await?;
    let _ = ctx.secrets.delete(&domain.dkim_secret).await;
    let details = json!({ "uid": uid, "domain": name, "mailboxes": removed, "ownerMissing": owner_missing, "claimReleased": released });
    call.touched(details);
    Ok(RemoveOutput {
        ok: true,
        domain: RemovedDomain {
            id: name,
            status: DomainStatus::Removed,
        },
        mailboxes_removed: removed,
        claim_released: released,
        owner_missing,
        maildir: "leave",
    })
}

/// The owning account, by uid or by its owner's email; both must agree.
async fn owner_uid(ctx: &Context, uid: Option<Uid>, owner_email: Option<&EmailAddress>) -> Result<String, ApiError> {
    let by_email = match owner_email {
        Some(email) => Some(
            crate::service::caller::account::by_email(ctx, email)
                .await?
                .map(|a| a.uid)
                .ok_or(error::NOT_FOUND)?,
        ),
        None => None,
    };
    match (uid.map(Uid::into_string), by_email) {
        (Some(uid), Some(found)) if uid != found => Err(error::REMOVE_OWNER_MISMATCH.into()),
        (Some(uid), _) => Ok(uid),
        (None, Some(found)) => Ok(found),
        (None, None) => Err(error::REMOVE_OWNER_REQUIRED.into()),
    }
}

/// Marks the domain removed, takes it out of the export's registry and frees
/// the account's one-domain slot, in one transaction; 404 when it is gone.
async fn mark_removed(ctx: &Context, uid: &str, name: &str) -> Result<(), ApiError> {
    let now = iso(ctx.clock.now());
    let mut writes = vec![
        Write::Update {
            key: keys::domain(uid, name),
            update: Update::new()
                .set("status", DomainStatus::Removed)
                .set("removedAt", now.clone()),
            cond: Some(Cond::And(vec![Cond::Exists, Cond::ne("status", DomainStatus::Removed)])),
        },
        Write::Delete {
            key: keys::registered(name),
            cond: None,
        },
    ];
    if let Some(slot) = ctx.store.get(&keys::domain_slot(uid)).await?
        && slot.get("name").and_then(|v| v.as_str()) == Some(name)
    {
        writes.push(Write::Delete {
            key: keys::domain_slot(uid),
            cond: Some(Cond::eq("name", name.to_string())),
        });
    }
    match ctx.store.transact(writes).await {
        Ok(()) => Ok(()),
        Err(StoreError::ConditionFailed) => Err(error::NOT_FOUND.into()),
        Err(e) => Err(e.into()),
    }
}

/// Marks every active mailbox of the removed domain removed and deletes the
/// stored mail of all of them; how many were active.
async fn remove_mailboxes(ctx: &Context, uid: &str, name: &str) -> Result<usize, ApiError> {
    // No mailbox can be added now (addMailbox requires the domain to be
    // verified in its own transaction): what is listed now is everything.
    let mailboxes = crate::service::mailboxes::of_domain_all(ctx, name).await?;
    let mut removed = 0;
    for mailbox in mailboxes.iter().filter(|m| m.is_active()) {
        crate::service::mailboxes::mark_removed(ctx, mailbox).await?;
        removed += 1;
    }
    let addresses: Vec<String> = mailboxes.iter().map(|m| m.address.clone()).collect();
    crate::service::mail_store::purge(ctx, &keys::inbox_account_scope(uid), &addresses).await?;
    ctx.store
        .update(&keys::domain(uid, name), Update::new().set("activeMailboxes", 0), None)
        .await?;
    Ok(removed)
}

/// Deletes the claim on the name while it still names this account; whether
/// it did.
async fn release_claim(ctx: &Context, uid: &str, name: &str) -> Result<bool, ApiError> {
    match ctx.store.delete(&keys::claim(name), Some(Cond::eq("uid", uid))).await {
        Ok(_) => Ok(true),
        Err(StoreError::ConditionFailed) => Ok(false),
        Err(e) => Err(e.into()),
    }
}
