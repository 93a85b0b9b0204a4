//! `mailhost milter`: the mail host's submission filter. Postfix's submission
//! service (port 587) hands it every message an authenticated client sends
//! (the milter protocol, `smtpd_milters`); it forwards each one to the
//! service's `POST /mtaSubmission` with the sync token and answers the client
//! at the end of DATA with the service's verdict:
//!
//! - sent: the milter discards Postfix's copy (the service sent its own,
//!   checked, charged and DKIM-signed, through the relay account), and the
//!   client reads 250; so too when the service holds it for the owner's
//!   approval (202: the password's scoped key sends only so);
//! - refused: the service's sentence, with a 4xx reply for what may pass later
//!   (paused, frozen, rate windows, credits, a service error) and a 5xx for what
//!   will not (a forged sender, too many recipients).
//!
//! The relay account (the service's own submissions) passes untouched; a
//! client that did not authenticate never gets past Postfix's own
//! restrictions, and is refused here too.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use base64::Engine;
use miltr_common::actions::{Action, Continue, Discard};
use miltr_common::commands::{Body, Header, Macro, Mail, Recipient};
use miltr_common::modifications::ModificationResponse;
use miltr_server::{Milter, Server};
use serde_json::{Value, json};
use tokio_util::compat::TokioAsyncReadCompatExt;

/// The settings, as flags with `MAILHOST_*` twins like the server's.
#[derive(Debug, Clone, clap::Args)]
pub struct Settings {
    /// Where Postfix's submission service reaches the milter
    /// (`smtpd_milters = inet:<this>`).
    #[arg(long, env = "MAILHOST_MILTER_LISTEN", default_value = "127.0.0.1:8891")]
    pub listen: SocketAddr,
    /// The service's base URL (its routes at the root or under /api).
    #[arg(long, env = "MAILHOST_URL")]
    pub url: String,
    /// The mail host's sync token.
    #[arg(long, env = "MAILHOST_SYNC_TOKEN", hide_env_values = true)]
    pub sync_token: String,
    /// The SASL login the service itself submits with (its --smtp-url user):
    /// its messages are already the service's, and pass untouched.
    #[arg(long, env = "MAILHOST_RELAY_USER", default_value = "relay")]
    pub relay_user: String,
}

/// What the milter shares across connections.
struct Shared {
    client: reqwest::Client,
    endpoint: String,
    sync_token: String,
    relay_user: String,
}

/// Serves Postfix's milter connections until stopped.
pub async fn run(settings: Settings) -> anyhow::Result<()> {
    let listener = tokio::net::TcpListener::bind(settings.listen).await?;
    println!("milter: listening on {}", listener.local_addr()?);
    let shared = Arc::new(Shared {
        // Postfix waits up to milter_content_timeout (300 s) at end of DATA;
        // the service answers well within a minute.
        client: reqwest::Client::builder().timeout(Duration::from_secs(60)).build()?,
        endpoint: format!("{}/mtaSubmission", settings.url.trim_end_matches('/')),
        sync_token: settings.sync_token,
        relay_user: settings.relay_user,
    });
    loop {
        let (stream, _) = listener.accept().await?;
        let shared = shared.clone();
        tokio::spawn(async move {
            let mut session = Session::new(shared);
            let mut server = Server::default_postfix(&mut session);
            if let Err(e) = server.handle_connection(stream.compat()).await {
                eprintln!("milter: connection ended: {e}");
            }
        });
    }
}

/// One Postfix connection: the message being received, and who sent it.
struct Session {
    shared: Arc<Shared>,
    login: Option<String>,
    sender: String,
    recipients: Vec<String>,
    raw: Vec<u8>,
}

impl Session {
    fn new(shared: Arc<Shared>) -> Self {
        Session {
            shared,
            login: None,
            sender: String::new(),
            recipients: Vec::new(),
            raw: Vec::new(),
        }
    }

    fn reset(&mut self) {
        self.login = None;
        self.sender.clear();
        self.recipients.clear();
        self.raw.clear();
    }

