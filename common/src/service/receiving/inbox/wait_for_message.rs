//! The `wait_for_message` tool: waits for mail, then reads the newest with
//! the codes and links in it.

use schemars::JsonSchema;
use serde::Serialize;

use super::fields::*;
use super::read::*;
use super::scope::*;
use super::shapes::*;
use super::wait::*;
use crate::error::{self, ApiError};
use crate::mail::codes;
use crate::service::caller::Call;
use crate::service::delivery::boundary::{Boundary, Envelope};
use crate::service::mail_store::{self};
use crate::values::Bounded;
use crate::values::{Cursor, EmailAddress, Needle};

crate::input! {
    /// Tool `wait_for_message`.
    pub struct WaitQuery {
        /// Seconds to wait, 1 to 25 (default 25).
        pub wait: Option<WaitSeconds> = error::INBOX_WAIT_INVALID,
        /// Only messages after this message id; omitted: any unread message.
        pub after: Option<Cursor> = error::CURSOR_INVALID,
        /// The sender contains this (case-insensitive).
        pub from: Option<Needle> = error::INBOX_FILTER_INVALID,
        /// The subject contains this (case-insensitive).
        pub subject: Option<Needle> = error::INBOX_FILTER_INVALID,
        pub mailbox: Option<EmailAddress> = error::INBOX_MAILBOX_INVALID,
        /// Cut the text to this many characters (default 20000).
        pub max_chars: Option<MaxChars> = error::MAX_CHARS_INVALID,
    }
}

/// The newest matching message, read, with the codes and links in it; or
/// `message: null` at the deadline.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WaitResult {
    pub ok: bool,
    pub message: Option<MessageView>,
    /// One-time codes found in the subject and text, likeliest first.
    pub codes: Vec<String>,
    /// http(s) links found, verification-looking ones first, each inside
    /// the envelope (a stranger wrote them).
    pub links: Vec<String>,
    pub truncated: bool,
    /// What the sender wrote is wrapped in this response's random delimiter
    /// (see notice), the links too; codes and links are found in the
    /// unwrapped text, and codes (digits and capitals) stand bare.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub envelope: Option<Envelope>,
}

pub async fn wait_for_message(call: &Call<'_>, input: WaitQuery) -> Result<WaitResult, ApiError> {
    let scope = scope(call, input.mailbox.as_deref())?;
    let filter = WaitFilter {
        after: input.after,
        from: input.from,
        subject: input.subject,
    };
    let seconds = input.wait.map_or(MAX_WAIT_SECONDS, Bounded::get);
    let Some(newest) = wait_rows(call, &scope, &filter, seconds, 1)
        .await?
        .items
        .into_iter()
        .next()
    else {
        return Ok(WaitResult {
            ok: true,
            message: None,
            codes: Vec::new(),
            links: Vec::new(),
            truncated: false,
            envelope: None,
        });
    };
    // Codes and links come from the whole text, before any cut.
    let (text, html) = mail_store::body(call.ctx, &newest).await?;
    let found_codes = codes::codes(&newest.subject, &text);
    let found_links = codes::links(&text, html.as_deref());
    let max = input.max_chars.map_or(DEFAULT_MAX_CHARS, Bounded::get) as usize;
    let boundary = Boundary::new();
    let read = read_message(call, &scope, &Target::Id(newest.id), Some(max), Some(&boundary)).await?;
    Ok(WaitResult {
        ok: true,
        truncated: read.truncated.unwrap_or(false),
        message: Some(read.message),
        codes: found_codes,
        links: found_links.iter().map(|l| boundary.wrap(l)).collect(),
        envelope: read.envelope,
    })
}
