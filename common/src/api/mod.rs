//! THE CATALOGUE: every operation of the service, declared once.
//!
//! An [`Operation`] names its typed input and output (with their JSON
//! Schemas), its REST method and path, its MCP tool, its access rule, and the
//! service function it calls. Operations are grouped in one [`Section`] per
//! Lambda family. The axum router (`http`), the MCP `tools/list` and
//! `tools/call` (`mcp`) and the OpenAPI document (`openapi`) are all built
//! from [`CATALOGUE`]; none of them holds a rule of its own. A family's
//! function names only its own section, so it links only its own services.

use axum::http::Method;

use crate::auth::{Access, Permission};
use crate::error::{ApiError, Problem};
use crate::service::caller::Call;
use crate::validate::Fields;

pub use crate::service::accounts::section::{CREDITS, DOMAIN_LIST, ONBOARDING};
pub use crate::service::caller::Download;
pub use crate::service::caller::operation::*;
pub use crate::service::delivery::section::{DELIVERY, DMARC};
pub use crate::service::domains::section::DOMAINS;
pub use crate::service::guardrails::section::GUARDRAILS;
pub use crate::service::mailboxes::section::MAILBOXES;
pub use crate::service::operators::section::{ADMIN, MAIL_HOST, REMOVAL};
pub use crate::service::receiving::section::{CONVERSATION, DRAFTS, INBOX};
pub use crate::service::sending::section::{HOLDS, KEYS, SEND};
pub use crate::service::webhooks::section::WEBHOOKS;

/// The API description and MCP server version (spec part 9).
pub const VERSION: &str = "0.7.0";
/// The MCP protocol revision this endpoint speaks.
pub const MCP_PROTOCOL_VERSION: &str = "2024-11-05";
/// The most messages one JSON-RPC batch to POST /mcp may hold.
pub const MCP_MAX_BATCH: usize = 20;

/// Which Lambda function serves a route (one binary per family).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Family {
    Onboarding,
    Credits,
    Admin,
    Domains,
    Mailboxes,
    /// GET/POST /inbox and GET /attachment: reading stored mail.
    Inbox,
    /// GET/POST/DELETE /drafts.
    Drafts,
    /// /webhooks, its delivery log and replay.
    Webhooks,
    Send,
    /// `POST /mcp` (every tool), `GET /mcp`, and the API description.
    Mcp,
}

impl Family {
    pub const ALL: &[Family] = &[
        Family::Onboarding,
        Family::Credits,
        Family::Admin,
        Family::Domains,
        Family::Mailboxes,
        Family::Inbox,
        Family::Drafts,
        Family::Webhooks,
        Family::Send,
        Family::Mcp,
    ];

    /// The function crate under `functions/` that serves this family.
    pub fn function(self) -> &'static str {
        match self {
            Family::Onboarding => "onboarding",
            Family::Credits => "credits",
            Family::Admin => "admin",
            Family::Domains => "domains",
            Family::Mailboxes => "mailboxes",
            Family::Inbox => "inbox",
            Family::Drafts => "drafts",
            Family::Webhooks => "webhooks",
            Family::Send => "send",
            Family::Mcp => "mcp",
        }
    }
}

/// Every section, in the order of `tools/list` and the API description.
pub static CATALOGUE: &[&Section] = &[
    &ONBOARDING,
    &ADMIN,
    &CREDITS,
    &DOMAINS,
    &DOMAIN_LIST,
    &DMARC,
    &REMOVAL,
    &MAILBOXES,
    &MAIL_HOST,
    &SEND,
    &CONVERSATION,
    &INBOX,
    &DRAFTS,
    &WEBHOOKS,
    &DELIVERY,
    &HOLDS,
    &KEYS,
    &GUARDRAILS,
];

/// Which sections each route family's function serves: the one place the
/// pairing is written. A function's `main.rs` is `common::serve!(NAME)`, so
/// it links only these sections' services.
pub mod functions {
    use super::Section;

