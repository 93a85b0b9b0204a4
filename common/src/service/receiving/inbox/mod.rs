//! The inbox API (spec 2.4, 3.3, 4.2-4.4): GET /inbox (the flat list, a read,
//! threads, search, waiting for mail), POST /inbox (read flags and folders),
//! GET /attachment, and their MCP tools. What is stored, and how each change is
//! kept exact, is `mail_store`.
//!
//! Who reads what: a standard key reads its own account's stored mail; the
//! agent key and operators read one service-domain mailbox (`mailbox=`,
//! default `inbox@`). A message, thread or file of another scope is 404.

mod attachment;
mod boundary;
mod delete;
mod fields;
mod mark;
mod read;
mod report;
mod scope;
mod shapes;
mod tools;
mod wait;
mod wait_for_message;

pub use crate::service::delivery::boundary::{Boundary, Envelope, Provenance};
pub use attachment::*;
pub use delete::*;
pub use fields::*;
pub use mark::*;
pub use read::*;
pub use report::*;
pub(crate) use scope::scope;
pub use shapes::*;
pub use tools::*;
pub use wait_for_message::*;
