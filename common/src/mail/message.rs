//! Customer messages: plain text with attachments as MIME parts, a fresh
//! Message-ID, threading headers, and a DKIM signature with the sending
//! domain's key.

use lettre::message::dkim::{
    DkimCanonicalization, DkimCanonicalizationType, DkimConfig, DkimSigningAlgorithm, DkimSigningKey,
};
use lettre::message::header::{ContentTransferEncoding, ContentType, HeaderName};
use lettre::message::{Attachment as MimeAttachment, Body, Mailbox, MultiPart, SinglePart};
use rsa::pkcs1::EncodeRsaPrivateKey;
use rsa::pkcs8::DecodePrivateKey;

use super::attachments::Attachment;
use super::{MailError, Outgoing};

pub struct Draft<'a> {
    pub from: &'a str,
    pub to: &'a [String],
    pub subject: &'a str,
    pub text: &'a str,
    pub in_reply_to: Option<&'a str>,
    pub references: &'a [String],
    pub attachments: &'a [Attachment],
}

/// The key a domain signs with: its DKIM selector, domain and private key.
pub struct Signer {
    pub selector: String,
    pub domain: String,
    /// PKCS#1 PEM, the form lettre's DKIM signer reads.
    pub pkcs1_pem: String,
}

impl Signer {
    /// From the PKCS#8 PEM the service keeps as the domain's secret.
    pub fn from_pkcs8(selector: &str, domain: &str, pkcs8_pem: &str) -> Result<Self, MailError> {
        let key = rsa::RsaPrivateKey::from_pkcs8_pem(pkcs8_pem).map_err(|e| MailError(format!("DKIM key: {e}")))?;
        let pem = key
            .to_pkcs1_pem(rsa::pkcs8::LineEnding::LF)
            .map_err(|e| MailError(format!("DKIM key: {e}")))?;
        Ok(Self {
            selector: selector.into(),
            domain: domain.into(),
            pkcs1_pem: pem.to_string(),
        })
    }
}

fn crlf(text: &str) -> String {
    text.replace("\r\n", "\n").replace('\r', "\n").replace('\n', "\r\n")
}

/// `<random@domain>`: unique, and naming the sending domain.
pub fn new_message_id(domain: &str) -> String {
    format!("<{}@{domain}>", hex::encode(rand::random::<[u8; 16]>()))
}

/// Builds the message and signs it; returns it with its Message-ID.
pub fn build(draft: &Draft<'_>, message_id: &str, signer: Option<&Signer>) -> Result<Outgoing, MailError> {
    let bad = |e: &dyn std::fmt::Display| MailError(e.to_string());
    let from: Mailbox = draft.from.parse().map_err(|e| bad(&e))?;
    let mut builder = lettre::Message::builder()
        .from(from)
        .subject(draft.subject)
        .message_id(Some(message_id.to_string()));
    for to in draft.to {
        builder = builder.to(to.parse().map_err(|e| bad(&e))?);
    }
    let mut signed_headers = vec!["From", "To", "Subject", "Date", "Message-ID"];
    if let Some(id) = draft.in_reply_to {
        builder = builder.in_reply_to(id.to_string());
        signed_headers.push("In-Reply-To");
    }
    if !draft.references.is_empty() {
        builder = builder.references(draft.references.join(" "));
        signed_headers.push("References");
    }
    // SMTP carries CRLF line ends; the DKIM body hash must be taken over the
    // same bytes the recipient gets, so bare LFs become CRLF before signing.
    let text = SinglePart::builder()
        .header(ContentType::TEXT_PLAIN)
        .body(crlf(draft.text));
    let mut message = if draft.attachments.is_empty() {
        builder.singlepart(text).map_err(|e| bad(&e))?
    } else {
        let mut parts = MultiPart::mixed().singlepart(text);
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
    if let Some(signer) = signer {
        let key = DkimSigningKey::new(&signer.pkcs1_pem, DkimSigningAlgorithm::Rsa).map_err(|e| bad(&e))?;
        let headers = signed_headers.into_iter().map(HeaderName::new_from_ascii_str).collect();
        let relaxed = DkimCanonicalization {
            header: DkimCanonicalizationType::Relaxed,
            body: DkimCanonicalizationType::Relaxed,
        };
        message.sign(&DkimConfig::new(
            signer.selector.clone(),
            signer.domain.clone(),
            key,
            headers,
            relaxed,
        ));
    }
    Ok(Outgoing {
        envelope_from: draft.from.to_string(),
        recipients: draft.to.to_vec(),
        raw: message.formatted(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_carries_threading_headers_parts_and_a_signature() {
        let key = crate::service::dkim::generate().unwrap();
        let signer = Signer::from_pkcs8("mail", "example.com", &key.private_pem).unwrap();
        let to = vec!["a@x.org".to_string(), "b@y.org".to_string()];
        let refs = vec!["<r1@x.org>".to_string(), "<r2@x.org>".to_string()];
        let files = vec![Attachment {
            filename: "n.txt".into(),
            content_type: "text/plain".into(),
            bytes: b"notes".to_vec(),
        }];
        let draft = Draft {
            from: "me@example.com",
            to: &to,
            subject: "Hello é",
            text: "Body text\nline two",
            in_reply_to: Some("<r2@x.org>"),
            references: &refs,
            attachments: &files,
        };
        let id = new_message_id("example.com");
        let out = build(&draft, &id, Some(&signer)).unwrap();
        let raw = String::from_utf8_lossy(&out.raw);
        assert!(raw.contains("\r\nDKIM-Signature: "), "{raw}");
        assert!(raw.contains("d=example.com") && raw.contains("s=mail"));
        assert!(raw.contains(&format!("Message-ID: {id}")));
        assert!(raw.contains("In-Reply-To: <r2@x.org>"));
        assert!(raw.contains("References: <r1@x.org> <r2@x.org>"));
        assert!(raw.contains("multipart/mixed"));
        assert!(raw.contains("filename=\"n.txt\""));
        assert_eq!(out.recipients, to);
        assert_eq!(out.envelope_from, "me@example.com");
    }
}
