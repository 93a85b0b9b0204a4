//! Inbound messages: a raw message as the mail host hands it over, its
//! envelope first, parsed with mail-parser under explicit limits into what the
//! inbox stores.
//!
//! The envelope is what Postfix knew when it accepted the message (the one
//! recipient of this copy, the sender, the client's address and HELO), passed
//! to `mailhost deliver` as arguments and written by it as the first line:
//! `X-Mailhost-Envelope: {json}`. A file dropped by hand in Postfix's own
//! layout (`Return-Path:`, `X-Original-To:`, `Delivered-To:` before the
//! message) is read by its first `Delivered-To:`; nothing a sender wrote inside
//! the message names a recipient.

use std::collections::BTreeMap;

use crate::blob::{BlobError, BlobStore};
use mail_parser::{HeaderValue, MessageParser, PartType};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The largest message the mail host accepts (Postfix's `message_size_limit`,
/// written from this value by `scripts/mail-host`; `mailhost limits` prints it).
pub const MESSAGE_SIZE_LIMIT: usize = 25 * 1024 * 1024;
/// What the mail host adds in front of a message it accepted at the limit:
/// the envelope line and Postfix's trace headers.
const TRACE_ALLOWANCE: usize = 64 * 1024;

/// The most files kept of one received message (GET /attachment serves
/// indexes 0 to this less one).
pub const MAX_ATTACHMENTS: usize = 20;

// ------------------------------------------------------------- the spool

/// Where raw inbound files wait for the poller, and where it moves them.
pub const PENDING: &str = "inbound/pending/";
pub const DONE: &str = "inbound/done/";
pub const FAILED: &str = "inbound/failed/";

/// Drops a raw message where the poller finds it; returns its key.
pub async fn drop_raw(blobs: &dyn BlobStore, raw: Vec<u8>) -> Result<String, BlobError> {
    let ms = chrono::Utc::now().timestamp_millis();
    let key = format!("{PENDING}{ms:013}-{}.eml", hex::encode(rand::random::<[u8; 8]>()));
    blobs.put(&key, raw, "message/rfc822").await?;
    Ok(key)
}

/// The header line `mailhost deliver` writes first.
pub const ENVELOPE_HEADER: &str = "X-Mailhost-Envelope";

/// What one message may be before it is refused (filed to `inbound/failed/`).
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub max_bytes: usize,
    pub max_parts: usize,
    /// Nested `message/rfc822` levels below the top.
    pub max_depth: usize,
    pub max_headers: usize,
    pub max_attachments: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_bytes: MESSAGE_SIZE_LIMIT + TRACE_ALLOWANCE,
            max_parts: 200,
            max_depth: 8,
            max_headers: 1000,
            max_attachments: MAX_ATTACHMENTS,
        }
    }
}

/// The longest subject, address list entry and body kept (longer is cut).
const MAX_SUBJECT: usize = 998;
const MAX_TEXT: usize = 2 * 1024 * 1024;
const MAX_IDS: usize = 100;

use super::authors::Authors;
pub use super::received::Attachment;
use super::{html, people, received, shown};

/// The SMTP envelope of one delivered copy, as the mail host saw it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Envelope {
    /// The one recipient this copy is for.
    pub recipient: Option<String>,
    /// The envelope sender (`MAIL FROM`); empty for a bounce.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sender: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_address: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub helo: Option<String>,
}

