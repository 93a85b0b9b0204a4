//! Outbound mail through an SMTP relay named by one URL in lettre's form:
//! `smtp://host:25` (plain, for a local relay or test server),
//! `smtp://user:pass@host:587?tls=required` (STARTTLS) or
//! `smtps://user:pass@host:465` (implicit TLS).

use async_trait::async_trait;
use lettre::address::Envelope;
use lettre::{AsyncSmtpTransport, AsyncTransport, Tokio1Executor};

use super::{MailError, Outgoing, Transport};

pub struct SmtpTransport {
    inner: AsyncSmtpTransport<Tokio1Executor>,
}

fn err(e: impl std::fmt::Display) -> MailError {
    MailError(e.to_string())
}

impl SmtpTransport {
    /// Call inside a Tokio runtime: lettre's connection pool spawns its
    /// cleanup task when the transport is built.
    pub fn from_url(url: &str) -> Result<Self, MailError> {
        let inner = AsyncSmtpTransport::<Tokio1Executor>::from_url(url)
            .map_err(err)?
            .build();
        Ok(Self { inner })
    }
}

#[async_trait]
impl Transport for SmtpTransport {
    async fn send(&self, message: &Outgoing) -> Result<(), MailError> {
        let parse = |a: &str| a.parse().map_err(|e| MailError(format!("address {a:?}: {e}")));
        // An empty envelope sender is the null reverse-path used for bounces.
        let from = match message.envelope_from.as_str() {
            "" => None,
            a => Some(parse(a)?),
        };
        let to = message
            .recipients
            .iter()
            .map(|a| parse(a))
            .collect::<Result<Vec<_>, _>>()?;
        let envelope = Envelope::new(from, to).map_err(err)?;
        self.inner.send_raw(&envelope, &message.raw).await.map_err(err)?;
        Ok(())
    }
}
