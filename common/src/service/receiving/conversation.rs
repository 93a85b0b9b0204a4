//! Conversation actions: reply, reply-all and forward a stored message by
//! its id (POST /reply and /forward, the tools reply_to_message and
//! forward_message). The service reads the message and fills in what a mail
//! app would: the recipients (its sender or Reply-To; with `all`, everyone
//! on its To and Cc but the mailbox itself, each once), by their names;
//! `Re: ` or `Fwd: ` once; the In-Reply-To and References chain; the
//! sending mailbox (the one the message is in); the original below (quoted,
//! or whole with its files). Then the send leaves through [`send::send`],
//! sendMail's own path: every guardrail applies in the spec's order, and a
//! refusal says what sendMail's would.
//!
//! Reading the message needs the read permission as well as send's: a key
//! that may only send must not mail out what it cannot read.

use crate::auth::Permission;
use crate::error::{self, ApiError};
use crate::mail::attachments::{self, Attachments};
use crate::mail::html;
use crate::mail::people::Person;
use crate::mail::quote::Original;
use crate::service::caller::Call;
use crate::service::delivery::boundary::Boundary;
use crate::service::mail_store::{self, Row};
use crate::service::receiving::inbox;
use crate::service::sending::idempotency::{Begun, Idempotency};
use crate::service::sending::send::{self, Addressees, Plan, SendOutput, Timing};
use crate::validate::{Fields, Later};
use crate::values::{Body, Bounded, Copies, EmailAddress, Html, IdempotencyKey, IsoTime, RestOnly};
use crate::values::{RowId, SomeRecipients, StoredMessageId};

crate::input! {
    /// A reply to a stored message (POST /reply, tool reply_to_message).
    #[schemars(extend("anyOf" = [
        {"required": ["id"], "properties": {"id": {"type": "string"}}},
        {"required": ["messageId"], "properties": {"messageId": {"type": "string"}}}
    ]))]
    pub struct ReplyInput {
        /// The message answered: its id (wins) ...
        pub id: Option<RowId> = error::INBOX_ID_INVALID,
        /// ... or its Message-ID.
        pub message_id: Option<StoredMessageId> = error::INBOX_MESSAGE_ID_INVALID,
        /// The reply, plain text, at most 100KB; the original is quoted below it.
        pub text: Body = (error::REPLY_TEXT_REQUIRED, ()),
        /// An HTML alternative (at most 100KB, sanitised), the original
        /// quoted below it in a blockquote.
        pub html: Option<Html> = (),
        /// Reply to everyone on its To and Cc as well (but this mailbox), each once.
        pub all: Option<bool> = error::ALL_TYPE,
        /// false: leave the original out (default true: quoted below).
        pub quote: Option<bool> = error::QUOTE_TYPE,
        /// REST only: at most 3 files, 2MB each, 4MB together.
        pub attachments: Option<RestOnly<Attachments>> = (error::REPLY_TOOL_NO_ATTACHMENTS, ()),
        /// Agent key and operators only: the service-domain mailbox it is in
        /// (default inbox@).
        pub mailbox: Option<EmailAddress> = error::INBOX_MAILBOX_INVALID,
        /// As sendMail's: the same key and request within 24 hours return
        /// the first answer (REST: the Idempotency-Key header).
        pub idempotency_key: Option<IdempotencyKey> = error::IDEMPOTENCY_KEY_INVALID,
        /// As sendMail's: send later (202, status scheduled).
        pub send_at: Option<IsoTime> = error::SEND_AT_INVALID,
        /// As sendMail's: hold it 0 to 600 seconds, cancellable.
        pub undo_seconds: Option<Bounded<0, 600>> = error::UNDO_SECONDS_INVALID,
    }
    check ReplyInput::named;
}

impl ReplyInput {
    fn named(self, _: &Fields) -> Result<Self, ApiError> {
        inbox::one_message_named(&self.id, &self.message_id)?;
        Ok(self)
    }
}