    pub static ONBOARDING: &[&Section] = &[&super::ONBOARDING, &super::KEYS, &super::GUARDRAILS];
    pub static CREDITS: &[&Section] = &[&super::CREDITS];
    pub static ADMIN: &[&Section] = &[&super::ADMIN];
    pub static DOMAINS: &[&Section] = &[&super::DOMAINS, &super::DOMAIN_LIST, &super::DMARC, &super::REMOVAL];
    pub static MAILBOXES: &[&Section] = &[&super::MAILBOXES, &super::MAIL_HOST];
    pub static INBOX: &[&Section] = &[&super::INBOX];
    pub static DRAFTS: &[&Section] = &[&super::DRAFTS];
    pub static WEBHOOKS: &[&Section] = &[&super::WEBHOOKS];
    pub static SEND: &[&Section] = &[&super::SEND, &super::CONVERSATION, &super::DELIVERY, &super::HOLDS];
}

impl Family {
    /// The sections this family's function serves (none for `mcp`, which
    /// serves every tool).
    pub fn sections(self) -> &'static [&'static Section] {
        match self {
            Family::Onboarding => functions::ONBOARDING,
            Family::Credits => functions::CREDITS,
            Family::Admin => functions::ADMIN,
            Family::Domains => functions::DOMAINS,
            Family::Mailboxes => functions::MAILBOXES,
            Family::Inbox => functions::INBOX,
            Family::Drafts => functions::DRAFTS,
            Family::Webhooks => functions::WEBHOOKS,
            Family::Send => functions::SEND,
            Family::Mcp => &[],
        }
    }
}

/// The family whose function serves a section.
pub fn family_of(section: &Section) -> Family {
    *Family::ALL
        .iter()
        .find(|family| family.sections().iter().any(|s| std::ptr::eq(*s, section)))
        .expect("every section is served by a function")
}

/// Every operation, in catalogue order.
pub fn operations() -> impl Iterator<Item = &'static Operation> {
    CATALOGUE.iter().flat_map(|section| section.operations)
}

impl Operation {
    /// Runs the operation for an admitted caller: the one path REST and MCP
    /// share. A customer route's account must have its setup complete before
    /// its input is even read (403 before 400, as the route matrix says).
    pub async fn execute(&self, call: &Call<'_>, fields: Result<Fields, ApiError>) -> Result<Output, ApiError> {
        // Only a service that confirms the caller itself may start on a
        // key as last read; nothing is written or answered before then.
        if !self.rest.as_ref().is_some_and(|rest| rest.starts_on_known_key) {
            call.confirmed().await?;
        }
        if !self.audited() {
            let outcome = self.run(call, fields).await;
            call.confirmed().await?;
            return outcome;
        }
        use crate::service::guardrails::audit;
        let target = audit::target_of(fields.as_ref().ok());
        call.will_audit(self.id, target.clone());
        let outcome = self.run(call, fields).await;
        call.confirmed().await?;
        match (call.audit_written(), &outcome) {
            // The service's transaction wrote the row as a success.
            (Some(_), Ok(_)) => {}
            (Some(key), Err(refused)) => audit::amend(call, &key, refused).await,
            // What happened, and who was refused for want of a permission or
            // a mailbox; a malformed request changed nothing and leaves no row.
            (None, _) if outcome.as_ref().map_or_else(|e| e.status == 403, |_| true) => {
                audit::note(call, self.id, target, outcome.as_ref().map(|_| ())).await
            }
            (None, _) => {}
        }
        outcome
    }

    async fn run(&self, call: &Call<'_>, fields: Result<Fields, ApiError>) -> Result<Output, ApiError> {
        if let Some(permission) = self.permission {
            call.caller.permits(permission)?;
        }
        if self.access == Access::Customer {
            call.account().await?;
        }
        (self.io.run)(call, fields).await
    }

    /// Whether a call goes in the audit log: a change (not a read, not a
    /// draft, not the inbox's read flags and folders) by a caller the log can
    /// name (not a public or mail-host route).
    pub fn audited(&self) -> bool {
        let changes = match (&self.tool, &self.rest) {
            (Some(tool), _) => !tool.hints.read_only,
            (None, Some(rest)) => rest.method != Method::GET,
            (None, None) => false,
        };
        changes
            && !matches!(self.access, Access::Public | Access::Sync)
            && !matches!(self.permission, Some(Permission::Read | Permission::Draft))
    }

