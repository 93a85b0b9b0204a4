//! The domain allowlist: an account whose email is on an allowlisted domain
//! is ready at once.

use crate::context::Context;
use crate::keys;
use crate::store::StoreResult;

pub async fn contains(ctx: &Context, domain: &str) -> StoreResult<bool> {
    Ok(ctx.store.get(&keys::allowlisted(domain)).await?.is_some())
}
