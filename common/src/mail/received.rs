//! What a received message carries, read the way its sender wrote it: its
//! files as sent (a text file in its own charset, a uuencoded file decoded, a
//! forwarded message whole) and the addresses a reply can use. mail-parser
//! reads the structure; this keeps what it transcodes, leaves encoded or
//! merges on the way.

use mail_parser::decoders::base64::base64_decode;
use mail_parser::decoders::quoted_printable::quoted_printable_decode;
use mail_parser::{Address, Message, MessageParser, MessagePart, MimeHeaders, PartType};

/// One file of a received message.
#[derive(Debug, Clone, PartialEq)]
pub struct Attachment {
    pub filename: String,
    /// The declared type; a text file's with its charset (`text/plain;
    /// charset=iso-8859-1`), since its bytes are served as sent.
    pub content_type: String,
    pub bytes: Vec<u8>,
    /// Its Content-ID without the angle brackets: what the HTML body's
    /// `cid:` links name (an inline image).
    pub content_id: Option<String>,
}

/// The files of `message` (parsed from `raw`), at most `max`. A container
/// (any multipart, even one mail-parser read as text because it held no
/// parts) is never a file.
pub fn files(message: &Message<'_>, raw: &[u8], max: usize) -> Vec<Attachment> {
    let mut out = Vec::new();
    collect(message, raw, max, &mut out);
    out
}

fn collect(message: &Message<'_>, raw: &[u8], max: usize, out: &mut Vec<Attachment>) {
    for &id in &message.attachments {
        if out.len() >= max {
            return;
        }
        let Some(part) = message.parts.get(id as usize) else {
            continue;
        };
        let Some(essence) = essence(part) else {
            continue;
        };
        let body = raw
            .get(part.offset_body as usize..part.offset_end as usize)
            .unwrap_or_default();
        let name = |default: &str| {
            part.attachment_name()
                .map(|n| cut(super::shown::neutral(n).trim(), 255))
                .filter(|n| !n.is_empty())
                .unwrap_or_else(|| format!("{default}-{}", out.len() + 1))
        };
        match &part.body {
            PartType::Message(_) => forwarded(message, id, body, name("forwarded-message"), max, out),
            _ if is_uuencoded(part) => out.push(Attachment {
                filename: name("attachment"),
                content_type: essence,
                bytes: uudecode(body),
                content_id: None,
            }),
            PartType::Text(_) | PartType::Html(_) => out.push(Attachment {
                filename: name("attachment"),
                content_type: with_charset(part, essence),
                bytes: transfer_decoded(part, body),
                content_id: None,
            }),
            _ => out.push(Attachment {
                filename: name("attachment"),
                content_type: essence,
                bytes: part.contents().to_vec(),
                content_id: None,
            }),
        }
        if let Some(file) = out.last_mut()
            && !matches!(part.body, PartType::Message(_))
        {
            file.content_id = content_id(part);
        }
    }
}

/// A part's Content-ID, without its angle brackets: an identifier as RFC
/// 2392 writes one (printable, no space or quote), else none, so a
/// stranger's text never reaches a reader through it.
fn content_id(part: &MessagePart<'_>) -> Option<String> {
    let id = part
        .content_id()?
        .trim()
        .trim_start_matches('<')
        .trim_end_matches('>')
        .trim();
    let plain = id
        .bytes()
        .all(|b| b.is_ascii_graphic() && !matches!(b, b'<' | b'>' | b'"' | b'\\' | b'(' | b')'));
    (!id.is_empty() && id.len() <= 255 && plain).then(|| id.to_string())
}

