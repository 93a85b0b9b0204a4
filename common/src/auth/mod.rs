//! Who is calling (part 5 of the spec): credential parsing, the credential
//! classes, and the per-route admission rules that the route table names.

pub mod identity;
pub mod keys;
pub mod policy;

use axum::http::HeaderMap;

use crate::context::Context;
use crate::error::{self, ApiError};

pub use identity::IdentityUser;
pub use policy::Access;

/// What the request presented, before anything is checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Presented {
    None,
    /// The X-Api-Key header: when present, the only credential checked.
    ApiKeyHeader(String),
    /// `Authorization: Bearer <value>`.
    Bearer(String),
}

impl Presented {
    pub fn from_headers(headers: &HeaderMap) -> Self {
        if let Some(value) = headers.get("x-api-key") {
            return Presented::ApiKeyHeader(value.to_str().unwrap_or_default().trim().to_string());
        }
        let bearer = headers
            .get(axum::http::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().split_once(' '))
            .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
            .map(|(_, value)| value.trim().to_string())
            .filter(|value| !value.is_empty());
        match bearer {
            Some(value) => Presented::Bearer(value),
            None => Presented::None,
        }
    }

    /// A Bearer value of exactly three dot-separated segments is an identity token.
    pub fn is_identity_token(value: &str) -> bool {
        let parts: Vec<&str> = value.split('.').collect();
        parts.len() == 3 && parts.iter().all(|p| !p.is_empty())
    }
}

/// How the credential arrived; some refusals depend on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Via {
    None,
    ApiKeyHeader,
    Bearer,
}

/// A standard customer key, resolved to its account.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StandardKey {
    pub uid: String,
    pub key_id: String,
    pub last4: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Caller {
    Public,
    Agent,
    Standard(StandardKey),
    Identity(IdentityUser),
    Sync,
}

impl Caller {
    pub fn is_operator(&self) -> bool {
        matches!(self, Caller::Identity(user) if user.operator)
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Authenticated {
    pub caller: Caller,
    pub via: Via,
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
    match crate::service::accounts::key_owner(ctx, &digest).await? {
        Some(standard) => Ok(Caller::Standard(standard)),
        None => Err(error::INVALID_KEY.into()),
    }
}

/// Authenticates (unless the rule is public) and applies an access rule.
pub async fn admit(ctx: &Context, access: Access, presented: &Presented) -> Result<Authenticated, ApiError> {
    if access == Access::Public {
        return Ok(Authenticated {
            caller: Caller::Public,
            via: Via::None,
        });
    }
    let auth = authenticate(ctx, presented).await?;
    access.admit(&auth)?;
    Ok(auth)
}
