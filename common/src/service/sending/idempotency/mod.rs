//! Idempotency-Keys (sendMail, reply and forward): a retry with the same key
//! and request within 24 hours gets the first answer, sending and charging
//! nothing again. `key` reads the key and fingerprints the request;
//! `persistence` claims, replays and settles its record.

mod key;
mod persistence;

pub use persistence::{Begun, Idempotency};
