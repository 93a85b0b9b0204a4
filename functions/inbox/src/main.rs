//! The `inbox` function: serves GET/POST /inbox and GET /attachment under API
//! Gateway.

common::serve!(INBOX);
