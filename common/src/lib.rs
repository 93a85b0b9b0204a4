//! Everything the mailhost binaries share. A function's `main` builds a
//! [`context::Context`] and hands events to [`http`]; all domain logic lives here.

pub mod api;
pub mod auth;
pub mod blob;
pub mod clock;
pub mod config;
pub mod context;
pub mod dns;
pub mod error;
pub mod hint;
pub mod http;
pub mod jobs;
pub mod keys;
pub mod lambda;
pub mod mail;
pub mod memo;
pub mod messages;
pub mod metrics;
pub mod openapi;
pub mod ratelimit;
pub mod search;
pub mod secrets;
pub mod service;
pub mod store;
pub mod telemetry;
pub mod testing;
pub mod validate;
pub mod values;
pub mod webhook;
