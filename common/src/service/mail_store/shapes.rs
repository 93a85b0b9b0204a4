//! The shapes of stored mail: a row (kept whole in one place, found by its
//! pointers), a thread's summary, and the folder and direction a row has.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::keys;
use crate::mail::authenticate::Authentication;
use crate::mail::spam::SpamVerdict;
use crate::store::{Key, Write, item};

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Folder {
    #[default]
    Inbox,
    Archive,
    Trash,
}

impl Folder {
    pub const ALL: [Folder; 3] = [Folder::Inbox, Folder::Archive, Folder::Trash];

    pub fn as_str(self) -> &'static str {
        match self {
            Folder::Inbox => "inbox",
            Folder::Archive => "archive",
            Folder::Trash => "trash",
        }
    }

    pub fn parse(s: &str) -> Option<Folder> {
        Folder::ALL.into_iter().find(|f| f.as_str() == s)
    }
}

impl crate::values::Value for Folder {
    fn parse(text: &str) -> Option<Folder> {
        Folder::parse(text)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    Inbound,
    Outbound,
}

impl Direction {
    pub fn as_str(self) -> &'static str {
        match self {
            Direction::Inbound => "inbound",
            Direction::Outbound => "outbound",
        }
    }
}

impl crate::values::Value for Direction {
    fn parse(text: &str) -> Option<Direction> {
        [Direction::Inbound, Direction::Outbound]
            .into_iter()
            .find(|d| d.as_str() == text.trim())
    }
}

/// Why a received message is kept out of the inbox. Such a row is filed
/// apart (`QUAR#<scope>`): not in the inbox list, the folders, the threads or
/// any unread count, announced by no webhook, kept [`QUARANTINE_DAYS`] days,
/// listed by `view=quarantine`, and still read by id or Message-ID.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Quarantine {
    /// The From domain's DMARC policy is quarantine or reject and the
    /// message fails it.
    Spoofed,
    /// The sender is on the mailbox's block list.
    BlockedSender,
    /// The mailbox takes mail only from its allow list, which does not name
    /// the sender.
    SenderNotAllowed,
    /// rspamd on the mail host judged its content spam (the row's `spam`),
    /// by the mailbox's settings; or its owner reported it. Kept in a
    /// partition of its own (`SPAM#<scope>`, `view=spam`), not the
    /// quarantine's.
    Spam,
}

impl Quarantine {
    /// The partition rows kept out for this reason live in.
    pub fn partition(self, scope: &str) -> String {
        match self {
            Quarantine::Spam => keys::spam_partition(scope),
            _ => keys::quarantine_partition(scope),
        }
    }
}

/// How long a quarantined row is kept.
pub const QUARANTINE_DAYS: i64 = 30;

/// A quarantined row's reason and when it was filed so.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Quarantined {
    pub reason: Quarantine,
    /// RFC 3339; the row is gone 30 days later.
    pub at: String,
}

/// Attachment metadata on a row; the bytes are the blob `<blobPrefix>/att-<index>`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AttachmentInfo {
    pub index: usize,
    pub filename: String,
    pub content_type: String,
    pub size: usize,
    /// Where GET /attachment serves it.
    pub download_path: String,
    /// An inline part's Content-ID (without angle brackets): the HTML body
    /// shows it where it links `cid:<contentId>`. Omitted when it has none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_id: Option<String>,
}

