//! The service domain: the operators' own, there from the start, and never a
//! customer's to add.

use serde_json::json;

use super::record::{Domain, DomainStatus, new_dkim_key};
use crate::clock::iso;
use crate::context::Context;
use crate::error::{self, ApiError};
use crate::keys;
use crate::service::caller::account::OPS_UID;
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
        let (dkim_public, secret_name) = new_dkim_key(ctx, name).await?;
        let now = iso(ctx.clock.now());
        let domain = Domain {
            status: DomainStatus::Verified,
            failure_reason: None,
            verified_at: Some(now.clone()),
            protected: true,
            ..Domain::added(name, OPS_UID, dkim_public, secret_name, now)
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
