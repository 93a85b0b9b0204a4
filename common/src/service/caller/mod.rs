//! Who is calling ([`Call`]) and the account it acts for ([`account`]).

pub mod account;
mod call;
pub mod operation;

pub use call::{Call, Confirmation, Download};
