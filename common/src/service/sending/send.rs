//! Sending (spec 2.1, 2.2, 3.5, 4.1, 8): POST /sendMail and MCP send_mail.
//!
//! The order of checks is the spec's: authentication (the router), the global
//! kill switch, the agent-key freeze, the rate limit, validation, the credit,
//! then SMTP delivery. Nothing before the credit step spends a credit, and a
//! failed delivery does not refund it.

use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::error::{self, ApiError};
use crate::keys;
use crate::mail::attachments::{Attachment, Attachments};
use crate::mail::message::{self, Draft};
use crate::mail::people::{self, Person};
use crate::mail::{MailError, Outgoing};
use crate::service::accounts::payer::{self, Payer};
use crate::service::delivery::dispatch::{self, Outbound};
use crate::service::domains;
use crate::service::guardrails::audit;
use crate::service::sending::idempotency::{Begun, Idempotency};
use crate::service::sending::replies::{Sent, file_on_thread, reply_scope};
use crate::service::sending::sender::{guessed_sender, named_keys, owner_ahead, remember_sender, sender, signer};
use crate::service::{caller::Call, delivery::sent, sending::pending};
use crate::validate::{Fields, Later};
use crate::values::{Body, Copies, EmailAddress, Html, IdempotencyKey, MessageId, MessageIds, SomeRecipients, Subject};
use crate::values::{Bounded, IsoTime, RestOnly};

pub use crate::values::{MAX_RECIPIENTS, MAX_REFERENCES, MAX_TEXT_BYTES, message_id};

crate::input! {
    /// The send request (spec 2.1).
    pub struct SendInput {
        /// One address, a comma- or semicolon-separated string, or an array; at most 5.
        pub to: SomeRecipients = (error::SEND_REQUIRED, ()),
        pub subject: Subject = (error::SEND_REQUIRED, ()),
        /// Plain text, at most 100KB of UTF-8.
        pub text: Body = (error::SEND_REQUIRED, ()),
        /// Cc, in the same forms as to. The 5-recipient limit counts to, cc
        /// and bcc together; an address already on to is not copied again.
        pub cc: Option<Copies> = (error::CC_TYPE, error::CC_ITEMS),
        /// Bcc, in the same forms as to: in the envelope alone, never in a
        /// header of any copy; kept on your own sent row only.
        pub bcc: Option<Copies> = (error::BCC_TYPE, error::BCC_ITEMS),
        /// An HTML alternative to text (which stays required), at most 100KB:
        /// sent as multipart/alternative, with scripts, event handlers,
        /// forms and frames removed first.
        pub html: Option<Html> = (),
        /// A hosted mailbox on your verified domain; may be omitted when you have
        /// exactly one. The agent key always sends as noreply@ the service domain.
        pub from: Option<EmailAddress> = error::FROM_INVALID,
        /// A Message-ID: threads the send onto that stored conversation.
        pub in_reply_to: Option<MessageId> = error::IN_REPLY_TO_INVALID,
        /// Message-IDs, as a string or an array; at most 100.
        pub references: Option<MessageIds> = (),
        /// REST only: at most 3 files, 2MB each, 4MB together.
        pub attachments: Option<RestOnly<Attachments>> = (error::TOOL_NO_ATTACHMENTS, ()),
        /// The same key with the same request within 24 hours returns the first
        /// answer without sending or charging again (REST: the Idempotency-Key
        /// header).
        pub idempotency_key: Option<IdempotencyKey> = error::IDEMPOTENCY_KEY_INVALID,
        /// Send later: an RFC 3339 time up to 30 days ahead (202, status scheduled).
        pub send_at: Option<IsoTime> = error::SEND_AT_INVALID,
        /// Hold the send this many seconds (0 to 600) so POST /outbox/cancel
        /// can still stop it (202, status scheduled).
        pub undo_seconds: Option<Bounded<0, 600>> = error::UNDO_SECONDS_INVALID,
    }
    check SendInput::within_the_recipient_limit;
}

impl SendInput {
    fn within_the_recipient_limit(self, _: &Fields) -> Result<Self, ApiError> {
        let copies = |list: &Option<Copies>| list.as_ref().map_or(Vec::new(), |c| c.0.clone());
        let bare = |list: &[String]| list.iter().map(Person::bare).collect();
        Addressees::new(bare(&self.to.0), bare(&copies(&self.cc)), copies(&self.bcc))?;
        Ok(self)
    }

