//! Audit rows: one per operator action, kept by UTC day.

use serde_json::{Value, json};

use crate::context::Context;
use crate::store::StoreResult;

pub async fn record(ctx: &Context, action: &str, actor: &str, details: Value) -> StoreResult<()> {
    let now = ctx.clock.now();
    let key = crate::keys::audit(&now.format("%Y-%m-%d").to_string(), &crate::clock::iso(now));
    let row = json!({ "action": action, "actor": actor, "at": crate::clock::iso(now), "details": details });
    ctx.store.put(crate::store::item(&key, &row), None).await
}
