//! A mailbox's IMAP/SMTP app password: issued (or reset) once and stored
//! hashed, and taken away with the scoped key that issued it.

use schemars::JsonSchema;
use serde::Serialize;

use crate::clock::iso;
use crate::context::Context;
use crate::error::{self, ApiError};
use crate::keys;
use crate::messages;
use crate::service::caller::Call;
use crate::service::mailboxes::mailbox::{MailboxStatus, Mode, changed, get, next_seq, of_domain};
use crate::service::mailboxes::routes::owned_mailbox;
use crate::store::{Cond, StoreError, Update, Write};
use crate::values::MailboxAddress;

crate::input! {
    /// POST /issueMailboxCredential.
    pub struct CredentialInput {
        /// The mailbox's address.
        pub address: MailboxAddress = (error::ADDRESS_REQUIRED, error::MAILBOX_ADDRESS_INVALID),
    }
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Endpoint {
    pub host: String,
    pub port: u16,
    /// tls or starttls.
    pub security: &'static str,
}

#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CredentialOutput {
    pub ok: bool,
    pub address: String,
    pub username: String,
    /// Shown once; only its SHA512-CRYPT hash is stored.
    pub password: String,
    pub imap: Endpoint,
    pub smtp: Endpoint,
    /// False until the mail server applies the next export.
    pub mta_applied: bool,
    pub message: &'static str,
}

/// Issues (or resets) the IMAP/SMTP app password: returned once, stored hashed.
/// A scoped key's password carries its scope: it reads over IMAP, so the key
/// needs the read permission too; each submission is judged as the key's
/// send (`submission`); revoking the key takes it away.
pub async fn issue_credential(call: &Call<'_>, input: CredentialInput) -> Result<CredentialOutput, ApiError> {
    let ctx = call.ctx;
    call.caller.permits(crate::auth::Permission::Read)?;
    let account = call.account().await?;
    let address = &input.address;
    let mailbox = owned_mailbox(call, &account, Some(address.domain()), Some(address.local())).await?;
    if !mailbox.mode.stores() {
        return Err(error::FORWARD_ONLY_NO_LOGIN.into());
    }
    let password = crate::auth::keys::new_password();
    let hash = crate::auth::keys::sha512_crypt(&password);
    let now = iso(ctx.clock.now());
    let seq = next_seq(ctx).await?;
    let issuer = call.caller.scoped_key();
    let update = Update::new()
        .set("passwordHash", hash)
        .set("credentialIssuedAt", now.clone());
    let update = match issuer {
        Some(key) => update.set("credentialKey", key.key_id.clone()),
        None => update.remove("credentialKey"),
    };
    let still = Cond::And(vec![
        Cond::eq("status", MailboxStatus::Active),
        Cond::ne("mode", Mode::Forward),
    ]);
    let key = keys::mailbox(&mailbox.domain_id, &mailbox.local_part);
    let update = changed(update, seq, &now);
    let written = match issuer {
        None => ctx.store.update(&key, update, Some(still)).await.map(drop),
        // Only while the key is held and no revoke of it has begun, so a
        // revoke either finds this password or refuses it.
        Some(issuer) => {
            let writes = vec![
                Write::Update {
                    key,
                    update,
                    cond: Some(still),
                },
                crate::auth::keys::may_issue_password(&issuer.uid, &issuer.key_id),
            ];
            ctx.store.transact(writes).await
        }
    };
    match written {
        Ok(()) => {}
        Err(StoreError::ConditionFailed) => {
            let active = get(ctx, &mailbox.domain_id, &mailbox.local_part)
                .await?
                .is_some_and(|m| m.is_active() && m.mode.stores());
            // The mailbox is as it was: the key is revoked, or being revoked.
            return Err(match (issuer, active) {
                (Some(_), true) => error::INVALID_KEY.into(),
                _ => error::NOT_FOUND.into(),
            });
        }
        Err(e) => return Err(e.into()),
    }
    let endpoint = |port, security| Endpoint {
        host: ctx.config.mail_host.clone(),
        port,
        security,
    };
    Ok(CredentialOutput {
        ok: true,
        username: mailbox.address.clone(),
        address: mailbox.address,
        password,
        imap: endpoint(993, "tls"),
        smtp: endpoint(587, "starttls"),
        mta_applied: false,
        message: messages::PASSWORD_SHOWN_ONCE.as_str(),
    })
}

/// Takes away the app passwords a scoped key issued on these domains'
/// mailboxes, as the key is revoked: the hash goes (the next export drops
/// the login), `credentialKey` stays to say why a submission the mail host
/// still let through is refused. A password issued anew meanwhile (by the
/// owner, or no longer this key's) is left alone. The addresses it took.
pub async fn drop_key_passwords(ctx: &Context, domains: &[String], key_id: &str) -> Result<Vec<String>, ApiError> {
    let mut dropped = Vec::new();
    for domain in domains {
        for mailbox in of_domain(ctx, domain).await? {
            if mailbox.credential_key.as_deref() != Some(key_id) || mailbox.password_hash.is_none() {
                continue;
            }
            let now = iso(ctx.clock.now());
            let seq = next_seq(ctx).await?;
            let update = changed(
                Update::new().remove("passwordHash").remove("credentialIssuedAt"),
                seq,
                &now,
            );
            let theirs = Cond::eq("credentialKey", key_id);
            let key = keys::mailbox(&mailbox.domain_id, &mailbox.local_part);
            match ctx.store.update(&key, update, Some(theirs)).await {
                Ok(_) => dropped.push(mailbox.address),
                Err(StoreError::ConditionFailed) => {}
                Err(e) => return Err(e.into()),
            }
        }
    }
    Ok(dropped)
}
