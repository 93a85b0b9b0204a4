//! Customer messages: plain text (with an HTML alternative when the send
//! has one) and attachments as MIME parts, named recipients on To and Cc
//! (Bcc recipients are in the envelope only, never in a header), a fresh
//! Message-ID, threading headers, and a DKIM signature with the sending
//! domain's key. A message a mail client submitted is signed the same way.

use lettre::message::header::{ContentTransferEncoding, ContentType};
use lettre::message::{Attachment as MimeAttachment, Body, Mailbox, MultiPart, SinglePart};
use mail_auth::common::crypto::{Algorithm, CryptoError, Sha256, SigningKey};
use mail_auth::common::headers::{HeaderWriter, Writable};
use mail_auth::dkim::{DkimSigner, Done};

use super::attachments::Attachment;
use super::people::Person;
use super::{MailError, Outgoing};

pub struct Draft<'a> {
    pub from: &'a str,
    pub to: &'a [Person],
    pub cc: &'a [Person],
    /// Recipients of the envelope alone: no header names them.
    pub bcc: &'a [String],
    pub subject: &'a str,
    pub text: &'a str,
    /// Already sanitised ([`super::html::sanitize`]): sent as the
    /// `multipart/alternative` beside the text.
    pub html: Option<&'a str>,
    pub in_reply_to: Option<&'a str>,
    pub references: &'a [String],
    pub attachments: &'a [Attachment],
}

/// The headers every signature covers. One that is absent is signed as
/// absent (mail-auth lists it in `h=` anyway), so it cannot be added later.
const SIGNED_HEADERS: &[&str] = &[
    "From",
    "Sender",
    "Reply-To",
    "To",
    "Cc",
    "Subject",
    "Date",
    "Message-ID",
    "In-Reply-To",
    "References",
    "MIME-Version",
    "Content-Type",
    "Content-Transfer-Encoding",
];

/// The key a domain signs with, under its DKIM selector.
pub struct Signer {
    dkim: DkimSigner<AwsLcRsaKey, Done>,
}

/// A domain's RSA key, signing through aws-lc (already linked for TLS and
/// the identity keys). mail-auth's own RSA (the `rsa` crate) took about
/// 2.4 ms of a send's time; aws-lc signs in a fraction of it
/// (docs/benchmarks/history.md, 2026-12-06). mail-auth's `aws-lc-rs` feature
/// would do the same but also brings hickory's TLS and DNSSEC.
struct AwsLcRsaKey(aws_lc_rs::rsa::KeyPair);

impl SigningKey for AwsLcRsaKey {
    type Hasher = Sha256;

    fn sign(&self, input: impl Writable) -> mail_auth::Result<Vec<u8>> {
        let mut data = Vec::with_capacity(256);
        input.write(&mut data);
        let mut signature = vec![0; self.0.public_modulus_len()];
        self.0
            .sign(
                &aws_lc_rs::signature::RSA_PKCS1_SHA256,
                &aws_lc_rs::rand::SystemRandom::new(),
                &data,
                &mut signature,
            )
            .map_err(|e| mail_auth::Error::Crypto(CryptoError::Library(e.to_string())))?;
        Ok(signature)
    }

    fn algorithm(&self) -> Algorithm {
        Algorithm::RsaSha256
    }
}

impl Signer {
    /// From the PKCS#8 PEM the service keeps as the domain's secret.
    pub fn from_pkcs8(selector: &str, domain: &str, pkcs8_pem: &str) -> Result<Self, MailError> {
        use rustls_pki_types::pem::PemObject;
        let bad = |e: &dyn std::fmt::Display| MailError(format!("DKIM key: {e}"));
        let der = rustls_pki_types::PrivateKeyDer::from_pem_slice(pkcs8_pem.as_bytes()).map_err(|e| bad(&e))?;
        let key = match der {
            rustls_pki_types::PrivateKeyDer::Pkcs8(der) => aws_lc_rs::rsa::KeyPair::from_pkcs8(der.secret_pkcs8_der()),
            rustls_pki_types::PrivateKeyDer::Pkcs1(der) => aws_lc_rs::rsa::KeyPair::from_der(der.secret_pkcs1_der()),
            _ => return Err(bad(&"not an RSA key")),
        }
        .map_err(|e| bad(&e))?;
        let key = AwsLcRsaKey(key);
        let dkim = DkimSigner::from_key(key)
            .domain(domain)
            .selector(selector)
            .headers(SIGNED_HEADERS.iter().copied());
        Ok(Self { dkim })
    }

