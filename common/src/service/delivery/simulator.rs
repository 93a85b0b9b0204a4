//! Reserved recipients at `simulator.<service domain>`, so people and agents
//! can test what happens to mail without real mail: `delivered@`,
//! `bounced@`, `deferred@` (then delivered), `complained@` and `autoreply@`,
//! each with any `+label`. Mail to them never leaves the service; its story
//! is told through the same code as real mail's: a delivered or deferred
//! event as the mail host's log reports one, and DSNs, complaint reports and
//! auto-replies built in their real formats and read by the same reader.
//! Any other local part bounces as an unknown user would.

use super::sent::{Reply, SentMessage, Status};
use crate::context::Context;
use crate::error::ApiError;
use crate::mail::dsn;
use crate::mail::inbound::{self, Envelope};

use super::record::{Event, apply};
use super::{reports, return_path};

pub use super::scenarios::{Scenario, domain, scenario};

/// Plays recipient `n`'s scenario to its end.
pub async fn play(ctx: &Context, sent: &SentMessage, n: usize) -> Result<(), ApiError> {
    let Some(scenario) = scenario(ctx, &sent.to[n]) else {
        return Ok(());
    };
    let play = Play {
        ctx,
        sent,
        n,
        host: domain(ctx),
        return_path: return_path::for_recipient(ctx, &sent.id, n),
    };
    match scenario {
        Scenario::Delivered => play.delivered().await,
        Scenario::Deferred => {
            let later = play.reply(450, "4.2.0", "Mailbox busy, try again later (simulator)");
            play.apply("deferred", Status::Deferred, later).await?;
            play.delivered().await
        }
        Scenario::Bounced => play.bounce("User unknown (simulator: bounced)").await,
        Scenario::Unknown => {
            play.bounce("No such simulator address: use delivered, bounced, deferred, complained or autoreply")
                .await
        }
        Scenario::Complained => {
            play.delivered().await?;
            play.complain().await
        }
        Scenario::AutoReply => {
            play.delivered().await?;
            play.auto_reply().await
        }
    }
}

/// One recipient's scenario being played: the simulator answers as its host,
/// and its reports go to the recipient's own return path.
struct Play<'a> {
    ctx: &'a Context,
    sent: &'a SentMessage,
    n: usize,
    host: String,
    return_path: String,
}

impl Play<'_> {
    fn address(&self) -> &str {
        &self.sent.to[self.n]
    }

    fn reply(&self, code: u16, status: &str, text: &str) -> Reply {
        Reply {
            smtp_code: Some(code),
            enhanced_status: Some(status.into()),
            // The whole reply line, as the mail host's log records a remote's.
            text: Some(format!("{code} {status} {text}")),
            remote_host: Some(self.host.clone()),
        }
    }

    /// Applies an event as the mail host's delivery log would report it.
    async fn apply(&self, step: &str, status: Status, reply: Reply) -> Result<(), ApiError> {
        let event = Event {
            id: format!("simulator-{step}"),
            status,
            reply: Some(reply),
            at: crate::clock::iso(self.ctx.clock.now()),
            attempt: true,
            evidence: None,
        };
        apply(self.ctx, &self.sent.id, self.n, &event).await.map(drop)
    }

    async fn delivered(&self) -> Result<(), ApiError> {
        let ok = self.reply(250, "2.0.0", "Ok: delivered by the simulator");
        self.apply("delivered", Status::Delivered, ok).await
    }

    /// A 5.1.1 DSN to the return path, read as any DSN is.
    async fn bounce(&self, why: &str) -> Result<(), ApiError> {
        let raw = dsn::build_dsn(&dsn::Bounce {
            reporting_mta: &self.host,
            to: &self.return_path,
            recipient: self.address(),
            action: dsn::Action::Failed,
            status: "5.1.1",
            smtp_code: 550,
            diagnostic: why,
            remote_mta: &self.host,
            original: &headers(self.sent),
            date: self.ctx.clock.now(),
        });
        consume(self.ctx, &self.return_path, &raw).await
    }

    /// An ARF complaint report to the return path.
    async fn complain(&self) -> Result<(), ApiError> {
        let raw = dsn::build_arf(&dsn::Abuse {
            reporter: &format!("abuse@{}", self.host),
            to: &self.return_path,
            original_recipient: self.address(),
            original_mail_from: &self.return_path,
            original: &headers(self.sent),
            date: self.ctx.clock.now(),
        });
        consume(self.ctx, &self.return_path, &raw).await
    }

    /// Sent to the return path, as RFC 3834 asks: the same path as any
    /// auto-reply, through the spool to the sender's mailbox.
    async fn auto_reply(&self) -> Result<(), ApiError> {
        let envelope = Envelope {
            recipient: Some(self.return_path.clone()),
            sender: Some(String::new()),
            ..Envelope::default()
        };
        let raw = envelope.prepend(&out_of_office(self.ctx, self.sent, self.address()));
        inbound::drop_raw(self.ctx.blobs.as_ref(), raw)
            .await
            .map(drop)
            .map_err(|e| ApiError::internal(format!("dropping the simulator's auto-reply: {e}")))
    }
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
fn out_of_office(ctx: &Context, sent: &SentMessage, from: &str) -> Vec<u8> {
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