    /// The send this input asks for.
    fn plan(self) -> Result<Plan, ApiError> {
        let bare = |list: Option<Copies>| list.map_or(Vec::new(), |c| c.0.into_iter().map(Person::bare).collect());
        let to = self.to.0.into_iter().map(Person::bare).collect();
        let bcc = self.bcc.map_or(Vec::new(), |c| c.0);
        Ok(Plan {
            from: self.from.map(|f| f.to_string()),
            addressees: Addressees::new(to, bare(self.cc), bcc)?,
            subject: self.subject.0,
            text: self.text.0,
            html: self.html.map(|h| crate::mail::html::sanitize(&h.0)),
            in_reply_to: self.in_reply_to.map(|m| m.to_string()),
            references: self.references.map_or(Vec::new(), |r| r.0),
            attachments: self.attachments.map_or(Vec::new(), |a| a.0.0),
            timing: Timing {
                send_at: self.send_at,
                undo_seconds: self.undo_seconds,
            },
            echo: false,
        })
    }
}

/// Who a send goes to: To and Cc by name, Bcc in the envelope alone.
#[derive(Debug, Clone, Default)]
pub struct Addressees {
    pub to: Vec<Person>,
    pub cc: Vec<Person>,
    pub bcc: Vec<String>,
}

impl Addressees {
    /// Each address once (To before Cc before Bcc), at most 5 in all.
    pub fn new(to: Vec<Person>, cc: Vec<Person>, bcc: Vec<String>) -> Result<Addressees, ApiError> {
        let mut seen: Vec<String> = Vec::new();
        let mut once = |address: &str| {
            let fresh = !seen.iter().any(|s| s == address);
            if fresh {
                seen.push(address.to_string());
            }
            fresh
        };
        let to: Vec<Person> = to.into_iter().filter(|p| once(&p.address)).collect();
        let cc: Vec<Person> = cc.into_iter().filter(|p| once(&p.address)).collect();
        let bcc: Vec<String> = bcc.into_iter().filter(|a| once(a)).collect();
        if seen.len() > MAX_RECIPIENTS {
            return Err(error::TOO_MANY_RECIPIENTS.into());
        }
        Ok(Addressees { to, cc, bcc })
    }

    /// Every recipient of the envelope: To, Cc, then Bcc.
    pub fn all(&self) -> Vec<String> {
        let named = self.to.iter().chain(&self.cc).map(|p| p.address.clone());
        named.chain(self.bcc.iter().cloned()).collect()
    }

    fn addresses(people: &[Person]) -> Vec<String> {
        people.iter().map(|p| p.address.clone()).collect()
    }
}

/// When a send goes: `sendAt`, plus its undo window.
#[derive(Debug, Clone, Copy, Default)]
pub struct Timing {
    pub send_at: Option<IsoTime>,
    pub undo_seconds: Option<Bounded<0, 600>>,
}

impl Timing {
    /// When a send asked to wait goes out: at `sendAt` (or now), plus its
    /// undo window.
    fn due_at(&self, now: chrono::DateTime<chrono::Utc>) -> Result<Option<chrono::DateTime<chrono::Utc>>, ApiError> {
        let undo = self.undo_seconds.map_or(0, Bounded::get);
        let at = match self.send_at {
            Some(IsoTime(at)) if at <= now || at > now + chrono::Duration::days(pending::MAX_SCHEDULE_DAYS) => {
                return Err(error::SEND_AT_INVALID.into());
            }
            Some(IsoTime(at)) => at,
            None if undo > 0 => now,
            None => return Ok(None),
        };
        Ok(Some(at + chrono::Duration::seconds(undo)))
    }
}

/// A send as it goes out, whoever asked for it: sendMail and send_mail
/// from their input, a reply or a forward from the message it answers.
/// Every one of them leaves through [`send`].
#[derive(Debug)]
pub struct Plan {
    /// The address asked to send from (none: the caller's default).
    pub from: Option<String>,
    pub addressees: Addressees,
    pub subject: String,
    pub text: String,
    /// Sanitised already.
    pub html: Option<String>,
    pub in_reply_to: Option<String>,
    pub references: Vec<String>,
    pub attachments: Vec<Attachment>,
    pub timing: Timing,
    /// The answer says whom it went to and under which subject: the service
    /// chose them (a reply, a forward).
    pub echo: bool,
}