    /// The service's verdict on the whole message, as the milter answers.
    async fn verdict(&self) -> Action {
        let Some(login) = &self.login else {
            return reply(530, [5, 7, 0], "Authentication required");
        };
        if *login == self.shared.relay_user {
            return Continue.into();
        }
        let body = json!({
            "login": login,
            "sender": self.sender,
            "recipients": self.recipients,
            "raw": base64::engine::general_purpose::STANDARD.encode(&self.raw),
        });
        let answer = self
            .shared
            .client
            .post(&self.shared.endpoint)
            .bearer_auth(&self.shared.sync_token)
            .json(&body)
            .send()
            .await;
        let response = match answer {
            Ok(response) => response,
            Err(e) => {
                eprintln!("milter: the service could not be reached: {e}");
                return reply(451, [4, 3, 0], "The service could not be reached; try again later");
            }
        };
        let status = response.status().as_u16();
        let answer: Value = response.json().await.unwrap_or_default();
        if matches!(status, 200 | 202) && answer["ok"] == true {
            println!(
                "milter: {login} {} {} to {} recipient(s)",
                if status == 202 { "held" } else { "sent" },
                answer["messageId"].as_str().unwrap_or("?"),
                self.recipients.len()
            );
            // The service sent its own signed copy, or keeps it until the
            // owner approves (202); Postfix's is dropped and the client
            // reads 250.
            return Discard.into();
        }
        let sentence = answer["error"].as_str().unwrap_or("Send failed");
        let (code, enhanced) = smtp_reply(status);
        reply(code, enhanced, sentence)
    }
}

/// The SMTP reply for the service's answer: temporary for what may pass on a
/// later try (503 paused or frozen, 429 rate windows and credits, a 5xx of the
/// service), permanent for what will not (the message itself refused).
fn smtp_reply(status: u16) -> (u16, [u16; 3]) {
    match status {
        503 => (451, [4, 3, 2]),
        429 => (450, [4, 7, 1]),
        500..=599 => (451, [4, 3, 0]),
        413 => (552, [5, 3, 4]),
        _ => (550, [5, 7, 1]),
    }
}

fn reply(code: u16, enhanced: [u16; 3], sentence: &str) -> Action {
    // One line, without the `%` libmilter would read as a format.
    let text: String = sentence
        .chars()
        .filter(|c| !c.is_control() && *c != '%')
        .take(400)
        .collect();
    // The reply code as its three digits.
    let digits = [code / 100, code / 10 % 10, code % 10].map(|d| d as u8);
    miltr_common::actions::Replycode::new(digits, enhanced, &text).into()
}

fn bare_address(value: &str) -> String {
    value.trim().trim_start_matches('<').trim_end_matches('>').to_string()
}

#[async_trait]
impl Milter for Session {
    type Error = std::convert::Infallible;

    async fn macro_(&mut self, mac: Macro) -> Result<(), Self::Error> {
        for (name, value) in mac.macros() {
            if name == b"{auth_authen}" && !value.is_empty() {
                self.login = Some(String::from_utf8_lossy(value).to_ascii_lowercase());
            }
        }
        Ok(())
    }

    async fn mail(&mut self, mail: Mail) -> Result<Action, Self::Error> {
        self.sender = bare_address(&mail.sender());
        self.recipients.clear();
        self.raw.clear();
        Ok(Continue.into())
    }

    async fn rcpt(&mut self, recipient: Recipient) -> Result<Action, Self::Error> {
        self.recipients.push(bare_address(&recipient.recipient()));
        Ok(Continue.into())
    }

    async fn header(&mut self, header: Header) -> Result<Action, Self::Error> {
        // Postfix gives the value without the space after the colon, and a
        // folded value with its line breaks as LF.
        self.raw.extend_from_slice(header.name().as_bytes());
        self.raw.extend_from_slice(b": ");
        self.raw
            .extend_from_slice(header.value().replace("\r\n", "\n").replace('\n', "\r\n").as_bytes());
        self.raw.extend_from_slice(b"\r\n");
        Ok(Continue.into())
    }

    async fn end_of_header(&mut self) -> Result<Action, Self::Error> {
        self.raw.extend_from_slice(b"\r\n");
        Ok(Continue.into())
    }

    async fn body(&mut self, body: Body) -> Result<Action, Self::Error> {
        self.raw.extend_from_slice(body.as_bytes());
        Ok(Continue.into())
    }

    async fn end_of_body(&mut self) -> Result<ModificationResponse, Self::Error> {
        let action = self.verdict().await;
        Ok(ModificationResponse::builder().build(action))
    }

    async fn abort(&mut self) -> Result<(), Self::Error> {
        self.reset();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_are_temporary_only_where_a_later_try_may_pass() {
        assert_eq!(smtp_reply(503), (451, [4, 3, 2]));
        assert_eq!(smtp_reply(429), (450, [4, 7, 1]));
        assert_eq!(smtp_reply(500), (451, [4, 3, 0]));
        assert_eq!(smtp_reply(400), (550, [5, 7, 1]));
        assert_eq!(smtp_reply(403), (550, [5, 7, 1]));
    }
}
