//! Sending: sendMail, the mail host's submissions, held and scheduled sends, and a sent reply's filing.

pub mod pending;
pub mod replies;
pub mod section;
pub mod send;
pub mod submission;
