//! Domains (spec 2.8, 3.1, 4.9, 4.10): add with a DKIM key and an immediate DNS
//! check, verify, instructions, list, and operator removal.
//!
//! Items (see `keys`): the domain record, the account's one-domain slot, the
//! claim on a hostname, and the registry of live domains the export walks.
//!
//! The files: `record` (the stored domain and its reads), `instructions`
//! (the records to publish and the domain as the routes show it), `check`
//! (the DNS check and its stored result), `routes` (add, verify,
//! instructions, and a lapsed claim's release) and `service_domain` (the
//! operators' own domain).

mod check;
mod instructions;
mod record;
mod routes;
mod service_domain;

pub use instructions::{DnsRecord, DomainView, Instructions, instructions, view};
pub use record::{Checks, Domain, DomainStatus, claimant, dkim_secret_name, get, new_dkim_key, of_account, owned};
pub use routes::{
    AddDomainInput, AddDomainOutput, DnsInstructionsOutput, DomainIdInput, DomainState, UNVERIFIED_CLAIM_DAYS,
    VerifyDomainOutput, add_domain, dns_instructions, verify_domain,
};
pub use service_domain::ensure_service_domain;
pub mod dkim;
pub mod recheck;
pub mod section;
