//! The `webhooks` function: serves /webhooks, its delivery log and replay
//! under API Gateway.

common::serve!(WEBHOOKS);
