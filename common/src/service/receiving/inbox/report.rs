//! Spam reports through the inbox's doors: POST /inbox `{id, spam}` and the
//! tool `mark_spam`. What a report does is `service::spam::report`.

use schemars::JsonSchema;
use serde::Serialize;

use super::scope::*;
use super::shapes::*;
use crate::error::{self, ApiError};
use crate::service::caller::Call;
use crate::service::delivery::boundary::{Boundary, Envelope};
use crate::service::receiving::spam::report;
use crate::validate::Fields;
use crate::values::{EmailAddress, RowId, StoredMessageId};

/// What a report answers.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Reported {
    pub ok: bool,
    /// The message as it now is: in the spam folder (`quarantine {reason:
    /// spam}`), or back in the inbox, unread, on its thread.
    pub message: Summary,
    /// False when it was where the report puts it already (nothing changed,
    /// nothing is taught).
    pub moved: bool,
    /// The mail host's rspamd will learn from it (a move of a message whose
    /// received file the spool still keeps).
    pub learning: bool,
    /// The tools: the message's subject, preview and names wrapped in this
    /// response's random delimiter (see notice).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub envelope: Option<Envelope>,
}

/// Reports the message `target` names (404 when the caller cannot read it).
pub(super) async fn report(call: &Call<'_>, scope: &str, target: &Target, spam: bool) -> Result<Reported, ApiError> {
    let row = find(call, scope, target).await?;
    let done = report::apply(call, scope, row, spam).await?;
    Ok(Reported {
        ok: true,
        message: Summary::from(&done.row),
        moved: done.moved,
        learning: done.learning,
        envelope: None,
    })
}

crate::input! {
    /// Tool `mark_spam`.
    #[schemars(extend("anyOf" = [
        {"required": ["id"], "properties": {"id": {"type": "string"}}},
        {"required": ["messageId"], "properties": {"messageId": {"type": "string"}}}
    ]))]
    pub struct SpamInput {
        /// A received message; wins over messageId.
        pub id: Option<RowId> = error::INBOX_ID_INVALID,
        pub message_id: Option<StoredMessageId> = error::INBOX_MESSAGE_ID_INVALID,
        /// true (the default): spam, into the spam folder; false: not spam,
        /// back into the inbox, unread.
        pub spam: Option<bool> = error::SPAM_TYPE,
        /// Agent key and operators only: an address at the service domain.
        pub mailbox: Option<EmailAddress> = error::INBOX_MAILBOX_INVALID,
    }
    check SpamInput::named;
}

impl SpamInput {
    fn named(self, _: &Fields) -> Result<Self, ApiError> {
        if self.id.is_none() && self.message_id.is_none() {
            return Err(error::MESSAGE_TARGET_REQUIRED.into());
        }
        Ok(self)
    }
}

pub async fn mark_spam(call: &Call<'_>, input: SpamInput) -> Result<Reported, ApiError> {
    let scope = scope(call, input.mailbox.as_deref())?;
    let target = target(input.id, input.message_id, None).ok_or(error::MESSAGE_TARGET_REQUIRED)?;
    let reported = report(call, &scope, &target, input.spam.unwrap_or(true)).await?;
    Ok(match Boundary::for_tool(call) {
        Some(b) => b.reported(reported),
        None => reported,
    })
}
