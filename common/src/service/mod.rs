//! One module per capability. A service takes a [`Call`] and a typed input and
//! returns a typed output or a named error from the catalogue
//! ([`crate::error`]); it never sees HTTP or JSON-RPC types.

pub mod accounts;
pub mod caller;
pub mod delivery;
pub mod domains;
pub mod guardrails;
pub mod mail_store;
pub mod mailboxes;
pub mod operators;
pub mod receiving;
pub mod sending;
pub mod webhooks;

/// Stored statuses are compared and set as their typed values, never as
/// string literals: each becomes the JSON value serde writes for it.
macro_rules! stored_as_json {
    ($($status:ty),* $(,)?) => {$(
        impl From<$status> for serde_json::Value {
            fn from(status: $status) -> serde_json::Value {
                serde_json::to_value(status).expect("a status serializes")
            }
        }
    )*};
}

stored_as_json!(
    caller::account::AccountStatus,
    domains::DomainStatus,
    mailboxes::MailboxStatus,
    mailboxes::Mode,
    accounts::onboarding::RequestStatus,
    sending::pending::Kind,
    sending::pending::PendingStatus,
);
