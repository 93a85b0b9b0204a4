//! The service domain: the operators' own, there from the start, and never a
//! customer's to add.

use serde_json::json;

use super::{Domain, DomainStatus, dkim_secret_name};
use crate::clock::iso;
use crate::context::Context;
use crate::error::{self, ApiError};
use crate::keys;
use crate::service::accounts::OPS_UID;
use crate::service::dkim;
use crate::store::{Cond, StoreError, Write, item};

/// The service domain and its subdomains are not customers' to add.
pub(super) fn refuse_product_domain(ctx: &Context, name: &str) -> Result<(), ApiError> {
    let service = ctx.config.service_domain.as_str();
    if name == service || name.ends_with(&format!(".{service}")) {
        return Err(error::PRODUCT_DOMAIN.into());
    }
    Ok(())
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
