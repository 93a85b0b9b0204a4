//! Bounce and complaint reports: what a report that reached a return path
//! says, read into typed facts, and genuine reports built for the simulator.
//!
//! A bounce is an RFC 3464 delivery status notification (multipart/report;
//! report-type=delivery-status), a complaint an RFC 5965 feedback report
//! (report-type=feedback-report). Which sent message a report is about is
//! the signed return-path token's business, not this module's. Bounces from
//! mail systems that never adopted RFC 3464 (older Exim, qmail, Yahoo's and
//! Gmail's plain-text notices) go through one small fallback that takes the
//! SMTP reply out of the text. Whatever neither can read is `Unreadable`:
//! a wrong fact here would suppress a good address or keep mailing a dead
//! one, so the reader refuses rather than guesses.

use std::fmt;

use mail_parser::{Message, MessageParser, MessagePart, MimeHeaders, PartType};

mod build;
mod plain;

pub use build::{Abuse, Bounce, build_arf, build_dsn};
use plain::{is_auto_reply, looks_like_bounce, plain_bounce};

/// Larger inputs are refused unread. A report carries at most the returned
/// message, and the service sends nothing near this size.
pub const MAX_REPORT_BYTES: usize = 5 * 1024 * 1024;
/// A report about more recipients is refused: each message the service sends
/// has one recipient per return path, so a longer list is not about its mail.
pub const MAX_RECIPIENTS: usize = 100;
/// A diagnostic is a remote server's reply; past this length it is noise.
pub const MAX_DIAGNOSTIC_CHARS: usize = 1000;

/// What a message that reached a return path is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Report {
    Delivery(Dsn),
    Complaint(Complaint),
    /// An out-of-office or other RFC 3834 automatic answer: about the
    /// recipient's absence, never about delivery.
    AutoReply,
}

/// A delivery status notification.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dsn {
    /// The host that wrote the report, lower case.
    pub reporting_mta: Option<String>,
    pub recipients: Vec<RecipientStatus>,
}

/// RFC 3464 section 2.3.3.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Failed,
    Delayed,
    Delivered,
    Relayed,
    Expanded,
}

impl Action {
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Failed => "failed",
            Action::Delayed => "delayed",
            Action::Delivered => "delivered",
            Action::Relayed => "relayed",
            Action::Expanded => "expanded",
        }
    }

    fn parse(value: &str) -> Option<Action> {
        [
            Action::Failed,
            Action::Delayed,
            Action::Delivered,
            Action::Relayed,
            Action::Expanded,
        ]
        .into_iter()
        .find(|a| value.eq_ignore_ascii_case(a.as_str()))
    }
}

/// What a report says about one recipient.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecipientStatus {
    /// The bare address, lower case.
    pub final_recipient: Option<String>,
    /// The address as the sender gave it (DSN ORCPT), bare, lower case.
    pub original_recipient: Option<String>,
    pub action: Action,
    /// The RFC 3463 enhanced status, `5.1.1`.
    pub status: Option<String>,
    /// The remote server's reply code, when the diagnostic is an SMTP reply.
    pub smtp_code: Option<u16>,
    /// The remote server's reply (or the reporting system's own words),
    /// unfolded, trimmed, at most `MAX_DIAGNOSTIC_CHARS`.
    pub diagnostic: Option<String>,
    /// The host that gave the reply, lower case.
    pub remote_mta: Option<String>,
}

impl RecipientStatus {
    /// Whether sending again cannot help. The enhanced status decides when
    /// there is one: a 4.x.x that ended in `failed` (a queue that gave up)
    /// is still a temporary condition at the recipient's end.
    pub fn permanent(&self) -> bool {
        match self.status.as_deref() {
            Some(status) => status.starts_with('5'),
            None => self.smtp_code.is_some_and(|code| (500..600).contains(&code)),
        }
    }
}

