//! Handlers: parse the request, call one service, write the response. They
//! never touch the store.

use axum::Json as Reply;
use axum::extract::{Query, State};
use axum::routing::{MethodRouter, on};
use serde_json::Value;

use super::AppState;
use super::extract::{Caller, Json};
use super::routes::Route;
use crate::auth::{self, IdentityUser};
use crate::error::ApiError;
use crate::service::{accounts, domains, mailboxes, send};
use crate::validate::Fields;

type Result<T = Reply<Value>> = std::result::Result<T, ApiError>;

/// The handler of a route in the table.
pub(super) fn endpoint(route: &Route) -> MethodRouter<AppState> {
    let filter = axum::routing::MethodFilter::try_from(route.method.clone()).expect("route methods are standard");
    match (route.method.as_str(), route.path) {
        ("POST", "/addDomain") => on(filter, add_domain),
        ("GET", "/getDnsInstructions") => on(filter, get_dns_instructions),
        ("POST", "/verifyDomain") => on(filter, verify_domain),
        ("GET", "/listDomains") => on(filter, list_domains),
        ("POST", "/operatorRemoveDomain") => on(filter, operator_remove_domain),
        ("POST", "/addMailbox") => on(filter, add_mailbox),
        ("POST", "/setMailboxMode") => on(filter, set_mailbox_mode),
        ("POST", "/deleteMailbox") => on(filter, delete_mailbox),
        ("POST", "/issueMailboxCredential") => on(filter, issue_mailbox_credential),
        ("POST", "/sendMail") => on(filter, send_mail),
        (method, path) => panic!("no handler for {method} {path}"),
    }
}

fn operator(auth: &auth::Authenticated) -> std::result::Result<&IdentityUser, ApiError> {
    match &auth.caller {
        auth::Caller::Identity(user) if user.operator => Ok(user),
        _ => Err(crate::error::OPERATOR_ONLY.into()),
    }
}

// ---------------------------------------------------------------- domains

type QueryMap = Query<serde_json::Map<String, Value>>;

async fn add_domain(State(ctx): State<AppState>, Caller(auth): Caller, Json(body): Json) -> Result {
    let account = accounts::acting(&ctx, &auth.caller).await?;
    Ok(Reply(domains::add_domain(&ctx, &account, body.str("domain")?).await?))
}

fn domain_name(fields: &Fields) -> std::result::Result<String, ApiError> {
    let raw = fields.str("domainId")?.or(fields.str("domain")?);
    let raw = raw.ok_or(crate::error::DOMAIN_ID_REQUIRED)?;
    Ok(crate::validate::hostname(&raw).ok_or(crate::error::DOMAIN_INVALID)?)
}

async fn get_dns_instructions(State(ctx): State<AppState>, Caller(auth): Caller, Query(q): QueryMap) -> Result {
    let account = accounts::acting(&ctx, &auth.caller).await?;
    Ok(Reply(
        domains::dns_instructions(
            &ctx,
            &account,
            &domain_name(&Fields::new(q, crate::validate::Origin::Query))?,
        )
        .await?,
    ))
}

async fn verify_domain(State(ctx): State<AppState>, Caller(auth): Caller, Json(body): Json) -> Result {
    let account = accounts::acting(&ctx, &auth.caller).await?;
    Ok(Reply(
        domains::verify_domain(&ctx, &account, &domain_name(&body)?).await?,
    ))
}

async fn list_domains(State(ctx): State<AppState>, Caller(auth): Caller, Query(q): QueryMap) -> Result {
    let account = accounts::acting(&ctx, &auth.caller).await?;
    // An operator may read another account; everyone else reads their own.
    let uid = match Fields::new(q, crate::validate::Origin::Query).str("uid")? {
        Some(uid) if auth.caller.is_operator() => uid,
        _ => account.uid,
    };
    Ok(Reply(domains::list_domains(&ctx, &uid).await?))
}

async fn operator_remove_domain(State(ctx): State<AppState>, Caller(auth): Caller, Json(body): Json) -> Result {
    let actor = operator(&auth)?.email.clone();
    let input = domains::RemoveInput {
        uid: body.str("uid")?,
        owner_email: body.str("ownerEmail")?,
        domain: body.str("domainId")?.or(body.str("domain")?),
        confirm: body.str("confirm")?,
    };
    Ok(Reply(domains::operator_remove_domain(&ctx, &actor, input).await?))
}

// -------------------------------------------------------------- mailboxes

async fn add_mailbox(State(ctx): State<AppState>, Caller(auth): Caller, Json(body): Json) -> Result {
    let account = accounts::acting(&ctx, &auth.caller).await?;
    let input = mailboxes::MailboxInput::parse(&body)?;
    Ok(Reply(
        mailboxes::add_mailbox(&ctx, &account, auth.caller.is_operator(), input).await?,
    ))
}

async fn set_mailbox_mode(State(ctx): State<AppState>, Caller(auth): Caller, Json(body): Json) -> Result {
    let account = accounts::acting(&ctx, &auth.caller).await?;
    let input = mailboxes::MailboxInput::parse(&body)?;
    Ok(Reply(
        mailboxes::set_mailbox_mode(&ctx, &account, auth.caller.is_operator(), input).await?,
    ))
}

async fn delete_mailbox(State(ctx): State<AppState>, Caller(auth): Caller, Json(body): Json) -> Result {
    let account = accounts::acting(&ctx, &auth.caller).await?;
    let target = mailboxes::parse_delete_target(&body)?;
    Ok(Reply(
        mailboxes::delete_mailbox(&ctx, &account, auth.caller.is_operator(), target).await?,
    ))
}

async fn issue_mailbox_credential(State(ctx): State<AppState>, Caller(auth): Caller, Json(body): Json) -> Result {
    let account = accounts::acting(&ctx, &auth.caller).await?;
    Ok(Reply(
        mailboxes::issue_credential(&ctx, &account, auth.caller.is_operator(), body.str("address")?).await?,
    ))
}

// ------------------------------------------------------------------ send

async fn send_mail(State(ctx): State<AppState>, Caller(auth): Caller, Json(body): Json) -> Result {
    Ok(Reply(send::send_mail(&ctx, &auth.caller, &body, true).await?))
}
