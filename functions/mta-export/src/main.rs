//! The scheduled `mta-export` function: every minute (an EventBridge
//! schedule) writes a new `mtaMailboxExport` version for the mail host, then
//! looks at the MX of the verified domains due their daily look (`recheck`);
//! the job is `common::jobs::MTA_EXPORT`.
//!
//! Its first run in each container also runs the bootstrap (the agent key's
//! balance, the operators' account, the service domain and its mailboxes):
//! at the first run rather than at init, because init writes nothing.

common::schedule!(MTA_EXPORT);
