//! Outbound mail through an SMTP relay named by one URL in lettre's form:
//! `smtp://host:25` (plain, for a local relay or test server),
//! `smtp://user:pass@host:587?tls=required` (STARTTLS) or
//! `smtps://user:pass@host:465` (implicit TLS).
//!
//! Plain and STARTTLS connections are opened here, on a socket with
//! TCP_NODELAY, and handed to lettre's `AsyncSmtpConnection` (EHLO, STARTTLS,
//! AUTH and the SMTP dialogue stay lettre's). lettre's own transport opens
//! sockets without TCP_NODELAY and offers no hook to set it, so each send
//! waited ~40 ms for a delayed ACK (Nagle). Connections are pooled here:
//! reused at once within 5 s, after a NOOP later, dropped after a minute idle.
//! `smtps://` keeps lettre's own pooled transport (see docs/decisions.md).

use std::path::Path;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use lettre::address::Envelope;
use lettre::transport::smtp::AsyncSmtpTransportBuilder;
use lettre::transport::smtp::authentication::{Credentials, Mechanism};
use lettre::transport::smtp::client::{AsyncSmtpConnection, Certificate, Tls, TlsParameters};
use lettre::transport::smtp::commands::{Data, Mail, Rcpt, Rset};
use lettre::transport::smtp::extension::{ClientId, Extension, MailBodyParameter, MailParameter};
use lettre::{AsyncSmtpTransport, AsyncTransport, Tokio1Executor};

use super::{MailError, Outgoing, Started, Transport};

/// Idle pooled connections kept at most, and for how long.
const POOL_MAX_IDLE: usize = 10;
const POOL_IDLE_TIMEOUT: Duration = Duration::from_secs(60);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);
/// A message's envelope (MAIL and RCPT), and then its DATA, answers
/// included: each well inside a request's 29 s, as a stalled relay must not
/// hold a send past it.
const SEND_TIMEOUT: Duration = Duration::from_secs(20);
/// A pooled connection idle for less than this is reused without a NOOP.
const TRUST_IDLE: Duration = Duration::from_secs(5);

pub struct SmtpTransport {
    inner: Inner,
}

enum Inner {
    /// Plain or STARTTLS, on our own TCP_NODELAY sockets.
    Direct(Box<Direct>),
    /// Implicit TLS (`smtps://`), lettre's transport.
    Lettre(AsyncSmtpTransport<Tokio1Executor>),
}

struct Direct {
    host: String,
    port: u16,
    hello: ClientId,
    starttls: StartTls,
    /// Extra CA certificates (PEM) to trust besides the system roots.
    ca_pem: Option<Vec<u8>>,
    /// Built at the first connection, not at start: loading the system
    /// roots takes milliseconds a Lambda cold start need not spend.
    tls: tokio::sync::OnceCell<TlsParameters>,
    credentials: Option<Credentials>,
    idle: Mutex<Vec<(AsyncSmtpConnection, Instant)>>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum StartTls {
    Never,
    Opportunistic,
    Required,
}

fn err(e: impl std::fmt::Display) -> MailError {
    MailError(e.to_string())
}

impl SmtpTransport {
    /// Call inside a Tokio runtime (`smtps://` builds lettre's pool, which
    /// spawns its cleanup task).
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
        let parsed = reqwest::Url::parse(url).map_err(err)?;
        if parsed.scheme() == "smtps" {
            return Ok(Self {
                inner: Inner::Lettre(builder(url, pem.as_deref())?.build()),
            });
        }
        Ok(Self {
            inner: Inner::Direct(Box::new(Direct::from_url(&parsed, pem.as_deref())?)),
        })
    }
}

impl Direct {
    fn from_url(url: &reqwest::Url, ca_pem: Option<&[u8]>) -> Result<Self, MailError> {
        if url.scheme() != "smtp" {
            return Err(MailError(format!("unknown SMTP URL scheme {:?}", url.scheme())));
        }
        let host = url
            .host_str()
            .ok_or_else(|| MailError("SMTP URL without a host".into()))?
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_string();
        let mode = url.query_pairs().find(|(k, _)| k == "tls").map(|(_, v)| v.into_owned());
        if let Some(pem) = ca_pem {
            Certificate::from_pem(pem).map_err(err)?;
        }
        let (starttls, default_port) = match mode.as_deref() {
            None if ca_pem.is_some() => {
                return Err(MailError(
                    "an SMTP CA file needs a TLS URL (smtps:// or ?tls=required)".into(),
                ));
            }
            None => (StartTls::Never, 25),
            Some("required") => (StartTls::Required, 587),
            Some("opportunistic") => (StartTls::Opportunistic, 587),
            Some(other) => return Err(MailError(format!("unknown SMTP tls mode {other:?}"))),
        };
        let hello = match url.path().trim_matches('/') {
            "" => ClientId::default(),
            name => ClientId::Domain(name.to_string()),
        };
        let credentials = match (url.username(), url.password()) {
            ("", None) => None,
            (user, password) => Some(Credentials::new(
                percent_decode(user)?,
                percent_decode(password.unwrap_or_default())?,
            )),
        };
        Ok(Self {
            port: url.port().unwrap_or(default_port),
            host,
            hello,
            starttls,
            ca_pem: ca_pem.map(<[u8]>::to_vec),
            tls: tokio::sync::OnceCell::new(),
            credentials,
            idle: Mutex::new(Vec::new()),
        })
    }

