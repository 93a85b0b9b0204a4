//! Where a message is in IMAP, and the store's folder for it.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::service::mail_store::Folder;

/// Where a message is in IMAP, as the mail host reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Place {
    Inbox,
    Archive,
    Trash,
    /// A folder the person made in their app: theirs alone; the store sees
    /// its mail as archived (out of the inbox, kept).
    Own,
    /// IMAP's `\Junk` folder: the store's spam folder. A move there reports
    /// the message as spam; a move out of it, as not spam.
    Junk,
    /// Sent and Drafts are the app's own: they move no stored row.
    Sent,
    Drafts,
    /// In no folder any more: expunged.
    Gone,
}

impl Place {
    /// The store's folder for mail in this place; `None`: it moves nothing.
    pub fn folder(self) -> Option<Folder> {
        match self {
            Place::Inbox => Some(Folder::Inbox),
            Place::Archive | Place::Own => Some(Folder::Archive),
            Place::Trash => Some(Folder::Trash),
            // Spam is no folder of a thread's: a report moves it.
            Place::Junk | Place::Sent | Place::Drafts | Place::Gone => None,
        }
    }
}