/// An RFC 5965 feedback report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Complaint {
    /// `abuse`, `opt-out`, `auth-failure`, ...: lower case.
    pub feedback_type: String,
    /// The envelope recipient the report names (`Original-Rcpt-To`).
    pub original_recipient: Option<String>,
    /// The envelope sender (`Original-Mail-From`), or the returned message's
    /// Return-Path when the report leaves it out: either way the return path
    /// the service chose, which is what ties the complaint to a message.
    /// Lower case, like every address here (the service's return paths are).
    pub original_mail_from: Option<String>,
    /// The returned message's Message-ID, without angle brackets.
    pub original_message_id: Option<String>,
    /// The address the report came from: the feedback loop's.
    pub reporter: Option<String>,
}

/// Why a message could not be read as a report, in one short sentence.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Unreadable(pub &'static str);

impl fmt::Display for Unreadable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unreadable report: {}", self.0)
    }
}

impl std::error::Error for Unreadable {}

/// Reads a message that reached a return path.
pub fn read(raw: &[u8]) -> Result<Report, Unreadable> {
    if raw.len() > MAX_REPORT_BYTES {
        return Err(Unreadable("larger than 5 MB"));
    }
    let message = MessageParser::default()
        .parse(raw)
        .ok_or(Unreadable("not a mail message"))?;
    // The machine-readable part decides; the human text is only read when
    // there is none.
    if let Some(part) = part_of(&message, &["delivery-status", "global-delivery-status"]) {
        return read_dsn(part.contents()).map(Report::Delivery);
    }
    if let Some(part) = part_of(&message, &["feedback-report"]) {
        return read_arf(&message, part).map(Report::Complaint);
    }
    // A report that lost its machine-readable part was cut or mangled on
    // the way; its human text describes what the missing part would have.
    match message.content_type().and_then(|ct| ct.attribute("report-type")) {
        Some(t) if t.eq_ignore_ascii_case("delivery-status") => return Err(Unreadable("no delivery-status part")),
        Some(t) if t.eq_ignore_ascii_case("feedback-report") => return Err(Unreadable("no feedback-report part")),
        _ => {}
    }
    // Before the auto-reply test: bounces carry Auto-Submitted too.
    if looks_like_bounce(&message) {
        return plain_bounce(&message).map(Report::Delivery);
    }
    if is_auto_reply(&message) {
        return Ok(Report::AutoReply);
    }
    Err(Unreadable("neither a report, a bounce nor an auto-reply"))
}

/// The first part of this message (not of a returned one) of type
/// `message/<subtype>`.
fn part_of<'a, 'x>(message: &'a Message<'x>, subtypes: &[&str]) -> Option<&'a MessagePart<'x>> {
    message.parts.iter().find(|part| {
        part.content_type()
            .is_some_and(|ct| ct.ctype() == "message" && ct.subtype().is_some_and(|s| subtypes.contains(&s)))
    })
}

// ---------------------------------------------------------------------------
// RFC 3464

fn read_dsn(body: &[u8]) -> Result<Dsn, Unreadable> {
    let text = String::from_utf8_lossy(body);
    let mut reporting_mta = None;
    let mut recipients = Vec::new();
    // Per-message fields come first, then one block per recipient; some
    // systems leave out the blank line between, so a block is a recipient's
    // when it names one, wherever it stands.
    for block in blocks(&text) {
        let fields = fields(&block);
        if reporting_mta.is_none() {
            reporting_mta = field(&fields, "reporting-mta").and_then(host_name);
        }
        if !["final-recipient", "original-recipient", "action"]
            .iter()
            .any(|n| field(&fields, n).is_some())
        {
            continue;
        }
        if recipients.len() == MAX_RECIPIENTS {
            return Err(Unreadable("more than 100 recipients"));
        }
        recipients.push(recipient_status(&fields)?);
    }
    if recipients.is_empty() {
        return Err(Unreadable("no recipient in the delivery-status part"));
    }
    Ok(Dsn {
        reporting_mta,
        recipients,
    })
}

