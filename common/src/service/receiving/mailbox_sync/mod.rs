//! One mailbox through every door: the service's side of the sync between
//! the store (what REST, MCP and the web app read) and the mail host's
//! Dovecot (what IMAP reads). `mailhost mailbox-sync` on the mail host is the
//! other side, with the sync token.
//!
//! - Store to IMAP (`changes`): every change to stored mail (a read flag, a
//!   folder move, a deletion for good) leaves a mark in the same transaction
//!   (`mail_store::sync_marks`), and every send from a hosted mailbox leaves
//!   its bytes and a mark (`sent`). The mail host reads the marks with the
//!   rows' state as it is now (`GET /mtaMailboxChanges`), applies that state
//!   with `doveadm`, and clears what it applied (`POST /mtaMailboxChanges`);
//!   a mark changed meanwhile stays, and is served again.
//! - IMAP to the store (`imap`): the mail host reads Dovecot's `mail_log`
//!   lines (what IMAP clients did), and reports each change as the state it
//!   left (seen, the folder it is in, gone, or appended with its bytes) to
//!   `POST /mtaImapChanges`, numbered: each mailbox's number only grows, and
//!   a change at or below the last one applied is not applied again
//!   (`imap_batch`: many changes in one transaction).
//!
//! The store is the one state: each door's change is applied in the order
//! it reaches the store, and IMAP is then set to the store's state.

pub mod changes;
pub mod imap;
pub mod imap_batch;
pub mod imap_single;
mod place;
pub mod sent;

pub use place::Place;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::service::mail_store::Folder;
    use crate::values::Value as _;

    #[test]
    fn imap_places_read_as_the_stores_folders() {
        assert_eq!(Place::Inbox.folder(), Some(Folder::Inbox));
        assert_eq!(Place::Trash.folder(), Some(Folder::Trash));
        // A person's own folder: archived.
        for place in [Place::Archive, Place::Own] {
            assert_eq!(place.folder(), Some(Folder::Archive));
        }
        // Junk (a report), the app's own folders and a deletion move no thread.
        for place in [Place::Junk, Place::Sent, Place::Drafts, Place::Gone] {
            assert_eq!(place.folder(), None);
        }
    }

    #[test]
    fn only_the_services_marks_are_marks() {
        use changes::MarkKey;
        assert!(MarkKey::parse("t#acct:u1#0123").is_some());
        assert!(MarkKey::parse("s#0123abcd").is_some());
        assert!(MarkKey::parse("m#acct:u1#0123").is_some());
        assert!(MarkKey::parse("KEY#abc").is_none());
        assert!(MarkKey::parse("t#").is_none());
        assert!(MarkKey::parse("d#a\nb").is_none());
    }
}
