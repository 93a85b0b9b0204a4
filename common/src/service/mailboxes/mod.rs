//! Mailboxes: the record, the routes that add, change and delete them, their app passwords, and forwarding.

pub mod credential;
pub mod forwarding;
pub mod mailbox;
mod routes;
pub mod section;

pub use credential::*;
pub use routes::*;
