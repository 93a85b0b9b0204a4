//! The forwarding rules (spec 4.8) and the loop guard: a mailbox's targets
//! are checked against its mode, the service domain and the mailboxes that
//! exist, and no chain of forwards may lead back to it. A change that adds
//! forwarding commits only if the forwarding version it was checked against
//! is unchanged, so two concurrent changes cannot close a loop between them.

use serde_json::Value;

use crate::context::Context;
use crate::error::{self, ApiError};
use crate::keys;
use crate::service::mailboxes::mailbox::{MailboxStatus, Mode, by_address};
use crate::store::{Cond, StoreResult, Update, Write};

/// The mode rules of 4.8 for a mailbox at `address` on `domain`.
pub(super) async fn check_targets(
    ctx: &Context,
    address: &str,
    domain: &str,
    mode: Mode,
    targets: &[String],
) -> Result<(), ApiError> {
    match (mode, targets.is_empty()) {
        (Mode::Hosted, false) => return Err(error::FORWARD_TO_HOSTED.into()),
        (Mode::Forward | Mode::Both, true) => return Err(error::FORWARD_TO_REQUIRED.into()),
        _ => {}
    }
    let service = ctx.config.service_domain.as_str();
    for target in targets {
        if target == address {
            return Err(error::FORWARD_TO_SELF.into());
        }
        let target_domain = crate::values::email_domain(target);
        if target_domain == service || target_domain.ends_with(&format!(".{service}")) {
            return Err(error::FORWARD_TO_SERVICE.with(service));
        }
        if target_domain == domain && !by_address(ctx, target).await?.is_some_and(|m| m.is_active()) {
            return Err(error::FORWARD_TO_MISSING.with_each(&[target, &domain]));
        }
    }
    if forwards_back(ctx, address, targets).await? {
        return Err(error::FORWARDING_LOOP.into());
    }
    Ok(())
}

/// Whether following forwards from `targets` through this service's mailboxes
/// comes back to `address`. Each address is visited once, however long the
/// chain: the walk ends because the set of mailboxes is finite.
async fn forwards_back(ctx: &Context, address: &str, targets: &[String]) -> StoreResult<bool> {
    let mut seen = std::collections::HashSet::new();
    let mut queue: Vec<String> = targets.to_vec();
    while let Some(next) = queue.pop() {
        if next == address {
            return Ok(true);
        }
        if !seen.insert(next.clone()) {
            continue;
        }
        if let Some(m) = by_address(ctx, &next).await?
            && m.is_active()
            && m.mode != Mode::Hosted
        {
            queue.extend(m.forward_to.iter().filter(|t| **t != m.address).cloned());
        }
    }
    Ok(false)
}

/// How many times a forwarding change is validated again after losing a race.
pub(super) const ROUTING_ATTEMPTS: usize = 5;

/// The forwarding version a change was validated against: `None` for a change
/// that adds no forwarding (it cannot close a loop).
pub(super) async fn routing_version(ctx: &Context, mode: Mode) -> StoreResult<Option<i64>> {
    if mode == Mode::Hosted {
        return Ok(None);
    }
    let found = ctx.store.get(&keys::forwarding()).await?;
    Ok(Some(
        found
            .and_then(|i| i.get("version").and_then(Value::as_i64))
            .unwrap_or(0),
    ))
}

/// What a forwarding change commits with: the forwarding version unchanged since
/// validation (so two changes can never form a loop between them), and every
/// same-domain target still an active mailbox.
pub(super) fn routing_guards(version: Option<i64>, domain: &str, targets: &[String]) -> Vec<Write> {
    let Some(version) = version else { return Vec::new() };
    let unchanged = match version {
        0 => Cond::missing("version"),
        v => Cond::eq("version", v),
    };
    let mut writes = vec![Write::Update {
        key: keys::forwarding(),
        update: Update::new().add("version", 1),
        cond: Some(unchanged),
    }];
    for target in targets {
        if let Some((local, target_domain)) = target.rsplit_once('@')
            && target_domain == domain
        {
            writes.push(Write::Check {
                key: keys::mailbox(domain, local),
                cond: Cond::eq("status", MailboxStatus::Active),
            });
        }
    }
    writes
}
