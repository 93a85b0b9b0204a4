//! The services, one folder per capability. A service takes a
//! [`caller::Call`] and a typed input and returns a typed output or a named
//! error from the catalogue ([`crate::error`]); it never sees HTTP or
//! JSON-RPC types. This file only names the folders: each folder's `mod.rs`
//! says what it holds.
//!
//! The floors, each importing only the ones below it (the architecture test
//! holds them to it):
//!
//! 1. `caller` (who calls, the account it acts for), `mail_store` (stored
//!    mail: rows, threads, their changes), `system_mail` (what the service
//!    mails from noreply@ itself);
//! 2. `domains` (add, check, verify, DKIM, the daily MX look), `webhooks`
//!    (the registration, the events published, the delivery log);
//! 3. `mailboxes` (the record, its routes, forwarding);
//! 4. `accounts` (onboarding, status, credits, allowlist, who pays),
//!    `guardrails` (the audit log, allow and block lists);
//! 5. `delivery` (what happened to each sent mail: the relay's answer,
//!    bounces, complaints, suppressions, the outbox, DMARC reports);
//! 6. `sending` (scoped keys, sendMail, submissions, held and scheduled
//!    sends), `operators` (decisions, removals, the bootstrap, the mail
//!    host's export);
//! 7. `receiving` (the poller and spam, the inbox, search, reply and
//!    forward, drafts, the IMAP door).

pub mod accounts;
pub mod caller;
pub mod delivery;
pub mod domains;
pub mod guardrails;
pub mod mail_store;
pub mod mailboxes;
pub mod operators;
pub mod receiving;
pub mod sending;
pub mod system_mail;
pub mod webhooks;