    /// Who it refuses, and why: its access rule's refusals, and a scoped
    /// key's without the permission it needs.
    pub fn refusals(&self) -> Vec<Problem> {
        let mut refusals = self.access.refusals();
        refusals.extend(self.permission.map(Permission::missing));
        refusals
    }

    pub fn by_tool(name: &str) -> Option<&'static Operation> {
        operations().find(|op| op.tool.as_ref().is_some_and(|t| t.name == name))
    }
}

/// A path without the `/api` prefix the spec's second and third hosts use.
pub fn strip_api(path: &str) -> &str {
    path.strip_prefix("/api").filter(|p| p.starts_with('/')).unwrap_or(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each problem an operation's input is declared with is among the
    /// errors it documents (its `errors` list or its access rule's), so the
    /// list is checked here, not only by the after-suite test of what the
    /// routes answered (tests/api/errors_seen.rs).
    #[test]
    fn every_input_problem_is_in_its_operations_errors() {
        let mut missing = Vec::new();
        let mut named = 0;
        for op in operations() {
            let documented: Vec<Problem> = op.errors.iter().copied().chain(op.refusals()).collect();
            for problem in (op.io.input_problems)() {
                named += 1;
                if !documented.contains(&problem) {
                    missing.push(format!("{}: {:?}", op.id, problem.sentence));
                }
            }
        }
        assert!(
            named > 100,
            "only {named} problems were named: the inputs were not read"
        );
        assert!(
            missing.is_empty(),
            "input problems not in errors:\n{}",
            missing.join("\n")
        );
    }

    /// Each route ("POST /addDomain", or a bare "getRequestStatus") and each
    /// MCP tool ("(MCP: add_domain, ...)") an account's next step names is
    /// one the catalogue serves, so an agent following it finds the door.
    #[test]
    fn every_route_and_tool_a_next_step_names_exists() {
        let routes: Vec<String> = operations()
            .filter_map(|op| op.rest.as_ref().map(|r| format!("{} {}", r.method, r.path)))
            .collect();
        let named_routes = |text: &str| -> Vec<String> {
            let words: Vec<&str> = text
                .split(|c: char| c.is_whitespace() || c == ',' || c == '(' || c == ')')
                .map(|w| w.trim_end_matches(['.', ':']))
                .collect();
            let mut found = Vec::new();
            for (i, w) in words.iter().enumerate() {
                if let Some(path) = w.strip_prefix('/') {
                    found.push(format!("{} /{path}", words[i - 1]));
                }
            }
            found
        };
        let mut checked = 0;
        for next in [
            crate::messages::NEXT_SETTING_UP,
            crate::messages::NEXT_ADD_DOMAIN,
            crate::messages::NEXT_VERIFY_DOMAIN,
            crate::messages::NEXT_ADD_MAILBOX,
        ] {
            let text = next.as_str();
            for route in named_routes(text) {
                assert!(routes.contains(&route), "{text:?} names {route}, which nothing serves");
                checked += 1;
            }
            let tools = text.split("(MCP: ").nth(1).and_then(|t| t.split(')').next());
            let tools = tools.unwrap_or_else(|| panic!("{text:?} names no MCP tool"));
            for tool in tools.split(", ") {
                assert!(
                    Operation::by_tool(tool).is_some(),
                    "{text:?} names the tool {tool}, which is not one"
                );
                checked += 1;
            }
        }
        assert!(
            routes.contains(&"POST /getRequestStatus".to_string()),
            "the setting-up step names getRequestStatus"
        );
        assert_eq!(checked, 9, "every step's routes and tools were read");
    }

    /// Each section of the catalogue is served by exactly one route family's
    /// function, and each function serves only catalogued sections.
    #[test]
    fn every_section_has_one_function() {
        for section in CATALOGUE {
            let serving: Vec<Family> = Family::ALL
                .iter()
                .copied()
                .filter(|f| f.sections().iter().any(|s| std::ptr::eq(*s, *section)))
                .collect();
            assert_eq!(
                serving.len(),
                1,
                "{:?} serve a section of {:?}",
                serving,
                section.operations.first().map(|op| op.id)
            );
        }
        for family in Family::ALL {
            for section in family.sections() {
                assert!(
                    CATALOGUE.iter().any(|s| std::ptr::eq(*s, *section)),
                    "{family:?} serves an uncatalogued section"
                );
            }
        }
    }
}
