//! What happened to each sent mail: one record per send (`DLV#<id>/M`), one
//! status per recipient (`DLV#<id>/R#<n>`), moved forward only by [`apply`],
//! whoever reports it: the relay's answer ([`dispatch`]), the mail host's
//! delivery log ([`mta_events`]), a DSN or complaint sent to the return path
//! ([`reports`]), or the simulator ([`simulator`]). A change is then felt once:
//! the suppression list ([`crate::service::delivery::suppressions`]) and the owner's webhook.

pub mod boundary;
pub mod contacts;
pub mod dispatch;
pub mod dmarc;
pub mod mta_events;
pub mod outbox;
mod record;
pub mod reports;
pub mod return_path;
pub mod scenarios;
pub mod section;
pub mod sent;
pub mod simulator;
pub mod suppressions;

pub use record::*;
