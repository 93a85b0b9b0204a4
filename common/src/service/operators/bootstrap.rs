//! What exists from the start: the agent key's balance, the operators'
//! account, the service domain with its DKIM key, and its protected
//! mailboxes. Idempotent. The local server runs it at start; in AWS the
//! scheduled `mta-export` function does (it alone may create secrets).

use crate::context::Context;

/// Everything; safe to run again.
pub async fn run(ctx: &Context) -> anyhow::Result<()> {
    agent_balance(ctx).await?;
    crate::service::caller::account::ensure_ops_account(ctx).await?;
    crate::service::domains::ensure_service_domain(ctx).await?;
    let domain = ctx.config.service_domain.as_str();
    for local in &ctx.config.protected_local_parts {
        crate::service::mailboxes::ensure_protected(ctx, domain, local).await?;
    }
    Ok(())
}

/// The agent key's balance alone: what a route function needs before its
/// first agent send.
pub async fn agent_balance(ctx: &Context) -> anyhow::Result<()> {
    Ok(crate::service::accounts::credits::ensure_agent_balance(ctx).await?)
}
