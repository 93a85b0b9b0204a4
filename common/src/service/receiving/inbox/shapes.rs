//! What the inbox answers with: list rows, a read, threads.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::error::ApiError;
use crate::mail::authenticate::{Authentication, Summary as AuthSummary};
use crate::mail::spam::{SpamAction, SpamVerdict};
use crate::service::delivery::boundary::Envelope;
use crate::service::mail_store::Quarantined;
use crate::service::mail_store::{AttachmentInfo, Direction, Folder, Row, Thread};

// ------------------------------------------------------------------ shapes

/// A list row (spec 2.4): no body, attachment metadata only.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    /// `^[A-Za-z0-9_-]{1,128}$`
    pub id: String,
    pub message_id: String,
    pub mailbox: String,
    pub from: String,
    pub to: Vec<String>,
    pub subject: String,
    pub preview: String,
    pub date: Option<String>,
    pub ingested_at: Option<String>,
    pub unread: bool,
    /// A row keeps no folder until it is filed elsewhere: inbox.
    #[serde(default)]
    pub folder: Folder,
    pub source: String,
    /// inbound, or outbound for a threaded send.
    #[serde(rename = "box")]
    pub direction: Direction,
    /// 64 lowercase hex characters.
    pub thread_id: String,
    pub attachments: Vec<AttachmentInfo>,
    /// True when a different message was filed earlier under the same
    /// Message-ID (a read by messageId gives that first one); omitted
    /// otherwise.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub message_id_conflict: bool,
    /// Received mail: the verdicts this service computed when it filed the
    /// message (never a header the message came with). A list row carries
    /// `summary` and `spoofed`; a read of one message carries every check.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authentication: Option<Authentication>,
    /// Received mail the mail host's rspamd scanned: its verdict on the
    /// content (never a header the message came with). A list row carries
    /// `score` and `action`; a read of one message the rules that fired too.
    /// Absent when nothing judged the content (no mail host, a send).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spam: Option<SpamVerdict>,
    /// Present on quarantined mail: why it is kept out of the inbox, and since
    /// when (it is kept 30 days).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quarantine: Option<Quarantined>,
    /// Mail the service sent the account's owner (an access code, an approval
    /// request): read by the account key and people signed in, never by a
    /// scoped key; omitted otherwise.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub owner_only: bool,
    /// A sent row's delivery: the overall status (the one that needs
    /// attention first) and each recipient's, as GET /outbox has them; omitted
    /// on received mail.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivery: Option<crate::service::delivery::sent::DeliveryBrief>,
    /// The display name written beside `from` (RFC 2047 decoded,
    /// bidirectional controls removed); omitted when none was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from_name: Option<String>,
    /// Its Cc addresses; omitted when none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cc: Vec<String>,
    /// Your own send's Bcc recipients: kept on your sent row alone, never in
    /// a header of any copy; omitted when none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub bcc: Vec<String>,
    /// Where its sender asks replies to go (Reply-To); omitted when it does
    /// not say.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reply_to: Vec<String>,
    /// The display names of its To, Cc and Reply-To addresses, by address;
    /// omitted when none.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub names: BTreeMap<String, String>,
}

/// Each row's summary, with its delivery status when it is a send (two
/// batch reads for the page, none when it holds no send).
pub(crate) async fn summaries(ctx: &crate::context::Context, rows: &[Row]) -> Result<Vec<Summary>, ApiError> {
    let mut out: Vec<Summary> = rows.iter().map(Summary::from).collect();
    let sends: Vec<(usize, &str)> = rows
        .iter()
        .enumerate()
        .filter_map(|(i, r)| r.delivery.as_deref().map(|d| (i, d)))
        .collect();
    if sends.is_empty() {
        return Ok(out);
    }
    let ids: Vec<&str> = sends.iter().map(|(_, d)| *d).collect();
    let briefs = crate::service::delivery::briefs(ctx, &ids).await?;
    for ((i, _), brief) in sends.into_iter().zip(briefs) {
        out[i].delivery = brief;
    }
    Ok(out)
}

impl From<&Row> for Summary {
    fn from(r: &Row) -> Summary {
        Summary {
            id: r.id.clone(),
            message_id: r.message_id.clone(),
            mailbox: r.mailbox.clone(),
            from: r.from.clone(),
            to: r.to.clone(),
            subject: r.subject.clone(),
            preview: r.preview.clone(),
            date: r.date.clone(),
            ingested_at: Some(r.ingested_at.clone()),
            unread: r.unread,
            folder: r.folder(),
            source: r.source.clone(),
            direction: r.direction,
            thread_id: r.thread_id.clone(),
            attachments: r.attachments.clone(),
            message_id_conflict: r.message_id_conflict,
            delivery: None,
            authentication: r.authentication.as_ref().map(Authentication::compact),
            spam: r.spam.as_ref().map(SpamVerdict::compact),
            quarantine: r.quarantine.clone(),
            owner_only: r.owner_only,
            from_name: r.from_name.clone(),
            cc: r.cc.clone(),
            bcc: r.bcc.clone(),
            reply_to: r.reply_to.clone(),
            names: r.names.clone(),
        }
    }
}

