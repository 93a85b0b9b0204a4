//! Sending: scoped keys (what a key may send, and revoking one cancels its waiting sends), sendMail, Idempotency-Keys, the mail host's submissions, held and scheduled sends, and a sent reply's filing.

pub mod api_keys;
pub mod idempotency;
pub mod pending;
pub mod replies;
pub mod section;
pub mod send;
pub mod sender;
pub mod submission;