crate::input! {
    /// A stored message forwarded (POST /forward, tool forward_message).
    #[schemars(extend("anyOf" = [
        {"required": ["id"], "properties": {"id": {"type": "string"}}},
        {"required": ["messageId"], "properties": {"messageId": {"type": "string"}}}
    ]))]
    pub struct ForwardInput {
        /// The message forwarded: its id (wins) ...
        pub id: Option<RowId> = error::INBOX_ID_INVALID,
        /// ... or its Message-ID.
        pub message_id: Option<StoredMessageId> = error::INBOX_MESSAGE_ID_INVALID,
        /// As sendMail's to; the 5-recipient limit counts to, cc and bcc.
        pub to: SomeRecipients = (error::FORWARD_RECIPIENTS_REQUIRED, ()),
        pub cc: Option<Copies> = (error::CC_TYPE, error::CC_ITEMS),
        /// In the envelope alone, never in a header.
        pub bcc: Option<Copies> = (error::BCC_TYPE, error::BCC_ITEMS),
        /// A note above the forwarded message, at most 100KB.
        pub text: Option<Body> = (),
        /// The note as HTML (at most 100KB, sanitised).
        pub html: Option<Html> = (),
        /// false: leave the original's files out (default true: carried,
        /// within the send limits of 3 files, 2MB each, 4MB in all, the
        /// allowed types; past them the forward is refused and says why).
        pub include_attachments: Option<bool> = error::INCLUDE_ATTACHMENTS_TYPE,
        /// Agent key and operators only: the service-domain mailbox it is in.
        pub mailbox: Option<EmailAddress> = error::INBOX_MAILBOX_INVALID,
        pub idempotency_key: Option<IdempotencyKey> = error::IDEMPOTENCY_KEY_INVALID,
        pub send_at: Option<IsoTime> = error::SEND_AT_INVALID,
        pub undo_seconds: Option<Bounded<0, 600>> = error::UNDO_SECONDS_INVALID,
    }
    check ForwardInput::named;
}

impl ForwardInput {
    fn named(self, _: &Fields) -> Result<Self, ApiError> {
        inbox::one_message_named(&self.id, &self.message_id)?;
        Ok(self)
    }
}

/// Replies to a stored message.
pub async fn reply(call: &Call<'_>, input: Later<ReplyInput>) -> Result<SendOutput, ApiError> {
    call.caller.permits(Permission::Read)?;
    let claim = match Idempotency::begin(call, &input, Some("reply")).await? {
        Begun::Replay(first) => return Ok(for_tool(call, first)),
        Begun::Fresh(claim) => claim,
    };
    let sent = settled(call, claim, send::send(call, reply_plan(call, input)).await).await?;
    Ok(for_tool(call, sent))
}

/// Forwards a stored message.
pub async fn forward(call: &Call<'_>, input: Later<ForwardInput>) -> Result<SendOutput, ApiError> {
    call.caller.permits(Permission::Read)?;
    let claim = match Idempotency::begin(call, &input, Some("forward")).await? {
        Begun::Replay(first) => return Ok(for_tool(call, first)),
        Begun::Fresh(claim) => claim,
    };
    let sent = settled(call, claim, send::send(call, forward_plan(call, input)).await).await?;
    Ok(for_tool(call, sent))
}

/// A tool's answer: the subject, the original sender's words behind
/// `Re: ` or `Fwd: `, wrapped in the response's envelope (REST's keeps its
/// shape).
fn for_tool(call: &Call<'_>, sent: SendOutput) -> SendOutput {
    match (Boundary::for_tool(call), &sent.subject) {
        (Some(b), Some(subject)) => SendOutput {
            subject: Some(b.wrap(subject)),
            envelope: Some(b.describe(None)),
            ..sent
        },
        _ => sent,
    }
}

/// The outcome, kept under its Idempotency-Key (as sendMail's is).
async fn settled(
    call: &Call<'_>,
    claim: Option<Idempotency>,
    outcome: Result<SendOutput, ApiError>,
) -> Result<SendOutput, ApiError> {
    if let Some(claim) = claim {
        claim.settle(call.ctx, outcome.as_ref().ok()).await;
    }
    outcome
}

