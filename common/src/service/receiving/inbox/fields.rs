//! What a read of the inbox asks for: its bounds, its views, and the
//! fields' types.

use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::service::mail_store;
use crate::values::Bounded;

pub const DEFAULT_LIMIT: i64 = 25;
pub const MAX_LIMIT: i64 = 50;
/// The highest attachment index GET /attachment serves (spec 4.4).
pub const MAX_SPEC_ATTACHMENT_INDEX: i64 = mail_store::MAX_SPEC_ATTACHMENT_INDEX as i64;
/// The highest GET /inbox/attachment serves: every file a received message
/// keeps.
pub const MAX_ATTACHMENT_INDEX: i64 = crate::mail::inbound::MAX_ATTACHMENTS as i64 - 1;
/// Rows of each direction a search reads (spec 4.2 rule 5).
pub const SEARCH_DEPTH: usize = 200;
/// Messages in one page of a thread.
pub const THREAD_PAGE: usize = 100;
/// The longest wait for mail, under API Gateway's 29-second limit.
pub const MAX_WAIT_SECONDS: i64 = 25;
/// How often a wait looks for new mail.
pub(super) const WAIT_POLL: Duration = Duration::from_millis(500);
/// The text an MCP read returns unless the agent asks for more or less.
pub const DEFAULT_MAX_CHARS: i64 = 20_000;

/// A page's length: 1 to 50.
pub type Limit = crate::values::Limit<MAX_LIMIT>;
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

/// A message named by id or messageId (id wins when both are).
pub fn one_message_named(
    id: &Option<crate::values::RowId>,
    message_id: &Option<crate::values::StoredMessageId>,
) -> Result<(), crate::error::ApiError> {
    match (id, message_id) {
        (None, None) => Err(crate::error::MESSAGE_TARGET_REQUIRED.into()),
        _ => Ok(()),
    }
}
