//! GET /outbox, MCP `list_outbox` and `get_delivery_status`: a caller's sent
//! mail, newest first, each with its recipients' delivery status. Who sees
//! what follows the inbox: the agent key and operators the service-domain
//! sender's mail, a standard key its own account's. The tools hand a remote
//! server's reply to an agent inside the inbox's envelope (a stranger wrote
//! it); GET /outbox shows it as it is.

use schemars::JsonSchema;
use serde::Serialize;

use super::boundary::{Boundary, Envelope};
use super::sent::{Recipient, SentMessage, owner_of_caller};
use crate::error::{self, ApiError};
use crate::keys;
use crate::service::caller::Call;
use crate::service::delivery;
use crate::store::StoreExt;
use crate::values::Page;
use crate::values::{Cursor, Limit, StoredMessageId};

/// One sent message and what became of it.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OutboxMessage {
    pub message_id: String,
    pub from: String,
    pub subject: String,
    pub created_at: String,
    /// Each recipient in the order sent, with its status (`sent`, `delivered`,
    /// `deferred`, `bounced`, `complained`, `failed`), the last remote reply,
    /// the attempts seen and every change.
    pub recipients: Vec<Recipient>,
}

impl OutboxMessage {
    /// The message with each remote reply inside `boundary`'s envelope.
    fn for_agent(self, boundary: &Boundary) -> Self {
        OutboxMessage {
            recipients: self.recipients.into_iter().map(|r| boundary.recipient(r)).collect(),
            ..self
        }
    }

    fn of(sent: SentMessage, recipients: Vec<Recipient>) -> Self {
        OutboxMessage {
            message_id: sent.message_id,
            from: sent.from,
            subject: sent.subject,
            created_at: sent.created_at,
            recipients,
        }
    }
}

crate::input! {
    pub struct OutboxQuery {
        /// One sent message by its Message-ID.
        pub message_id: Option<StoredMessageId> = error::INBOX_MESSAGE_ID_INVALID,
        pub limit: Option<Limit<50>>,
        /// The nextCursor of the previous page.
        pub cursor: Option<Cursor> = error::CURSOR_INVALID,
    }
}

/// The list (`messages`, `nextCursor`), or with messageId the one `message`.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OutboxOutput {
    pub ok: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<OutboxMessage>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub messages: Option<Vec<OutboxMessage>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

pub async fn outbox(call: &Call<'_>, input: OutboxQuery) -> Result<OutboxOutput, ApiError> {
    if let Some(message_id) = input.message_id {
        let message = one(call, &message_id).await?;
        return Ok(OutboxOutput {
            ok: true,
            message: Some(message),
            messages: None,
            next_cursor: None,
        });
    }
    let (messages, next_cursor) = page(call, input.limit, input.cursor).await?;
    Ok(OutboxOutput {
        ok: true,
        message: None,
        messages: Some(messages),
        next_cursor,
    })
}

crate::input! {
    pub struct ListQuery {
        pub limit: Option<Limit<50>>,
        /// The nextCursor of the previous page.
        pub cursor: Option<Cursor> = error::CURSOR_INVALID,
    }
}

#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OutboxList {
    pub ok: bool,
    /// Newest first.
    pub messages: Vec<OutboxMessage>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
    /// Each remote reply's text and host (a stranger's) is wrapped in this
    /// response's random delimiter (see notice).
    pub envelope: Envelope,
}

pub async fn list(call: &Call<'_>, input: ListQuery) -> Result<OutboxList, ApiError> {
    let (messages, next_cursor) = page(call, input.limit, input.cursor).await?;
    let boundary = Boundary::new();
    Ok(OutboxList {
        ok: true,
        messages: messages.into_iter().map(|m| m.for_agent(&boundary)).collect(),
        next_cursor,
        envelope: boundary.describe(None),
    })
}

crate::input! {
    pub struct StatusQuery {
        /// The Message-ID the send answered with.
        pub message_id: StoredMessageId = (error::INBOX_MESSAGE_ID_INVALID, error::INBOX_MESSAGE_ID_INVALID),
    }
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct DeliveryStatus {
    pub ok: bool,
    pub message: OutboxMessage,
    /// Each remote reply's text and host (a stranger's) is wrapped in this
    /// response's random delimiter (see notice).
    pub envelope: Envelope,
}

pub async fn status(call: &Call<'_>, input: StatusQuery) -> Result<DeliveryStatus, ApiError> {
    let boundary = Boundary::new();
    Ok(DeliveryStatus {
        ok: true,
        message: one(call, &input.message_id).await?.for_agent(&boundary),
        envelope: boundary.describe(None),
    })
}

/// One of the caller's sent messages; 404 for anyone else's.
async fn one(call: &Call<'_>, message_id: &str) -> Result<OutboxMessage, ApiError> {
    let owner = owner_of_caller(call.caller);
    let pointer: Option<serde_json::Value> = call
        .ctx
        .store
        .read(&keys::outbox_message_id(&owner, message_id))
        .await?;
    let delivery = pointer
        .as_ref()
        .and_then(|p| p.get("delivery"))
        .and_then(|d| d.as_str())
        .ok_or(error::NOT_FOUND)?;
    let (sent, recipients) = delivery::read(call.ctx, delivery)
        .await?
        .filter(|(sent, _)| call.caller.covers(&sent.from))
        .ok_or(error::NOT_FOUND)?;
    Ok(OutboxMessage::of(sent, recipients))
}

async fn page(
    call: &Call<'_>,
    limit: Option<Limit<50>>,
    cursor: Option<Cursor>,
) -> Result<(Vec<OutboxMessage>, Option<String>), ApiError> {
    let owner = owner_of_caller(call.caller);
    let limit = Limit::rows(limit, 25);
    let keep = crate::service::mail_store::covered(call.caller, "from");
    let Page { items, next_cursor } = crate::service::mail_store::page_raw_where(
        call.ctx,
        keys::outbox(&owner),
        true,
        cursor.as_deref(),
        limit,
        keep,
    )
    .await?;
    let sent = items
        .iter()
        .map(|i| i.record())
        .collect::<Result<Vec<SentMessage>, _>>()?;
    let recipients = delivery::recipients_of(call.ctx, &sent).await?;
    let messages = sent
        .into_iter()
        .zip(recipients)
        .map(|(s, r)| OutboxMessage::of(s, r))
        .collect();
    Ok((messages, next_cursor))
}