/// The message answered, as the caller may read it (404 otherwise, as a
/// read of it is).
async fn original(
    call: &Call<'_>,
    id: Option<RowId>,
    message_id: Option<StoredMessageId>,
    mailbox: Option<&str>,
) -> Result<Row, ApiError> {
    let scope = inbox::scope(call, mailbox)?;
    let row = match (id, message_id) {
        (Some(id), _) => mail_store::by_id(call.ctx, &scope, &id).await?,
        (None, Some(mid)) => {
            mail_store::by_message_id(call.ctx, &scope, &mid, None, |p| p.readable_by(call.caller)).await?
        }
        (None, None) => None,
    };
    row.filter(|r| r.readable_by(call.caller))
        .ok_or_else(|| error::NOT_FOUND.into())
}

async fn reply_plan(call: &Call<'_>, input: Later<ReplyInput>) -> Result<Plan, ApiError> {
    let input = input.parse()?;
    let row = original(call, input.id, input.message_id, input.mailbox.as_deref()).await?;
    let addressees = reply_addressees(&row, input.all.unwrap_or(false))?;
    let (text, html) = match input.quote.unwrap_or(true) {
        true => {
            let (original_text, original_html) = mail_store::body(call.ctx, &row).await?;
            let shown = Shown::of(&row);
            let original = shown.original(&original_text, original_html.as_deref());
            let html = input.html.map(|h| html::sanitize(&original.reply_html(&h.0)));
            (original.reply_text(&input.text.0), html)
        }
        false => (input.text.0, input.html.map(|h| html::sanitize(&h.0))),
    };
    Ok(Plan {
        from: Some(row.mailbox.clone()),
        addressees,
        subject: prefixed("Re:", &row.subject),
        text,
        html,
        in_reply_to: Some(row.message_id.clone()),
        references: chain(&row),
        attachments: input.attachments.map_or(Vec::new(), |a| a.0.0),
        timing: Timing {
            send_at: input.send_at,
            undo_seconds: input.undo_seconds,
        },
        echo: true,
    })
}

async fn forward_plan(call: &Call<'_>, input: Later<ForwardInput>) -> Result<Plan, ApiError> {
    let input = input.parse()?;
    let copies = |list: Option<Copies>| list.map_or(Vec::new(), |c| c.0);
    let bare = |list: Vec<String>| list.into_iter().map(Person::bare).collect();
    let addressees = Addressees::new(bare(input.to.0), bare(copies(input.cc)), copies(input.bcc))?;
    let row = original(call, input.id, input.message_id, input.mailbox.as_deref()).await?;
    let (original_text, original_html) = mail_store::body(call.ctx, &row).await?;
    let attachments = match input.include_attachments.unwrap_or(true) {
        true => files_of(call, &row).await?,
        false => Vec::new(),
    };
    let shown = Shown::of(&row);
    let original = shown.original(&original_text, original_html.as_deref());
    let note = input.text.map(|t| t.0);
    let html = match (input.html, original_html.is_some()) {
        (Some(h), _) => Some(original.forward_html(Some(&h.0))),
        (None, true) => Some(original.forward_html(note.as_deref().map(html::from_text).as_deref())),
        (None, false) => None,
    };
    Ok(Plan {
        from: Some(row.mailbox.clone()),
        addressees,
        subject: prefixed("Fwd:", &row.subject),
        text: original.forward_text(note.as_deref()),
        html: html.map(|h| html::sanitize(&h)),
        // Not an answer: no In-Reply-To. Its References keep it on the
        // conversation it forwards (for the sender's own thread too).
        in_reply_to: None,
        references: chain(&row),
        attachments,
        timing: Timing {
            send_at: input.send_at,
            undo_seconds: input.undo_seconds,
        },
        echo: true,
    })
}

/// The original's files, as a send may carry them (a refusal says which
/// limit they pass and how to forward without them).
async fn files_of(call: &Call<'_>, row: &Row) -> Result<Vec<attachments::Attachment>, ApiError> {
    let mut files = Vec::new();
    for a in &row.attachments {
        let key = format!("{}/att-{}", row.blob_prefix, a.index);
        let bytes = call
            .ctx
            .blobs
            .get(&key)
            .await
            .map_err(|e| ApiError::internal(e.to_string()))?
            .ok_or_else(|| ApiError::internal("a stored attachment is missing"))?;
        files.push((a.filename.clone(), a.content_type.clone(), bytes));
    }
    attachments::carried(files).map_err(|refused| error::FORWARD_FILES.with(refused.error))
}

