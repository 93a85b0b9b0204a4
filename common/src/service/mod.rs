//! One module per capability. A service takes typed input and returns
//! `Result<T, ApiError>`; it never sees HTTP types.

pub mod accounts;
pub mod admin;
pub mod audit;
pub mod credits;
pub mod dkim;
pub mod domains;
pub mod mail_store;
pub mod mailboxes;
pub mod mta_export;
pub mod onboarding;
pub mod send;
