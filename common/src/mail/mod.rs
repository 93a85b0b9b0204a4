//! Outbound mail: one `Transport` trait, with spool, SMTP and SES v2 backends.

pub mod attachments;
pub mod authenticate;
pub mod authors;
pub mod codes;
pub mod dsn;
pub mod html;
pub mod inbound;
pub mod message;
pub mod people;
pub mod quote;
pub mod received;
pub mod ses;
pub mod shown;
pub mod smtp;
pub mod spam;
pub mod spool;

use async_trait::async_trait;

/// A message ready to go: the SMTP envelope and the RFC 5322 bytes.
#[derive(Debug, Clone)]
pub struct Outgoing {
    pub envelope_from: String,
    pub recipients: Vec<String>,
    pub raw: Vec<u8>,
}

#[derive(Debug, thiserror::Error)]
#[error("mail transport: {0}")]
pub struct MailError(pub String);

#[async_trait]
pub trait Transport: Send + Sync {
    async fn send(&self, message: &Outgoing) -> Result<(), MailError>;

    /// Hands the message's envelope over now (SMTP's MAIL and RCPT) and the
    /// rest at [`Started::finish`]: a send starts while the transaction that
    /// pays for it commits, so only the data waits for the commit. Nothing
    /// is delivered before `finish`. A refusal of the envelope is answered
    /// by `finish`. A transport without an envelope of its own does it all
    /// at `finish`.
    async fn start<'t>(&'t self, message: Outgoing) -> Box<dyn Started + 't> {
        Box::new(Whole {
            transport: self,
            message,
        })
    }
}

/// A message [`Transport::start`] began.
#[async_trait]
pub trait Started: Send {
    /// Sends the rest, or answers the refusal `start` met.
    async fn finish(self: Box<Self>) -> Result<(), MailError>;
    /// Gives the message up; nothing of it is delivered.
    async fn abandon(self: Box<Self>);
}

/// A message not handed over at all until `finish`.
struct Whole<'t, T: ?Sized> {
    transport: &'t T,
    message: Outgoing,
}

#[async_trait]
impl<T: Transport + ?Sized> Started for Whole<'_, T> {
    async fn finish(self: Box<Self>) -> Result<(), MailError> {
        self.transport.send(&self.message).await
    }

    async fn abandon(self: Box<Self>) {}
}

/// Builds a plain-text message with lettre and returns it ready to send.
pub fn plain_text(from: &str, to: &str, subject: &str, body: &str) -> Result<Outgoing, MailError> {
    let bad = |e: &dyn std::fmt::Display| MailError(e.to_string());
    let message = lettre::Message::builder()
        .from(from.parse().map_err(|e| bad(&e))?)
        .to(to.parse().map_err(|e| bad(&e))?)
        .subject(subject)
        .header(lettre::message::header::ContentType::TEXT_PLAIN)
        .body(body.to_string())
        .map_err(|e| bad(&e))?;
    Ok(Outgoing {
        envelope_from: from.to_string(),
        recipients: vec![to.to_string()],
        raw: message.formatted(),
    })
}
