//! Getting an account and what it may spend: onboarding by emailed code, the account's status, credits, the allowlist, and who pays for a send.

pub mod allowlist;
pub mod credits;
pub mod onboarding;
pub mod payer;
pub mod section;
pub mod status;