    /// The message with a DKIM-Signature header (relaxed/relaxed) in front.
    /// The bytes must be what goes on the wire: CRLF line ends.
    pub fn sign(&self, raw: Vec<u8>) -> Result<Vec<u8>, MailError> {
        let signature = self
            .dkim
            .sign(&raw)
            .map_err(|e| MailError(format!("DKIM signing: {e}")))?;
        let mut signed = signature.to_header().into_bytes();
        signed.extend_from_slice(&raw);
        Ok(signed)
    }
}

fn crlf(text: &str) -> String {
    String::from_utf8(crlf_bytes(text.as_bytes())).unwrap_or_default()
}

/// Every line end as CRLF (a lone CR or LF included): the bytes SMTP carries,
/// which a DKIM body hash must be taken over.
fn crlf_bytes(raw: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(raw.len() + raw.len() / 32);
    let mut bytes = raw.iter().copied().peekable();
    while let Some(b) = bytes.next() {
        match b {
            b'\r' => {
                bytes.next_if_eq(&b'\n');
                out.extend_from_slice(b"\r\n");
            }
            b'\n' => out.extend_from_slice(b"\r\n"),
            _ => out.push(b),
        }
    }
    out
}

/// Headers a submitted message loses before it is signed and sent: Bcc (its
/// recipients are in the envelope only), and what only a later hop may write.
const DROPPED_ON_SUBMISSION: &[&str] = &[
    "Bcc",
    "Resent-Bcc",
    "DKIM-Signature",
    "Return-Path",
    super::inbound::ENVELOPE_HEADER,
];

/// A message a mail client submitted, ready to sign: CRLF line ends, without
/// the headers above, with a Message-ID and a Date when it had none. Gives it
/// with its Message-ID.
pub fn submitted(raw: &[u8], domain: &str, now: chrono::DateTime<chrono::Utc>) -> Result<(Vec<u8>, String), MailError> {
    let raw = crlf_bytes(raw);
    let parsed = mail_parser::MessageParser::default()
        .parse(&raw)
        .ok_or_else(|| MailError("not a MIME message".into()))?;
    let root = parsed.root_part();
    let mut out = Vec::with_capacity(raw.len() + 200);
    for header in root.headers() {
        let name = header.name.as_str();
        if DROPPED_ON_SUBMISSION.iter().any(|d| d.eq_ignore_ascii_case(name)) {
            continue;
        }
        out.extend_from_slice(&raw[header.offset_field as usize..header.offset_end as usize]);
    }
    let message_id = match parsed.message_id().map(str::trim).filter(|id| !id.is_empty()) {
        Some(id) => format!("<{}>", id.trim_matches(['<', '>'])),
        None => {
            let id = new_message_id(domain);
            out.extend_from_slice(format!("Message-ID: {id}\r\n").as_bytes());
            id
        }
    };
    if parsed.date().is_none() {
        out.extend_from_slice(format!("Date: {}\r\n", now.to_rfc2822()).as_bytes());
    }
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(raw.get(root.offset_body as usize..).unwrap_or_default());
    Ok((out, message_id))
}

/// `<random@domain>`: unique, and naming the sending domain.
pub fn new_message_id(domain: &str) -> String {
    format!("<{}@{domain}>", hex::encode(rand::random::<[u8; 16]>()))
}

/// A person as a header names them: `Name <address>`, the name encoded
/// (RFC 2047) and quoted as it needs.
fn mailbox(person: &Person) -> Result<Mailbox, MailError> {
    let address = person
        .address
        .parse()
        .map_err(|e: lettre::address::AddressError| MailError(format!("{}: {e}", person.address)))?;
    Ok(Mailbox::new(person.name.clone(), address))
}

