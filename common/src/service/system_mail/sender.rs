//! One plain-text message from `noreply@` the service domain.

use crate::context::Context;

/// Which transport carries it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Relay {
    /// The system transport (SES or the local spool): codes and notices.
    System,
    /// The customers' relay when there is one, else the system transport: an
    /// approval request goes to an owner's own mailbox, as a send would.
    CustomerFirst,
}

/// Sends `body` to `to` from the service's noreply address.
pub async fn send(ctx: &Context, relay: Relay, to: &str, subject: &str, body: &str) -> anyhow::Result<()> {
    let customer = match relay {
        Relay::System => None,
        Relay::CustomerFirst => ctx.customer_mail.as_ref(),
    };
    let transport = customer
        .or(ctx.system_mail.as_ref())
        .ok_or_else(|| anyhow::anyhow!("no system mail transport"))?;
    let message = crate::mail::plain_text(&ctx.config.noreply(), to, subject, body)?;
    transport.send(&message).await?;
    Ok(())
}
