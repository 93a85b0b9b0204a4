//! The local server's sign-in for operators in the web app: an operator named
//! by `--operator-emails` asks for a code, which is mailed like an access code
//! (locally, to the outbox), and trades it for an identity token the server's
//! own signing key signs. Only the local server mounts these routes, and only
//! when it signs its own tokens (no `--jwks-url`); a Lambda function never
//! has them. The codes, their tries and the limits are the service's
//! (`service::operator_sign_in`), kept in the store.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Request, State};
use axum::routing::post;
use axum::{Json, Router};
use serde_json::{Value, json};

use super::extract::{client_ip, read_body};
use crate::auth::identity::LocalSigner;
use crate::context::Context;
use crate::error::{self, ApiError};
use crate::service::operators::operator_sign_in;
use crate::values::EmailAddress;

/// The two paths: ask for a code, trade it for a token.
pub const PATHS: [&str; 2] = ["/local-sign-in", "/local-sign-in/verify"];
/// A signed-in operator's token lasts a working day.
const TOKEN_LIFETIME: Duration = Duration::from_secs(8 * 3600);
/// An email and a code, with room to spare.
const MAX_BODY: usize = 4096;
const SENT: &str = "If this address belongs to an operator of this server, a sign-in code was mailed to it.";

type Shared = Arc<Context>;

/// The routes, or none when this server does not sign its own tokens.
pub fn router(ctx: Arc<Context>) -> Router {
    if ctx.config.jwks_url.is_some() {
        return Router::new();
    }
    Router::new()
        .route(PATHS[0], post(ask))
        .route(PATHS[1], post(verify))
        .with_state(ctx)
}

fn parse(body: &[u8]) -> Result<Value, ApiError> {
    serde_json::from_slice(body).map_err(|_| error::INVALID_JSON.into())
}

/// An address as a send takes one (at most 254 characters, lower case), so
/// that it keys a store item and a rate window as it is.
fn email_of(body: &Value) -> Result<String, ApiError> {
    let raw = body["email"].as_str().unwrap_or_default();
    <EmailAddress as crate::values::Value>::parse(raw)
        .map(EmailAddress::into_string)
        .ok_or_else(|| error::EMAIL_INVALID.into())
}

/// Mails a code to an operator; the same answer whoever asks.
async fn ask(State(ctx): State<Shared>, req: Request) -> Result<Json<Value>, ApiError> {
    let (parts, body) = req.into_parts();
    let email = email_of(&parse(&read_body(body, MAX_BODY).await?)?)?;
    operator_sign_in::ask(&ctx, &client_ip(&parts), &email).await?;
    Ok(Json(json!({ "ok": true, "message": SENT })))
}

/// An identity token for the operator whose code this is.
async fn verify(State(ctx): State<Shared>, req: Request) -> Result<Json<Value>, ApiError> {
    let (parts, body) = req.into_parts();
    let body = parse(&read_body(body, MAX_BODY).await?)?;
    let email = email_of(&body)?;
    let code = body["code"].as_str().unwrap_or_default().trim();
    operator_sign_in::verify(&ctx, &client_ip(&parts), &email, code).await?;
    let signer = LocalSigner::load_or_create(ctx.secrets.as_ref())
        .await
        .map_err(ApiError::internal)?;
    let token = signer.mint(&email, true, TOKEN_LIFETIME).map_err(ApiError::internal)?;
    Ok(Json(json!({ "ok": true, "token": token })))
}