    /// A new connection: TCP with TCP_NODELAY, EHLO, STARTTLS, AUTH.
    async fn connect(&self) -> Result<AsyncSmtpConnection, MailError> {
        let stream = self.open_socket().await?;
        let mut conn = AsyncSmtpConnection::connect_with_transport(Box::new(stream), &self.hello)
            .await
            .map_err(err)?;
        let upgrade = match self.starttls {
            StartTls::Required => true,
            StartTls::Opportunistic => conn.can_starttls(),
            StartTls::Never => false,
        };
        if upgrade {
            let params = self.tls.get_or_try_init(|| async { self.tls_parameters() }).await?;
            conn.starttls(params.clone(), &self.hello).await.map_err(err)?;
        }
        if let Some(credentials) = &self.credentials {
            conn.auth(&[Mechanism::Plain, Mechanism::Login], credentials)
                .await
                .map_err(err)?;
        }
        Ok(conn)
    }

    /// The TCP connection to the relay, with TCP_NODELAY: each SMTP command
    /// is a small write that waits for the answer to the one before, which
    /// Nagle's algorithm would hold for the server's delayed ACK.
    async fn open_socket(&self) -> Result<tokio::net::TcpStream, MailError> {
        let stream = tokio::time::timeout(
            CONNECT_TIMEOUT,
            tokio::net::TcpStream::connect((self.host.as_str(), self.port)),
        )
        .await
        .map_err(|_| MailError(format!("SMTP connect to {}:{} timed out", self.host, self.port)))?
        .map_err(|e| MailError(format!("SMTP connect to {}:{}: {e}", self.host, self.port)))?;
        stream.set_nodelay(true).map_err(err)?;
        Ok(stream)
    }

    fn tls_parameters(&self) -> Result<TlsParameters, MailError> {
        let mut params = TlsParameters::builder(self.host.clone());
        if let Some(pem) = &self.ca_pem {
            params = params.add_root_certificate(Certificate::from_pem(pem).map_err(err)?);
        }
        params.build().map_err(err)
    }

    /// A pooled connection that still answers, or a new one.
    async fn checkout(&self) -> Result<AsyncSmtpConnection, MailError> {
        loop {
            let next = self.idle.lock().expect("smtp pool").pop();
            let Some((mut conn, since)) = next else { break };
            let idle = since.elapsed();
            // A connection used within the last seconds is taken as it is; an
            // older one must first answer NOOP (the server may have closed it).
            if idle < POOL_IDLE_TIMEOUT && !conn.has_broken() && (idle < TRUST_IDLE || conn.test_connected().await) {
                return Ok(conn);
            }
            conn.abort().await;
        }
        self.connect().await
    }

    fn checkin(&self, conn: AsyncSmtpConnection) {
        if conn.has_broken() {
            return;
        }
        let mut idle = self.idle.lock().expect("smtp pool");
        if idle.len() < POOL_MAX_IDLE {
            idle.push((conn, Instant::now()));
        }
    }

    /// A pooled or new connection on which the relay took the envelope
    /// (MAIL, with SMTPUTF8 and 8BITMIME as the envelope and bytes need, and
    /// RCPT for each recipient), as lettre's own send begins.
    async fn open(&self, envelope: &Envelope, raw: &[u8]) -> Result<AsyncSmtpConnection, MailError> {
        let utf8 = envelope
            .from()
            .into_iter()
            .chain(envelope.to())
            .any(|a| !AsRef::<str>::as_ref(a).is_ascii());
        let eight_bit = !raw.is_ascii();
        let mut conn = self.checkout().await?;
        let lacks = |extension| !conn.server_info().supports_feature(extension);
        let refusal = match () {
            _ if utf8 && lacks(Extension::SmtpUtfEight) => Some("non-ASCII addresses but the relay lacks SMTPUTF8"),
            _ if eight_bit && lacks(Extension::EightBitMime) => Some("non-ASCII bytes but the relay lacks 8BITMIME"),
            _ => None,
        };
        if let Some(refusal) = refusal {
            self.checkin(conn);
            return Err(MailError(format!("the message has {refusal}")));
        }
        let options = [
            utf8.then_some(MailParameter::SmtpUtfEight),
            eight_bit.then_some(MailParameter::Body(MailBodyParameter::EightBitMime)),
        ]
        .into_iter()
        .flatten()
        .collect();
        let envelope_taken = async {
            conn.command(Mail::new(envelope.from().cloned(), options)).await?;
            for to in envelope.to() {
                conn.command(Rcpt::new(to.clone(), vec![])).await?;
            }
            Ok::<_, lettre::transport::smtp::Error>(())
        };
        // After a refusal mid-transaction the connection is in no known
        // state: it is dropped.
        within_send_timeout(envelope_taken).await?;
        Ok(conn)
    }

