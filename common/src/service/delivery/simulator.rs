//! Reserved recipients at `simulator.<service domain>`, so people and agents
//! can test what happens to mail without real mail: `delivered@`,
//! `bounced@`, `deferred@` (then delivered), `complained@` and `autoreply@`,
//! each with any `+label`. Mail to them never leaves the service; its story
//! is told through the same code as real mail's: a delivered or deferred
//! event as the mail host's log reports one, and DSNs, complaint reports and
//! auto-replies built in their real formats and read by the same reader.
//! Any other local part bounces as an unknown user would.

use crate::context::Context;
use crate::error::ApiError;
use crate::mail::dsn;
use crate::mail::inbound::{self, Envelope};
use crate::service::sent::{Reply, SentMessage, Status};

use super::{Event, apply, reports, return_path};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scenario {
    Delivered,
    Bounced,
    Deferred,
    Complained,
    AutoReply,
    /// A local part the simulator does not know: a 5.1.1 bounce.
    Unknown,
}

/// The simulator's domain.
pub fn domain(ctx: &Context) -> String {
    format!("simulator.{}", ctx.config.service_domain)
}

/// The scenario of a simulator address, or `None` for any other address.
pub fn scenario(ctx: &Context, address: &str) -> Option<Scenario> {
    let (local, host) = address.rsplit_once('@')?;
    if !host.eq_ignore_ascii_case(&domain(ctx)) {
        return None;
    }
    let base = local.split('+').next().unwrap_or_default().to_ascii_lowercase();
    Some(match base.as_str() {
        "delivered" => Scenario::Delivered,
        "bounced" => Scenario::Bounced,
        "deferred" => Scenario::Deferred,
        "complained" => Scenario::Complained,
        "autoreply" => Scenario::AutoReply,
        _ => Scenario::Unknown,
    })
}

/// Plays recipient `n`'s scenario to its end.
pub async fn play(ctx: &Context, sent: &SentMessage, n: usize) -> Result<(), ApiError> {
    let address = &sent.to[n];
    let Some(scenario) = scenario(ctx, address) else {
        return Ok(());
    };
    let host = domain(ctx);
    let return_path = return_path::for_recipient(ctx, &sent.id, n);
    let reply = |code: u16, status: &str, text: &str| Reply {
        smtp_code: Some(code),
        enhanced_status: Some(status.into()),
        text: Some(format!("{status} {text}")),
        remote_host: Some(host.clone()),
    };
    let event = |step: &str, status: Status, reply: Reply| Event {
        id: format!("simulator-{step}"),
        status,
        reply: Some(reply),
        at: crate::clock::iso(ctx.clock.now()),
        attempt: true,
        evidence: None,
    };
    let delivered = event(
        "delivered",
        Status::Delivered,
        reply(250, "2.0.0", "Ok: delivered by the simulator"),
    );
    match scenario {
        Scenario::Delivered => {
            apply(ctx, &sent.id, n, &delivered).await?;
        }
        Scenario::Deferred => {
            let later = reply(450, "4.2.0", "Mailbox busy, try again later (simulator)");
            apply(ctx, &sent.id, n, &event("deferred", Status::Deferred, later)).await?;
            apply(ctx, &sent.id, n, &delivered).await?;
        }
        Scenario::Bounced | Scenario::Unknown => {
            let why = match scenario {
                Scenario::Bounced => "User unknown (simulator: bounced)",
                _ => "No such simulator address: use delivered, bounced, deferred, complained or autoreply",
            };
            let raw = dsn::build_dsn(&dsn::Bounce {
                reporting_mta: &host,
                to: &return_path,
                recipient: address,
                action: dsn::Action::Failed,
                status: "5.1.1",
                smtp_code: 550,
                diagnostic: why,
                remote_mta: &host,
                original: &headers(sent),
                date: ctx.clock.now(),
            });
            consume(ctx, &return_path, &raw).await?;
        }
        Scenario::Complained => {
            apply(ctx, &sent.id, n, &delivered).await?;
            let raw = dsn::build_arf(&dsn::Abuse {
                reporter: &format!("abuse@{host}"),
                to: &return_path,
                original_recipient: address,
                original_mail_from: &return_path,
                original: &headers(sent),
                date: ctx.clock.now(),
            });
            consume(ctx, &return_path, &raw).await?;
        }
        Scenario::AutoReply => {
            apply(ctx, &sent.id, n, &delivered).await?;
            // Sent to the return path, as RFC 3834 asks: the same path as any
            // auto-reply, through the spool to the sender's mailbox.
            let envelope = Envelope {
                recipient: Some(return_path.clone()),
                sender: Some(String::new()),
                ..Envelope::default()
            };
            let raw = envelope.prepend(&auto_reply(ctx, sent, address));
            inbound::drop_raw(ctx.blobs.as_ref(), raw)
                .await
                .map_err(|e| ApiError::internal(format!("dropping the simulator's auto-reply: {e}")))?;
        }
    }
    Ok(())
}

async fn consume(ctx: &Context, return_path: &str, raw: &[u8]) -> Result<(), ApiError> {
    match reports::consume(ctx, return_path, raw).await? {
        reports::Consumed::Refused(why) => Err(ApiError::internal(format!("the simulator's own report: {why}"))),
        _ => Ok(()),
    }
}

/// The original message's headers, as a report quotes them.
fn headers(sent: &SentMessage) -> String {
    format!(
        "From: {}\r\nTo: {}\r\nSubject: {}\r\nMessage-ID: {}\r\nDate: {}\r\n",
        sent.from,
        sent.to.join(", "),
        sent.subject,
        sent.message_id,
        sent.created_at
    )
}

/// An out-of-office reply (RFC 3834), on the sender's thread.
fn auto_reply(ctx: &Context, sent: &SentMessage, from: &str) -> Vec<u8> {
    let id = format!("<{}@{}>", return_path::new_delivery_id(), domain(ctx));
    format!(
        "From: {from}\r\nTo: {to}\r\nSubject: Automatic reply: {subject}\r\nMessage-ID: {id}\r\n\
         In-Reply-To: {mid}\r\nReferences: {mid}\r\nAuto-Submitted: auto-replied\r\n\
         Date: {date}\r\nMIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n\
         I am away (this is the simulator's auto-reply). It is not a bounce.\r\n",
        to = sent.from,
        subject = sent.subject.replace(['\r', '\n'], " "),
        mid = sent.message_id,
        date = ctx.clock.now().to_rfc2822(),
    )
    .into_bytes()
}
