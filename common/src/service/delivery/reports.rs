//! Mail to the bounce domain: DSNs (RFC 3464) and complaint reports (ARF,
//! RFC 5965) about our own mail. The return path it was sent to names the
//! delivery and the recipient, and its MAC must hold, so a forged or guessed
//! report changes nothing. A report is kept as evidence beside the delivery
//! and applied; it never becomes inbox mail. An auto-reply that comes back
//! to the return path (RFC 3834 says it should) is no bounce: it goes to the
//! sender's mailbox like any reply.

use sha2::{Digest, Sha256};

use super::sent::{Reply, Status};
use crate::context::Context;
use crate::error::ApiError;
use crate::mail::dsn::{self, Action, Report};

use super::record::{Applied, Event, apply, read};
use super::return_path;

/// What became of one report.
#[derive(Debug)]
pub enum Consumed {
    /// Applied (or already known: [`Applied`] says which).
    Applied(Applied),
    /// An auto-reply: file it for this address instead.
    AutoReply { deliver_to: String },
    /// Nothing changed; kept as failed with this reason.
    Refused(String),
}

/// Whether mail to this envelope recipient is a report about our own mail.
pub fn addressed_to_us(ctx: &Context, recipient: &str) -> bool {
    recipient
        .rsplit_once('@')
        .is_some_and(|(_, domain)| domain.eq_ignore_ascii_case(&return_path::bounce_domain(ctx)))
}

/// Reads and applies one report sent to `recipient` (a return path).
pub async fn consume(ctx: &Context, recipient: &str, raw: &[u8]) -> Result<Consumed, ApiError> {
    let Some((delivery, n)) = return_path::verify(ctx, recipient) else {
        return Ok(Consumed::Refused(
            "the return path is not one this service issued (a forged or guessed bounce)".into(),
        ));
    };
    let Some((sent, recipients)) = read(ctx, &delivery).await? else {
        return Ok(Consumed::Refused(
            "the report names a delivery this service does not hold".into(),
        ));
    };
    let Some(address) = recipients.get(n).map(|r| r.address.clone()) else {
        return Ok(Consumed::Refused(
            "the report names a recipient the delivery does not have".into(),
        ));
    };
    let report = match dsn::read(raw) {
        Ok(report) => report,
        Err(unreadable) => {
            return Ok(Consumed::Refused(format!(
                "the report could not be read: {}",
                unreadable.0
            )));
        }
    };
    let digest = hex::encode(Sha256::digest(raw));
    let (status, reply) = match report {
        Report::AutoReply => return Ok(Consumed::AutoReply { deliver_to: sent.from }),
        Report::Complaint(complaint) => (
            Status::Complained,
            Reply {
                text: Some(format!("complaint: {}", complaint.feedback_type)),
                remote_host: complaint.reporter,
                ..Reply::default()
            },
        ),
        Report::Delivery(report) => match about(&report, &address) {
            Some(found) => found,
            None => return Ok(Consumed::Refused(format!("the report says nothing about {address}"))),
        },
    };
    let evidence = format!("reports/{delivery}/{digest}.eml");
    ctx.blobs
        .put(&evidence, raw.to_vec(), "message/rfc822")
        .await
        .map_err(|e| ApiError::internal(format!("keeping a report: {e}")))?;
    let event = Event {
        id: format!("report-{digest}"),
        status,
        reply: Some(reply),
        at: crate::clock::iso(ctx.clock.now()),
        attempt: status != Status::Complained,
        evidence: Some(evidence),
    };
    Ok(Consumed::Applied(apply(ctx, &delivery, n, &event).await?))
}

/// What a DSN says of one recipient: its block, or the only block of a
/// report about one recipient alone (it may name it differently: an alias,
/// a forward).
fn about(report: &dsn::Dsn, address: &str) -> Option<(Status, Reply)> {
    let block = report
        .recipients
        .iter()
        .find(|r| {
            r.final_recipient
                .as_deref()
                .is_some_and(|f| f.eq_ignore_ascii_case(address))
        })
        .or_else(|| (report.recipients.len() == 1).then(|| &report.recipients[0]))?;
    let status = match block.action {
        Action::Failed => Status::Bounced,
        Action::Delayed => Status::Deferred,
        Action::Delivered | Action::Relayed | Action::Expanded => Status::Delivered,
    };
    let reply = Reply {
        smtp_code: block.smtp_code,
        enhanced_status: block.status.clone(),
        text: block.diagnostic.clone(),
        remote_host: block.remote_mta.clone().or(report.reporting_mta.clone()),
    };
    Some((status, reply))
}
