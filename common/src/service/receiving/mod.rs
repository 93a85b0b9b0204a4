//! Receiving: filing what the mail host drops (the poller) and its spam verdict, reading it (the inbox, search), replying to it (conversation), drafts, waiting for mail, and the IMAP door (mailbox_sync).

pub mod conversation;
pub mod drafts;
pub mod inbox;
pub mod mailbox_sync;
pub mod poller;
pub mod search;
pub mod section;
pub mod spam;
pub mod waits;
