//! What a customer sets to limit its own account: scoped keys, the audit log, allow and block lists.

pub mod api_keys;
pub mod audit;
pub mod lists;
pub mod section;