/// One stored message, as its home partition keeps it (see [`Row::home`]).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Row {
    pub id: String,
    pub message_id: String,
    pub mailbox: String,
    #[serde(rename = "box")]
    pub direction: Direction,
    pub from: String,
    pub to: Vec<String>,
    pub subject: String,
    pub preview: String,
    pub date: Option<String>,
    pub ingested_at: String,
    pub unread: bool,
    #[serde(default)]
    pub folder: Option<Folder>,
    pub source: String,
    pub thread_id: String,
    pub attachments: Vec<AttachmentInfo>,
    /// `mail/<mailbox>/<32 hex of its direction and Message-ID>`: its blobs.
    pub blob_prefix: String,
    /// The body, or its first `TEXT_ON_ROW` bytes when `text_in_blob`.
    pub text: String,
    #[serde(default)]
    pub text_in_blob: bool,
    /// The HTML body is the blob `<blobPrefix>/body.html`.
    #[serde(default)]
    pub has_html: bool,
    /// The SHA-256 of the message as received (empty for a send): the same
    /// digest again is the same message.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub digest: String,
    /// Another message was filed earlier under this Message-ID: this one is
    /// kept too, and marked.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub message_id_conflict: bool,
    /// A sent row's delivery id (`DLV#<id>`): its recipients' status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivery: Option<String>,
    /// The verdicts computed when it was received (none on a send, nor on
    /// mail filed before they were kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authentication: Option<Authentication>,
    /// rspamd's verdict on its content, when the mail host scanned it (none
    /// locally, on a send, and on mail filed before verdicts were kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spam: Option<SpamVerdict>,
    /// Set when the row is kept out of the inbox.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quarantine: Option<Quarantined>,
    /// Epoch seconds after which the store may drop it (quarantined rows).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl: Option<i64>,
    /// Mail the service itself sent the account's owner (an access code, an
    /// approval request): only the account key and people signed in read it,
    /// never a scoped key, and it fires no webhook.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub owner_only: bool,
    /// The received file in the spool, kept 30 days: the version of
    /// `inbound/pending/<name>` a versioned bucket keeps
    /// (`blob::at_version`), or `inbound/done/<name>`; what a spam report
    /// teaches rspamd.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw: Option<String>,
    /// The display name written beside the sender's address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from_name: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cc: Vec<String>,
    /// A send's Bcc recipients: on the sender's own row alone.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub bcc: Vec<String>,
    /// Where its sender asks replies to go (its Reply-To).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reply_to: Vec<String>,
    /// The display names of its other addresses (To, Cc, Reply-To), by address.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub names: BTreeMap<String, String>,
    /// The Message-IDs of the conversation before it (its References, else
    /// its In-Reply-To): what a reply's References carry on.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub references: Vec<String>,
}

/// Whether `caller` may read what `mailbox` keeps: the mailbox is in the
/// caller's scope, and owner-only mail goes to no scoped key. A row, its
/// pointers and its thread's summary all answer by this one rule.
pub(super) fn readable(caller: &crate::auth::Caller, mailbox: &str, owner_only: bool) -> bool {
    caller.covers(mailbox) && (!owner_only || caller.scope().is_none())
}

impl Row {
    pub fn readable_by(&self, caller: &crate::auth::Caller) -> bool {
        readable(caller, &self.mailbox, self.owner_only)
    }

    pub fn outbound(&self) -> bool {
        self.direction == Direction::Outbound
    }

    pub fn folder(&self) -> Folder {
        self.folder.unwrap_or(Folder::Inbox)
    }

    /// Where the row itself is kept, whole: its direction's partition, or
    /// the quarantine's or the spam folder's. Its flag and folder change here
    /// alone.
    pub(super) fn home(&self, scope: &str) -> Key {
        match &self.quarantine {
            Some(kept) => Key::new(kept.reason.partition(scope), &self.id),
            None => Key::new(keys::mail_partition(scope, self.outbound()), &self.id),
        }
    }

    /// The keys of the pointers that find the row ([`RowRef`]), its
    /// Message-ID's first: a quarantined row is found by Message-ID alone
    /// (no folder or thread lists it).
    pub(super) fn pointers(&self, scope: &str) -> Vec<Key> {
        let by_message_id = if self.message_id_conflict {
            keys::conflicting_message_id(scope, &self.message_id, &self.mailbox, &self.digest)
        } else {
            keys::message_id(scope, &self.message_id, &self.mailbox, self.outbound())
        };
        let mut keys = vec![by_message_id];
        keys.extend(self.listing_pointers(scope));
        keys
    }

    /// The pointers that list the row: its thread's, and an inbound row's
    /// folder's (none for a quarantined row).
    pub(super) fn listing_pointers(&self, scope: &str) -> Vec<Key> {
        if self.quarantine.is_some() {
            return Vec::new();
        }
        let mut keys = vec![Key::new(keys::thread_partition(scope, &self.thread_id), &self.id)];
        if !self.outbound() {
            keys.push(self.folder_pointer(scope, self.folder()));
        }
        keys
    }

    /// The key of its pointer in a folder's list.
    pub(super) fn folder_pointer(&self, scope: &str, folder: Folder) -> Key {
        Key::new(keys::folder_partition(scope, folder.as_str()), &self.id)
    }

    /// The pointer to this row, stored under `key`.
    pub(super) fn pointer(&self, key: &Key) -> crate::store::Item {
        item(
            key,
            &RowRef {
                id: self.id.clone(),
                mailbox: self.mailbox.clone(),
                direction: self.direction,
                thread_id: self.thread_id.clone(),
                digest: self.digest.clone(),
                owner_only: self.owner_only,
            },
        )
    }

    /// Whether q (already lowercase) is in its subject, sender or body.
    pub fn matches(&self, q: &str) -> bool {
        [&self.subject, &self.from, &self.text]
            .iter()
            .any(|field| field.to_lowercase().contains(q))
    }
}

