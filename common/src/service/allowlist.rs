//! The domain allowlist: an account whose email is on an allowlisted domain
//! is ready at once. Items: `ALLOW#domains/<domain>` one domain each.

use crate::context::Context;
use crate::store::{Key, StoreResult};

pub const PK: &str = "ALLOW#domains";

pub fn key(domain: &str) -> Key {
    Key::new(PK, domain)
}

pub async fn contains(ctx: &Context, domain: &str) -> StoreResult<bool> {
    Ok(ctx.store.get(&key(domain)).await?.is_some())
}