/// A [`Summary`] as a list page reads it from a stored [`Row`]'s text: each
/// value is the row's own JSON, copied to the answer as it is (the store wrote
/// it with the same encoder), and the row's other fields are skipped. The
/// fields and their order are the `Summary`'s, so both encode alike; a test
/// holds them together.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct StoredSummary<'a> {
    #[serde(borrow)]
    id: &'a RawValue,
    #[serde(borrow)]
    message_id: &'a RawValue,
    #[serde(borrow)]
    mailbox: &'a RawValue,
    #[serde(borrow)]
    from: &'a RawValue,
    #[serde(borrow)]
    to: &'a RawValue,
    #[serde(borrow)]
    subject: &'a RawValue,
    #[serde(borrow)]
    preview: &'a RawValue,
    /// The store drops empty values: a row without a date has none.
    #[serde(borrow, default)]
    date: Option<&'a RawValue>,
    #[serde(borrow, default)]
    ingested_at: Option<&'a RawValue>,
    pub(super) unread: bool,
    #[serde(default)]
    folder: Folder,
    #[serde(borrow)]
    source: &'a RawValue,
    #[serde(rename = "box")]
    direction: Direction,
    #[serde(borrow)]
    thread_id: &'a RawValue,
    #[serde(borrow)]
    attachments: &'a RawValue,
    #[serde(default)]
    message_id_conflict: bool,
    /// The stored verdicts, read for `summary` and `spoofed` alone.
    #[serde(default)]
    authentication: Option<CompactAuthentication>,
    /// The stored verdict, read for `score` and `action` alone.
    #[serde(default)]
    spam: Option<CompactSpam>,
    #[serde(borrow, default)]
    quarantine: Option<&'a RawValue>,
    #[serde(default)]
    owner_only: bool,
    #[serde(borrow, default)]
    from_name: Option<&'a RawValue>,
    #[serde(borrow, default)]
    cc: Option<&'a RawValue>,
    #[serde(borrow, default)]
    bcc: Option<&'a RawValue>,
    #[serde(borrow, default)]
    reply_to: Option<&'a RawValue>,
    #[serde(borrow, default)]
    names: Option<&'a RawValue>,
}

/// [`Authentication::compact`] as a list page reads it from the stored row.
#[derive(Deserialize)]
struct CompactAuthentication {
    summary: AuthSummary,
    spoofed: bool,
}

/// [`SpamVerdict::compact`] as a list page reads it from the stored row.
#[derive(Deserialize)]
struct CompactSpam {
    score: f64,
    action: SpamAction,
}

impl StoredSummary<'_> {
    /// The summary's JSON, written member by member: serde's struct encoder
    /// took a third of a first read's instructions to copy these few values
    /// (benches/instructions.sh). Keys and order are `Summary`'s.
    pub(super) fn encode(&self) -> Box<RawValue> {
        let mut out = Members(String::with_capacity(640));
        out.raw("id", self.id.get());
        out.raw("messageId", self.message_id.get());
        out.raw("mailbox", self.mailbox.get());
        out.raw("from", self.from.get());
        out.raw("to", self.to.get());
        out.raw("subject", self.subject.get());
        out.raw("preview", self.preview.get());
        out.raw("date", self.date.map_or("null", RawValue::get));
        out.raw("ingestedAt", self.ingested_at.map_or("null", RawValue::get));
        out.raw("unread", if self.unread { "true" } else { "false" });
        out.name("folder", self.folder.as_str());
        out.raw("source", self.source.get());
        out.name("box", self.direction.as_str());
        out.raw("threadId", self.thread_id.get());
        out.raw("attachments", self.attachments.get());
        if self.message_id_conflict {
            out.raw("messageIdConflict", "true");
        }
        if let Some(auth) = &self.authentication {
            let value = out.key("authentication");
            value.push_str("{\"summary\":\"");
            value.push_str(auth.summary.as_str());
            value.push_str(if auth.spoofed {
                "\",\"spoofed\":true}"
            } else {
                "\",\"spoofed\":false}"
            });
        }
        if let Some(spam) = &self.spam {
            let value = out.key("spam");
            value.push_str("{\"score\":");
            // serde_json's own number text, as the row's encoder writes it.
            value.push_str(&serde_json::Number::from_f64(spam.score).map_or("0".into(), |n| n.to_string()));
            value.push_str(",\"action\":\"");
            value.push_str(spam.action.as_str());
            value.push_str("\"}");
        }
        if let Some(quarantine) = self.quarantine {
            out.raw("quarantine", quarantine.get());
        }
        if self.owner_only {
            out.raw("ownerOnly", "true");
        }
        // The store keeps no empty value: each of these is there only when
        // it says something, as the summary leaves it out otherwise.
        let named = [
            ("fromName", self.from_name),
            ("cc", self.cc),
            ("bcc", self.bcc),
            ("replyTo", self.reply_to),
            ("names", self.names),
        ];
        for (key, value) in named {
            if let Some(value) = value {
                out.raw(key, value.get());
            }
        }
        out.finish()
    }
}

