//! Domains: the operations this capability declares, each
//! beside the service it runs. the api module gathers every section into the
//! catalogue (REST, MCP and OpenAPI come from it).

use super::routes;
use crate::auth::Access::*;
use crate::auth::Permission;
use crate::error::*;
use crate::service::caller::operation::{Hints, Operation, Section, get, io, post, tool};

pub static DOMAINS: Section = Section {
    operations: &[
        Operation {
            id: "addDomain",
            rest: post("/addDomain"),
            tool: tool("add_domain", Hints::SET.open_world()),
            access: Customer,
            permission: Some(Permission::Manage),
            summary: "Add the account's domain and get its DNS records",
            description: "Step 3 of onboarding (standard key or signed-in person, setup complete). Adds the \
                          account's one domain with a new DKIM key, checks its DNS at once, and returns the MX, \
                          SPF and DKIM records to publish (domain.dnsInstructions.records; copy each value). The \
                          same name again answers created false and changes nothing. Free.",
            errors: &[
                DOMAIN_REQUIRED,
                DOMAIN_INVALID,
                PRODUCT_DOMAIN,
                SETUP_INCOMPLETE,
                ONE_DOMAIN_PER_ACCOUNT,
                DOMAIN_CLAIMED,
                DOMAIN_CHANGED,
            ],
            io: io!(routes::add_domain, routes::AddDomainInput, routes::AddDomainOutput),
        },
        Operation {
            id: "getDnsInstructions",
            rest: get("/getDnsInstructions"),
            tool: tool("get_dns_instructions", Hints::READ),
            access: Customer,
            permission: Some(Permission::Read),
            summary: "The DNS records to publish for the account's domain",
            description: "The MX, SPF, DKIM and optional DMARC records for domainId, with the domain's status.",
            errors: &[DOMAIN_ID_REQUIRED, DOMAIN_INVALID, SETUP_INCOMPLETE, NOT_FOUND],
            io: io!(
                routes::dns_instructions,
                routes::DomainIdInput,
                routes::DnsInstructionsOutput
            ),
        },
        Operation {
            id: "verifyDomain",
            rest: post("/verifyDomain"),
            tool: tool("verify_domain", Hints::SET.open_world()),
            access: Customer,
            permission: Some(Permission::Manage),
            summary: "Check the domain's DNS records again",
            description: "Step 4 of onboarding, after publishing the records: verified when MX, SPF and DKIM all \
                          match; otherwise failureReason says which record missed. transient true means a lookup \
                          did not finish and nothing changed.",
            errors: &[DOMAIN_ID_REQUIRED, DOMAIN_INVALID, SETUP_INCOMPLETE, NOT_FOUND],
            io: io!(routes::verify_domain, routes::DomainIdInput, routes::VerifyDomainOutput),
        },
    ],
};
