//! The DNS check: MX, SPF and DKIM must name the mail host and the domain's
//! key; DMARC is reported. The result is stored on the domain.

use super::dkim;
use super::instructions::spf_value;
use super::record::{Checks, Domain, DomainStatus};
use crate::clock::iso;
use crate::context::Context;
use crate::dns::Lookup;
use crate::error::{self, ApiError};
use crate::keys;
use crate::messages;
use crate::store::{Cond, StoreError, Update, record};

enum Outcome {
    /// A lookup did not finish: nothing is known, nothing changes.
    Transient,
    Checked {
        checks: Checks,
        reasons: Vec<String>,
    },
}

/// Whether the preferred MX (every record of the lowest preference) is the
/// mail host: `Ok`, or the reason it is not; `None` when the lookup did not
/// finish.
pub(crate) fn mx_names_mail_host(
    name: &str,
    mail_host: &str,
    mx: Lookup<Vec<(u16, String)>>,
) -> Option<Result<(), String>> {
    let publish = || messages::MX_MISSING.with_each(&[&name, &mail_host]);
    Some(match mx {
        Lookup::Transient(_) => return None,
        Lookup::Missing => Err(publish()),
        Lookup::Found(records) => {
            let lowest = records.iter().map(|(pref, _)| *pref).min().unwrap_or(0);
            let preferred: Vec<&String> = records.iter().filter(|(p, _)| *p == lowest).map(|(_, h)| h).collect();
            match preferred.iter().find(|h| h.as_str() != mail_host) {
                None if !preferred.is_empty() => Ok(()),
                None => Err(publish()),
                Some(other) => Err(messages::MX_PREVIOUS_HOST.with_each(&[&name, other, &mail_host])),
            }
        }
    })
}

async fn check_dns(ctx: &Context, domain: &Domain) -> Outcome {
    let name = &domain.name;
    let mail_host = ctx.config.mail_host.trim_end_matches('.').to_ascii_lowercase();
    let dkim_host = format!("{}._domainkey.{name}", dkim::SELECTOR);
    let dmarc_host = format!("_dmarc.{name}");
    let (mx, txt, dkim_txt, dmarc_txt) = tokio::join!(
        ctx.dns.mx(name),
        ctx.dns.txt(name),
        ctx.dns.txt(&dkim_host),
        ctx.dns.txt(&dmarc_host)
    );
    let mut reasons = Vec::new();
    let mut checks = Checks::default();

    match mx_names_mail_host(name, &mail_host, mx) {
        None => return Outcome::Transient,
        Some(Ok(())) => checks.mx = true,
        Some(Err(reason)) => reasons.push(reason),
    }
    match txt {
        Lookup::Transient(_) => return Outcome::Transient,
        Lookup::Missing => reasons.push(messages::SPF_MISSING.with_each(&[name, &spf_value(ctx)])),
        Lookup::Found(records) => {
            let spf: Vec<&String> = records
                .iter()
                .filter(|r| r.trim().to_ascii_lowercase().starts_with("v=spf1"))
                .collect();
            match spf.as_slice() {
                [] => reasons.push(messages::SPF_MISSING.with_each(&[name, &spf_value(ctx)])),
                [one] if spf_allows(one, &mail_host, &ctx.config.service_domain) => checks.spf = true,
                [_] => reasons.push(messages::SPF_NOT_ALLOWING.with_each(&[name, &mail_host])),
                _ => reasons.push(messages::SPF_MANY.with_each(&[name, &spf.len()])),
            }
        }
    }
    match dkim_txt {
        Lookup::Transient(_) => return Outcome::Transient,
        Lookup::Missing => reasons.push(messages::DKIM_MISSING.with_each(&[&dkim_host])),
        Lookup::Found(records) => {
            if records
                .iter()
                .any(|r| dkim::published_key(r).as_deref() == Some(domain.dkim_public.as_str()))
            {
                checks.dkim = true;
            } else {
                reasons.push(messages::DKIM_MISMATCH.with_each(&[&dkim_host]));
            }
        }
    }
    // DMARC is optional: it is reported but never fails the domain.
    if let Lookup::Found(records) = dmarc_txt {
        checks.dmarc = records
            .iter()
            .any(|r| r.trim().to_ascii_uppercase().starts_with("V=DMARC1"));
    }
    Outcome::Checked { checks, reasons }
}

fn spf_allows(record: &str, mail_host: &str, service_domain: &str) -> bool {
    record.split_whitespace().skip(1).any(|term| {
        let term = term.trim_start_matches('+').to_ascii_lowercase();
        term == format!("a:{mail_host}") || term == "mx" || term == format!("include:{service_domain}")
    })
}

/// Runs the checks and stores the result; `None` when a lookup did not finish.
pub(super) async fn check_and_store(ctx: &Context, domain: &Domain) -> Result<Option<Domain>, ApiError> {
    let Outcome::Checked { checks, reasons } = check_dns(ctx, domain).await else {
        return Ok(None);
    };
    let now = iso(ctx.clock.now());
    let verified = checks.mx && checks.spf && checks.dkim;
    let mut update = Update::new()
        .set("checks", serde_json::to_value(checks).expect("checks serialize"))
        .set("checkedAt", now.clone())
        .set(
            "status",
            if verified {
                DomainStatus::Verified
            } else {
                DomainStatus::Failed
            },
        );
    update = if verified {
        // Verified again: routed again, whatever the daily look found before.
        let update = update
            .remove("failureReason")
            .remove("mxMissingSince")
            .remove("routingDroppedAt");
        if domain.verified_at.is_none() {
            update.set("verifiedAt", now)
        } else {
            update
        }
    } else {
        update.set("failureReason", reasons.join(" "))
    };
    let live = Cond::And(vec![Cond::Exists, Cond::ne("status", DomainStatus::Removed)]);
    match ctx
        .store
        .update(&keys::domain(&domain.uid, &domain.name), update, Some(live))
        .await
    {
        Ok(updated) => Ok(Some(record(updated)?)),
        Err(StoreError::ConditionFailed) => Err(error::NOT_FOUND.into()),
        Err(e) => Err(e.into()),
    }
}
