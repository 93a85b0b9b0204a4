//! Routes not yet moved into the catalogue (`crate::api`), served by
//! `handlers` behind the `authorize` middleware until they are.

use axum::http::Method;

use crate::api::Family;
use crate::auth::Access;

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

pub const LEGACY: &[Route] = &[
    route(Method::POST, "/addDomain", Domains, Customer),
    route(Method::GET, "/getDnsInstructions", Domains, Customer),
    route(Method::POST, "/verifyDomain", Domains, Customer),
    route(Method::GET, "/listDomains", Domains, Customer),
    route(Method::POST, "/operatorRemoveDomain", Domains, Operator),
    route(Method::POST, "/addMailbox", Mailboxes, Customer),
    route(Method::POST, "/setMailboxMode", Mailboxes, Customer),
    route(Method::POST, "/deleteMailbox", Mailboxes, Customer),
    route(Method::POST, "/issueMailboxCredential", Mailboxes, Customer),
    route(Method::POST, "/sendMail", Send, Mail),
];

/// The legacy route for a method and a path (with or without `/api`).
pub fn find(method: &Method, path: &str) -> Option<&'static Route> {
    let path = crate::api::strip_api(path);
    LEGACY.iter().find(|r| r.method == method && r.path == path)
}
