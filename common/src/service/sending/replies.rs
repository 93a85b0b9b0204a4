//! A sent reply filed on its stored conversation, as an outbound row with
//! its attachments: sendMail's reply at once, an SMTP submission, and a
//! held or scheduled send when it goes out.

use std::collections::BTreeMap;

use crate::auth::Caller;
use crate::clock::iso;
use crate::context::Context;
use crate::keys;
use crate::mail::people;
use crate::values::message_id;

use crate::service::mail_store::{self, Direction, Named, NewMessage};

/// What went out, as a thread files it.
pub(crate) struct Sent<'a> {
    /// Its delivery id: the filed row shows its recipients' status.
    pub delivery: &'a str,
    pub from: &'a str,
    pub message_id: &'a str,
    pub to: &'a [String],
    pub cc: &'a [String],
    /// Kept on the sender's own row alone.
    pub bcc: &'a [String],
    /// The recipients' display names, by address.
    pub names: BTreeMap<String, String>,
    pub subject: &'a str,
    pub text: &'a str,
    pub html: Option<&'a str>,
    pub in_reply_to: &'a [String],
    pub references: &'a [String],
    /// (filename, content type, bytes)
    pub attachments: Vec<(&'a str, &'a str, &'a [u8])>,
}

/// What went out, as its own bytes say it: a submission over SMTP, a send
/// that waited for its time or its approval.
pub(crate) struct SentBytes<'a> {
    pub delivery: &'a str,
    pub from: &'a str,
    pub message_id: &'a str,
    /// The envelope's recipients: those its To and Cc do not name were Bcc.
    pub to: &'a [String],
    pub parsed: &'a mail_parser::Message<'a>,
}

/// [`file_on_thread`] for a message known by its bytes: its To, Cc (each
/// envelope recipient neither names was Bcc), In-Reply-To, References,
/// text, HTML and attachments are read from them.
pub(crate) async fn file_bytes_on_thread(
    ctx: &Context,
    scope: &str,
    mailbox: &str,
    sent: &SentBytes<'_>,
) -> (Option<String>, usize) {
    use mail_parser::MimeHeaders;
    let parsed = sent.parsed;
    let ids = |value| -> Vec<String> {
        crate::mail::inbound::message_ids(value)
            .iter()
            .filter_map(|id| message_id(id))
            .collect()
    };
    let in_reply_to = ids(parsed.in_reply_to());
    let references = ids(parsed.references());
    let max = sent.to.len().max(crate::values::MAX_RECIPIENTS);
    let (to, cc) = (people::people(parsed.to(), max), people::people(parsed.cc(), max));
    let named = |list: &[people::Person]| -> Vec<String> {
        list.iter()
            .map(|p| p.address.clone())
            .filter(|a| sent.to.contains(a))
            .collect()
    };
    let (to_addresses, cc_addresses) = (named(&to), named(&cc));
    let bcc: Vec<String> = sent
        .to
        .iter()
        .filter(|a| !to_addresses.contains(a) && !cc_addresses.contains(a))
        .cloned()
        .collect();
    let text = crate::mail::html::body_text(parsed).unwrap_or_default();
    let has_html = parsed.html_body.iter().any(|id| {
        parsed
            .part(*id)
            .is_some_and(|p| matches!(p.body, mail_parser::PartType::Html(_)))
    });
    let html = parsed.body_html(0).filter(|_| has_html);
    let attachments = parsed
        .attachments()
        .map(|part| {
            let content_type = part
                .content_type()
                .map(|ct| format!("{}/{}", ct.ctype(), ct.subtype().unwrap_or("octet-stream")))
                .unwrap_or_else(|| "application/octet-stream".into());
            (
                part.attachment_name().unwrap_or("attachment").to_string(),
                content_type,
                part.contents(),
            )
        })
        .collect::<Vec<_>>();
    let filed = Sent {
        delivery: sent.delivery,
        from: sent.from,
        message_id: sent.message_id,
        to: &to_addresses,
        cc: &cc_addresses,
        bcc: &bcc,
        names: people::names(to.iter().chain(&cc)),
        subject: parsed.subject().unwrap_or_default(),
        text: &text,
        html: html.as_deref(),
        in_reply_to: &in_reply_to,
        references: &references,
        attachments: attachments
            .iter()
            .map(|(name, content_type, bytes)| (name.as_str(), content_type.as_str(), *bytes))
            .collect(),
    };
    file_on_thread(ctx, scope, mailbox, &filed).await
}

/// Where a caller's sent reply is filed: (reading scope, mailbox). The agent
/// key and operators read a service-domain mailbox; a customer its account.
pub(crate) fn reply_scope(ctx: &Context, caller: &Caller, from: &str) -> (String, String) {
    let service_inbox = || format!("inbox@{}", ctx.config.service_domain);
    match caller {
        Caller::Standard(key) => (keys::inbox_account_scope(&key.uid), from.to_string()),
        Caller::Identity(user) if user.operator && !from.starts_with("noreply@") => {
            (keys::inbox_mailbox_scope(from), from.to_string())
        }
        _ => (keys::inbox_mailbox_scope(&service_inbox()), service_inbox()),
    }
}

/// A reply to a stored conversation is filed on its thread as an outbound row,
/// with its attachments kept; any other send is not filed. The mail is out by
/// now: a reply that cannot be filed is logged, and the send still succeeds.
pub(crate) async fn file_on_thread(
    ctx: &Context,
    scope: &str,
    mailbox: &str,
    sent: &Sent<'_>,
) -> (Option<String>, usize) {
    if sent.references.is_empty() && sent.in_reply_to.is_empty() {
        return (None, 0);
    }
    let new = NewMessage {
        scope,
        mailbox,
        direction: Direction::Outbound,
        message_id: sent.message_id,
        from: sent.from,
        to: sent.to,
        named: Named {
            from_name: None,
            cc: sent.cc,
            bcc: sent.bcc,
            reply_to: &[],
            names: sent.names.clone(),
        },
        subject: sent.subject,
        date: Some(iso(ctx.clock.now())),
        in_reply_to: sent.in_reply_to,
        references: sent.references,
        text: sent.text,
        html: sent.html,
        attachments: sent.attachments.clone(),
        content_ids: Vec::new(),
        source: "send",
        only_on_existing_thread: true,
        digest: None,
        delivery: Some(sent.delivery),
        authentication: None,
        spam: None,
        raw: None,
        quarantine: None,
        also: Vec::new(),
    };
    match mail_store::file(ctx, &new).await {
        Ok(Some(row)) => (Some(row.thread_id), row.attachments.len()),
        Ok(None) => (None, 0),
        Err(e) => {
            tracing::error!(error = %e, message_id = %sent.message_id, "a sent reply could not be filed on its thread");
            (None, 0)
        }
    }
}
