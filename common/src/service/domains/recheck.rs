//! A verified domain stays local to the mail host only while its MX names
//! the mail host. Each one is looked at once a day; one whose MX has not
//! named the mail host for three days moves to failed (spec 3.1), leaves the
//! mailbox export, and its owner is told by email. A verifyDomain that passes
//! brings it back. `mta-export` runs this after each export (every minute in
//! AWS, the poll interval locally) over the domains that export read, a
//! bounded number at a time.

use chrono::{DateTime, Utc};

use super::check::mx_names_mail_host;
use super::record::{Domain, DomainStatus};
use crate::clock::iso;
use crate::context::Context;
use crate::error::ApiError;
use crate::keys;
use crate::service::caller::account::{self as accounts, OPS_UID};
use crate::service::system_mail::{self, Relay};
use crate::store::{Cond, StoreError, Update};

/// How often each domain's MX is looked at.
pub const EVERY_SECS: i64 = 86_400;
/// How long an MX may point elsewhere before the domain leaves the export.
pub const GRACE_SECS: i64 = 3 * 86_400;
/// The most domains looked at in one run (each is one DNS lookup).
pub const PER_RUN: usize = 25;

/// What one run did.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Outcome {
    /// Domains whose MX was looked at.
    pub looked: usize,
    /// Domains that left the export in this run.
    pub dropped: Vec<String>,
}

fn parsed(t: Option<&str>) -> Option<DateTime<Utc>> {
    t.and_then(|t| DateTime::parse_from_rfc3339(t).ok()).map(|t| t.to_utc())
}

/// Looks at the MX of the routed domains (an export's, as it read them) that
/// are due their daily look, at most [`PER_RUN`] of them.
pub async fn run_once(ctx: &Context, routed: &[Domain]) -> Result<Outcome, ApiError> {
    let now = ctx.clock.now();
    let service_domain = ctx.config.service_domain.as_str();
    let mail_host = ctx.config.mail_host.trim_end_matches('.').to_ascii_lowercase();
    let mut outcome = Outcome::default();
    for domain in routed {
        if outcome.looked == PER_RUN {
            break;
        }
        let due = parsed(domain.mx_checked_at.as_deref()).is_none_or(|t| (now - t).num_seconds() >= EVERY_SECS);
        // The service domain is the operators'; one never proved is not routed.
        if domain.name == service_domain || domain.uid == OPS_UID || domain.verified_at.is_none() || !due {
            continue;
        }
        outcome.looked += 1;
        let Some(found) = mx_names_mail_host(&domain.name, &mail_host, ctx.dns.mx(&domain.name).await) else {
            continue; // the lookup did not finish: look again next run
        };
        if look(ctx, domain, found, now).await? {
            outcome.dropped.push(domain.name.clone());
        }
    }
    Ok(outcome)
}

/// Records one look; true when the domain left the export just now.
async fn look(ctx: &Context, domain: &Domain, found: Result<(), String>, now: DateTime<Utc>) -> Result<bool, ApiError> {
    let key = keys::domain(&domain.uid, &domain.name);
    let live = Cond::And(vec![Cond::Exists, Cond::ne("status", DomainStatus::Removed)]);
    let update = Update::new().set("mxCheckedAt", iso(now));
    let reason = match found {
        Ok(()) => {
            ctx.store
                .update(&key, update.remove("mxMissingSince"), Some(live))
                .await?;
            return Ok(false);
        }
        Err(reason) => reason,
    };
    let since = parsed(domain.mx_missing_since.as_deref()).unwrap_or(now);
    let mut update = update.set("mxMissingSince", iso(since));
    let overdue = (now - since).num_seconds() >= GRACE_SECS && domain.routing_dropped_at.is_none();
    if overdue {
        update = update
            .set("status", DomainStatus::Failed)
            .set("failureReason", reason.clone())
            .set("routingDroppedAt", iso(now));
    }
    // Only one run drops it (and tells its owner once).
    let cond = if overdue {
        Cond::And(vec![live, Cond::missing("routingDroppedAt")])
    } else {
        live
    };
    match ctx.store.update(&key, update, Some(cond)).await {
        Ok(_) => {}
        Err(StoreError::ConditionFailed) => return Ok(false),
        Err(e) => return Err(e.into()),
    }
    if overdue {
        tell_owner(ctx, domain, &reason).await;
    }
    Ok(overdue)
}

/// The owner's email, sent through the system mail; a failure is logged (the
/// domain's state says it all the same).
async fn tell_owner(ctx: &Context, domain: &Domain, reason: &str) {
    let told = async {
        let account = accounts::get(ctx, &domain.uid)
            .await?
            .ok_or_else(|| anyhow::anyhow!("no account {}", domain.uid))?;
        let name = &domain.name;
        let body = format!(
            "Mail for {name} no longer reaches its mailboxes here: for three days its MX has not named \
             {mail_host}. {reason}\r\n\r\nThe domain is now failed and its mailboxes receive nothing until \
             the MX is fixed and verifyDomain passes again. Stored mail is kept.\r\n",
            mail_host = ctx.config.mail_host,
        );
        let subject = format!("{name}: mail is no longer received");
        system_mail::send(ctx, Relay::System, &account.email, &subject, &body).await
    };
    if let Err(e) = told.await {
        tracing::error!(error = %e, domain = %domain.name, "the owner of a dropped domain could not be told");
    }
}
