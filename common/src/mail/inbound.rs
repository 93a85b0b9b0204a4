//! Inbound messages: a raw message as the mail host hands it over (a leading
//! `Delivered-To:` header naming the envelope recipient), parsed with
//! mail-parser under explicit limits into what the inbox stores.

use mail_parser::{Address, HeaderValue, MessageParser, MimeHeaders, PartType};
use sha2::{Digest, Sha256};

/// What a message may be before it is refused (filed to `inbound/failed/`).
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
            max_bytes: 25 * 1024 * 1024,
            max_parts: 200,
            max_depth: 8,
            max_headers: 1000,
            max_attachments: 20,
        }
    }
}

/// The longest subject, address list entry and body kept (longer is cut).
const MAX_SUBJECT: usize = 998;
const MAX_TEXT: usize = 2 * 1024 * 1024;
const MAX_IDS: usize = 100;

#[derive(Debug, Clone, PartialEq)]
pub struct Attachment {
    pub filename: String,
    pub content_type: String,
    pub bytes: Vec<u8>,
}

/// A parsed inbound message.
#[derive(Debug, Clone, PartialEq)]
pub struct Inbound {
    /// The envelope recipients the mail host named (`Delivered-To:` lines
    /// before the message proper).
    pub delivered_to: Vec<String>,
    /// `<...>`; synthesized from the bytes when the message has none.
    pub message_id: String,
    pub from: String,
    pub to: Vec<String>,
    pub cc: Vec<String>,
    pub subject: String,
    /// RFC 3339, when the Date header parsed.
    pub date: Option<String>,
    pub in_reply_to: Vec<String>,
    pub references: Vec<String>,
    pub text: String,
    pub html: Option<String>,
    pub attachments: Vec<Attachment>,
}

/// Why a message cannot be filed: the reason written beside it in `failed/`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused(pub String);

/// Splits the leading `Delivered-To:` lines off the raw bytes.
fn envelope(raw: &[u8]) -> (Vec<String>, &[u8]) {
    let mut rest = raw;
    let mut recipients = Vec::new();
    while let Some(end) = rest.iter().position(|&b| b == b'\n') {
        let line = String::from_utf8_lossy(&rest[..end]);
        let Some((name, value)) = line.split_once(':') else {
            break;
        };
        if !name.eq_ignore_ascii_case("delivered-to") {
            break;
        }
        let address = value.trim().trim_matches(['<', '>']).to_ascii_lowercase();
        if !address.is_empty() {
            recipients.push(address);
        }
        rest = &rest[end + 1..];
    }
    (recipients, rest)
}

fn addresses(list: Option<&Address<'_>>) -> Vec<String> {
    let mut out: Vec<String> = list
        .map(|a| {
            a.iter()
                .filter_map(|a| a.address())
                .map(|a| a.trim().to_ascii_lowercase())
                .collect()
        })
        .unwrap_or_default();
    out.dedup();
    out.truncate(MAX_IDS);
    out
}

fn ids(value: &HeaderValue<'_>) -> Vec<String> {
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
    format!("<{}@synthesized.invalid>", &hex::encode(Sha256::digest(body))[..40])
}

pub fn parse(raw: &[u8], limits: &Limits) -> Result<Inbound, Refused> {
    if raw.len() > limits.max_bytes {
        return Err(Refused(format!(
            "message of {} bytes (max {})",
            raw.len(),
            limits.max_bytes
        )));
    }
    let (delivered_to, body) = envelope(raw);
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
    let message_id = match message.message_id() {
        Some(id) if !id.trim().is_empty() && id.len() <= 500 => format!("<{}>", id.trim().trim_matches(['<', '>'])),
        _ => synthesized_id(body),
    };
    let mut attachments = Vec::new();
    for part in message.attachments() {
        if attachments.len() == limits.max_attachments {
            break;
        }
        let content_type = part
            .content_type()
            .map(|ct| match ct.subtype() {
                Some(sub) => format!("{}/{}", ct.ctype(), sub),
                None => ct.ctype().to_string(),
            })
            .unwrap_or_else(|| "application/octet-stream".into())
            .to_ascii_lowercase();
        let filename = part
            .attachment_name()
            .map(|n| cut(n.trim(), 255))
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| format!("attachment-{}", attachments.len() + 1));
        attachments.push(Attachment {
            filename,
            content_type,
            bytes: part.contents().to_vec(),
        });
    }
    let text = message.body_text(0).map(|t| cut(&t, MAX_TEXT)).unwrap_or_default();
    // mail-parser lists a plain-text body as the HTML body too when there is
    // no HTML part (and would render one): only a real text/html part counts.
    let has_html = message
        .html_body
        .iter()
        .any(|id| message.part(*id).is_some_and(|p| matches!(p.body, PartType::Html(_))));
    let html = message.body_html(0).filter(|_| has_html).map(|h| cut(&h, MAX_TEXT));
    Ok(Inbound {
        delivered_to,
        message_id,
        from: addresses(message.from()).into_iter().next().unwrap_or_default(),
        to: addresses(message.to()),
        cc: addresses(message.cc()),
        subject: cut(message.subject().unwrap_or_default().trim(), MAX_SUBJECT),
        date: message.date().map(|d| d.to_rfc3339()),
        in_reply_to: ids(message.in_reply_to()),
        references: ids(message.references()),
        text,
        html,
        attachments,
    })
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
        assert_eq!(m.delivered_to, ["me@example.com"]);
        assert_eq!(m.message_id, "<abc@example.org>");
        assert_eq!(m.from, "ann@example.org");
        assert_eq!(m.to, ["me@example.com", "bob@example.com"]);
        assert_eq!(m.subject, "Hello");
        assert_eq!(m.in_reply_to, ["<root@x>"]);
        assert_eq!(m.date.as_deref(), Some("2026-11-22T10:00:00Z"));
        assert_eq!(m.text.trim(), "Hi there");
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
