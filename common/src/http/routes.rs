//! The route table: every route, its family (which Lambda serves it) and the
//! credentials it accepts. Written once; the router, the auth middleware, the
//! SAM template check and the auth-matrix test all read it.

use axum::http::Method;

use crate::auth::Access;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Family {
    Onboarding,
    Credits,
    Admin,
    Domains,
    Mailboxes,
    Send,
}

impl Family {
    pub const ALL: &[Family] = &[
        Family::Onboarding,
        Family::Credits,
        Family::Admin,
        Family::Domains,
        Family::Mailboxes,
        Family::Send,
    ];

    /// The function crate under `functions/` that serves this family.
    pub fn function(self) -> &'static str {
        match self {
            Family::Onboarding => "onboarding",
            Family::Credits => "credits",
            Family::Admin => "admin",
            Family::Domains => "domains",
            Family::Mailboxes => "mailboxes",
            Family::Send => "send",
        }
    }
}

#[derive(Debug, Clone)]
pub struct Route {
    pub method: Method,
    /// The root path; every route also answers under `/api`.
    pub path: &'static str,
    pub family: Family,
    pub access: Access,
}

const fn route(method: Method, path: &'static str, family: Family, access: Access) -> Route {
    Route {
        method,
        path,
        family,
        access,
    }
}

use Access::*;
use Family::*;

pub const ROUTES: &[Route] = &[
    route(Method::POST, "/requestAccess", Onboarding, Public),
    route(Method::POST, "/verifyAccessRequest", Onboarding, Public),
    route(Method::POST, "/getRequestStatus", Onboarding, Public),
    route(Method::POST, "/getAccountStatus", Onboarding, AccountKey),
    route(Method::GET, "/credits", Credits, CreditsRead),
    route(Method::POST, "/credits", Credits, CreditsControl),
    route(Method::POST, "/admin/requestDecision", Admin, Operator),
    route(Method::GET, "/admin/domainAllowlist", Admin, Operator),
    route(Method::POST, "/admin/domainAllowlist", Admin, Operator),
    route(Method::DELETE, "/admin/domainAllowlist", Admin, Operator),
    route(Method::GET, "/admin/domainAllowlist/check", Admin, Operator),
    route(Method::POST, "/admin/requestDelete", Admin, Operator),
    route(Method::GET, "/admin/requestDuplicates", Admin, Operator),
    route(Method::POST, "/addDomain", Domains, Customer),
    route(Method::GET, "/getDnsInstructions", Domains, Customer),
    route(Method::POST, "/verifyDomain", Domains, Customer),
    route(Method::GET, "/listDomains", Domains, Customer),
    route(Method::POST, "/operatorRemoveDomain", Domains, Operator),
    route(Method::POST, "/addMailbox", Mailboxes, Customer),
    route(Method::POST, "/setMailboxMode", Mailboxes, Customer),
    route(Method::POST, "/deleteMailbox", Mailboxes, Customer),
    route(Method::POST, "/issueMailboxCredential", Mailboxes, Customer),
    route(Method::GET, "/mtaMailboxExport", Mailboxes, Sync),
    route(Method::POST, "/mtaMailboxExport", Mailboxes, Sync),
    route(Method::POST, "/sendMail", Send, Mail),
];

/// The route for a method and a path (with or without the `/api` prefix).
pub fn find(method: &Method, path: &str) -> Option<&'static Route> {
    let path = path.strip_prefix("/api").filter(|p| p.starts_with('/')).unwrap_or(path);
    ROUTES.iter().find(|r| r.method == method && r.path == path)
}