    /// The data on a connection [`Direct::open`] readied; the connection
    /// goes back to the pool once the relay took it.
    async fn finish(&self, mut conn: AsyncSmtpConnection, raw: &[u8]) -> Result<(), MailError> {
        let data = async {
            conn.command(Data).await?;
            conn.message(raw).await
        };
        within_send_timeout(data).await?;
        self.checkin(conn);
        Ok(())
    }

    /// Ends the transaction a connection [`Direct::open`] readied without
    /// its data (RSET); the connection goes back to the pool.
    async fn abandon(&self, mut conn: AsyncSmtpConnection) {
        if within_send_timeout(conn.command(Rset)).await.is_ok() {
            self.checkin(conn);
        }
    }
}

/// lettre's connection sets no timeout of its own: a relay that stops
/// answering would hold the request until the client gave up.
async fn within_send_timeout<T>(
    step: impl std::future::Future<Output = Result<T, lettre::transport::smtp::Error>>,
) -> Result<T, MailError> {
    match tokio::time::timeout(SEND_TIMEOUT, step).await {
        Ok(done) => done.map_err(err),
        Err(_) => Err(MailError(format!("the relay did not answer within {SEND_TIMEOUT:?}"))),
    }
}

/// A message whose envelope the relay took (or refused) on a connection of
/// the pool, its data still to come.
struct Opened<'t> {
    direct: &'t Direct,
    conn: Result<AsyncSmtpConnection, MailError>,
    raw: Vec<u8>,
}

#[async_trait]
impl Started for Opened<'_> {
    async fn finish(self: Box<Self>) -> Result<(), MailError> {
        let Opened { direct, conn, raw } = *self;
        direct.finish(conn?, &raw).await
    }

    async fn abandon(self: Box<Self>) {
        if let Ok(conn) = self.conn {
            self.direct.abandon(conn).await;
        }
    }
}

fn percent_decode(s: &str) -> Result<String, MailError> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).map_err(err)?;
            out.push(u8::from_str_radix(hex, 16).map_err(|_| MailError("bad percent-encoding in SMTP URL".into()))?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(err)
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

/// The SMTP envelope of a message: its return path (none: the null
/// reverse-path of a bounce) and its recipients.
fn envelope_of(message: &Outgoing) -> Result<Envelope, MailError> {
    let parse = |a: &str| a.parse().map_err(|e| MailError(format!("address {a:?}: {e}")));
    let from = match message.envelope_from.as_str() {
        "" => None,
        a => Some(parse(a)?),
    };
    let to = message
        .recipients
        .iter()
        .map(|a| parse(a))
        .collect::<Result<Vec<_>, _>>()?;
    Envelope::new(from, to).map_err(err)
}

#[async_trait]
impl Transport for SmtpTransport {
    async fn send(&self, message: &Outgoing) -> Result<(), MailError> {
        let envelope = envelope_of(message)?;
        match &self.inner {
            Inner::Direct(direct) => {
                let conn = direct.open(&envelope, &message.raw).await?;
                direct.finish(conn, &message.raw).await
            }
            Inner::Lettre(lettre) => lettre.send_raw(&envelope, &message.raw).await.map(drop).map_err(err),
        }
    }

    async fn start<'t>(&'t self, message: Outgoing) -> Box<dyn Started + 't> {
        let Inner::Direct(direct) = &self.inner else {
            return Box::new(super::Whole {
                transport: self,
                message,
            });
        };
        let conn = match envelope_of(&message) {
            Ok(envelope) => direct.open(&envelope, &message.raw).await,
            Err(e) => Err(e),
        };
        Box::new(Opened {
            direct,
            conn,
            raw: message.raw,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn submission_sockets_have_tcp_nodelay() {
        let relay = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = reqwest::Url::parse(&format!("smtp://{}?tls=required", relay.local_addr().unwrap())).unwrap();
        let direct = Direct::from_url(&url, None).unwrap();
        let socket = direct.open_socket().await.unwrap();
        assert!(socket.nodelay().unwrap());
    }

    #[test]
    fn percent_decoding_of_url_credentials() {
        assert_eq!(percent_decode("p%40ss%2Fword").unwrap(), "p@ss/word");
        assert_eq!(percent_decode("plain").unwrap(), "plain");
        assert!(percent_decode("bad%zz").is_err());
    }
}