/// Builds the message and signs it; returns it with its Message-ID.
pub fn build(draft: &Draft<'_>, message_id: &str, signer: Option<&Signer>) -> Result<Outgoing, MailError> {
    let bad = |e: &dyn std::fmt::Display| MailError(e.to_string());
    let from: Mailbox = draft.from.parse().map_err(|e| bad(&e))?;
    let recipients: Vec<String> = draft
        .to
        .iter()
        .chain(draft.cc)
        .map(|p| p.address.clone())
        .chain(draft.bcc.iter().cloned())
        .collect();
    let envelope = lettre::address::Envelope::new(
        Some(from.email.clone()),
        recipients
            .iter()
            .map(|r| r.parse().map_err(|e| bad(&e)))
            .collect::<Result<_, _>>()?,
    )
    .map_err(|e| bad(&e))?;
    let mut builder = lettre::Message::builder()
        .from(from)
        .subject(draft.subject)
        .message_id(Some(message_id.to_string()))
        .envelope(envelope);
    for to in draft.to {
        builder = builder.to(mailbox(to)?);
    }
    for cc in draft.cc {
        builder = builder.cc(mailbox(cc)?);
    }
    // An id this service synthesized for mail that came without one was
    // never seen outside it: no header names it (the sent row still files
    // on its thread by it).
    let seen = |id: &&str| !super::inbound::is_synthesized(id);
    if let Some(id) = draft.in_reply_to.filter(seen) {
        builder = builder.in_reply_to(id.to_string());
    }
    let references: Vec<&str> = draft.references.iter().map(String::as_str).filter(seen).collect();
    if !references.is_empty() {
        builder = builder.references(references.join(" "));
    }
    // SMTP carries CRLF line ends; the DKIM body hash must be taken over the
    // same bytes the recipient gets, so bare LFs become CRLF before signing.
    let text = SinglePart::builder()
        .header(ContentType::TEXT_PLAIN)
        .body(crlf(draft.text));
    let body = draft.html.map(|html| {
        let html = SinglePart::builder().header(ContentType::TEXT_HTML).body(crlf(html));
        MultiPart::alternative().singlepart(text.clone()).singlepart(html)
    });
    let message = if draft.attachments.is_empty() {
        match body {
            Some(alternative) => builder.multipart(alternative).map_err(|e| bad(&e))?,
            None => builder.singlepart(text).map_err(|e| bad(&e))?,
        }
    } else {
        let mut parts = match body {
            Some(alternative) => MultiPart::mixed().multipart(alternative),
            None => MultiPart::mixed().singlepart(text),
        };
        for a in draft.attachments {
            let content_type = ContentType::parse(&a.content_type).map_err(|e| bad(&e))?;
            // Base64 always: a text attachment sent as-is would have its bare LFs
            // rewritten to CRLF on the wire, after the DKIM body hash was taken.
            let body = Body::new_with_encoding(a.bytes.clone(), ContentTransferEncoding::Base64)
                .map_err(|_| MailError("attachment encoding".into()))?;
            parts = parts.singlepart(MimeAttachment::new(a.filename.clone()).body(body, content_type));
        }
        builder.multipart(parts).map_err(|e| bad(&e))?
    };
    let raw = match signer {
        Some(signer) => signer.sign(message.formatted())?,
        None => message.formatted(),
    };
    Ok(Outgoing {
        envelope_from: draft.from.to_string(),
        recipients,
        raw,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_carries_threading_headers_parts_and_a_signature() {
        let key = crate::service::domains::dkim::generate().unwrap();
        let signer = Signer::from_pkcs8("mail", "example.com", &key.private_pem).unwrap();
        let to = vec![Person::bare("a@x.org"), Person::bare("b@y.org")];
        let refs = vec!["<r1@x.org>".to_string(), "<r2@x.org>".to_string()];
        let files = vec![Attachment {
            filename: "n.txt".into(),
            content_type: "text/plain".into(),
            bytes: b"notes".to_vec(),
        }];
        let draft = Draft {
            from: "me@example.com",
            to: &to,
            cc: &[],
            bcc: &[],
            subject: "Hello é",
            text: "Body text\nline two",
            html: None,
            in_reply_to: Some("<r2@x.org>"),
            references: &refs,
            attachments: &files,
        };
        let id = new_message_id("example.com");
        let out = build(&draft, &id, Some(&signer)).unwrap();
        let raw = String::from_utf8_lossy(&out.raw);
        assert!(raw.starts_with("DKIM-Signature: "), "{raw}");
        assert!(raw.contains("d=example.com") && raw.contains("s=mail"));
        assert!(raw.contains(&format!("Message-ID: {id}")));
        assert!(raw.contains("In-Reply-To: <r2@x.org>"));
        assert!(raw.contains("References: <r1@x.org> <r2@x.org>"));
        // A reply to mail that came with no Message-ID names none.
        let made = super::super::inbound::synthesized_id(b"no id");
        let refs = vec!["<r1@x.org>".to_string(), made.clone()];
        let draft = Draft {
            in_reply_to: Some(&made),
            references: &refs,
            ..draft
        };
        let raw = String::from_utf8_lossy(&build(&draft, &id, None).unwrap().raw).to_string();
        assert!(!raw.contains("In-Reply-To") && !raw.contains("synthesized"), "{raw}");
        assert!(raw.contains("References: <r1@x.org>\r\n"), "{raw}");
        assert!(raw.contains("multipart/mixed"));
        assert!(raw.contains("filename=\"n.txt\""));
        assert_eq!(out.recipients, ["a@x.org", "b@y.org"]);
        assert_eq!(out.envelope_from, "me@example.com");
    }

    #[test]
    fn names_cc_and_an_html_alternative_are_written_and_bcc_is_not() {
        let to = vec![Person {
            name: Some("Chen, Alice".into()),
            address: "alice@x.org".into(),
        }];
        let cc = vec![
            Person {
                name: Some("Zoë Ünal".into()),
                address: "zoe@y.org".into(),
            },
            Person::bare("carl@y.org"),
        ];
        let bcc = vec!["hidden@z.org".to_string()];
        let files = [Attachment {
            filename: "n.txt".into(),
            content_type: "text/plain".into(),
            bytes: b"notes".to_vec(),
        }];
        for attachments in [&[][..], &files[..]] {
            let draft = Draft {
                from: "me@example.com",
                to: &to,
                cc: &cc,
                bcc: &bcc,
                subject: "Hi",
                text: "plain words",
                html: Some("<p>rich <b>words</b></p>"),
                in_reply_to: None,
                references: &[],
                attachments,
            };
            let out = build(&draft, &new_message_id("example.com"), None).unwrap();
            assert_eq!(
                out.recipients,
                ["alice@x.org", "zoe@y.org", "carl@y.org", "hidden@z.org"]
            );
            let raw = String::from_utf8_lossy(&out.raw).to_string();
            assert!(!raw.to_lowercase().contains("hidden"), "{raw}");
            assert!(!raw.to_lowercase().contains("bcc"), "{raw}");
            let parsed = mail_parser::MessageParser::default().parse(&out.raw).unwrap();
            let to = parsed.to().unwrap().first().unwrap();
            assert_eq!((to.name(), to.address()), (Some("Chen, Alice"), Some("alice@x.org")));
            let cc: Vec<_> = parsed.cc().unwrap().iter().map(|a| (a.name(), a.address())).collect();
            assert_eq!(cc, [(Some("Zoë Ünal"), Some("zoe@y.org")), (None, Some("carl@y.org"))]);
            assert!(raw.contains("multipart/alternative"), "{raw}");
            assert_eq!(parsed.body_text(0).unwrap().trim(), "plain words");
            assert!(parsed.body_html(0).unwrap().contains("<b>words</b>"));
            assert_eq!(parsed.attachments().count(), attachments.len());
        }
    }

    #[test]
    fn a_submitted_message_loses_bcc_and_gains_an_id_and_a_date() {
        let raw =
            b"From: me@example.com\nBcc: hidden@x.org,\n  other@y.org\nTo: a@x.org\nDKIM-Signature: v=1; forged\n\
            Subject: Hi\n\nline one\nline two\r\n";
        let now = chrono::DateTime::parse_from_rfc3339("2026-11-24T10:00:00Z")
            .unwrap()
            .to_utc();
        let (out, id) = submitted(raw, "example.com", now).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(id.starts_with('<') && id.ends_with("@example.com>"), "{id}");
        assert_eq!(
            text,
            format!(
                "From: me@example.com\r\nTo: a@x.org\r\nSubject: Hi\r\nMessage-ID: {id}\r\n\
                 Date: Tue, 24 Nov 2026 10:00:00 +0000\r\n\r\nline one\r\nline two\r\n"
            )
        );
        // Its own Message-ID and Date are kept.
        let raw = b"From: me@example.com\r\nMessage-ID: <own@example.com>\r\nDate: Mon, 23 Nov 2026 10:00:00 +0000\r\n\r\nx\r\n";
        let (out, id) = submitted(raw, "example.com", now).unwrap();
        assert_eq!(id, "<own@example.com>");
        assert_eq!(out, raw);
    }
}
