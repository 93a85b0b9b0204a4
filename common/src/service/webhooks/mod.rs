//! Webhooks: the registration, the events published to it, the delivery log and replay.

mod routes;
pub mod section;

pub use routes::*;
