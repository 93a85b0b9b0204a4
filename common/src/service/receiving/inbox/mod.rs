//! The inbox API (spec 2.4, 3.3, 4.2-4.4): GET /inbox (the flat list, a read,
//! threads, search, waiting for mail), POST /inbox (read flags and folders),
//! GET /attachment, and their MCP tools. What is stored, and how each change is
//! kept exact, is `mail_store`.
//!
//! Who reads what: a standard key reads its own account's stored mail; the
//! agent key and operators read one service-domain mailbox (`mailbox=`,
//! default `inbox@`). A message, thread or file of another scope is 404.

use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::auth::Caller;
use crate::error::{self, ApiError};
use crate::keys;
use crate::mail::codes;
use crate::service::mail_store::{self, AttachmentInfo, Direction, Folder, Row, Thread};
use crate::service::receiving::waits;
use crate::service::{caller::Call, caller::Download};
use crate::validate::{Fields, Origin};
use crate::values::Bounded;
use crate::values::{Chars, Cursor, EmailAddress, Inline, Needle, RowId, StoredMessageId, ThreadId};

mod attachment;
mod boundary;
mod delete;
mod mark;
mod read;
mod report;
mod shapes;
mod wait;

pub use crate::service::delivery::boundary::{Boundary, Envelope, Provenance};
pub use attachment::*;
pub use delete::*;
pub use mark::*;
pub use read::*;
pub use report::*;
pub use shapes::*;
pub use wait::*;

pub const DEFAULT_LIMIT: i64 = 25;
pub const MAX_LIMIT: i64 = 50;
/// The highest attachment index GET /attachment serves: every file a
/// received message keeps (spec 4.4's 0 to 2 bounds what a send carries).
pub const MAX_ATTACHMENT_INDEX: i64 = crate::mail::inbound::MAX_ATTACHMENTS as i64 - 1;
/// Rows of each direction a search reads (spec 4.2 rule 5).
pub const SEARCH_DEPTH: usize = 200;
/// Messages in one page of a thread.
pub const THREAD_PAGE: usize = 100;
/// The longest wait for mail, under API Gateway's 29-second limit.
pub const MAX_WAIT_SECONDS: i64 = 25;
/// How often a wait looks for new mail.
const WAIT_POLL: Duration = Duration::from_millis(500);
/// The text an MCP read returns unless the agent asks for more or less.
pub const DEFAULT_MAX_CHARS: i64 = 20_000;

// ---------------------------------------------------------------- fields

/// A page's length: 1 to 50.
pub type Limit = Bounded<1, MAX_LIMIT>;
/// Seconds to wait for mail.
pub type WaitSeconds = Bounded<1, MAX_WAIT_SECONDS>;
/// How much of a message's text and html an MCP read returns.
pub type MaxChars = Bounded<100, 1_000_000>;

/// `view=`: `threads` lists conversation threads; `quarantine` lists the
/// received mail kept out of the inbox (spoofed, or refused by a sender
/// list), `spam` the mail whose content is spam, each newest first, for its
/// 30 days.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum View {
    Threads,
    Quarantine,
    Spam,
}

impl crate::values::Value for View {
    fn parse(text: &str) -> Option<View> {
        match text {
            "threads" => Some(View::Threads),
            "quarantine" => Some(View::Quarantine),
            "spam" => Some(View::Spam),
            _ => None,
        }
    }
}

/// list_inbox's `view`: the mail kept out of the inbox, `quarantine` or
/// `spam` (its threads are list_threads').
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum KeptView {
    Quarantine,
    Spam,
}

impl crate::values::Value for KeptView {
    fn parse(text: &str) -> Option<KeptView> {
        match text {
            "quarantine" => Some(KeptView::Quarantine),
            "spam" => Some(KeptView::Spam),
            _ => None,
        }
    }
}

// ---------------------------------------------------------------- scope

/// The scope a caller reads: a standard key its account; the agent key and
/// operators a service-domain mailbox (`inbox@` by default).
pub(crate) fn scope(call: &Call<'_>, mailbox: Option<&str>) -> Result<String, ApiError> {
    match call.caller {
        Caller::Standard(key) => match mailbox {
            Some(_) => Err(error::INBOX_MAILBOX_INVALID.into()),
            None => Ok(keys::inbox_account_scope(&key.uid)),
        },
        _ => {
            let domain = call.ctx.config.service_domain.as_str();
            let address = match mailbox {
                Some(m) if crate::values::email_domain(m) == domain => m.to_string(),
                Some(_) => return Err(error::INBOX_MAILBOX_INVALID.into()),
                None => format!("inbox@{domain}"),
            };
            Ok(keys::inbox_mailbox_scope(&address))
        }
    }
}

/// A message by id, else by Message-ID.
async fn find(call: &Call<'_>, scope: &str, target: &Target) -> Result<Row, ApiError> {
    let row = match target {
        Target::Id(id) => mail_store::by_id(call.ctx, scope, id).await?,
        Target::MessageId(mid) => mail_store::by_message_id(call.ctx, scope, mid, None).await?,
        Target::Thread(_) => None,
    };
    row.filter(|r| r.readable_by(call.caller))
        .ok_or(error::NOT_FOUND.into())
}

/// A thread's summary; 404 when it is not there or, for a scoped key, in a
/// mailbox outside its scope (as another account's is).
async fn find_thread(call: &Call<'_>, scope: &str, thread: &str) -> Result<Thread, ApiError> {
    mail_store::thread(call.ctx, scope, thread)
        .await?
        .filter(|t| t.readable_by(call.caller))
        .ok_or(error::NOT_FOUND.into())
}

/// Whether a stored row or thread summary is in a mailbox the caller may
/// read (a scoped key may be narrowed to some).
fn visible<'c>(call: &'c Call<'_>) -> impl Fn(&crate::store::RawItem) -> bool + 'c {
    mail_store::covered(call.caller, "mailbox")
}

#[derive(Debug, Clone)]
enum Target {
    Id(String),
    MessageId(String),
    Thread(String),
}

/// id wins over messageId, and both over thread (spec 4.2 rule 1, 4.3).
fn target(id: Option<RowId>, message_id: Option<StoredMessageId>, thread: Option<ThreadId>) -> Option<Target> {
    id.map(|id| Target::Id(id.into_string()))
        .or(message_id.map(|m| Target::MessageId(m.into_string())))
        .or(thread.map(|t| Target::Thread(t.into_string())))
}