fn recipient_status(fields: &[(String, String)]) -> Result<RecipientStatus, Unreadable> {
    // Action is the one fact every use of a DSN turns on; a block without a
    // valid one is a broken report, not a guess to make from the status.
    let action = field(fields, "action")
        .and_then(|v| Action::parse(first_word(v)))
        .ok_or(Unreadable("a recipient without a valid Action"))?;
    let (smtp_code, diagnostic) = match field(fields, "diagnostic-code") {
        Some(value) => {
            let (kind, text) = value.split_once(';').unwrap_or(("", value));
            let text = bounded(&unfold(text));
            let code = if kind.trim().eq_ignore_ascii_case("smtp") {
                reply_code(&text)
            } else {
                None
            };
            (code, Some(text).filter(|t| !t.is_empty()))
        }
        None => (None, None),
    };
    Ok(RecipientStatus {
        final_recipient: field(fields, "final-recipient").and_then(address),
        original_recipient: field(fields, "original-recipient").and_then(address),
        action,
        status: field(fields, "status").and_then(|v| enhanced_status(first_word(v))),
        smtp_code,
        diagnostic,
        remote_mta: field(fields, "remote-mta").and_then(host_name),
    })
}

/// The groups of non-blank lines of `text`, line ends stripped.
fn blocks(text: &str) -> Vec<Vec<&str>> {
    let mut out: Vec<Vec<&str>> = Vec::new();
    let mut current = Vec::new();
    for line in text.lines() {
        if line.trim().is_empty() {
            if !current.is_empty() {
                out.push(std::mem::take(&mut current));
            }
        } else {
            current.push(line);
        }
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

/// The header fields of one block: names lower case, folded lines joined.
/// A line that is neither a field nor a continuation is skipped, and so is
/// anything folded under it.
pub(super) fn fields(lines: &[&str]) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    let mut open = false;
    for line in lines {
        if line.starts_with([' ', '\t']) {
            if open && let Some((_, value)) = out.last_mut() {
                value.push(' ');
                value.push_str(line.trim());
            }
            continue;
        }
        open = false;
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        let name = name.trim();
        if name.is_empty() || name.contains(char::is_whitespace) {
            continue;
        }
        out.push((name.to_ascii_lowercase(), value.trim().to_string()));
        open = true;
    }
    out
}

/// The first non-empty value of the field `name`: some systems write a field
/// twice, the first time empty.
fn field<'a>(fields: &'a [(String, String)], name: &str) -> Option<&'a str> {
    fields
        .iter()
        .find(|(n, v)| n == name && !v.is_empty())
        .map(|(_, v)| v.trim())
}

pub(super) fn first_word(value: &str) -> &str {
    value.split_whitespace().next().unwrap_or_default()
}

/// `rfc822; <User@Example.COM>` -> `user@example.com`.
pub(super) fn address(value: &str) -> Option<String> {
    let bare = value.split_once(';').map_or(value, |(_, a)| a).trim();
    let bare = bare.strip_prefix('<').unwrap_or(bare);
    let bare = bare.strip_suffix('>').unwrap_or(bare).trim();
    (!bare.is_empty()).then(|| bare.to_lowercase())
}

/// `dns; MX.Example.COM. (comment)` -> `mx.example.com`.
fn host_name(value: &str) -> Option<String> {
    let name = value.split_once(';').map_or(value, |(_, n)| n);
    let name = first_word(name).trim_end_matches('.');
    (!name.is_empty()).then(|| name.to_ascii_lowercase())
}

/// `5.1.1` (RFC 3463: class 2, 4 or 5, then two numbers of 1 to 3 digits).
pub(super) fn enhanced_status(token: &str) -> Option<String> {
    let token = token.trim_matches(|c: char| !c.is_ascii_digit());
    let mut parts = token.split('.');
    let class = parts.next()?;
    let numbers: Vec<&str> = parts.collect();
    let number = |n: &str| (1..=3).contains(&n.len()) && n.bytes().all(|b| b.is_ascii_digit());
    (matches!(class, "2" | "4" | "5") && numbers.len() == 2 && numbers.iter().all(|n| number(n)))
        .then(|| token.to_string())
}

