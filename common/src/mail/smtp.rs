//! Outbound mail through an SMTP relay named by one URL in lettre's form:
//! `smtp://host:25` (plain, for a local relay or test server),
//! `smtp://user:pass@host:587?tls=required` (STARTTLS) or
//! `smtps://user:pass@host:465` (implicit TLS).

use std::path::Path;

use async_trait::async_trait;
use lettre::address::Envelope;
use lettre::transport::smtp::AsyncSmtpTransportBuilder;
use lettre::transport::smtp::client::{Certificate, Tls, TlsParameters};
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
        Self::from_url_with_ca(url, None)
    }

    /// As [`Self::from_url`], also trusting the CA certificates in the PEM file
    /// `ca_file` besides the system roots: a relay with a private CA, or a test's.
    pub fn from_url_with_ca(url: &str, ca_file: Option<&Path>) -> Result<Self, MailError> {
        let pem = match ca_file {
            Some(path) => {
                Some(std::fs::read(path).map_err(|e| MailError(format!("SMTP CA file {}: {e}", path.display())))?)
            }
            None => None,
        };
        Ok(Self {
            inner: builder(url, pem.as_deref())?.build(),
        })
    }
}

/// lettre's transport builder for a URL, trusting the PEM CA certificates in
/// `ca_pem` as well as the system roots when given.
pub fn builder(url: &str, ca_pem: Option<&[u8]>) -> Result<AsyncSmtpTransportBuilder, MailError> {
    let builder = AsyncSmtpTransport::<Tokio1Executor>::from_url(url).map_err(err)?;
    let Some(pem) = ca_pem else { return Ok(builder) };
    let parsed = reqwest::Url::parse(url).map_err(err)?;
    let host = parsed
        .host_str()
        .ok_or_else(|| MailError("SMTP URL without a host".into()))?;
    let params = TlsParameters::builder(host.to_string())
        .add_root_certificate(Certificate::from_pem(pem).map_err(err)?)
        .build()
        .map_err(err)?;
    let mode = parsed
        .query_pairs()
        .find(|(k, _)| k == "tls")
        .map(|(_, v)| v.into_owned());
    let tls = match (parsed.scheme(), mode.as_deref()) {
        ("smtps", _) => Tls::Wrapper(params),
        ("smtp", Some("required")) => Tls::Required(params),
        ("smtp", Some("opportunistic")) => Tls::Opportunistic(params),
        _ => {
            return Err(MailError(
                "an SMTP CA file needs a TLS URL (smtps:// or ?tls=required)".into(),
            ));
        }
    };
    Ok(builder.tls(tls))
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