impl Envelope {
    /// The raw message with this envelope as its first line (what `mailhost
    /// deliver` drops). JSON keeps any byte a client sent in HELO on one line.
    pub fn prepend(&self, raw: &[u8]) -> Vec<u8> {
        let line = serde_json::to_string(self).unwrap_or_else(|_| "{}".into());
        let mut out = Vec::with_capacity(raw.len() + line.len() + 32);
        out.extend_from_slice(ENVELOPE_HEADER.as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(line.as_bytes());
        out.extend_from_slice(b"\r\n");
        out.extend_from_slice(raw);
        out
    }

    /// The sender before the mail host's own SRS rewrote it: postsrsd turns
    /// every envelope sender outside its domain into
    /// `SRS0=<hash>=<time>=<domain>=<local>@<srs domain>` before the delivery
    /// agent sees it, and SPF must judge the original. Only addresses at
    /// `srs_domain` (the mail host's) are read back.
    pub fn original_sender(sender: &str, srs_domain: &str) -> String {
        let lower = sender.to_ascii_lowercase();
        let Some((local, domain)) = lower.rsplit_once('@') else {
            return sender.to_string();
        };
        if !domain.eq_ignore_ascii_case(srs_domain) {
            return sender.to_string();
        }
        // Only the separator after `SRS0` may be `+` or `-`; the hash (base64,
        // so it may hold `+`) and the rest are separated by `=`.
        let Some(rest) = local.strip_prefix("srs0").and_then(|r| r.strip_prefix(['=', '+', '-'])) else {
            return sender.to_string();
        };
        match rest.splitn(4, '=').collect::<Vec<_>>().as_slice() {
            [_hash, _time, domain, local] if !domain.is_empty() && !local.is_empty() => format!("{local}@{domain}"),
            _ => sender.to_string(),
        }
    }

    /// The envelope a raw file carries (none for a bare message), and the
    /// message after it. An envelope line that does not parse names no one.
    pub fn split(raw: &[u8]) -> (Option<Envelope>, &[u8]) {
        if let Some((line, rest)) = first_line(raw)
            && let Some(value) = header_value(line, ENVELOPE_HEADER)
        {
            let envelope = serde_json::from_str::<Envelope>(value).unwrap_or_default();
            return (Some(envelope.normalized()), skip_trace(rest).1);
        }
        let (envelope, rest) = skip_trace(raw);
        (envelope.recipient.is_some().then(|| envelope.normalized()), rest)
    }

    /// Whether a raw file already starts with an envelope line.
    pub fn present(raw: &[u8]) -> bool {
        first_line(raw).is_some_and(|(line, _)| header_value(line, ENVELOPE_HEADER).is_some())
    }

    fn normalized(self) -> Envelope {
        let address = |v: Option<String>| {
            v.map(|a| a.trim().trim_matches(['<', '>']).to_ascii_lowercase())
                .filter(|a| !a.is_empty())
        };
        Envelope {
            recipient: address(self.recipient),
            sender: address(self.sender),
            client_address: self.client_address.filter(|a| !a.is_empty()),
            helo: self.helo.filter(|h| !h.is_empty()),
        }
    }
}

/// Postfix's layout: the trace lines its delivery agent writes before the
/// message (`Return-Path:`, `X-Original-To:`, `Delivered-To:`), read for the
/// first `Delivered-To:` and the sender, and the message after them (so the
/// same message delivered to two mailboxes is the same bytes).
fn skip_trace(mut rest: &[u8]) -> (Envelope, &[u8]) {
    let mut envelope = Envelope::default();
    while let Some((line, after)) = first_line(rest) {
        if let Some(value) = header_value(line, "Delivered-To") {
            envelope.recipient.get_or_insert_with(|| value.to_string());
        } else if let Some(value) = header_value(line, "Return-Path") {
            envelope.sender.get_or_insert_with(|| value.to_string());
        } else if header_value(line, "X-Original-To").is_none() {
            break;
        }
        rest = after;
    }
    (envelope, rest)
}

/// The first line (without its line end) and what follows it.
fn first_line(raw: &[u8]) -> Option<(&[u8], &[u8])> {
    let end = raw.iter().position(|&b| b == b'\n')?;
    let line = &raw[..end];
    Some((line.strip_suffix(b"\r").unwrap_or(line), &raw[end + 1..]))
}

/// The value of a one-line header named `name`, if the line is one.
fn header_value<'a>(line: &'a [u8], name: &str) -> Option<&'a str> {
    let text = std::str::from_utf8(line).ok()?;
    let (field, value) = text.split_once(':')?;
    field.eq_ignore_ascii_case(name).then_some(value.trim())
}

