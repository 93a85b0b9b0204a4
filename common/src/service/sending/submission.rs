//! SMTP submission: a mailbox's app password on the mail host's port 587 sends
//! like any API send (spec 1.7's IMAP/SMTP login; DESIGN "one send path").
//!
//! The mail host's milter (`mailhost milter`) hands each message an
//! authenticated mailbox submits to `POST /mtaSubmission` with the sync token,
//! and answers the client with what this returns. Here the message meets the
//! send path's checks in its order: the mailbox that logged in (as
//! authentication), the kill switch, the agent key's freeze (for the
//! service-domain mailboxes it pays for), both rate windows, validation (the
//! envelope sender and `From:` must be that mailbox; at most 5 recipients),
//! the credit; then it is signed with the domain's DKIM key and sent through
//! the same transport as `POST /sendMail`. The milter discards its own copy.
//!
//! A password a scoped key issued acts as that key: its send permission
//! and mailboxes are checked with the login, its daily cap is counted with
//! the windows, and its approval rule holds the message for the owner as
//! it would hold the key's `sendMail` (202; the client reads 250). Once the
//! key is revoked the password sends nothing.

use base64::Engine;
use mail_parser::MessageParser;
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

use crate::auth::{Caller, Permission};
use crate::context::Context;
use crate::error::Problem;
use crate::error::{self, ApiError};
use crate::mail::authors::Authors;
use crate::mail::message;
use crate::service::accounts::payer::{self, Payer};
use crate::service::caller::account::OPS_UID;
use crate::service::delivery::dispatch::{self, Outbound};
use crate::service::sending::replies::{self, SentBytes};
use crate::service::sending::{send, sender};
use crate::service::{caller::Call, domains, mailboxes, sending::api_keys, sending::pending};
use crate::validate::{Later, Slot};
use crate::values::EmailAddress;
use crate::values::{Field, Origin};

/// The largest message a mailbox may submit (Postfix's submission
/// `message_size_limit`, from `mailhost limits`): what the service accepts in
/// one request (6 MB on Lambda) once base64 has grown it by a third.
pub const SUBMISSION_SIZE_LIMIT: usize = 4 * 1024 * 1024;
/// The headers the mail host adds in front before the milter sees it.
const TRACE_ALLOWANCE: usize = 64 * 1024;
/// The request body of `POST /mtaSubmission` at the largest message.
pub const SUBMISSION_BODY: usize = (SUBMISSION_SIZE_LIMIT + TRACE_ALLOWANCE) / 3 * 4 + 64 * 1024;

crate::input! {
    /// One submitted message, as the mail host's milter saw it.
    pub struct SubmissionInput {
        /// The SASL login the client authenticated with (a mailbox address).
        pub login: EmailAddress = LOGIN,
        /// `MAIL FROM` (empty for the null sender).
        pub sender: Option<String> = error::SUBMISSION_FIELDS,
        /// `RCPT TO`, in order.
        pub recipients: RcptTo = (error::SUBMISSION_FIELDS, ()),
        /// The message as received (headers and body), in standard base64.
        pub raw: RawMessage = (error::SUBMISSION_FIELDS, ()),
    }
}

/// `login`: (missing, not an address).
const LOGIN: (Problem, Problem) = (error::SUBMISSION_FIELDS, error::SUBMISSION_NOT_SENDABLE);

