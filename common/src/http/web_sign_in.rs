//! The local server's sign-in for operators in the web app: an operator named
//! by `--operator-emails` asks for a code, which is mailed like an access code
//! (locally, to the outbox), and trades it for an identity token the server's
//! own signing key signs. Only the local server mounts these routes, and only
//! when it signs its own tokens (no `--jwks-url`); a Lambda function never
//! has them. Codes live in this process's memory: 10 minutes, 5 tries.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::State;
use axum::routing::post;
use axum::{Json, Router};
use serde_json::{Value, json};
use subtle::ConstantTimeEq;

use crate::auth::identity::LocalSigner;
use crate::context::Context;
use crate::error::{self, ApiError};

/// The two paths: ask for a code, trade it for a token.
pub const PATHS: [&str; 2] = ["/local-sign-in", "/local-sign-in/verify"];
const CODE_LIFETIME_SECS: i64 = 600;
const TRIES: u32 = 5;
/// A signed-in operator's token lasts a working day.
const TOKEN_LIFETIME: Duration = Duration::from_secs(8 * 3600);
const SENT: &str = "If this address belongs to an operator of this server, a sign-in code was mailed to it.";

struct Pending {
    code: String,
    expires: i64,
    tries: u32,
}

struct SignIn {
    ctx: Arc<Context>,
    codes: Mutex<HashMap<String, Pending>>,
}

impl SignIn {
    /// The live codes. A request that panicked while holding them leaves
    /// nothing half-made a later request could trip on (an entry is
    /// inserted, counted or removed whole), so the lock is taken back.
    fn codes(&self) -> std::sync::MutexGuard<'_, HashMap<String, Pending>> {
        self.codes.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

type Shared = Arc<SignIn>;

/// The routes, or none when this server does not sign its own tokens.
pub fn router(ctx: Arc<Context>) -> Router {
    if ctx.config.jwks_url.is_some() {
        return Router::new();
    }
    let state = Arc::new(SignIn {
        ctx,
        codes: Mutex::default(),
    });
    Router::new()
        .route(PATHS[0], post(ask))
        .route(PATHS[1], post(verify))
        .with_state(state)
}

fn parse(body: &[u8]) -> Result<Value, ApiError> {
    serde_json::from_slice(body).map_err(|_| error::INVALID_JSON.into())
}

fn email_of(body: &Value) -> Result<String, ApiError> {
    let email = body["email"].as_str().unwrap_or_default().trim().to_ascii_lowercase();
    match email.split_once('@') {
        Some((local, domain)) if !local.is_empty() && domain.contains('.') => Ok(email),
        _ => Err(error::EMAIL_INVALID.into()),
    }
}

/// Mails a code to an operator; the same answer whoever asks.
async fn ask(State(state): State<Shared>, body: Bytes) -> Result<Json<Value>, ApiError> {
    let email = email_of(&parse(&body)?)?;
    if state.ctx.config.is_operator_email(&email) {
        let code = format!("{:08}", rand::random_range(0..100_000_000u32));
        send_code(&state.ctx, &email, &code).await.map_err(ApiError::internal)?;
        let expires = state.ctx.clock.epoch() + CODE_LIFETIME_SECS;
        let pending = Pending {
            code,
            expires,
            tries: 0,
        };
        state.codes().insert(email, pending);
    }
    Ok(Json(json!({ "ok": true, "message": SENT })))
}

/// An identity token for the operator whose code this is.
async fn verify(State(state): State<Shared>, body: Bytes) -> Result<Json<Value>, ApiError> {
    let body = parse(&body)?;
    let email = email_of(&body)?;
    let code = body["code"].as_str().unwrap_or_default().trim().to_string();
    if !take(&state, &email, &code) {
        return Err(error::SIGN_IN_CODE_INVALID.into());
    }
    let signer = LocalSigner::load_or_create(state.ctx.secrets.as_ref())
        .await
        .map_err(ApiError::internal)?;
    let token = signer.mint(&email, true, TOKEN_LIFETIME).map_err(ApiError::internal)?;
    Ok(Json(json!({ "ok": true, "token": token })))
}

/// Whether `code` is the live code of `email`: used up when right, counted
/// when wrong, and gone after the last try or once expired.
fn take(state: &SignIn, email: &str, code: &str) -> bool {
    let mut codes = state.codes();
    let Some(pending) = codes.get_mut(email) else {
        return false;
    };
    let live = pending.expires > state.ctx.clock.epoch();
    let right = live && bool::from(pending.code.as_bytes().ct_eq(code.as_bytes()));
    pending.tries += 1;
    if right || !live || pending.tries >= TRIES {
        codes.remove(email);
    }
    right
}

async fn send_code(ctx: &Context, to: &str, code: &str) -> anyhow::Result<()> {
    let transport = ctx
        .system_mail
        .as_ref()
        .ok_or_else(|| anyhow::anyhow!("no system mail transport"))?;
    let from = format!("noreply@{}", ctx.config.service_domain);
    let body = format!(
        "Your sign-in code is {code}\r\n\r\nEnter it in the web app within 10 minutes. \
         If you did not ask to sign in, ignore this message.\r\n"
    );
    let message = crate::mail::plain_text(&from, to, "Your sign-in code", &body)?;
    transport.send(&message).await?;
    Ok(())
}