/// A pointer to a row, as its Message-ID, its thread and its folder keep
/// it: what finds the row (its id and direction), what a page is filtered
/// by (who may read it), and what filing asks of a Message-ID already held
/// (its digest, its thread). The row's flag and folder are on the row alone,
/// so a flag change writes one item, not one per copy. A whole row stored
/// under these keys (as they were once kept) reads as its pointer.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RowRef {
    pub id: String,
    pub mailbox: String,
    #[serde(rename = "box")]
    pub direction: Direction,
    pub thread_id: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub digest: String,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub owner_only: bool,
}

impl RowRef {
    pub fn readable_by(&self, caller: &crate::auth::Caller) -> bool {
        readable(caller, &self.mailbox, self.owner_only)
    }
}

/// A thread's summary (sort key `#` of its partition, and copied into its
/// folder's thread list).
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Thread {
    /// 64 lowercase hex characters.
    pub thread_id: String,
    pub mailbox: String,
    /// The subject of the message that started it.
    pub subject: String,
    /// Senders and recipients seen on it, first seen first.
    pub participants: Vec<String>,
    /// The display names its messages gave its participants, by address;
    /// omitted when none.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub names: BTreeMap<String, String>,
    pub last_activity: String,
    pub message_count: i64,
    pub inbound_count: i64,
    pub outbound_count: i64,
    pub unread_count: i64,
    pub folder: Folder,
    /// Started by owner-only mail (see the row's): no scoped key lists it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub owner_only: bool,
    #[serde(skip_serializing)]
    #[schemars(skip)]
    #[serde(default)]
    pub version: i64,
    #[serde(skip_serializing)]
    #[schemars(skip)]
    #[serde(default)]
    pub last_ms: i64,
}

/// The stored form of a summary: the public fields plus its version and the
/// sort key of its list copy, which the public shape leaves out.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct StoredThread<'a> {
    #[serde(flatten)]
    thread: &'a Thread,
    version: i64,
    last_ms: i64,
}

impl Thread {
    /// Whether `caller` may see this thread, as [`Row::readable_by`].
    pub fn readable_by(&self, caller: &crate::auth::Caller) -> bool {
        readable(caller, &self.mailbox, self.owner_only)
    }

    pub(super) fn stored_item(&self, key: &Key) -> crate::store::Item {
        item(
            key,
            &StoredThread {
                thread: self,
                version: self.version,
                last_ms: self.last_ms,
            },
        )
    }

    pub(super) fn list_copy(&self, scope: &str) -> Key {
        Key::new(
            keys::threads_partition(scope, self.folder.as_str()),
            format!("{:013}-{}", self.last_ms.max(0), self.thread_id),
        )
    }
}

/// Who a message names beside its sender's address and To: each may be
/// left out.
#[derive(Debug, Default)]
pub struct Named<'a> {
    pub from_name: Option<&'a str>,
    pub cc: &'a [String],
    /// A send's Bcc recipients, kept on its own row.
    pub bcc: &'a [String],
    pub reply_to: &'a [String],
    /// Display names by address.
    pub names: BTreeMap<String, String>,
}

/// A message to file: what the poller parsed, or what a threaded send sent.
pub struct NewMessage<'a> {
    pub scope: &'a str,
    pub mailbox: &'a str,
    pub direction: Direction,
    pub message_id: &'a str,
    pub from: &'a str,
    pub to: &'a [String],
    pub named: Named<'a>,
    pub subject: &'a str,
    pub date: Option<String>,
    pub in_reply_to: &'a [String],
    pub references: &'a [String],
    pub text: &'a str,
    pub html: Option<&'a str>,
    /// (filename, content type, bytes)
    pub attachments: Vec<(&'a str, &'a str, &'a [u8])>,
    /// Each attachment's Content-ID, by index (received mail; empty for a send).
    pub content_ids: Vec<Option<&'a str>>,
    pub source: &'a str,
    /// Only file it when it joins a thread this scope already holds.
    pub only_on_existing_thread: bool,
    /// The SHA-256 (hex) of a received message's bytes; none for a send,
    /// whose Message-ID is new.
    pub digest: Option<&'a str>,
    /// A send's delivery id, kept on its row.
    pub delivery: Option<&'a str>,
    /// A received message's verdicts (none for a send).
    pub authentication: Option<&'a Authentication>,
    /// rspamd's verdict on a received message's content, when there is one.
    pub spam: Option<&'a SpamVerdict>,
    /// The received file in the spool once filed (see `Row::raw`).
    pub raw: Option<&'a str>,
    /// Keep it out of the inbox, for this reason (see [`Quarantine`]).
    pub quarantine: Option<Quarantine>,
    /// Other writes made in the filing's own transaction, only if it files
    /// the message (the poller's: its sender, remembered as a contact).
    pub also: Vec<Write>,
}
