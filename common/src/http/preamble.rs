//! What every transport does before an operation runs: the presented
//! credential resolved to a caller (the spec's part 5, with the context's
//! keys, store and identity verifier) and checked at the door, a refused
//! caller's body drained unread, the body read within its limit, and the
//! call made with the client's address and the request's id.

use std::future::Future;
use std::pin::Pin;

use axum::body::Body;
use axum::http::request::Parts;

use super::extract::{client_ip, discard, gateway_origin, read_body, request_id};
use crate::auth::{Access, Authenticated, Caller, IdentityUser, Presented, Via, keys};
use crate::context::Context;
use crate::error::{self, ApiError};
use crate::service::caller::{Call, Confirmation};

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

/// The read of a key's record that confirms a caller taken from it as
/// last read. Until it is done nothing is written or answered: the call
/// waits for it (`Call::confirmed`). Driven beside the call, not as a task
/// of its own: the store meter then sees the two as one round trip on either
/// store, and a spawned read measured no faster on DynamoDB Local
/// (docs/benchmarks/history.md, 2026-12-07 evening).
pub struct KeyCheck<'c> {
    read: Pin<Box<dyn Future<Output = Result<Caller, ApiError>> + Send + 'c>>,
    guess: Caller,
    tell: tokio::sync::watch::Sender<Option<bool>>,
}

impl KeyCheck<'_> {
    /// What the call that started on the guess waits on.
    pub fn confirmation(&self) -> Confirmation {
        self.tell.subscribe().into()
    }

    /// Reads the record: `Ok` when it is the caller the call started as,
    /// else who the key says the caller is now (or its refusal). Either way
    /// the call is told.
    pub async fn settle(self) -> Result<(), Result<Caller, ApiError>> {
        let found = self.read.await;
        let held = found.as_ref().is_ok_and(|caller| *caller == self.guess);
        self.tell.send_replace(Some(held));
        if held { Ok(()) } else { Err(found) }
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
    Ok(received(auth, body, parts))
}

/// As [`receive`] under `access`, but a standard key this process has read
/// before is let in as that record (unexpired), with the read that confirms
/// it to run beside the call.
pub async fn receive_known<'c>(
    ctx: &'c Context,
    access: Access,
    parts: &Parts,
    body: Body,
    max_body: Option<usize>,
) -> Result<(Received, Option<KeyCheck<'c>>), ApiError> {
    let presented = Presented::from_headers(&parts.headers);
    let (auth, check) = match admit_known(ctx, access, &presented).await {
        Ok(admitted) => admitted,
        Err(e) => {
            discard(body).await;
            return Err(e);
        }
    };
    let body = match max_body {
        Some(limit) => match read_body(body, limit).await {
            Ok(body) => body,
            // A body refused for a caller only guessed: the key's refusal,
            // if it has one now, comes first.
            Err(e) => {
                if let Some(check) = check
                    && let Err(now) = check.settle().await
                {
                    access.admit(&Authenticated {
                        caller: now?,
                        via: auth.via,
                    })?;
                }
                return Err(e);
            }
        },
        None => Vec::new(),
    };
    Ok((received(auth, body, parts), check))
}

fn received(auth: Authenticated, body: Vec<u8>, parts: &Parts) -> Received {
    Received {
        auth,
        body,
        ip: client_ip(parts),
        request_id: request_id(parts),
        origin: gateway_origin(parts),
    }
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
    match known_or_digest(ctx, key)? {
        Known::Caller(caller) => Ok(caller),
        Known::Digest(digest) => look_up(ctx, digest).await,
    }
}

/// A presented key before any read: the agent key, the sync token, a
/// standard key's digest to look up, or refused outright.
enum Known {
    Caller(Caller),
    Digest(String),
}

fn known_or_digest(ctx: &Context, key: &str) -> Result<Known, ApiError> {
    if key.is_empty() {
        return Err(error::INVALID_KEY.into());
    }
    let digest = ctx.hasher.key_digest(key);
    if keys::same_digest(&digest, &ctx.agent_key_digest) {
        return Ok(Known::Caller(Caller::Agent));
    }
    if keys::same_digest(&digest, &ctx.sync_token_digest) {
        return Ok(Known::Caller(Caller::Sync));
    }
    if !key.starts_with(keys::KEY_PREFIX) {
        return Err(error::INVALID_KEY.into());
    }
    Ok(Known::Digest(digest))
}

/// The standard key whose digest this is, as stored now; what it found is
/// kept as the process's guess for that key's next request.
async fn look_up(ctx: &Context, digest: String) -> Result<Caller, ApiError> {
    let now = ctx.clock.now();
    let found = keys::owner(&*ctx.store, &digest, now).await?;
    match &found {
        Some(standard) => ctx.known_keys.keep(&digest, standard.clone()),
        None => ctx.known_keys.forget(&digest),
    }
    match found {
        Some(standard) if standard.is_expired(now) => Err(error::KEY_EXPIRED.into()),
        Some(standard) => Ok(Caller::Standard(standard)),
        None => Err(error::INVALID_KEY.into()),
    }
}

/// As [`admit`], but a standard key this process has read before is let in
/// as that record (unexpired), with the read that confirms it left to run
/// beside the call.
async fn admit_known<'c>(
    ctx: &'c Context,
    access: Access,
    presented: &Presented,
) -> Result<(Authenticated, Option<KeyCheck<'c>>), ApiError> {
    let (key, via) = match presented {
        Presented::ApiKeyHeader(key) => (key, Via::ApiKeyHeader),
        Presented::Bearer(key) if !Presented::is_identity_token(key) => (key, Via::Bearer),
        _ => return admit(ctx, access, presented).await.map(|auth| (auth, None)),
    };
    let digest = match known_or_digest(ctx, key) {
        Ok(Known::Digest(digest)) => digest,
        _ => return admit(ctx, access, presented).await.map(|auth| (auth, None)),
    };
    let now = ctx.clock.now();
    let Some(known) = ctx.known_keys.get(&digest).filter(|known| !known.is_expired(now)) else {
        return admit(ctx, access, presented).await.map(|auth| (auth, None));
    };
    let auth = Authenticated {
        caller: Caller::Standard(known),
        via,
    };
    let check = KeyCheck {
        read: Box::pin(look_up(ctx, digest)),
        guess: auth.caller.clone(),
        tell: tokio::sync::watch::channel(None).0,
    };
    if let Err(refused) = access.admit(&auth) {
        // Refused as last read: the refusal stands only if the key still says it.
        return match check.settle().await {
            Ok(()) => Err(refused),
            Err(now) => {
                let auth = Authenticated { caller: now?, via };
                access.admit(&auth)?;
                Ok((auth, None))
            }
        };
    }
    Ok((auth, Some(check)))
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
