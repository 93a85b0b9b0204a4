//! The end-to-end tests, one binary (one link when `common` changes), one
//! module per area; `support` is the harness they share.

#[macro_use]
mod support;

mod auth_matrix;
mod authentication;
mod binary;
mod conversation;
mod credits_admin;
mod delivery;
mod dmarc;
mod dns_server;
mod domains;
mod drafts;
mod errors_seen;
mod guardrails;
mod hardening;
mod inbox;
mod key_scope;
mod lambda_functions;
mod lists;
mod local_edges;
mod local_zone;
mod mail_host;
mod mail_host_delivery;
mod mail_host_spam;
mod mailbox_sync;
mod mailbox_sync_batch;
mod mailbox_sync_faults;
mod mailbox_sync_marks;
mod mailbox_sync_races;
mod mailboxes;
mod mcp;
mod mta_sync;
mod onboarding;
mod openapi;
mod operations;
mod received;
mod search;
mod send;
mod send_smtp;
mod smtp_sink;
mod spam;
mod spool_s3;
mod web;
mod webhooks;
