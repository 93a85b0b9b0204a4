//! What was sent and what became of it, per recipient: the records the
//! delivery status keeps (`DLV#<id>/M` and `R#<n>`), below the code that
//! moves them (`delivery`), lists them (`outbox`) and follows them
//! (`suppressions`, webhooks).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::auth::Caller;
use crate::service::caller::account::OPS_UID;
use crate::service::webhooks::AGENT_OWNER;

/// A recipient's delivery, from the relay's answer onward.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// The relay accepted it.
    Sent,
    /// A remote server asked to try again later; the relay keeps trying.
    Deferred,
    /// The remote server accepted it.
    Delivered,
    /// It came back: a DSN, or the remote server refused it.
    Bounced,
    /// The relay refused it; it never left.
    Failed,
    /// The recipient reported it as spam.
    Complained,
}

impl Status {
    /// Statuses only move to a higher rank: a late `deferred` never hides a
    /// `delivered`, while a bounce that arrives after the remote server
    /// accepted the mail still counts, and a complaint comes last of all.
    pub fn rank(self) -> i64 {
        match self {
            Status::Sent => 0,
            Status::Deferred => 1,
            Status::Delivered => 2,
            Status::Bounced | Status::Failed => 3,
            Status::Complained => 4,
        }
    }

    /// The webhook event a change to this status fires, if any.
    pub fn event_type(self) -> Option<&'static str> {
        match self {
            Status::Delivered => Some("outbound.delivered"),
            Status::Deferred => Some("outbound.deferred"),
            Status::Bounced => Some("outbound.bounced"),
            Status::Complained => Some("outbound.complained"),
            Status::Sent | Status::Failed => None,
        }
    }
}

/// The last reply a remote server (or the relay) gave.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Reply {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub smtp_code: Option<u16>,
    /// RFC 3463, such as `5.1.1`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enhanced_status: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// The remote host, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote_host: Option<String>,
}

impl Reply {
    /// A permanent failure (5.x.x, or a 5xx reply without an enhanced code).
    pub fn permanent(&self) -> bool {
        match &self.enhanced_status {
            Some(status) => status.starts_with('5'),
            None => self.smtp_code.is_some_and(|c| (500..600).contains(&c)),
        }
    }

    /// One line for a sentence: `550 5.1.1 User unknown`.
    pub fn summary(&self) -> String {
        let parts = [
            self.smtp_code.map(|c| c.to_string()),
            self.enhanced_status.clone(),
            self.text.clone(),
        ];
        parts.into_iter().flatten().collect::<Vec<_>>().join(" ")
    }
}

/// One change of a recipient's status.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Change {
    pub status: Status,
    pub at: String,
}

/// One recipient's delivery, as stored and shown.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Recipient {
    pub address: String,
    pub status: Status,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reply: Option<Reply>,
    /// Delivery attempts reported for it (the relay's, then the mail host's).
    pub attempts: u32,
    pub updated_at: String,
    /// Every change, oldest first.
    pub history: Vec<Change>,
    /// The reports (DSNs, complaints) that moved it, kept as received.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub evidence: Vec<String>,
}

/// A sent row's delivery in the inbox's lists and reads: the overall status
/// and each recipient's, without replies or history (GET /outbox has those).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct DeliveryBrief {
    /// The one that needs attention first: complained, bounced, failed,
    /// deferred, sent, then delivered (every recipient delivered).
    pub status: Status,
    pub recipients: Vec<RecipientBrief>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RecipientBrief {
    pub address: String,
    pub status: Status,
}

impl DeliveryBrief {
    pub fn of(recipients: &[Recipient]) -> DeliveryBrief {
        const ATTENTION: [Status; 6] = [
            Status::Complained,
            Status::Bounced,
            Status::Failed,
            Status::Deferred,
            Status::Sent,
            Status::Delivered,
        ];
        let status = ATTENTION
            .into_iter()
            .find(|s| recipients.iter().any(|r| r.status == *s))
            .unwrap_or(Status::Sent);
        DeliveryBrief {
            status,
            recipients: recipients
                .iter()
                .map(|r| RecipientBrief {
                    address: r.address.clone(),
                    status: r.status,
                })
                .collect(),
        }
    }
}

/// What was sent, as the outbox lists it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SentMessage {
    /// The delivery's own id (in the return path).
    pub id: String,
    /// `agent` for the service-domain sender, else the account's uid.
    #[schemars(skip)]
    pub owner: String,
    pub message_id: String,
    pub from: String,
    pub subject: String,
    /// The recipients, in the order sent.
    pub to: Vec<String>,
    pub created_at: String,
    /// `api` (sendMail, send_mail) or `smtp` (a mailbox's submission).
    pub source: String,
}

/// Whose sent mail and suppression list a sender's mail counts in: the
/// owner of the sending domain (`agent` for the service's own).
pub fn owner_of(domain_uid: &str) -> String {
    match domain_uid {
        OPS_UID => AGENT_OWNER.into(),
        uid => uid.into(),
    }
}

/// The owner whose list a caller reads and writes: the agent key and
/// operators the service-domain sender's, a standard key its account's.
pub fn owner_of_caller(caller: &Caller) -> String {
    match caller {
        Caller::Standard(key) => key.uid.clone(),
        _ => AGENT_OWNER.into(),
    }
}
