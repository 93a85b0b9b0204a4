//! The DNS records a domain's owner publishes, and the domain as the routes
//! show it.

use schemars::JsonSchema;
use serde::Serialize;

use super::dkim;
use super::record::{Checks, Domain, DomainStatus};
use crate::context::Context;

/// One DNS record to publish.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct DnsRecord {
    /// MX or TXT.
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub host: String,
    /// Copy this value exactly.
    pub value: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub priority: Option<u16>,
    /// mx, spf, dkim or dmarc.
    pub purpose: &'static str,
    /// DMARC is recommended, not required.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub optional: Option<bool>,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Instructions {
    pub records: Vec<DnsRecord>,
}

pub fn instructions(ctx: &Context, domain: &Domain) -> Instructions {
    let name = &domain.name;
    let record = |kind, host: String, value: String, purpose| DnsRecord {
        kind,
        host,
        value,
        priority: None,
        purpose,
        optional: None,
    };
    Instructions {
        records: vec![
            DnsRecord {
                priority: Some(10),
                ..record("MX", name.clone(), ctx.config.mail_host.clone(), "mx")
            },
            record("TXT", name.clone(), spf_value(ctx), "spf"),
            record(
                "TXT",
                format!("{}._domainkey.{name}", dkim::SELECTOR),
                dkim::record_value(&domain.dkim_public),
                "dkim",
            ),
            DnsRecord {
                optional: Some(true),
                ..record(
                    "TXT",
                    format!("_dmarc.{name}"),
                    format!("v=DMARC1; p=none; rua=mailto:dmarc@{}", ctx.config.service_domain),
                    "dmarc",
                )
            },
        ],
    }
}

pub(super) fn spf_value(ctx: &Context) -> String {
    format!("v=spf1 a:{} ~all", ctx.config.mail_host)
}

/// A domain as the domain routes show it (spec 2.8).
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DomainView {
    /// The hostname; `id` and `name` are the same.
    pub id: String,
    pub name: String,
    pub status: DomainStatus,
    pub dns_instructions: Instructions,
    pub created_at: String,
    pub verified_at: Option<String>,
    pub checked_at: Option<String>,
    /// Why verification failed, naming the row that missed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure_reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub checks: Option<Checks>,
}

pub fn view(ctx: &Context, domain: &Domain) -> DomainView {
    DomainView {
        id: domain.name.clone(),
        name: domain.name.clone(),
        status: domain.status,
        dns_instructions: instructions(ctx, domain),
        created_at: domain.created_at.clone(),
        verified_at: domain.verified_at.clone(),
        checked_at: domain.checked_at.clone(),
        failure_reason: domain.failure_reason.clone(),
        checks: domain.checks,
    }
}