/// Whom a reply goes to: the sender, or its Reply-To; with `all`, its To
/// (on To) and its Cc (on Cc) too. A reply to one's own send goes to its
/// recipients. Never the mailbox itself; each address once; at most 5.
fn reply_addressees(row: &Row, all: bool) -> Result<Addressees, ApiError> {
    let person = |address: &String| Person {
        name: match address == &row.from {
            true => row.from_name.clone(),
            false => row.names.get(address).cloned(),
        },
        address: address.clone(),
    };
    let (first, more_to): (&[String], &[String]) = match (row.outbound(), row.reply_to.is_empty()) {
        (true, _) => (&row.to, &[]),
        (false, true) => (std::slice::from_ref(&row.from), &row.to),
        (false, false) => (&row.reply_to, &row.to),
    };
    let others = |list: &[String]| -> Vec<Person> {
        list.iter()
            .filter(|a| !a.is_empty() && !a.eq_ignore_ascii_case(&row.mailbox))
            .map(person)
            .collect()
    };
    let mut to = others(first);
    let mut cc = Vec::new();
    if all {
        to.extend(others(more_to));
        cc = others(&row.cc);
    }
    if to.is_empty() {
        // Everyone else was on Cc: they are whom it answers.
        to = std::mem::take(&mut cc);
    }
    if to.is_empty() {
        return Err(error::REPLY_NO_RECIPIENT.into());
    }
    Addressees::new(to, cc, Vec::new())
}

/// `prefix subject`, unless the subject already starts with it (any case;
/// `Fw:` counts as `Fwd:`): `Re: ` once, however long the conversation.
fn prefixed(prefix: &str, subject: &str) -> String {
    // A stored subject is one line already; a control character never
    // reaches a header.
    let subject: String = subject.chars().map(|c| if c.is_control() { ' ' } else { c }).collect();
    let subject = subject.trim();
    let lower = subject.to_lowercase();
    let already = match prefix {
        "Fwd:" => lower.starts_with("fwd:") || lower.starts_with("fw:"),
        _ => lower.starts_with(&prefix.to_lowercase()),
    };
    match (already, subject.is_empty()) {
        (true, _) => subject.to_string(),
        (false, true) => prefix.to_string(),
        (false, false) => format!("{prefix} {subject}"),
    }
}

/// The References a reply (or forward) of `row` carries: the chain before
/// it, then its own Message-ID.
fn chain(row: &Row) -> Vec<String> {
    let mut chain: Vec<String> = row
        .references
        .iter()
        .filter(|id| **id != row.message_id)
        .cloned()
        .collect();
    chain.push(row.message_id.clone());
    chain
}

/// A stored message as a quote or a forwarded block shows it.
struct Shown {
    from: String,
    date: String,
    to: Vec<String>,
    cc: Vec<String>,
    subject: String,
}

impl Shown {
    fn of(row: &Row) -> Shown {
        let named = |address: &String| {
            let name = match address == &row.from {
                true => row.from_name.clone(),
                false => row.names.get(address).cloned(),
            };
            Person {
                name,
                address: address.clone(),
            }
            .shown()
        };
        Shown {
            from: named(&row.from),
            date: when(row.date.as_deref().unwrap_or(&row.ingested_at)),
            to: row.to.iter().map(named).collect(),
            cc: row.cc.iter().map(named).collect(),
            subject: row.subject.clone(),
        }
    }

    fn original<'a>(&'a self, text: &'a str, html: Option<&'a str>) -> Original<'a> {
        Original {
            from: &self.from,
            date: &self.date,
            subject: &self.subject,
            to: &self.to,
            cc: &self.cc,
            text,
            html,
        }
    }
}

