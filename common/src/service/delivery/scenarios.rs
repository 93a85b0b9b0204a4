//! Which simulator scenario an address names: the one thing a delivery's
//! record asks of the simulator (a simulated recipient adds no suppression),
//! below both.

use crate::context::Context;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scenario {
    Delivered,
    Bounced,
    Deferred,
    Complained,
    AutoReply,
    /// A local part the simulator does not know: a 5.1.1 bounce.
    Unknown,
}

/// The simulator's domain.
pub fn domain(ctx: &Context) -> String {
    format!("simulator.{}", ctx.config.service_domain)
}

/// The scenario of a simulator address, or `None` for any other address.
pub fn scenario(ctx: &Context, address: &str) -> Option<Scenario> {
    let (local, host) = address.rsplit_once('@')?;
    if !host.eq_ignore_ascii_case(&domain(ctx)) {
        return None;
    }
    let base = local.split('+').next().unwrap_or_default().to_ascii_lowercase();
    Some(match base.as_str() {
        "delivered" => Scenario::Delivered,
        "bounced" => Scenario::Bounced,
        "deferred" => Scenario::Deferred,
        "complained" => Scenario::Complained,
        "autoreply" => Scenario::AutoReply,
        _ => Scenario::Unknown,
    })
}