/// A parsed inbound message.
#[derive(Debug, Clone, PartialEq)]
pub struct Inbound {
    /// None for a bare message (dropped by hand, with no trace lines).
    pub envelope: Option<Envelope>,
    /// `<...>`; synthesized from the bytes when the message has none.
    pub message_id: String,
    /// The SHA-256 (hex) of the message's bytes (after the envelope and
    /// trace lines): what tells a second copy from a different message.
    pub digest: String,
    /// The address it is shown from: the one author, else the first address
    /// its From headers name (see [`super::authors`]).
    pub from: String,
    /// Every address its From headers name, when that is not one address in
    /// one header (several headers, several addresses, a group); else empty.
    /// The checks judge each of their domains.
    pub authors: Vec<String>,
    pub to: Vec<String>,
    pub cc: Vec<String>,
    /// The display name written beside `from`.
    pub from_name: Option<String>,
    /// Where replies should go (Reply-To), when it says.
    pub reply_to: Vec<String>,
    /// The display names written beside its To, Cc and Reply-To addresses.
    pub names: BTreeMap<String, String>,
    pub subject: String,
    /// RFC 3339, when the Date header parsed.
    pub date: Option<String>,
    pub in_reply_to: Vec<String>,
    pub references: Vec<String>,
    pub text: String,
    pub html: Option<String>,
    pub attachments: Vec<Attachment>,
}

impl Inbound {
    /// The addresses whose domains the checks judge: every one its From
    /// headers name (the one it is shown from among them).
    pub fn judged_authors(&self) -> Vec<String> {
        match (self.authors.is_empty(), self.from.is_empty()) {
            (false, _) => self.authors.clone(),
            (true, false) => vec![self.from.clone()],
            (true, true) => Vec::new(),
        }
    }
}

/// Why a message cannot be filed: the reason written beside it in `failed/`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused(pub String);

/// The Message-IDs of an In-Reply-To or References header, at most 100.
pub(crate) fn message_ids(value: &HeaderValue<'_>) -> Vec<String> {
    let list: Vec<String> = match value {
        HeaderValue::Text(id) => vec![id.to_string()],
        HeaderValue::TextList(ids) => ids.iter().map(|s| s.to_string()).collect(),
        _ => Vec::new(),
    };
    list.into_iter()
        .take(MAX_IDS)
        .map(|id| format!("<{}>", id.trim_matches(['<', '>'])))
        .collect()
}

fn cut(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text[..end].to_string()
}

fn depth(message: &mail_parser::Message<'_>, level: usize, limits: &Limits) -> Result<usize, Refused> {
    if level > limits.max_depth {
        return Err(Refused(format!("nested deeper than {} messages", limits.max_depth)));
    }
    let mut parts = message.parts.len();
    for part in &message.parts {
        if let PartType::Message(inner) = &part.body {
            parts += depth(inner, level + 1, limits)?;
        }
    }
    Ok(parts)
}

/// The stable id of a message without one: the same bytes always give the same id.
pub fn synthesized_id(body: &[u8]) -> String {
    synthesized_from(&hex::encode(Sha256::digest(body)))
}

fn synthesized_from(digest: &str) -> String {
    format!("<{}{SYNTHESIZED}>", &digest[..40])
}

/// How a synthesized id ends: `.invalid` (RFC 2606) is no one's domain.
const SYNTHESIZED: &str = "@synthesized.invalid";

/// Whether a Message-ID is one this service made for a message that came
/// without one: no one else ever saw it, so no header sent out names it.
pub fn is_synthesized(message_id: &str) -> bool {
    message_id.trim_end_matches('>').ends_with(SYNTHESIZED)
}

