//! What the operators run: decisions and the allowlist, removals, the bootstrap and the mail host's export.

pub mod admin;
pub mod bootstrap;
pub mod mta_export;
pub mod operator_sign_in;
pub mod removal;
pub mod section;