/// A forwarded message (part `id`, `body` its bytes), kept as sent. When its
/// own boundaries are broken, mail-parser's part runs on past the enclosing
/// multipart's next boundary: it ends there, and what follows is read as that
/// multipart's further parts.
fn forwarded(message: &Message<'_>, id: u32, body: &[u8], filename: String, max: usize, out: &mut Vec<Attachment>) {
    let boundary = enclosing_boundary(message, id);
    let (own, rest) = match boundary.as_deref().and_then(|b| split_at_boundary(body, b)) {
        Some((own, rest)) => (own, Some(rest)),
        None => (body, None),
    };
    out.push(Attachment {
        filename,
        content_type: "message/rfc822".into(),
        bytes: own.to_vec(),
        content_id: None,
    });
    if let (Some(boundary), Some(rest)) = (boundary, rest) {
        let mut tail =
            format!("Content-Type: multipart/mixed; boundary=\"{boundary}\"\r\n\r\n--{boundary}\r\n").into_bytes();
        tail.extend_from_slice(rest);
        if let Some(more) = MessageParser::default().parse(&tail) {
            collect(&more, &tail, max, out);
        }
    }
}

/// A text file's type with its charset, when that is a plain token, since
/// its bytes are served as sent.
fn with_charset(part: &MessagePart<'_>, essence: String) -> String {
    match part.content_type().and_then(|ct| ct.attribute("charset")) {
        Some(charset)
            if charset
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-_.:".contains(&b)) =>
        {
            format!("{essence}; charset={}", charset.to_ascii_lowercase())
        }
        _ => essence,
    }
}

/// `type/subtype`, lower case (none for a multipart container).
fn essence(part: &MessagePart<'_>) -> Option<String> {
    let essence = match part.content_type() {
        Some(ct) => match ct.subtype() {
            Some(sub) => format!("{}/{sub}", ct.ctype()),
            None => ct.ctype().to_string(),
        },
        None => "application/octet-stream".into(),
    }
    .to_ascii_lowercase();
    (!essence.starts_with("multipart/")).then_some(essence)
}

/// The boundary of the multipart that holds part `id`.
fn enclosing_boundary(message: &Message<'_>, id: u32) -> Option<String> {
    message
        .parts
        .iter()
        .find(|p| matches!(&p.body, PartType::Multipart(children) if children.contains(&id)))
        .and_then(|p| p.content_type()?.attribute("boundary").map(str::to_string))
}

/// Splits `body` at the first line that opens `--boundary`: (before it,
/// after that line).
fn split_at_boundary<'a>(body: &'a [u8], boundary: &str) -> Option<(&'a [u8], &'a [u8])> {
    let delimiter = format!("--{boundary}");
    let mut start = 0;
    for line in body.split_inclusive(|&b| b == b'\n') {
        let end = start + line.len();
        if line.starts_with(delimiter.as_bytes()) {
            return Some((&body[..start], &body[end..]));
        }
        start = end;
    }
    None
}

fn is_uuencoded(part: &MessagePart<'_>) -> bool {
    part.content_transfer_encoding()
        .is_some_and(|e| matches!(e.to_ascii_lowercase().as_str(), "x-uuencode" | "uuencode" | "x-uue"))
}

/// A text part's bytes with its transfer encoding undone and its charset
/// kept (mail-parser gives text already transcoded to UTF-8).
fn transfer_decoded(part: &MessagePart<'_>, body: &[u8]) -> Vec<u8> {
    let decoded = match part.content_transfer_encoding().map(str::to_ascii_lowercase).as_deref() {
        Some("base64") => base64_decode(body),
        Some("quoted-printable") => quoted_printable_decode(body),
        _ => None,
    };
    decoded.unwrap_or_else(|| body.to_vec())
}