/// The send result (spec 2.2).
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SendOutput {
    pub ok: bool,
    /// held (waiting for the owner's approval, 202) or scheduled (waiting for
    /// sendAt or its undo window, 202); absent when the mail went out.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<pending::Kind>,
    /// A held send's id, for POST /holds/approve and /holds/deny.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hold_id: Option<String>,
    /// When a scheduled send goes out.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub send_at: Option<String>,
    pub message_id: String,
    /// The address the mail was sent from.
    pub from: String,
    /// Present when the send was filed on a stored conversation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thread_id: Option<String>,
    pub attachment_count: usize,
    /// Blobs kept for a threaded send; 0 when not filed on a thread.
    pub attachments_stored: usize,
    /// Agent and standard keys only; people signed in are not charged.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub credits_remaining: Option<i64>,
    /// A reply or a forward: the addresses it went to (To), as the service
    /// chose them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<Vec<String>>,
    /// A reply or a forward: its Cc addresses.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cc: Option<Vec<String>>,
    /// A reply or a forward: the subject it went with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
    /// The reply and forward tools: the subject (the original sender's
    /// words) wrapped in this response's random delimiter (see notice).
    /// Never kept under an Idempotency-Key: each answer draws its own.
    #[serde(default, skip_deserializing, skip_serializing_if = "Option::is_none")]
    pub envelope: Option<crate::service::delivery::boundary::Envelope>,
}

impl SendOutput {
    /// Accepted to wait (HTTP 202), not sent.
    pub fn accepted(&self) -> bool {
        self.status.is_some()
    }
}

/// Sends one plain-text message, in the spec's order of checks. The input is
/// parsed only after the kill switch, the freeze and the rate limit.
pub async fn send_mail(call: &Call<'_>, input: Later<SendInput>) -> Result<SendOutput, ApiError> {
    let claim = match Idempotency::begin(call, &input, None).await? {
        Begun::Replay(first) => return Ok(first),
        Begun::Fresh(claim) => claim,
    };
    let outcome = send(call, async { input.parse()?.plan() }).await;
    if let Some(claim) = claim {
        claim.settle(call.ctx, outcome.as_ref().ok()).await;
    }
    outcome
}

/// The one send path: sendMail and send_mail, a reply and a forward all
/// leave through here, in the spec's order of checks. `plan` (the input
/// parsed, and for a reply or a forward the message it answers read) is
/// read first.
///
/// Everything the send reads comes first, all at once and writing nothing
/// (the sender, the recipients' lists and suppressions, the payer's
/// balance); then a send that goes now is taken whole in one transaction
/// (its windows, the switches' conditions, its credit and its delivery
/// record and its audit row, [`dispatch::go_now`]). A send that cannot (a refusal
/// among its reads, one that waits, or that transaction refused, which
/// wrote nothing) takes the long way: the gate's transaction, whose refusal
/// comes first, then the reads' refusals in the spec's order, then the
/// credit and the record one after the other.
pub async fn send(
    call: &Call<'_>,
    plan: impl std::future::Future<Output = Result<Plan, ApiError>>,
) -> Result<SendOutput, ApiError> {
    let (ctx, caller) = (call.ctx, call.caller);
    let payer = Payer::of(caller);
    let staged = stage(call, &payer, plan).await;
    // Read so far, nothing written: a send that started on its key as last
    // read learns here whether that key is still the one stored.
    call.confirmed().await?;
    // The gate's refusal comes before any other: taken here unless the
    // send goes at once, where the one transaction holds the gate's writes.
    if !matches!(&staged, Ok(s) if s.wait.is_none()) {
        payer::gate(ctx, &payer, payer::KeyCap::of(caller)).await?;
    }
    let Staged {
        plan,
        from,
        domain,
        message_id,
        raw,
        balance,
        wait,
    } = staged?;
    let recipients = plan.addressees.all();
    let outbound = Outbound {
        owner: sent::owner_of(&domain.uid),
        message_id: &message_id,
        from: &from,
        subject: &plan.subject,
        recipients: &recipients,
        raw: &raw,
        source: "api",
    };
    let mut output = SendOutput {
        ok: true,
        status: None,
        hold_id: None,
        send_at: None,
        message_id: message_id.clone(),
        from: from.clone(),
        thread_id: None,
        attachment_count: plan.attachments.len(),
        attachments_stored: 0,
        credits_remaining: None,
        to: plan.echo.then(|| Addressees::addresses(&plan.addressees.to)),
        cc: plan.echo.then(|| Addressees::addresses(&plan.addressees.cc)),
        subject: plan.echo.then(|| plan.subject.clone()),
        envelope: None,
    };
    if let Some(wait) = wait {
        let kind = wait.kind;
        let accepted = pending::accept(call, wait, payer, &outbound, &plan.text).await?;
        output.status = Some(kind);
        output.hold_id = (kind == pending::Kind::Held).then_some(accepted.id);
        output.send_at = accepted.due_at;
        output.credits_remaining = accepted.credits_remaining;
        return Ok(output);
    }
    // The audit row is one more write of the send's one transaction.
    let audit = audit::in_transaction(call);
    let also = audit.iter().map(|(_, row)| row.clone()).collect();
    let cap = payer::KeyCap::of(caller);
    let dispatched = dispatch::go_now(ctx, &payer, cap, balance, &outbound, also, || {
        if let Some((key, _)) = audit {
            call.audited_in(key);
        }
    })
    .await?;
    output.credits_remaining = dispatched.credits_remaining;
    // The mail is out and the credit spent: from here the answer is 200. A
    // reply that cannot be filed is logged; a retry would send it twice.
    (output.thread_id, output.attachments_stored) = file_sent(call, &plan, &dispatched.delivery, &output).await;
    Ok(output)
}

