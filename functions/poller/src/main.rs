//! The `poller` function: files the raw messages the mail host drops under
//! `inbound/pending/` (the job `common::jobs::POLLER`). S3's object-created
//! event (through EventBridge) runs it as each message lands; a one-minute
//! schedule is the safety net. Any event means "look at the spool": filing is
//! idempotent, so overlapping runs file each message once.

common::schedule!(POLLER);