/// The file inside a uuencoded body (`begin <mode> <name>` ... `end`). Each
/// line's first character gives its byte count; a space stands for zero as
/// well as a backtick, as old encoders wrote it. Written here because the one
/// crate for it panics on malformed input.
fn uudecode(body: &[u8]) -> Vec<u8> {
    let value = |c: u8| c.wrapping_sub(b' ') & 0x3f;
    let mut out = Vec::new();
    let mut lines = body
        .split(|&b| b == b'\n')
        .map(|l| l.strip_suffix(b"\r").unwrap_or(l))
        .skip_while(|l| !l.starts_with(b"begin "));
    lines.next();
    for line in lines {
        if line.starts_with(b"end") {
            break;
        }
        let Some((&count, data)) = line.split_first() else {
            continue;
        };
        let count = value(count) as usize;
        if count == 0 {
            continue;
        }
        let mut bytes = Vec::with_capacity(count + 2);
        for quad in data.chunks(4) {
            let c: Vec<u8> = (0..4).map(|i| value(quad.get(i).copied().unwrap_or(b'`'))).collect();
            bytes.push((c[0] << 2) | (c[1] >> 4));
            bytes.push((c[1] << 4) | (c[2] >> 2));
            bytes.push((c[2] << 6) | c[3]);
        }
        bytes.truncate(count);
        out.extend_from_slice(&bytes);
    }
    out
}

/// The addresses of an address header that a reply can use, lower case.
/// What mail-parser leaves as one "address" is taken apart: a display name
/// written without brackets (`Big Bug bb@bug.com`), two addresses without a
/// comma, an obsolete route (`<@route:user@host>`), spaces around the dots of
/// an obsolete address (`jdoe@test . example`); a group gives its members,
/// and what is no address at all gives nothing.
pub fn addresses(list: Option<&Address<'_>>, max: usize) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for written in list.into_iter().flat_map(|a| a.iter()).filter_map(|a| a.address()) {
        for address in reply_addresses(written) {
            if !out.contains(&address) && out.len() < max {
                out.push(address);
            }
        }
    }
    out
}

fn reply_addresses(written: &str) -> Vec<String> {
    // Obsolete syntax allows spaces around the dots and the @ of an address.
    let mut joined = String::with_capacity(written.len());
    let mut pending_space = false;
    for c in written.trim().chars() {
        if c.is_whitespace() {
            pending_space = true;
            continue;
        }
        let glued = matches!(c, '.' | '@') || joined.ends_with(['.', '@']);
        if pending_space && !glued && !joined.is_empty() {
            joined.push(' ');
        }
        pending_space = false;
        joined.push(c);
    }
    joined
        .split(' ')
        .filter(|token| token.contains('@'))
        // A source route ends at its colon: `@machine.tld:mary@example.net`.
        .map(|token| token.rsplit_once(':').map_or(token, |(_, address)| address))
        .map(|token| token.trim_matches(['<', '>', ',', ';']))
        .filter_map(address)
        .collect()
}

/// One received address, lower case: a plain ASCII one as
/// [`crate::values::email`] reads it, or (RFC 6532) one whose local part
/// holds UTF-8 letters and digits and whose domain is an internationalised
/// name, kept in its Unicode form (`jdöe@mächine.example`). Its domain must be
/// a valid name in its ASCII form (IDNA), which is the name DMARC looks up.
/// Whitespace, control and bidirectional characters are never part of one.
pub fn address(written: &str) -> Option<String> {
    let written = written.trim();
    if written.is_ascii() {
        return crate::values::email(written);
    }
    if written.len() > crate::values::MAX_EMAIL
        || written
            .chars()
            .any(|c| c.is_whitespace() || c.is_control() || super::shown::is_bidi_control(c))
    {
        return None;
    }
    let (local, domain) = written.rsplit_once('@')?;
    let local_ok = !local.is_empty()
        && !local.starts_with('.')
        && !local.ends_with('.')
        && !local.contains("..")
        && local.chars().all(|c| {
            if c.is_ascii() {
                c.is_ascii_alphanumeric() || "!#$%&'*+-/=?^_`{|}~.".contains(c)
            } else {
                c.is_alphanumeric()
            }
        });
    let ascii = crate::values::hostname(&url::quirks::domain_to_ascii(domain))?;
    let domain = url::quirks::domain_to_unicode(&ascii);
    // IDNA as browsers apply it lets a label start or end with a hyphen.
    let labels_ok = domain.split('.').all(|l| !l.starts_with('-') && !l.ends_with('-'));
    (local_ok && labels_ok).then(|| format!("{}@{domain}", local.to_lowercase()))
}

