//! Handlers: parse the request, call one service, write the response. They
//! never touch the store.

use axum::Json as Reply;
use axum::extract::{Query, State};
use axum::routing::{MethodRouter, on};
use serde_json::Value;

use super::AppState;
use super::extract::{Caller, ClientIp, Json};
use super::routes::Route;
use crate::auth::{self, IdentityUser};
use crate::error::ApiError;
use crate::service::{accounts, admin, domains, mailboxes, mta_export, onboarding, send};
use crate::validate::Fields;

type Result<T = Reply<Value>> = std::result::Result<T, ApiError>;

/// The handler of a route in the table.
pub(super) fn endpoint(route: &Route) -> MethodRouter<AppState> {
    let filter = axum::routing::MethodFilter::try_from(route.method.clone()).expect("route methods are standard");
    match (route.method.as_str(), route.path) {
        ("POST", "/requestAccess") => on(filter, request_access),
        ("POST", "/verifyAccessRequest") => on(filter, verify_access_request),
        ("POST", "/getRequestStatus") => on(filter, get_request_status),
        ("POST", "/getAccountStatus") => on(filter, get_account_status),
        ("POST", "/admin/requestDecision") => on(filter, request_decision),
        ("GET", "/admin/domainAllowlist") => on(filter, list_allowlist),
        ("POST", "/admin/domainAllowlist") => on(filter, add_allowlist),
        ("DELETE", "/admin/domainAllowlist") => on(filter, remove_allowlist),
        ("GET", "/admin/domainAllowlist/check") => on(filter, check_allowlist),
        ("POST", "/admin/requestDelete") => on(filter, request_delete),
        ("GET", "/admin/requestDuplicates") => on(filter, request_duplicates),
        ("POST", "/addDomain") => on(filter, add_domain),
        ("GET", "/getDnsInstructions") => on(filter, get_dns_instructions),
        ("POST", "/verifyDomain") => on(filter, verify_domain),
        ("GET", "/listDomains") => on(filter, list_domains),
        ("POST", "/operatorRemoveDomain") => on(filter, operator_remove_domain),
        ("POST", "/addMailbox") => on(filter, add_mailbox),
        ("POST", "/setMailboxMode") => on(filter, set_mailbox_mode),
        ("POST", "/deleteMailbox") => on(filter, delete_mailbox),
        ("POST", "/issueMailboxCredential") => on(filter, issue_mailbox_credential),
        ("GET", "/mtaMailboxExport") => on(filter, get_mta_export),
        ("POST", "/mtaMailboxExport") => on(filter, ack_mta_export),
        ("POST", "/sendMail") => on(filter, send_mail),
        (method, path) => panic!("no handler for {method} {path}"),
    }
}

fn to_value<T: serde::Serialize>(out: T) -> Result {
    serde_json::to_value(out).map(Reply).map_err(ApiError::internal)
}

async fn request_access(State(ctx): State<AppState>, ClientIp(ip): ClientIp, Json(body): Json) -> Result {
    let input = onboarding::RequestAccessInput::parse(&body)?;
    to_value(onboarding::request_access(&ctx, input, &ip).await?)
}

async fn verify_access_request(State(ctx): State<AppState>, Json(body): Json) -> Result {
    let (id, code) = onboarding::parse_verify(&body)?;
    to_value(onboarding::verify_access_request(&ctx, &id, &code).await?)
}

async fn get_request_status(State(ctx): State<AppState>, ClientIp(ip): ClientIp, Json(body): Json) -> Result {
    Ok(Reply(onboarding::get_request_status(&ctx, &body, &ip).await?))
}

async fn get_account_status(State(ctx): State<AppState>, Caller(auth): Caller, Json(body): Json) -> Result {
    let auth::Caller::Standard(key) = auth.caller else {
        return Err(crate::error::ACCOUNT_KEY_ONLY.into());
    };
    Ok(Reply(onboarding::get_account_status(&ctx, &key.uid, &body).await?))
}

fn operator(auth: &auth::Authenticated) -> std::result::Result<&IdentityUser, ApiError> {
    match &auth.caller {
        auth::Caller::Identity(user) if user.operator => Ok(user),
        _ => Err(crate::error::OPERATOR_ONLY.into()),
    }
}

async fn request_decision(State(ctx): State<AppState>, Caller(auth): Caller, Json(body): Json) -> Result {
    Ok(Reply(admin::request_decision(&ctx, operator(&auth)?, &body).await?))
}

async fn list_allowlist(State(ctx): State<AppState>) -> Result {
    Ok(Reply(admin::list_allowlist(&ctx).await?))
}

async fn add_allowlist(State(ctx): State<AppState>, Caller(auth): Caller, Json(body): Json) -> Result {
    Ok(Reply(admin::add_allowlist(&ctx, operator(&auth)?, &body).await?))
}

/// DELETE takes `{domain}` as a JSON body or as a query parameter.
async fn remove_allowlist(
    State(ctx): State<AppState>,
    Caller(auth): Caller,
    Query(query): Query<serde_json::Map<String, Value>>,
    Json(body): Json,
) -> Result {
    let fields = if body.has("domain") {
        body
    } else {
        Fields::new(query, crate::validate::Origin::Query)
    };
    Ok(Reply(admin::remove_allowlist(&ctx, operator(&auth)?, &fields).await?))
}

async fn check_allowlist(State(ctx): State<AppState>, Query(query): Query<serde_json::Map<String, Value>>) -> Result {
    Ok(Reply(
        admin::check_allowlist(&ctx, &Fields::new(query, crate::validate::Origin::Query)).await?,
    ))
}

async fn request_delete(State(ctx): State<AppState>, Caller(auth): Caller, Json(body): Json) -> Result {
    Ok(Reply(admin::request_delete(&ctx, operator(&auth)?, &body).await?))
}

#[derive(serde::Deserialize)]
struct DuplicateQuery {
    email: Option<String>,
    domain: Option<String>,
}

async fn request_duplicates(State(ctx): State<AppState>, Query(q): Query<DuplicateQuery>) -> Result {
    Ok(Reply(
        admin::request_duplicates(&ctx, q.email.as_deref(), q.domain.as_deref()).await?,
    ))
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

async fn get_mta_export(State(ctx): State<AppState>) -> Result {
    Ok(Reply(mta_export::latest(&ctx).await?))
}

async fn ack_mta_export(State(ctx): State<AppState>, Json(body): Json) -> Result {
    let version = body.get("version").and_then(Value::as_i64).filter(|v| *v > 0);
    let version = version.ok_or(crate::error::VERSION_INVALID)?;
    Ok(Reply(mta_export::acknowledge(&ctx, version).await?))
}

// ------------------------------------------------------------------ send

async fn send_mail(State(ctx): State<AppState>, Caller(auth): Caller, Json(body): Json) -> Result {
    Ok(Reply(send::send_mail(&ctx, &auth.caller, &body, true).await?))
}
