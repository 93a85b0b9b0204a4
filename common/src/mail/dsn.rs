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

use chrono::{DateTime, Utc};
use mail_parser::{Message, MessageParser, MessagePart, MimeHeaders, PartType};

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
fn fields(lines: &[&str]) -> Vec<(String, String)> {
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

fn first_word(value: &str) -> &str {
    value.split_whitespace().next().unwrap_or_default()
}

/// `rfc822; <User@Example.COM>` -> `user@example.com`.
fn address(value: &str) -> Option<String> {
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
fn enhanced_status(token: &str) -> Option<String> {
    let token = token.trim_matches(|c: char| !c.is_ascii_digit());
    let mut parts = token.split('.');
    let class = parts.next()?;
    let numbers: Vec<&str> = parts.collect();
    let number = |n: &str| (1..=3).contains(&n.len()) && n.bytes().all(|b| b.is_ascii_digit());
    (matches!(class, "2" | "4" | "5") && numbers.len() == 2 && numbers.iter().all(|n| number(n)))
        .then(|| token.to_string())
}

/// The code an SMTP reply starts with: `550`, `550-...`, `550 ...`.
fn reply_code(text: &str) -> Option<u16> {
    let bytes = text.as_bytes();
    let digits = bytes.get(..3)?;
    let ends = matches!(bytes.get(3), None | Some(b' ' | b'-'));
    (digits.iter().all(u8::is_ascii_digit) && (b'2'..=b'5').contains(&digits[0]) && ends)
        .then(|| text[..3].parse().ok())
        .flatten()
}

/// Folded and repeated white space as single spaces.
fn unfold(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn bounded(text: &str) -> String {
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
fn sender(message: &Message<'_>) -> Option<String> {
    let from = message.from()?.first()?.address()?;
    address(from)
}

// ---------------------------------------------------------------------------
// Bounces without RFC 3464

/// A bounce by its sender or its subject, the two things every bounce
/// format has kept.
fn looks_like_bounce(message: &Message<'_>) -> bool {
    const DAEMONS: [&str; 4] = ["mailer-daemon", "postmaster", "mail-daemon", "mailerdaemon"];
    const SUBJECTS: [&str; 12] = [
        "undeliver",
        "delivery status notification",
        "delivery failure",
        "delivery failed",
        "delivery has failed",
        "failure notice",
        "returned mail",
        "returned to sender",
        "could not be delivered",
        "non-delivery",
        "delivery problem",
        "bounce",
    ];
    let daemon = sender(message)
        .and_then(|from| from.split_once('@').map(|(local, _)| local.to_string()))
        .is_some_and(|local| DAEMONS.contains(&local.as_str()));
    let subject = message.subject().unwrap_or_default().to_lowercase();
    daemon || SUBJECTS.iter().any(|s| subject.contains(s))
}

/// A bounce in prose: the recipients it names (`<addr>:` lines, or the
/// addresses in X-Failed-Recipients), each with the first SMTP reply or
/// enhanced status written under it.
fn plain_bounce(message: &Message<'_>) -> Result<Dsn, Unreadable> {
    const NO_CODE: Unreadable = Unreadable("a bounce without an SMTP reply or status code");
    let body = message.body_text(0).ok_or(NO_CODE)?;
    let lines = notice(&body);
    let failed: Vec<String> = message
        .headers_raw()
        .filter(|(name, _)| name.eq_ignore_ascii_case("X-Failed-Recipients"))
        .flat_map(|(_, value)| value.split(',').filter_map(address).collect::<Vec<_>>())
        .collect();
    let anchors: Vec<(usize, String)> = lines
        .iter()
        .enumerate()
        .filter_map(|(i, line)| recipient_line(line, &failed).map(|a| (i, a)))
        .collect();
    let sections: Vec<(Option<String>, &[&str])> = if anchors.is_empty() {
        vec![(failed.first().cloned(), &lines[..])]
    } else {
        let ends = anchors.iter().skip(1).map(|(i, _)| *i).chain([lines.len()]);
        anchors
            .iter()
            .zip(ends)
            .map(|((start, a), end)| (Some(a.clone()), &lines[*start..end]))
            .collect()
    };
    let text = format!("{}\n{}", message.subject().unwrap_or_default(), lines.join("\n")).to_lowercase();
    let action = if delay_wording(&text) {
        Action::Delayed
    } else {
        Action::Failed
    };
    let mut recipients = Vec::new();
    for (recipient, section) in sections {
        let Some((smtp_code, status, diagnostic)) = reply_in(section) else {
            continue;
        };
        if recipients.len() == MAX_RECIPIENTS {
            return Err(Unreadable("more than 100 recipients"));
        }
        recipients.push(RecipientStatus {
            final_recipient: recipient,
            original_recipient: None,
            action,
            status,
            smtp_code,
            diagnostic: Some(diagnostic),
            remote_mta: None,
        });
    }
    if recipients.is_empty() {
        return Err(NO_CODE);
    }
    Ok(Dsn {
        reporting_mta: None,
        recipients,
    })
}

/// The notice's own lines: up to the copy of the returned message, whose
/// headers and text would otherwise read as the bounce's.
fn notice(body: &str) -> Vec<&str> {
    body.lines()
        .take_while(|line| {
            let lower = line.trim().to_lowercase();
            let separator = lower.starts_with('-') && ["copy", "original", "message"].iter().any(|w| lower.contains(w));
            let header = ["received:", "return-path:"]
                .iter()
                .any(|h| line.to_lowercase().starts_with(h));
            !separator && !header
        })
        .collect()
}

/// The recipient a notice line introduces: `<addr>:` (qmail, Yahoo,
/// Postfix's own text) or a line that is one of `failed` (Exim, Gmail).
fn recipient_line(line: &str, failed: &[String]) -> Option<String> {
    let trimmed = line.trim();
    if let Some(rest) = trimmed.strip_prefix('<')
        && let Some((inside, after)) = rest.split_once('>')
        && after.starts_with(':')
        && inside.contains('@')
        && !inside.contains(char::is_whitespace)
    {
        return address(inside);
    }
    failed.iter().find(|f| trimmed.eq_ignore_ascii_case(f)).cloned()
}

/// The first SMTP reply in `lines` (with the lines folded under it), or
/// else the first bare enhanced status, as (code, status, diagnostic).
fn reply_in(lines: &[&str]) -> Option<(Option<u16>, Option<String>, String)> {
    for (i, line) in lines.iter().enumerate() {
        let Some(start) = smtp_reply_at(line) else { continue };
        let indent = |l: &str| l.len() - l.trim_start().len();
        let mut text = line[start..].to_string();
        for next in &lines[i + 1..] {
            if next.trim().is_empty() || indent(next) == 0 || indent(next) < indent(line) {
                break;
            }
            text.push(' ');
            text.push_str(next.trim());
        }
        let text = bounded(&unfold(&text));
        // `550 5.1.1 ...` or `550-5.1.1 ...`; the status's class is the code's.
        let status = text
            .get(4..)
            .and_then(|rest| enhanced_status(first_word(rest)))
            .filter(|s| text.starts_with(&s[..1]));
        return Some((reply_code(&text), status, text));
    }
    // A failure notice has no use for a 2.x.x; one in its prose is a version.
    lines.iter().find_map(|line| {
        let status = line
            .split_whitespace()
            .filter_map(enhanced_status)
            .find(|s| !s.starts_with('2'))?;
        Some((None, Some(status), bounded(&unfold(line))))
    })
}

/// Where a 4xx or 5xx reply starts in `line`: three digits standing alone
/// (not part of an address, a date or a number), then a space, a dash or the
/// end of the line.
fn smtp_reply_at(line: &str) -> Option<usize> {
    let bytes = line.as_bytes();
    (0..bytes.len().saturating_sub(2)).find(|&i| {
        let before = i.checked_sub(1).map(|j| bytes[j]);
        matches!(bytes[i], b'4' | b'5')
            && bytes[i + 1..i + 3].iter().all(u8::is_ascii_digit)
            && matches!(before, None | Some(b' ' | b'\t' | b':' | b'('))
            && matches!(bytes.get(i + 3), None | Some(b' ' | b'-'))
    })
}

/// Whether a notice says the system is still trying.
fn delay_wording(lower: &str) -> bool {
    const DELAYED: [&str; 6] = [
        "delayed",
        "will keep trying",
        "will continue trying",
        "not yet been delivered",
        "still being retried",
        "will retry",
    ];
    const GIVEN_UP: [&str; 3] = ["permanent", "given up", "giving up"];
    DELAYED.iter().any(|w| lower.contains(w)) && !GIVEN_UP.iter().any(|w| lower.contains(w))
}

// ---------------------------------------------------------------------------
// RFC 3834

fn is_auto_reply(message: &Message<'_>) -> bool {
    const SUBJECTS: [&str; 10] = [
        "auto:",
        "automatic reply",
        "auto reply",
        "auto-reply",
        "autoreply",
        "auto response",
        "autoresponse",
        "out of office",
        "out of the office",
        "away from",
    ];
    let header = |name: &str| {
        message
            .headers_raw()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.trim().to_ascii_lowercase())
    };
    let subject = message.subject().unwrap_or_default().trim().to_lowercase();
    header("Auto-Submitted").is_some_and(|v| v.starts_with("auto-replied"))
        || header("X-Autoreply").is_some()
        || header("X-Autorespond").is_some()
        || header("Precedence").is_some_and(|v| v == "auto_reply")
        || SUBJECTS.iter().any(|s| subject.starts_with(s))
        || ["out of office", "out of the office", "automatic reply"]
            .iter()
            .any(|s| subject.contains(s))
}

// ---------------------------------------------------------------------------
// Building

/// One recipient's outcome, to build a bounce from.
#[derive(Debug, Clone)]
pub struct Bounce<'a> {
    /// The host that writes the report.
    pub reporting_mta: &'a str,
    /// Where the report goes: the message's return path.
    pub to: &'a str,
    pub recipient: &'a str,
    pub action: Action,
    /// `5.1.1`, `4.4.1`, `2.0.0`.
    pub status: &'a str,
    pub smtp_code: u16,
    /// The remote server's reply, with or without its code in front.
    pub diagnostic: &'a str,
    pub remote_mta: &'a str,
    /// The message the report is about; its header section is returned.
    pub original: &'a str,
    pub date: DateTime<Utc>,
}

/// A genuine RFC 3464 report: a human-readable part, the
/// message/delivery-status part and the original's header section as
/// text/rfc822-headers, the way Postfix writes one. `read` gives back the
/// bounce's facts, addresses in lower case and the diagnostic with the
/// reply code in front.
pub fn build_dsn(b: &Bounce<'_>) -> Vec<u8> {
    let (mta, recipient) = (b.reporting_mta, b.recipient);
    let subject = match b.action {
        Action::Failed => "Undelivered Mail Returned to Sender",
        Action::Delayed => "Delayed Mail (still being retried)",
        Action::Delivered | Action::Relayed | Action::Expanded => "Successful Mail Delivery Report",
    };
    let code = b.smtp_code.to_string();
    let diagnostic = match b.diagnostic.trim() {
        d if reply_code(d) == Some(b.smtp_code) => d.to_string(),
        "" => code,
        d => format!("{code} {d}"),
    };
    let outcome = match b.action {
        Action::Failed => "could not be delivered",
        Action::Delayed => "is not delivered yet; the mail system will keep trying",
        Action::Delivered => "was delivered",
        Action::Relayed => "was relayed to a system that sends no further report",
        Action::Expanded => "was delivered to a list or alias",
    };
    let status = format!(
        "Reporting-MTA: dns; {mta}\r\n\r\n\
         Final-Recipient: rfc822; {recipient}\r\n\
         Action: {action}\r\n\
         Status: {status}\r\n\
         Remote-MTA: dns; {remote}\r\n\
         {diagnostic_field}",
        action = b.action.as_str(),
        status = b.status,
        remote = b.remote_mta,
        diagnostic_field = folded(&format!("Diagnostic-Code: smtp; {diagnostic}")),
    );
    let human = format!(
        "This is the mail system at host {mta}.\r\n\r\n\
         Your message to <{recipient}> {outcome}.\r\n{said}",
        said = folded(&format!("{} said: {diagnostic}", b.remote_mta)),
    );
    let head = format!(
        "From: Mail Delivery System <MAILER-DAEMON@{mta}>\r\n\
         To: <{to}>\r\n\
         Subject: {subject}\r\n\
         Date: {date}\r\n\
         Message-ID: <{id}@{mta}>\r\n\
         Auto-Submitted: auto-replied\r\n",
        to = b.to,
        date = b.date.to_rfc2822(),
        id = message_id(&status, b.original, b.date),
    );
    multipart_report(&head, "delivery-status", &human, &status, b.original).into_bytes()
}

/// A spam complaint, to build a feedback report from.
#[derive(Debug, Clone)]
pub struct Abuse<'a> {
    /// The feedback loop's address, the report's From.
    pub reporter: &'a str,
    /// Where the report goes: the address the sender registered.
    pub to: &'a str,
    pub original_recipient: &'a str,
    pub original_mail_from: &'a str,
    /// The message complained about; its header section is returned.
    pub original: &'a str,
    pub date: DateTime<Utc>,
}

/// A genuine RFC 5965 `abuse` report: a human-readable part, the
/// message/feedback-report part and the original's header section as
/// text/rfc822-headers. `read` gives back its facts, addresses in lower
/// case, with the original's Message-ID.
pub fn build_arf(a: &Abuse<'_>) -> Vec<u8> {
    let host = a.reporter.rsplit_once('@').map_or(a.reporter, |(_, h)| h);
    // Version and User-Agent are required (RFC 5965 section 3.1).
    let report = format!(
        "Feedback-Type: abuse\r\n\
         User-Agent: mailhost-simulator/1.0\r\n\
         Version: 1\r\n\
         Original-Mail-From: <{from}>\r\n\
         Original-Rcpt-To: <{rcpt}>\r\n\
         Arrival-Date: {date}\r\n",
        from = a.original_mail_from,
        rcpt = a.original_recipient,
        date = a.date.to_rfc2822(),
    );
    let human = format!("This is an email abuse report for a message received by {host}.\r\n");
    let head = format!(
        "From: <{reporter}>\r\n\
         To: <{to}>\r\n\
         Subject: Email Feedback Report\r\n\
         Date: {date}\r\n\
         Message-ID: <{id}@{host}>\r\n",
        reporter = a.reporter,
        to = a.to,
        date = a.date.to_rfc2822(),
        id = message_id(&report, a.original, a.date),
    );
    multipart_report(&head, "feedback-report", &human, &report, a.original).into_bytes()
}

/// The three-part multipart/report both builders write under `head` (the
/// outer header fields but the MIME ones): the human text, the
/// machine-readable message/`kind` part and the returned header section.
fn multipart_report(head: &str, kind: &str, human: &str, machine: &str, original: &str) -> String {
    let headers = header_section(original);
    let boundary = boundary(&[head, machine, &headers].concat());
    format!(
        "{head}\
         MIME-Version: 1.0\r\n\
         Content-Type: multipart/report; report-type={kind};\r\n\tboundary=\"{boundary}\"\r\n\
         \r\n\
         This is a MIME-encapsulated message.\r\n\
         \r\n\
         --{boundary}\r\n\
         Content-Description: Notification\r\n\
         Content-Type: text/plain; charset=utf-8\r\n\
         \r\n\
         {human}\
         \r\n\
         --{boundary}\r\n\
         Content-Type: message/{kind}\r\n\
         \r\n\
         {machine}\
         \r\n\
         --{boundary}\r\n\
         Content-Description: Original Message Headers\r\n\
         Content-Type: text/rfc822-headers\r\n\
         \r\n\
         {headers}\
         \r\n\
         --{boundary}--\r\n"
    )
}

/// `original`'s header section with CRLF line ends, ending in one CRLF.
fn header_section(original: &str) -> String {
    let mut out = String::new();
    for line in original.lines().take_while(|line| !line.is_empty()) {
        out.push_str(line);
        out.push_str("\r\n");
    }
    out
}

/// `line` folded at spaces so that no line passes 78 characters where a
/// word break allows it (RFC 5322 section 2.1.1), with its CRLF.
fn folded(line: &str) -> String {
    let mut out = String::new();
    let mut width = 0;
    for word in line.split(' ') {
        if width > 0 && width + 1 + word.len() > 78 {
            out.push_str("\r\n ");
            width = 1;
        } else if width > 0 {
            out.push(' ');
            width += 1;
        }
        out.push_str(word);
        width += word.len();
    }
    out.push_str("\r\n");
    out
}

/// FNV-1a: boundaries and Message-IDs that are the same for the same report,
/// so a built report can be compared byte for byte.
fn fnv(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

fn boundary(seed: &str) -> String {
    // The returned headers are the one part not written here; a boundary
    // they happen to contain would cut them short, so another is taken.
    let mut salt = 0u64;
    loop {
        let b = format!("=_report_{:016x}", fnv(format!("{seed}{salt}").as_bytes()));
        if !seed.contains(&b) {
            return b;
        }
        salt += 1;
    }
}

fn message_id(machine: &str, original: &str, date: DateTime<Utc>) -> String {
    format!(
        "{}.{:016x}",
        date.timestamp(),
        fnv(format!("{machine}{original}").as_bytes())
    )
}

#[cfg(test)]
mod tests {
    use super::*;

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