/// A JSON object's members, written one after another: each key is one of
/// ours (no character to escape) and each value already JSON.
struct Members(String);

impl Members {
    /// Starts a member: the separator and the key; its value goes next.
    fn key(&mut self, key: &str) -> &mut String {
        self.0.push(if self.0.is_empty() { '{' } else { ',' });
        self.0.push('"');
        self.0.push_str(key);
        self.0.push_str("\":");
        &mut self.0
    }

    fn raw(&mut self, key: &str, json: &str) {
        self.key(key).push_str(json);
    }

    /// A string value that is one of our own names (no character to escape).
    fn name(&mut self, key: &str, name: &str) {
        let value = self.key(key);
        value.push('"');
        value.push_str(name);
        value.push('"');
    }

    fn finish(mut self) -> Box<RawValue> {
        self.0.push('}');
        // SAFETY: one object, no whitespace around it: `{`, then members
        // whose keys are our own names and whose values are JSON values
        // serde_json already read (or `true`, `false`, `null`, a name in
        // quotes), then `}`. Debug builds (every test) parse it again to
        // check; checking in release too would cost as much as the copy.
        unsafe { RawValue::from_string_unchecked(self.0) }
    }
}

/// A page of rows, newest first.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InboxList {
    pub ok: bool,
    /// Each a [`Summary`], encoded when the page was read.
    #[schemars(with = "Vec<Summary>")]
    pub messages: Vec<Box<RawValue>>,
    /// Unread rows in this page only.
    pub unread_in_page: usize,
    /// Present when older rows exist: pass it back as `cursor`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
    /// The MCP tools (list_inbox, search_inbox): each row's subject, preview
    /// and attachment names wrapped in this response's random delimiter (see
    /// notice). REST lists carry none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub envelope: Option<Envelope>,
}

impl InboxList {
    pub(super) fn of(rows: &[Row], next_cursor: Option<String>) -> Result<InboxList, ApiError> {
        let summaries: Vec<Summary> = rows.iter().map(Summary::from).collect();
        Self::of_summaries(&summaries, next_cursor)
    }

    pub(super) fn of_summaries(summaries: &[Summary], next_cursor: Option<String>) -> Result<InboxList, ApiError> {
        let messages = summaries
            .iter()
            .map(|summary| serde_json::value::to_raw_value(summary).map_err(ApiError::internal))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(InboxList {
            ok: true,
            messages,
            unread_in_page: summaries.iter().filter(|s| s.unread).count(),
            next_cursor,
            envelope: None,
        })
    }
}

/// One message with its body.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MessageView {
    #[serde(flatten)]
    pub summary: Summary,
    pub text: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub html: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct MessageRead {
    pub ok: bool,
    pub message: MessageView,
    /// Set by get_message: whether the text (and html) was cut at maxChars.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub truncated: Option<bool>,
    /// get_message, and GET /inbox with envelope=true: the stranger-written
    /// values are wrapped in this response's random delimiter (see notice),
    /// the provenance kept outside.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub envelope: Option<Envelope>,
}

/// A folder's threads, newest activity first.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadList {
    pub ok: bool,
    pub threads: Vec<Thread>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
    /// The MCP tool list_threads: each subject wrapped in this response's
    /// random delimiter (see notice). REST lists carry none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub envelope: Option<Envelope>,
}

/// A thread's summary and its messages, oldest first.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadView {
    pub ok: bool,
    pub thread: Thread,
    pub messages: Vec<Summary>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
    /// get_thread, and GET /inbox?thread= with envelope=true: subjects,
    /// previews and attachment names wrapped in this response's random
    /// delimiter (see notice).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub envelope: Option<Envelope>,
}

/// GET /inbox answers with one of these, by the precedence of spec 4.2.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum InboxOutput {
    Message(Box<MessageRead>),
    Thread(Box<ThreadView>),
    List(InboxList),
    Threads(ThreadList),
}
