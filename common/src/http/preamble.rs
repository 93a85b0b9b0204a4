//! What every transport does before an operation runs: the presented
//! credential resolved to a caller (the spec's part 5, with the context's
//! keys, store and identity verifier), and the route's access rule applied.

use crate::auth::{Access, Authenticated, Caller, IdentityUser, Presented, Via, keys};
use crate::context::Context;
use crate::error::{self, ApiError};

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
pub async fn admit(ctx: &Context, access: Access, presented: &Presented) -> Result<Authenticated, ApiError> {
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