/// The envelope's recipients: 1 to 5 addresses, lower case.
#[derive(Debug, JsonSchema)]
pub struct RcptTo(#[schemars(length(min = 1))] pub Vec<String>);

impl Field for RcptTo {
    type Problems = ();
    fn read(value: &Value, _: Origin, (): ()) -> Result<Option<Self>, ApiError> {
        let list = match value {
            Value::Array(list) if list.is_empty() => return Ok(None),
            Value::Array(list) => list,
            Value::Null => return Ok(None),
            _ => return Err(error::SUBMISSION_FIELDS.into()),
        };
        if list.len() > send::MAX_RECIPIENTS {
            return Err(error::TOO_MANY_RECIPIENTS.into());
        }
        list.iter()
            .map(|r| {
                let r = r.as_str().ok_or(error::SUBMISSION_FIELDS)?;
                crate::values::email(r)
                    .ok_or_else(|| error::RECIPIENT_INVALID.with(r.chars().take(254).collect::<String>()))
            })
            .collect::<Result<Vec<_>, _>>()
            .map(|l| Some(RcptTo(l)))
    }
}

/// The message's bytes, sent in standard base64, within the size limit.
#[derive(Debug, JsonSchema)]
pub struct RawMessage(#[schemars(with = "String")] pub Vec<u8>);

impl Field for RawMessage {
    type Problems = ();
    fn read(value: &Value, _: Origin, (): ()) -> Result<Option<Self>, ApiError> {
        let text = match value {
            Value::Null => return Ok(None),
            Value::String(s) if s.trim().is_empty() => return Ok(None),
            Value::String(s) => s.trim(),
            _ => return Err(error::SUBMISSION_FIELDS.into()),
        };
        let raw = base64::engine::general_purpose::STANDARD
            .decode(text.as_bytes())
            .map_err(|_| error::SUBMISSION_UNREADABLE)?;
        if raw.len() > SUBMISSION_SIZE_LIMIT + TRACE_ALLOWANCE {
            return Err(error::SUBMISSION_TOO_LARGE.into());
        }
        Ok(Some(RawMessage(raw)))
    }
}

/// What the milter answers the client with: the message went out, or waits
/// for the owner's approval (202).
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SubmissionOutput {
    pub ok: bool,
    /// held: the password's key sends only with the owner's approval, and
    /// this one waits for it (202); absent when it went out.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<pending::Kind>,
    /// A held message's id, for POST /holds/approve and /holds/deny.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hold_id: Option<String>,
    /// The Message-ID it went out (or waits) with (the client's, or one given here).
    pub message_id: String,
    /// Credits left on the balance that paid (none for a person's mailbox).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub credits_remaining: Option<i64>,
}

impl SubmissionOutput {
    /// Accepted to wait (HTTP 202), not sent.
    pub fn accepted(&self) -> bool {
        self.status.is_some()
    }
}

/// Sends one submitted message, in the send path's order of checks. It
/// waits for three store round trips, as sendMail does: the mailbox that
/// logged in; then at once its domain, the key that issued its password,
/// the send lists, the recipients' suppressions and the payer's balance;
/// then the one transaction of a send that goes now
/// ([`dispatch::go_now`]). A refusal among the reads is given in its turn,
/// after the gate's.
pub async fn submit(call: &Call<'_>, input: Later<SubmissionInput>) -> Result<SubmissionOutput, ApiError> {
    let ctx = call.ctx;
    let Some(fields) = input.fields() else {
        return Err(error::SUBMISSION_FIELDS.into());
    };
    let login = EmailAddress::pick(fields, "login", LOGIN)?;
    let (mailbox, payer) = sending_mailbox(ctx, &login).await?;
    let owner_uid = match payer {
        Payer::Agent => OPS_UID,
        _ => mailbox.uid.as_str(),
    };
    let owner = crate::service::delivery::sent::owner_of(owner_uid);
    // Parsed now (it reads nothing), refused in its turn after the gate.
    let input = input.parse();
    let balance_key = payer.credit_bucket().map(|bucket| crate::keys::credits(&bucket));
    let (domain, issuer, looked) = tokio::join!(
        domains::get(ctx, owner_uid, &mailbox.domain_id),
        issuing_key(ctx, &mailbox),
        async {
            let recipients = &input.as_ref().ok()?.recipients.0;
            Some(dispatch::Looked::read(ctx, &owner, recipients, balance_key).await)
        }
    );
    let domain = domain?
        .filter(|d| d.status == domains::DomainStatus::Verified)
        .ok_or(error::SUBMISSION_NOT_SENDABLE)?;
    let issuer = issuer?;
    let cap = || issuer.as_ref().and_then(payer::KeyCap::of);
    let staged = stage(call, &mailbox, &domain, &owner, input, looked, issuer.as_ref()).await;
    // The gate's refusal comes before any other: taken here unless the
    // message goes at once, where the one transaction holds the gate's writes.
    if !matches!(&staged, Ok(s) if s.wait.is_none()) {
        payer::gate(ctx, &payer, cap()).await?;
    }
    let Staged {
        input,
        signed,
        message_id,
        balance,
        wait,
    } = staged?;
    let parsed = MessageParser::default()
        .parse(&input.raw.0)
        .ok_or(error::SUBMISSION_UNREADABLE)?;
    let outbound = Outbound {
        owner,
        message_id: &message_id,
        from: &mailbox.address,
        subject: parsed.subject().unwrap_or_default(),
        recipients: &input.recipients.0,
        raw: &signed,
        source: "smtp",
    };
    if let (Some(wait), Some(key)) = (wait, &issuer) {
        let as_key = Call::new(ctx, key, call.via, call.ip);
        let text = crate::mail::html::body_text(&parsed).unwrap_or_default();
        let kind = wait.kind;
        let accepted = pending::accept(&as_key, wait, payer, &outbound, &text).await?;
        return Ok(SubmissionOutput {
            ok: true,
            status: Some(kind),
            hold_id: Some(accepted.id),
            message_id,
            credits_remaining: accepted.credits_remaining,
        });
    }
    let dispatched = dispatch::go_now(ctx, &payer, cap(), balance, &outbound, Vec::new(), || {}).await?;
    let scope = mailbox.reading_scope(&ctx.config.service_domain);
    let sent = SentBytes {
        delivery: &dispatched.delivery,
        from: &mailbox.address,
        message_id: &message_id,
        to: &input.recipients.0,
        parsed: &parsed,
    };
    replies::file_bytes_on_thread(ctx, &scope, &mailbox.address, &sent).await;
    Ok(SubmissionOutput {
        ok: true,
        status: None,
        hold_id: None,
        message_id,
        credits_remaining: dispatched.credits_remaining,
    })
}

/// A submitted message checked and signed, nothing written yet.
struct Staged {
    input: SubmissionInput,
    /// The bytes that are signed and sent.
    signed: Vec<u8>,
    message_id: String,
    /// The payer's balance as read (none: a person, or no balance item).
    balance: Option<i64>,
    /// The owner's approval it waits for (a scoped key's password).
    wait: Option<pending::Wait>,
}

/// The message's own checks in the send path's order after the gate: the
/// input, the envelope sender and the author (the mailbox that logged in,
/// alone), its signature, its wait, then its recipients on what was read.
async fn stage(
    call: &Call<'_>,
    mailbox: &mailboxes::Mailbox,
    domain: &domains::Domain,
    owner: &str,
    input: Result<SubmissionInput, ApiError>,
    looked: Option<dispatch::Looked>,
    issuer: Option<&Caller>,
) -> Result<Staged, ApiError> {
    let ctx = call.ctx;
    let input = input?;
    if !input
        .sender
        .as_deref()
        .unwrap_or_default()
        .eq_ignore_ascii_case(&mailbox.address)
    {
        return Err(error::SUBMISSION_SENDER.into());
    }
    MessageParser::default()
        .parse(&input.raw.0)
        .ok_or(error::SUBMISSION_UNREADABLE)?;
    let (raw, message_id) = message::submitted(&input.raw.0, &domain.name, ctx.clock.now())
        .map_err(|_| ApiError::from(error::SUBMISSION_UNREADABLE))?;
    // Judged on the bytes that are signed and sent: line ends made CRLF can
    // split one header into two.
    let ready = MessageParser::default()
        .parse(&raw)
        .ok_or(error::SUBMISSION_UNREADABLE)?;
    if !written_by(&ready, &mailbox.address) {
        return Err(error::SUBMISSION_SENDER.into());
    }
    let signed = sender::signer(ctx, domain)
        .await?
        .sign(raw)
        .map_err(|e| error::SEND_FAILED.caused_by(e))?;
    let wait = match issuer {
        Some(key) => {
            let as_key = Call::new(ctx, key, call.via, call.ip);
            pending::wait_for(&as_key, owner, &input.recipients.0, None).await?
        }
        None => None,
    };
    let looked = looked.ok_or(error::SUBMISSION_FIELDS)?;
    let balance = looked.check(&mailbox.address, &input.recipients.0)?;
    Ok(Staged {
        input,
        signed,
        message_id,
        balance,
        wait,
    })
}

/// The scoped key whose password logged in, as a caller of its own: its
/// send permission and mailboxes checked here, its cap and approval rule
/// by the send path as for its API sends. None for the owner's password;
/// refused once the key is revoked or expired.
async fn issuing_key(ctx: &Context, mailbox: &mailboxes::Mailbox) -> Result<Option<Caller>, ApiError> {
    let Some(id) = &mailbox.credential_key else {
        return Ok(None);
    };
    let key = api_keys::scoped(ctx, &mailbox.uid, id)
        .await?
        .ok_or(error::PASSWORD_KEY_REVOKED)?;
    if key
        .scope
        .as_ref()
        .is_some_and(|s| s.expired(&crate::clock::iso(ctx.clock.now())))
    {
        return Err(error::KEY_EXPIRED.into());
    }
    let key = Caller::Standard(key);
    key.permits(Permission::Send)?;
    key.may_use(&mailbox.address)?;
    Ok(Some(key))
}

/// Whether the message's author is the mailbox that logged in, alone: one
/// From header naming that one address (no second address, no group, no
/// second From), and at most one Sender header, naming it too. A recipient's
/// DMARC judges what this checked, whichever From header it reads.
fn written_by(parsed: &mail_parser::Message<'_>, address: &str) -> bool {
    let the_mailbox = |named: &Authors| named.single().is_some_and(|a| a.eq_ignore_ascii_case(address));
    let sender = Authors::sender(parsed);
    the_mailbox(&Authors::of(parsed)) && (sender.headers == 0 || the_mailbox(&sender))
}

/// The mailbox that logged in, and who pays: it must still be an active
/// mailbox that stores mail (the mail host may hold a password a minute
/// after its mailbox changed); its domain, which must be verified, is read
/// next beside the rest. The service-domain mailboxes are the operators',
/// read and paid for by the agent key; any other mailbox's account pays.
async fn sending_mailbox(ctx: &Context, login: &str) -> Result<(mailboxes::Mailbox, Payer), ApiError> {
    let mailbox = mailboxes::by_address(ctx, login)
        .await?
        .filter(|m| m.is_active() && m.mode.stores())
        .ok_or(error::SUBMISSION_NOT_SENDABLE)?;
    let payer = if mailbox.domain_id == ctx.config.service_domain.to_string() {
        Payer::Agent
    } else {
        Payer::Account(mailbox.uid.clone())
    };
    Ok((mailbox, payer))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ready(headers: &str) -> bool {
        let raw = format!("{headers}To: pal@elsewhere.test\r\nSubject: Hi\r\n\r\nbody\r\n");
        let now = chrono::Utc::now();
        let (raw, _) = message::submitted(raw.as_bytes(), "acme.test", now).unwrap();
        let parsed = MessageParser::default().parse(&raw).unwrap();
        written_by(&parsed, "agent@acme.test")
    }

    #[test]
    fn only_one_from_and_one_sender_naming_the_mailbox_alone_pass() {
        assert!(ready("From: Agent <Agent@acme.test>\r\n"));
        assert!(ready("From: agent@acme.test\r\nSender: agent@acme.test\r\n"));
        for refused in [
            "From: ceo@beta.test\r\nFrom: agent@acme.test\r\n",
            "From: agent@acme.test\r\nFrom: agent@acme.test\r\n",
            "From: agent@acme.test, ceo@beta.test\r\n",
            "From: Team: agent@acme.test;\r\n",
            "From: agent@acme.test\r\nSender: agent@acme.test, ceo@beta.test\r\n",
            "From: agent@acme.test\r\nSender: ceo@beta.test\r\nSender: agent@acme.test\r\n",
            "From: agent@acme.test\r\nSender: agent@acme.test\r\nSender: agent@acme.test\r\n",
            // A lone CR becomes a line end on the way out: two From headers.
            "From: agent@acme.test\rFrom: ceo@beta.test\r\n",
            "Subject: no author\r\n",
        ] {
            assert!(!ready(refused), "{refused:?}");
        }
    }
}
