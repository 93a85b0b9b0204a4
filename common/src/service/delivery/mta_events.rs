//! `POST /mtaDeliveryEvents`: what the mail host's Postfix log says became of
//! our mail (`mailhost mta-sync` reads it and reports with the sync token):
//! delivered to the remote server, deferred, or bounced. Each event names
//! the return path it went out with, which names the delivery and recipient;
//! an event whose return path does not verify is ignored.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::sent::{Reply, Status};
use crate::error::{self, ApiError};
use crate::service::caller::Call;
use crate::values::{Field, Origin};

use super::record::{Applied, Event, apply};
use super::return_path;

/// The most events one request carries.
pub const MAX_EVENTS: usize = 100;

/// One line of the mail host's delivery log.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MtaEvent {
    /// Stable for one log line (the mail host sends a line again after a failure).
    #[schemars(length(min = 1, max = 128))]
    pub id: String,
    /// The envelope sender the message went out with.
    #[schemars(length(max = 254))]
    pub return_path: String,
    #[serde(default)]
    pub recipient: Option<String>,
    pub status: LogStatus,
    /// ISO 8601.
    pub at: String,
    #[serde(default)]
    pub smtp_code: Option<u16>,
    #[serde(default)]
    pub enhanced_status: Option<String>,
    #[serde(default)]
    pub reply: Option<String>,
    #[serde(default)]
    pub remote_host: Option<String>,
    #[serde(default)]
    pub queue_id: Option<String>,
}

/// Postfix's `status=`: `sent` to the remote server is delivered here.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum LogStatus {
    Delivered,
    Deferred,
    Bounced,
}

/// 1 to [`MAX_EVENTS`] events.
#[derive(Debug, JsonSchema)]
pub struct MtaEvents(#[schemars(length(min = 1, max = 100))] pub Vec<MtaEvent>);

impl Field for MtaEvents {
    type Problems = ();
    fn read(value: &Value, _: Origin, (): ()) -> Result<Option<Self>, ApiError> {
        let events: Vec<MtaEvent> =
            serde_json::from_value(value.clone()).map_err(|_| error::DELIVERY_EVENTS_INVALID)?;
        let bounded = |s: &Option<String>, max: usize| s.as_ref().is_none_or(|s| s.chars().count() <= max);
        let sound = |e: &MtaEvent| {
            !e.id.is_empty()
                && e.id.len() <= 128
                && e.return_path.len() <= 254
                && chrono::DateTime::parse_from_rfc3339(&e.at).is_ok()
                && bounded(&e.reply, 2000)
                && bounded(&e.remote_host, 300)
                && bounded(&e.enhanced_status, 16)
                && bounded(&e.recipient, 254)
        };
        if events.is_empty() || events.len() > MAX_EVENTS || !events.iter().all(sound) {
            return Err(error::DELIVERY_EVENTS_INVALID.into());
        }
        Ok(Some(MtaEvents(events)))
    }
}

crate::input! {
    /// A batch of the mail host's delivery log.
    pub struct EventsInput {
        pub events: MtaEvents = (error::DELIVERY_EVENTS_INVALID, ()),
    }
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct EventsApplied {
    pub ok: bool,
    /// Events that moved a recipient's status.
    pub applied: usize,
    /// Events already applied, gone past, or not about our mail.
    pub ignored: usize,
}

pub async fn report(call: &Call<'_>, input: EventsInput) -> Result<EventsApplied, ApiError> {
    let (mut applied, mut ignored) = (0, 0);
    for logged in input.events.0 {
        let Some((delivery, n)) = return_path::verify(call.ctx, &logged.return_path) else {
            ignored += 1;
            continue;
        };
        let event = Event {
            id: format!("log-{}", logged.id),
            status: match logged.status {
                LogStatus::Delivered => Status::Delivered,
                LogStatus::Deferred => Status::Deferred,
                LogStatus::Bounced => Status::Bounced,
            },
            reply: Some(Reply {
                smtp_code: logged.smtp_code,
                enhanced_status: logged.enhanced_status,
                text: logged.reply,
                remote_host: logged.remote_host,
            }),
            at: logged.at,
            attempt: true,
            evidence: None,
        };
        match apply(call.ctx, &delivery, n, &event).await? {
            Applied::Changed => applied += 1,
            _ => ignored += 1,
        }
    }
    Ok(EventsApplied {
        ok: true,
        applied,
        ignored,
    })
}