/// A send read and built, nothing written yet.
struct Staged {
    plan: Arc<Plan>,
    from: String,
    domain: domains::Domain,
    message_id: String,
    /// The signed message.
    raw: Vec<u8>,
    /// The payer's balance as read (none: a person, or no balance item).
    balance: Option<i64>,
    wait: Option<pending::Wait>,
}

/// Reads what the send needs and builds it, refusing in the spec's order
/// after the gate: the input, the sender, the message, its timing, its
/// wait, then its recipients. The recipients' reads (and the payer's
/// balance, in the same batch) run beside the sender's when the owner of
/// the lists is known from the caller alone.
async fn stage(
    call: &Call<'_>,
    payer: &Payer,
    plan: impl std::future::Future<Output = Result<Plan, ApiError>>,
) -> Result<Staged, ApiError> {
    let (ctx, caller) = (call.ctx, call.caller);
    let plan = Arc::new(plan.await?);
    let recipients = plan.addressees.all();
    let balance_key = payer.credit_bucket().map(|bucket| keys::credits(&bucket));
    let ahead = owner_ahead(ctx, caller, plan.from.as_deref());
    let look = |owner: String| {
        let key = balance_key.clone();
        let recipients = &recipients;
        async move { dispatch::Looked::read(ctx, &owner, recipients, key).await }
    };
    // Signed as the caller's last sender while the reads are out; kept
    // only if the reads find that same sender.
    let guess = guessed_sender(ctx, caller, plan.from.as_deref());
    let signed_ahead = async {
        let guess = guess.as_ref()?;
        Some(sign(plan.clone(), &guess.from, &guess.domain, guess.signer.clone()).await)
    };
    let looked_ahead = async {
        match &ahead {
            Some(owner) => Some(look(owner.clone()).await),
            None => None,
        }
    };
    let from = plan.from.as_deref();
    let (found, looked, signed) = match (&ahead, named_keys(caller, from)) {
        // A standard key naming its address: the sender's three items ride
        // in the recipients' batch, so the reads are one round.
        (Some(owner), Some(named)) => {
            let read = dispatch::Looked::read_with(ctx, owner, &recipients, balance_key.clone(), &named);
            let ((looked, named), signed) = tokio::join!(read, signed_ahead);
            (sender(ctx, caller, from, named).await, Some(looked), signed)
        }
        _ => tokio::join!(sender(ctx, caller, from, None), looked_ahead, signed_ahead),
    };
    let (from, domain) = found?;
    remember_sender(caller, plan.from.as_deref(), &from, &domain);
    let owner = sent::owner_of(&domain.uid);
    let looked = match looked {
        Some(looked) if ahead.as_deref() == Some(owner.as_str()) => looked,
        _ => look(owner.clone()).await,
    };
    let (message_id, built) = match (signed, &guess) {
        (Some(signed), Some(guess)) if guess.holds(&from, &domain) => signed,
        _ => sign(plan.clone(), &from, &domain.name, signer(ctx, &domain).await?).await,
    };
    let outgoing = built.map_err(|e| error::MESSAGE_NOT_BUILT.with(e.0))?;
    let due_at = plan.timing.due_at(ctx.clock.now())?;
    let wait = pending::wait_for(call, &owner, &recipients, due_at).await?;
    let balance = looked.check(&from, &recipients)?;
    Ok(Staged {
        plan,
        from,
        domain,
        message_id,
        raw: outgoing.raw,
        balance,
        wait,
    })
}

