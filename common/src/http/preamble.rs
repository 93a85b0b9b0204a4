//! What every transport does before an operation runs: the presented
//! credential resolved to a caller (the spec's part 5, with the context's
//! keys, store and identity verifier) and checked at the door, a refused
//! caller's body drained unread, the body read within its limit, and the
//! call made with the client's address and the request's id.

use axum::body::Body;
use axum::http::request::Parts;

use super::extract::{client_ip, discard, gateway_origin, read_body, request_id};
use crate::auth::{Access, Authenticated, Caller, IdentityUser, Presented, Via, keys};
use crate::context::Context;
use crate::error::{self, ApiError};
use crate::service::caller::Call;

/// Who a transport lets in before it reads the body.
#[derive(Clone, Copy)]
pub enum Door {
    /// A REST route: the operation's access rule.
    Rule(Access),
    /// MCP: a presented credential must be valid; a request without one is
    /// judged per message by what it asks for.
    Credential,
}

/// A request let in: who calls, what they sent, from where.
pub struct Received {
    pub auth: Authenticated,
    pub body: Vec<u8>,
    ip: String,
    request_id: String,
    origin: Option<String>,
}

impl Received {
    /// The call an operation runs with, on the transport that carried it.
    pub fn call<'a>(&'a self, ctx: &'a Context, surface: &'static str) -> Call<'a> {
        let mut call = Call::new(ctx, &self.auth.caller, self.auth.via, &self.ip);
        call.request_id = self.request_id.clone();
        call.surface = surface;
        call.origin = self.origin.as_deref();
        call
    }
}

/// Lets a request in or refuses it. The body is read (at most `max_body`
/// bytes, else 413) only for a caller let in; `None` reads none.
pub async fn receive(
    ctx: &Context,
    door: Door,
    parts: &Parts,
    body: Body,
    max_body: Option<usize>,
) -> Result<Received, ApiError> {
    let presented = Presented::from_headers(&parts.headers);
    let auth = match (door, &presented) {
        (Door::Rule(access), _) => admit(ctx, access, &presented).await,
        (Door::Credential, Presented::None) => Ok(Authenticated {
            caller: Caller::Public,
            via: Via::None,
        }),
        (Door::Credential, _) => authenticate(ctx, &presented).await,
    };
    let auth = match auth {
        Ok(auth) => auth,
        Err(e) => {
            discard(body).await;
            return Err(e);
        }
    };
    let body = match max_body {
        Some(limit) => read_body(body, limit).await?,
        None => Vec::new(),
    };
    Ok(Received {
        auth,
        body,
        ip: client_ip(parts),
        request_id: request_id(parts),
        origin: gateway_origin(parts),
    })
}

/// Resolves the presented credential to a caller, or the 401 the spec names.
pub async fn authenticate(ctx: &Context, presented: &Presented) -> Result<Authenticated, ApiError> {
    match presented {
        Presented::None => Err(error::MISSING_CREDENTIAL.into()),
        Presented::ApiKeyHeader(key) => Ok(Authenticated {
            caller: resolve_key(ctx, key).await?,
            via: Via::ApiKeyHeader,
        }),
        Presented::Bearer(value) if Presented::is_identity_token(value) => {
            let claims = ctx.identity.verify(value).await.ok_or(error::INVALID_TOKEN)?;
            let email = claims.email.unwrap_or_default().to_ascii_lowercase();
            let operator = claims.operator || ctx.config.is_operator_email(&email);
            Ok(Authenticated {
                caller: Caller::Identity(IdentityUser {
                    uid: claims.sub,
                    email,
                    operator,
                }),
                via: Via::Bearer,
            })
        }
        Presented::Bearer(key) => Ok(Authenticated {
            caller: resolve_key(ctx, key).await?,
            via: Via::Bearer,
        }),
    }
}

async fn resolve_key(ctx: &Context, key: &str) -> Result<Caller, ApiError> {
    if key.is_empty() {
        return Err(error::INVALID_KEY.into());
    }
    let digest = ctx.hasher.key_digest(key);
    if keys::same_digest(&digest, &ctx.agent_key_digest) {
        return Ok(Caller::Agent);
    }
    if keys::same_digest(&digest, &ctx.sync_token_digest) {
        return Ok(Caller::Sync);
    }
    if !key.starts_with(keys::KEY_PREFIX) {
        return Err(error::INVALID_KEY.into());
    }
    let now = ctx.clock.now();
    match keys::owner(&*ctx.store, &digest, now).await? {
        Some(standard)
            if standard
                .scope
                .as_ref()
                .is_some_and(|s| s.expired(&crate::clock::iso(now))) =>
        {
            Err(error::KEY_EXPIRED.into())
        }
        Some(standard) => Ok(Caller::Standard(standard)),
        None => Err(error::INVALID_KEY.into()),
    }
}

/// Authenticates (unless the rule is public) and applies an access rule.
async fn admit(ctx: &Context, access: Access, presented: &Presented) -> Result<Authenticated, ApiError> {
    if access == Access::Public || (access == Access::OwnerOrCode && *presented == Presented::None) {
        return Ok(Authenticated {
            caller: Caller::Public,
            via: Via::None,
        });
    }
    let auth = authenticate(ctx, presented).await?;
    access.admit(&auth)?;
    Ok(auth)
}
