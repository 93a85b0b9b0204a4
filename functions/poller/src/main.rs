//! The `poller` function: files the raw messages the mail host drops under
//! `inbound/pending/` (the job `common::jobs::POLLER`). S3's object-created
//! event (through EventBridge) runs it as each message lands, for that file
//! alone; a one-minute schedule lists the spool, the safety net for a lost
//! event. Filing is idempotent, so overlapping runs file each message once.

common::schedule!(POLLER);