/// The message built and signed as `from` of `domain`, with its new
/// Message-ID. On a blocking thread: a signature is most of a millisecond
/// of CPU, and a send's reads need the async thread meanwhile to get their
/// requests out and their answers in.
async fn sign(
    plan: Arc<Plan>,
    from: &str,
    domain: &str,
    signer: Arc<message::Signer>,
) -> (String, Result<Outgoing, MailError>) {
    let (from, message_id) = (from.to_string(), message::new_message_id(domain));
    let signing = tokio::task::spawn_blocking(move || {
        let draft = Draft {
            from: &from,
            to: &plan.addressees.to,
            cc: &plan.addressees.cc,
            bcc: &plan.addressees.bcc,
            subject: &plan.subject,
            text: &plan.text,
            html: plan.html.as_deref(),
            in_reply_to: plan.in_reply_to.as_deref(),
            references: &plan.references,
            attachments: &plan.attachments,
        };
        let built = message::build(&draft, &message_id, Some(signer.as_ref()));
        (message_id, built)
    });
    match signing.await {
        Ok(signed) => signed,
        // A panic while signing is the request's, as it was on its thread.
        Err(e) => std::panic::resume_unwind(e.into_panic()),
    }
}

/// Files what went out on its thread: (thread id, attachments stored).
async fn file_sent(call: &Call<'_>, plan: &Plan, delivery: &str, output: &SendOutput) -> (Option<String>, usize) {
    let in_reply_to: Vec<String> = plan.in_reply_to.iter().cloned().collect();
    let to = Addressees::addresses(&plan.addressees.to);
    let cc = Addressees::addresses(&plan.addressees.cc);
    let sent = Sent {
        delivery,
        from: &output.from,
        message_id: &output.message_id,
        to: &to,
        cc: &cc,
        bcc: &plan.addressees.bcc,
        names: people::names(plan.addressees.to.iter().chain(&plan.addressees.cc)),
        subject: &plan.subject,
        text: &plan.text,
        html: plan.html.as_deref(),
        in_reply_to: &in_reply_to,
        references: &plan.references,
        attachments: plan
            .attachments
            .iter()
            .map(|a| (a.filename.as_str(), a.content_type.as_str(), a.bytes.as_slice()))
            .collect(),
    };
    let (scope, mailbox) = reply_scope(call.ctx, call.caller, &output.from);
    file_on_thread(call.ctx, &scope, &mailbox, &sent).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::validate::{Input, Origin};
    use serde_json::{Value, json};

    fn fields(v: Value) -> Fields {
        Fields::new(v.as_object().unwrap().clone(), Default::default())
    }

    fn parse(f: &Fields, rest: bool) -> Result<SendInput, ApiError> {
        let mut f = f.clone();
        if !rest {
            f.origin = Origin::Tool;
        }
        SendInput::parse(&f)
    }

    #[test]
    fn recipients_come_as_a_string_a_list_or_an_array() {
        let f = fields(json!({"to": "A@x.org; b@y.org,c@z.org", "subject": "s", "text": "t"}));
        assert_eq!(parse(&f, true).unwrap().to.0, ["a@x.org", "b@y.org", "c@z.org"]);
        let f = fields(json!({"to": ["a@x.org", "b@y.org"], "subject": "s", "text": "t"}));
        assert_eq!(parse(&f, true).unwrap().to.0.len(), 2);
        let six = fields(json!({"to": "a@x.org,b@x.org,c@x.org,d@x.org,e@x.org,f@x.org", "subject": "s", "text": "t"}));
        assert_eq!(parse(&six, true).unwrap_err().error, "Max 5 recipients per request");
        for bad in [
            json!({"subject": "s", "text": "t"}),
            json!({"to": "a@x.org", "text": "t"}),
            json!({"to": " ", "subject": "s", "text": "t"}),
        ] {
            assert_eq!(
                parse(&fields(bad), true).unwrap_err().error,
                error::SEND_REQUIRED.sentence
            );
        }
        let long = fields(json!({"to": "a@x.org", "subject": "s", "text": "é".repeat(60_000)}));
        assert_eq!(parse(&long, true).unwrap_err().error, "Body too large (max 100KB)");
    }

    #[test]
    fn cc_and_bcc_count_toward_the_five_and_are_never_sent_twice() {
        let send = |cc: Value, bcc: Value| {
            let f = fields(json!({"to": "a@x.org, b@x.org", "subject": "s", "text": "t", "cc": cc, "bcc": bcc}));
            parse(&f, true).and_then(SendInput::plan)
        };
        let plan = send(json!(["c@x.org", "A@x.org"]), json!("d@x.org; c@x.org")).unwrap();
        let to: Vec<_> = plan.addressees.to.iter().map(|p| p.address.as_str()).collect();
        let cc: Vec<_> = plan.addressees.cc.iter().map(|p| p.address.as_str()).collect();
        assert_eq!((to, cc), (vec!["a@x.org", "b@x.org"], vec!["c@x.org"]));
        assert_eq!(plan.addressees.bcc, ["d@x.org"]);
        assert_eq!(plan.addressees.all(), ["a@x.org", "b@x.org", "c@x.org", "d@x.org"]);
        // Six distinct addresses across the three fields are too many.
        let six = send(json!(["c@x.org", "d@x.org"]), json!(["e@x.org", "f@x.org"])).unwrap_err();
        assert!(six.is(error::TOO_MANY_RECIPIENTS));
        assert!(send(json!(5), Value::Null).unwrap_err().is(error::CC_TYPE));
        assert!(send(Value::Null, json!([1])).unwrap_err().is(error::BCC_ITEMS));
        let bad = send(Value::Null, json!("nope")).unwrap_err();
        assert_eq!(bad.error, "Invalid recipient address: nope");
        // HTML beside the text, cleaned; the text stays required.
        let f = fields(
            json!({"to": "a@x.org", "subject": "s", "text": "t", "html": "<p onclick='x()'>Hi<script>1</script></p>"}),
        );
        assert_eq!(
            parse(&f, true).unwrap().plan().unwrap().html.as_deref(),
            Some("<p>Hi</p>")
        );
        let f = fields(json!({"to": "a@x.org", "subject": "s", "html": "<p>Hi</p>"}));
        assert!(parse(&f, true).unwrap_err().is(error::SEND_REQUIRED));
        let f = fields(json!({"to": "a@x.org", "subject": "s", "text": "t", "html": ["x"]}));
        assert!(parse(&f, true).unwrap_err().is(error::HTML_TYPE));
        let f = fields(json!({"to": "a@x.org", "subject": "s", "text": "t", "html": "x".repeat(MAX_TEXT_BYTES + 1)}));
        assert!(parse(&f, true).unwrap_err().is(error::HTML_TOO_LARGE));
    }

    #[test]
    fn threading_ids_are_normalized_and_checked() {
        let f = fields(
            json!({"to": "a@x.org", "subject": "s", "text": "t", "inReplyTo": "abc@x.org", "references": "<r1@x.org> <r2@x.org>"}),
        );
        let input = parse(&f, true).unwrap();
        assert_eq!(input.in_reply_to.as_deref(), Some("<abc@x.org>"));
        assert_eq!(input.references.unwrap().0, ["<r1@x.org>", "<r2@x.org>"]);
        let bad = fields(json!({"to": "a@x.org", "subject": "s", "text": "t", "inReplyTo": "no id"}));
        assert!(parse(&bad, true).is_err());
        let mcp = fields(json!({"to": "a@x.org", "subject": "s", "text": "t", "attachments": []}));
        assert!(parse(&mcp, false).is_err());
        // However they are given, at most 100 references.
        let many: Vec<String> = (0..101).map(|i| format!("<r{i}@x.org>")).collect();
        let one_string = fields(json!({"to": "a@x.org", "subject": "s", "text": "t", "references": many.join(" ")}));
        assert!(parse(&one_string, true).unwrap_err().is(error::REFERENCES_TOO_MANY));
        let split = fields(
            json!({"to": "a@x.org", "subject": "s", "text": "t", "references": [many[..60].join(" "), many[60..].join(" ")]}),
        );
        assert!(parse(&split, true).unwrap_err().is(error::REFERENCES_TOO_MANY));
    }
}