/// The code an SMTP reply starts with: `550`, `550-...`, `550 ...`.
pub(super) fn reply_code(text: &str) -> Option<u16> {
    let bytes = text.as_bytes();
    let digits = bytes.get(..3)?;
    let ends = matches!(bytes.get(3), None | Some(b' ' | b'-'));
    (digits.iter().all(u8::is_ascii_digit) && (b'2'..=b'5').contains(&digits[0]) && ends)
        .then(|| text[..3].parse().ok())
        .flatten()
}

/// Folded and repeated white space as single spaces.
pub(super) fn unfold(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

pub(super) fn bounded(text: &str) -> String {
    text.chars()
        .take(MAX_DIAGNOSTIC_CHARS)
        .collect::<String>()
        .trim_end()
        .to_string()
}

// ---------------------------------------------------------------------------
// RFC 5965

fn read_arf(message: &Message<'_>, part: &MessagePart<'_>) -> Result<Complaint, Unreadable> {
    let text = String::from_utf8_lossy(part.contents());
    // One block of fields; a stray blank line inside it does not end it.
    let fields: Vec<(String, String)> = blocks(&text).iter().flat_map(|b| fields(b)).collect();
    let feedback_type = field(&fields, "feedback-type")
        .map(|v| first_word(v).to_ascii_lowercase())
        .ok_or(Unreadable("no Feedback-Type in the feedback report"))?;
    let returned = returned_headers(message);
    let returned = returned.as_ref();
    Ok(Complaint {
        feedback_type,
        original_recipient: field(&fields, "original-rcpt-to").and_then(address),
        original_mail_from: field(&fields, "original-mail-from")
            .and_then(address)
            .or_else(|| returned.and_then(|m| m.header_raw("Return-Path")).and_then(address)),
        original_message_id: returned.and_then(|m| m.message_id()).map(str::to_string),
        reporter: sender(message),
    })
}

/// The headers of the message a report returns: a message/rfc822 part, or a
/// text/rfc822-headers one (`rfc822-header` in reports that follow the ARF
/// drafts).
fn returned_headers<'x>(message: &'x Message<'x>) -> Option<Message<'x>> {
    const HEADERS: [&str; 3] = ["rfc822-headers", "rfc822-header", "global-headers"];
    message.parts.iter().skip(1).find_map(|part| match &part.body {
        PartType::Message(returned) => MessageParser::new().parse_headers(returned.raw_message()),
        _ => part
            .content_type()
            .filter(|ct| ct.subtype().is_some_and(|s| HEADERS.contains(&s)))
            .and_then(|_| MessageParser::new().parse_headers(part.contents())),
    })
}

/// The address in From, lower case.
pub(super) fn sender(message: &Message<'_>) -> Option<String> {
    let from = message.from()?.first()?.address()?;
    address(from)
}

#[cfg(test)]
mod tests {
    use super::plain::{delay_wording, reply_in, smtp_reply_at};
    use super::*;
    use chrono::DateTime;

    fn bounce<'a>(diagnostic: &'a str) -> Bounce<'a> {
        Bounce {
            reporting_mta: "mx.example.net",
            to: "bounce@example.com",
            recipient: "ada@example.org",
            action: Action::Failed,
            status: "5.7.1",
            smtp_code: 550,
            diagnostic,
            remote_mta: "mx.example.org",
            original: "From: a@example.net\r\nSubject: s\r\n\r\nbody\r\n",
            date: DateTime::from_timestamp(1_700_000_000, 0).unwrap(),
        }
    }

    #[test]
    fn fields_unfold_and_skip_what_is_not_a_field() {
        let block = [
            "Final-Recipient: rfc822; a@b.example",
            "Diagnostic-Code: smtp; 550 5.1.1 no",
            "    such user",
            "not a field",
            "  folded under nothing",
            "Status: ",
            "Status: 5.1.1 (gone)",
        ];
        let f = fields(&block);
        assert_eq!(field(&f, "diagnostic-code"), Some("smtp; 550 5.1.1 no such user"));
        assert_eq!(field(&f, "status"), Some("5.1.1 (gone)"), "the first non-empty value");
        assert_eq!(f.len(), 4);
    }

    #[test]
    fn values_are_normalised() {
        assert_eq!(address("RFC822; <Ada@Example.COM>").as_deref(), Some("ada@example.com"));
        assert_eq!(address("ada@example.com").as_deref(), Some("ada@example.com"));
        assert_eq!(address("rfc822; "), None);
        assert_eq!(
            host_name("dns; MX.Example.com. (the server)").as_deref(),
            Some("mx.example.com")
        );
        assert_eq!(enhanced_status("5.1.1").as_deref(), Some("5.1.1"));
        assert_eq!(enhanced_status("5.4.312").as_deref(), Some("5.4.312"));
        assert_eq!(enhanced_status("(#5.1.1)").as_deref(), Some("5.1.1"));
        assert_eq!(enhanced_status("3.1.1"), None);
        assert_eq!(enhanced_status("192.0.2.1"), None);
        assert_eq!(enhanced_status("5.1"), None);
        assert_eq!(reply_code("550-5.1.1 The email account"), Some(550));
        assert_eq!(reply_code("550"), Some(550));
        assert_eq!(reply_code("5500 no"), None);
        assert_eq!(reply_code("The recipient server did not accept"), None);
    }

    #[test]
    fn a_reply_stands_alone_in_its_line() {
        assert_eq!(
            smtp_reply_at("Remote host said: 550 5.1.1 <a@b>... User Unknown"),
            Some(18)
        );
        assert_eq!(smtp_reply_at("host mx [192.0.2.153]: 451 try later"), Some(23));
        assert_eq!(smtp_reply_at("Giving up on 192.0.2.153."), None);
        assert_eq!(smtp_reply_at("MAIL FROM:<a@b> SIZE=1543:"), None);
        assert_eq!(smtp_reply_at("id 550abc; Date: 2014"), None);
    }

    #[test]
    fn a_reply_in_prose_gives_code_status_and_what_is_folded_under_it() {
        let lines = [
            "<a@example.org>: host mx.example.org[192.0.2.8] said:",
            "    550-5.1.1 no such",
            "    user (in reply to RCPT TO command)",
            "Giving up on 192.0.2.8.",
        ];
        let (code, status, text) = reply_in(&lines).unwrap();
        assert_eq!((code, status.as_deref()), (Some(550), Some("5.1.1")));
        assert_eq!(text, "550-5.1.1 no such user (in reply to RCPT TO command)");
        let (code, status, _) = reply_in(&["Sorry, no mailbox here by that name. (#5.1.1)"]).unwrap();
        assert_eq!((code, status.as_deref()), (None, Some("5.1.1")));
        assert_eq!(reply_in(&["Mailer: Apple Mail (2.0.1)", "nothing else"]), None);
        let (_, status, _) = reply_in(&["451 4.7.1 greylisted, 5.1.1 is not it"]).unwrap();
        assert_eq!(status.as_deref(), Some("4.7.1"));
    }

    #[test]
    fn permanence_follows_the_status_then_the_code() {
        let mut r = RecipientStatus {
            final_recipient: None,
            original_recipient: None,
            action: Action::Failed,
            status: Some("5.1.1".into()),
            smtp_code: Some(550),
            diagnostic: None,
            remote_mta: None,
        };
        assert!(r.permanent());
        r.status = Some("4.4.1".into());
        assert!(!r.permanent(), "a queue that gave up on a 4.x.x");
        r.status = None;
        assert!(r.permanent(), "no status: the 550 decides");
        r.smtp_code = Some(421);
        assert!(!r.permanent());
        r.smtp_code = None;
        assert!(!r.permanent());
    }

    #[test]
    fn oversized_input_is_refused_unread() {
        let raw = vec![b'a'; MAX_REPORT_BYTES + 1];
        assert_eq!(read(&raw), Err(Unreadable("larger than 5 MB")));
    }

    #[test]
    fn at_most_100_recipients() {
        let report = |n: usize| {
            let blocks = "Final-Recipient: rfc822; a@example.org\r\nAction: failed\r\nStatus: 5.1.1\r\n\r\n".repeat(n);
            format!(
                "From: MAILER-DAEMON@example.net\r\n\
                 Content-Type: multipart/report; report-type=delivery-status; boundary=b\r\n\r\n\
                 --b\r\nContent-Type: message/delivery-status\r\n\r\n\
                 Reporting-MTA: dns; example.net\r\n\r\n{blocks}--b--\r\n"
            )
        };
        assert_eq!(
            read(report(MAX_RECIPIENTS + 1).as_bytes()),
            Err(Unreadable("more than 100 recipients"))
        );
        let Ok(Report::Delivery(dsn)) = read(report(MAX_RECIPIENTS).as_bytes()) else {
            panic!("100 are read")
        };
        assert_eq!(dsn.recipients.len(), MAX_RECIPIENTS);
    }

    #[test]
    fn a_long_diagnostic_is_folded_when_built_and_bounded_when_read() {
        let long = format!("550 5.7.1 {}", "word ".repeat(300).trim_end());
        let raw = build_dsn(&bounce(&long));
        assert!(String::from_utf8(raw.clone()).unwrap().lines().all(|l| l.len() <= 78));
        let Ok(Report::Delivery(dsn)) = read(&raw) else {
            panic!("read")
        };
        let diagnostic = dsn.recipients[0].diagnostic.as_deref().unwrap();
        assert_eq!(
            diagnostic.chars().count(),
            MAX_DIAGNOSTIC_CHARS - 1,
            "bounded, trailing space trimmed"
        );
        assert!(long.starts_with(diagnostic));
    }

    #[test]
    fn the_reply_code_is_written_once() {
        for diagnostic in ["5.7.1 blocked", "550 5.7.1 blocked"] {
            let Ok(Report::Delivery(dsn)) = read(&build_dsn(&bounce(diagnostic))) else {
                panic!("read")
            };
            assert_eq!(dsn.recipients[0].diagnostic.as_deref(), Some("550 5.7.1 blocked"));
            assert_eq!(dsn.recipients[0].smtp_code, Some(550));
        }
    }

    #[test]
    fn a_delay_is_told_from_a_given_up_notice() {
        assert!(delay_wording("warning: message delayed 4 hours; will keep trying"));
        assert!(!delay_wording(
            "this is a permanent error; i've given up. it was delayed"
        ));
        assert!(!delay_wording("sorry, we were unable to deliver your message"));
    }

    #[test]
    fn auto_replies_are_known_by_header_or_subject() {
        let auto = |raw: &str| read(raw.as_bytes()) == Ok(Report::AutoReply);
        assert!(auto(
            "From: a@b.example\r\nX-Autoreply: yes\r\nSubject: hi\r\n\r\nbody\r\n"
        ));
        assert!(auto(
            "From: a@b.example\r\nPrecedence: auto_reply\r\nSubject: hi\r\n\r\nbody\r\n"
        ));
        assert!(auto(
            "From: a@b.example\r\nSubject: Out of Office: back Monday\r\n\r\nbody\r\n"
        ));
        assert!(!auto(
            "From: a@b.example\r\nAuto-Submitted: auto-generated\r\nSubject: hi\r\n\r\nbody\r\n"
        ));
        assert!(!auto("From: a@b.example\r\nSubject: hi\r\n\r\nbody\r\n"));
    }
}
