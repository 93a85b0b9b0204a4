//! The mail the service writes itself (access and sign-in codes, a dropped
//! domain's notice, a held send's approval request): from its noreply
//! address, through the system transport.

mod sender;

pub use sender::{Relay, send};