/// An RFC 3339 time as a quote shows it: `Mon, 23 Nov 2026 at 10:00 +00:00`.
fn when(at: &str) -> String {
    chrono::DateTime::parse_from_rfc3339(at)
        .map(|t| t.format("%a, %-d %b %Y at %H:%M %:z").to_string())
        .unwrap_or_else(|_| at.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::service::mail_store::Direction;

    fn row(direction: Direction) -> Row {
        let json = serde_json::json!({
            "id": "m1", "messageId": "<m1@partner.example>", "mailbox": "me@tom.example", "box": direction,
            "from": "pal@partner.example", "fromName": "Pal Smith",
            "to": ["me@tom.example", "ann@partner.example"], "cc": ["Me@Tom.example", "bob@partner.example"],
            "names": {"ann@partner.example": "Ann"},
            "subject": "Plans", "preview": "", "date": "2026-11-23T10:00:00+00:00",
            "ingestedAt": "2026-11-23T10:00:01Z", "unread": false, "source": "smtp",
            "threadId": "ab", "attachments": [], "blobPrefix": "mail/x", "text": "Shall we?",
            "references": ["<root@partner.example>"],
        });
        serde_json::from_value(json).unwrap()
    }

    fn addresses(people: &[Person]) -> Vec<(Option<&str>, &str)> {
        people.iter().map(|p| (p.name.as_deref(), p.address.as_str())).collect()
    }

    #[test]
    fn a_reply_goes_to_the_sender_by_name_and_reply_all_to_everyone_but_the_mailbox() {
        let one = reply_addressees(&row(Direction::Inbound), false).unwrap();
        assert_eq!(addresses(&one.to), [(Some("Pal Smith"), "pal@partner.example")]);
        assert!(one.cc.is_empty() && one.bcc.is_empty());
        let all = reply_addressees(&row(Direction::Inbound), true).unwrap();
        assert_eq!(
            addresses(&all.to),
            [
                (Some("Pal Smith"), "pal@partner.example"),
                (Some("Ann"), "ann@partner.example")
            ]
        );
        assert_eq!(addresses(&all.cc), [(None, "bob@partner.example")]);
        // Reply-To wins over From.
        let mut asked = row(Direction::Inbound);
        asked.reply_to = vec!["desk@partner.example".into()];
        let to = reply_addressees(&asked, false).unwrap().to;
        assert_eq!(addresses(&to), [(None, "desk@partner.example")]);
        // One's own send: its recipients.
        let mine = reply_addressees(&row(Direction::Outbound), false).unwrap();
        assert_eq!(addresses(&mine.to), [(Some("Ann"), "ann@partner.example")]);
        // Nobody left to answer.
        let mut alone = row(Direction::Inbound);
        alone.from = "me@tom.example".into();
        assert!(
            reply_addressees(&alone, false)
                .unwrap_err()
                .is(error::REPLY_NO_RECIPIENT)
        );
        // Six people on a reply-all are too many.
        let mut crowd = row(Direction::Inbound);
        crowd.cc = (0..5).map(|i| format!("c{i}@partner.example")).collect();
        assert!(
            reply_addressees(&crowd, true)
                .unwrap_err()
                .is(error::TOO_MANY_RECIPIENTS)
        );
    }

    #[test]
    fn subjects_are_prefixed_once_and_the_chain_carries_on() {
        assert_eq!(prefixed("Re:", "Plans"), "Re: Plans");
        assert_eq!(prefixed("Re:", "RE: Plans"), "RE: Plans");
        assert_eq!(prefixed("Re:", "re:Plans"), "re:Plans");
        assert_eq!(prefixed("Re:", ""), "Re:");
        assert_eq!(prefixed("Fwd:", "Fw: Plans"), "Fw: Plans");
        assert_eq!(prefixed("Fwd:", "Re: Plans"), "Fwd: Re: Plans");
        assert_eq!(prefixed("Re:", "a\tb\r\nBcc: x"), "Re: a b  Bcc: x");
        assert_eq!(
            chain(&row(Direction::Inbound)),
            ["<root@partner.example>", "<m1@partner.example>"]
        );
        assert_eq!(when("2026-11-23T10:00:00+00:00"), "Mon, 23 Nov 2026 at 10:00 +00:00");
    }
}
