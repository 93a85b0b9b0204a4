//! The `drafts` function: serves GET/POST/DELETE /drafts under API Gateway.

common::serve!(DRAFTS);