pub fn parse(raw: &[u8], limits: &Limits) -> Result<Inbound, Refused> {
    if raw.len() > limits.max_bytes {
        return Err(Refused(format!(
            "message of {} bytes (max {})",
            raw.len(),
            limits.max_bytes
        )));
    }
    let (envelope, body) = Envelope::split(raw);
    let message = MessageParser::default()
        .parse(body)
        .ok_or_else(|| Refused("not a MIME message".into()))?;
    let headers = message.parts.first().map(|p| p.headers.len()).unwrap_or(0);
    if headers == 0 {
        return Err(Refused("no headers".into()));
    }
    if headers > limits.max_headers {
        return Err(Refused(format!("{headers} headers (max {})", limits.max_headers)));
    }
    let parts = depth(&message, 0, limits)?;
    if parts > limits.max_parts {
        return Err(Refused(format!("{parts} MIME parts (max {})", limits.max_parts)));
    }
    let digest = hex::encode(Sha256::digest(body));
    let message_id = match message.message_id() {
        Some(id) if !id.trim().is_empty() && id.len() <= 500 => format!("<{}>", id.trim().trim_matches(['<', '>'])),
        _ => synthesized_from(&digest),
    };
    let attachments = received::files(&message, body, limits.max_attachments);
    let text = html::body_text(&message).map(|t| cut(&t, MAX_TEXT)).unwrap_or_default();
    // mail-parser lists a plain-text body as the HTML body too when there is
    // no HTML part (and would render one): only a real text/html part counts.
    let has_html = message
        .html_body
        .iter()
        .any(|id| message.part(*id).is_some_and(|p| matches!(p.body, PartType::Html(_))));
    let html = message.body_html(0).filter(|_| has_html).map(|h| cut(&h, MAX_TEXT));
    let reply_to = people::people(message.reply_to(), MAX_IDS);
    let names = people::names(
        people::people(message.to(), MAX_IDS)
            .iter()
            .chain(&people::people(message.cc(), MAX_IDS))
            .chain(&reply_to),
    );
    let authors = Authors::of(&message);
    let mut inbound = Inbound {
        envelope,
        message_id,
        digest,
        from: authors.shown().to_string(),
        authors: match authors.single() {
            Some(_) => Vec::new(),
            None => authors.addresses,
        },
        to: received::addresses(message.to(), MAX_IDS),
        cc: received::addresses(message.cc(), MAX_IDS),
        from_name: None,
        reply_to: reply_to.into_iter().map(|p| p.address).collect(),
        names,
        subject: cut(
            &shown::neutral(message.subject().unwrap_or_default().trim()),
            MAX_SUBJECT,
        ),
        date: message.date().map(|d| d.to_rfc3339()),
        in_reply_to: message_ids(message.in_reply_to()),
        references: message_ids(message.references()),
        text,
        html,
        attachments,
    };
    inbound.from_name = people::people(message.from(), MAX_IDS)
        .into_iter()
        .find(|p| p.address == inbound.from)
        .and_then(|p| p.name);
    Ok(inbound)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MESSAGE: &[u8] = b"Delivered-To: Me@Example.com\r\nFrom: Ann <ann@example.org>\r\nTo: me@example.com, \
        Bob <bob@example.com>\r\nSubject: Hello\r\nMessage-ID: <abc@example.org>\r\nIn-Reply-To: <root@x>\r\n\
        Date: Sun, 22 Nov 2026 10:00:00 +0000\r\n\r\nHi there\r\n";

    #[test]
    fn the_envelope_and_the_fields_are_read() {
        let m = parse(MESSAGE, &Limits::default()).unwrap();
        assert_eq!(
            m.envelope.as_ref().unwrap().recipient.as_deref(),
            Some("me@example.com")
        );
        assert_eq!(m.message_id, "<abc@example.org>");
        assert_eq!(m.from, "ann@example.org");
        assert_eq!(m.from_name.as_deref(), Some("Ann"));
        assert_eq!(m.to, ["me@example.com", "bob@example.com"]);
        assert_eq!(m.names.get("bob@example.com").map(String::as_str), Some("Bob"));
        assert!(m.reply_to.is_empty());
        assert_eq!(m.subject, "Hello");
        assert_eq!(m.in_reply_to, ["<root@x>"]);
        assert_eq!(m.date.as_deref(), Some("2026-11-22T10:00:00Z"));
        assert_eq!(m.text.trim(), "Hi there");
    }

    #[test]
    fn the_envelope_line_names_the_one_recipient_and_the_connection() {
        let envelope = Envelope {
            recipient: Some("Bcc@Example.com".into()),
            sender: Some("ann@example.org".into()),
            client_address: Some("192.0.2.7".into()),
            helo: Some("mx.example.org\r\nDelivered-To: evil@example.com".into()),
        };
        let raw = envelope.prepend(MESSAGE);
        assert!(Envelope::present(&raw));
        let m = parse(&raw, &Limits::default()).unwrap();
        assert_eq!(
            m.envelope.as_ref().unwrap().recipient.as_deref(),
            Some("bcc@example.com")
        );
        assert_eq!(m.envelope.as_ref().unwrap().sender.as_deref(), Some("ann@example.org"));
        assert_eq!(
            m.envelope.as_ref().unwrap().client_address.as_deref(),
            Some("192.0.2.7")
        );
        // A HELO with a line break stays inside the one JSON line.
        assert_eq!(
            m.envelope.as_ref().unwrap().helo.as_deref(),
            Some("mx.example.org\r\nDelivered-To: evil@example.com")
        );
        assert_eq!(m.message_id, "<abc@example.org>");
    }

    #[test]
    fn the_mail_hosts_own_srs_sender_reads_back_as_the_original() {
        let srs = "SRS0=5nat=JN=example.org=ann@mx.localhost";
        assert_eq!(Envelope::original_sender(srs, "mx.localhost"), "ann@example.org");
        // A hash may hold `+` or `-` (postsrsd's base64): only `=` splits after it.
        let srs = "SRS0=a+b-=JN=example.org=ann@mx.localhost";
        assert_eq!(Envelope::original_sender(srs, "mx.localhost"), "ann@example.org");
        assert_eq!(
            Envelope::original_sender("SRS0+5nat=JN=example.org=ann@mx.localhost", "mx.localhost"),
            "ann@example.org"
        );
        // Another host's SRS address, or a plain one, is kept as it is.
        assert_eq!(Envelope::original_sender(srs, "mx.other.example"), srs);
        assert_eq!(
            Envelope::original_sender("ann@example.org", "mx.localhost"),
            "ann@example.org"
        );
        assert_eq!(
            Envelope::original_sender("SRS0=x@mx.localhost", "mx.localhost"),
            "SRS0=x@mx.localhost"
        );
    }

    #[test]
    fn postfix_layout_files_by_the_first_delivered_to_only() {
        let raw = b"Return-Path: <ann@example.org>\r\nX-Original-To: list@example.com\r\n\
            Delivered-To: me@example.com\r\nDelivered-To: other@example.com\r\nFrom: ann@example.org\r\n\
            Delivered-To: third@example.com\r\nSubject: x\r\n\r\nbody\r\n";
        let m = parse(raw, &Limits::default()).unwrap();
        assert_eq!(
            m.envelope.as_ref().unwrap().recipient.as_deref(),
            Some("me@example.com")
        );
        assert_eq!(m.envelope.as_ref().unwrap().sender.as_deref(), Some("ann@example.org"));
        // Delivered-To lines a sender wrote inside the message name no one.
        let raw = b"From: ann@example.org\r\nDelivered-To: me@example.com\r\nSubject: x\r\n\r\nbody\r\n";
        assert_eq!(parse(raw, &Limits::default()).unwrap().envelope, None);
        // An envelope line that does not parse is an envelope naming no one.
        let raw = b"X-Mailhost-Envelope: {broken\r\nFrom: a@example.org\r\nTo: me@example.com\r\n\r\nbody\r\n";
        assert_eq!(
            parse(raw, &Limits::default()).unwrap().envelope,
            Some(Envelope::default())
        );
    }

    #[test]
    fn a_message_without_an_id_gets_the_same_id_every_time() {
        let raw = b"From: a@b.example\r\nSubject: x\r\n\r\nbody\r\n";
        let one = parse(raw, &Limits::default()).unwrap();
        let two = parse(
            &[b"Delivered-To: z@y.example\r\n".as_slice(), raw].concat(),
            &Limits::default(),
        )
        .unwrap();
        assert_eq!(one.message_id, two.message_id);
        assert!(one.message_id.ends_with("@synthesized.invalid>"));
    }

    #[test]
    fn limits_refuse_with_a_reason() {
        let small = Limits {
            max_bytes: 10,
            ..Limits::default()
        };
        assert!(parse(MESSAGE, &small).unwrap_err().0.contains("bytes"));
        assert!(parse(b"", &Limits::default()).is_err());
    }
}
