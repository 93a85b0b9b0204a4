//! What a customer sets to limit its own account: the audit log, allow and block lists (its scoped keys are sending's `api_keys`: revoking one cancels its waiting sends).

pub mod audit;
pub mod lists;
pub mod section;
