//! Mailboxes: the record, the routes that add, change and delete them, and forwarding.

pub mod forwarding;
pub mod mailbox;
mod routes;
pub mod section;

pub use routes::*;