fn cut(text: &str, max: usize) -> String {
    let mut end = text.len().min(max);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text[..end].to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uuencoded_bytes_are_decoded_with_each_lines_count() {
        // "Cat" and "Hello, world!" as uuencode writes them.
        assert_eq!(uudecode(b"begin 644 cat.txt\n#0V%T\n`\nend\n"), b"Cat");
        assert_eq!(
            uudecode(b"begin 600 h.txt\r\n-2&5L;&\\L('=O<FQD(0``\r\n \r\nend\r\n"),
            b"Hello, world!"
        );
        // Old encoders wrote spaces for zero bits, and mailers trim them.
        assert_eq!(
            uudecode(b"begin 600 h.txt\n-2&5L;&\\L('=O<FQD(0  \n\nend\n"),
            b"Hello, world!"
        );
        assert_eq!(
            uudecode(b"begin 600 h.txt\n-2&5L;&\\L('=O<FQD(0\nend\n"),
            b"Hello, world!"
        );
        assert!(uudecode(b"no begin line\n#0V%T\n").is_empty());
        assert!(uudecode(b"begin 644 x\n\xff\xff\n").len() <= 3, "garbage is no panic");
    }

    #[test]
    fn written_addresses_become_reply_addresses() {
        assert_eq!(reply_addresses("Big Bug bb@bug.com"), ["bb@bug.com"]);
        assert_eq!(
            reply_addresses("tim@powerupdev.com concierge@powerupdev.com"),
            ["tim@powerupdev.com", "concierge@powerupdev.com"]
        );
        assert_eq!(reply_addresses("@machine.tld:mary@example.net"), ["mary@example.net"]);
        assert_eq!(reply_addresses("jdoe@test   . example"), ["jdoe@test.example"]);
        assert!(reply_addresses("Undisclosed-Recipient:@mailman.enron.com;").is_empty());
        assert!(reply_addresses("nobody").is_empty());
    }

    #[test]
    fn utf8_addresses_are_read_with_their_domain_in_unicode() {
        assert_eq!(address("jdöe@mächine.example").as_deref(), Some("jdöe@mächine.example"));
        assert_eq!(address("Märy@EXÄMPLE.net").as_deref(), Some("märy@exämple.net"));
        assert_eq!(address("ann@mächine.example").as_deref(), Some("ann@mächine.example"));
        // A name that maps to plain ASCII (full-width letters) is that name.
        assert_eq!(address("ann@ＢＡＮＫ.example").as_deref(), Some("ann@bank.example"));
        for bad in [
            "jd öe@mächine.example",
            "jdöe@mächine",
            "jdöe@-mächine.example",
            "j\u{202E}döe@mächine.example",
            "jdöe\u{202E}@mächine.example",
            "jdöe@mä\u{202E}chine.example",
            ".jdöe@mächine.example",
            "jd..öe@mächine.example",
            "jdöe",
            "☃@mächine.example",
        ] {
            assert_eq!(address(bad), None, "{bad:?}");
        }
    }
}

#[cfg(test)]
mod corpus {
    /// Every real message the project holds gives its files without a panic,
    /// broken forwarded messages re-read included.
    #[test]
    fn every_corpus_message_gives_its_files() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let mut dirs = vec![root.join("tests/fixtures/eml")];
        for sub in ["legacy", "malformed", "thirdparty"] {
            dirs.push(root.join("../shared/corpus/eml").join(sub));
        }
        let mut seen = 0;
        for dir in dirs {
            let Ok(entries) = std::fs::read_dir(&dir) else { continue };
            for entry in entries.flatten() {
                let path = entry.path();
                if path.extension().is_none_or(|e| e != "eml") {
                    continue;
                }
                let raw = std::fs::read(&path).unwrap();
                if let Some(message) = mail_parser::MessageParser::default().parse(&raw) {
                    super::files(&message, &raw, 20);
                }
                seen += 1;
            }
        }
        assert!(seen >= 12);
    }
}
