//! Everything the mailhost binaries share. A function's `main` builds a
//! [`context::Context`] and hands events to [`http`]; all domain logic lives here.

pub mod error;
pub mod store;
pub mod blob;
pub mod mail;
pub mod secrets;
pub mod testing;
