//! A waiting send's record and its items, and accepting one (202): the
//! hold's code mailed, a scheduled send charged and queued.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::clock::iso;
use crate::context::Context;
use crate::error::{self, ApiError};
use crate::keys;
use crate::service::accounts::payer::{self, Payer};
use crate::service::caller::Call;
use crate::service::delivery::dispatch::{self, Outbound};
use crate::service::guardrails::audit::Actor;
use crate::service::system_mail::{self, Relay};
use crate::store::{Cond, StoreError, TTL, Write, item};

/// How long a hold waits for its owner.
pub const HOLD_HOURS: i64 = 24;
/// Wrong codes one hold takes before it refuses every code.
pub const HOLD_CODE_ATTEMPTS: i64 = 5;
/// The furthest ahead a send may be scheduled.
pub const MAX_SCHEDULE_DAYS: i64 = 30;
/// How long a decided or sent record is kept.
pub(super) const KEPT_DAYS: i64 = 30;
/// How long a scheduled send may wait past its time while sending is paused
/// (or the agent key frozen) before it expires unsent, its credit back.
pub const LATE_HOURS: i64 = 24;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// Waits for the owner's approval.
    Held,
    /// Waits for its time.
    Scheduled,
}

crate::store::stored_as_json!(Kind);

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PendingStatus {
    Waiting,
    /// Taken by an approver or the runner, going out now.
    Sending,
    Sent,
    Cancelled,
    Denied,
    Expired,
    /// Refused when it was due (a recipient suppressed since, the relay).
    Failed,
}

crate::store::stored_as_json!(PendingStatus);

/// A waiting send as it is stored: what GET /holds shows ([`Hold`]) and
/// what only the service reads (whose it is, who pays, the code's digest).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Pending {
    #[serde(flatten)]
    pub hold: Hold,
    #[serde(default)]
    pub uid: String,
    #[serde(default)]
    pub owner: String,
    pub payer: Payer,
    /// Charged when accepted (scheduled), so a refusal refunds it.
    #[serde(default)]
    pub charged: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code_digest: Option<String>,
    #[serde(default)]
    pub attempts: i64,
    #[serde(default)]
    pub list_key: String,
    /// Where it is filed once it goes out, when it answers a stored
    /// conversation: as sendMail files a reply that goes at once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filed_in: Option<FiledIn>,
}

/// A reading scope and one of its mailboxes ([`crate::service::sending::replies::reply_scope`]).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FiledIn {
    pub scope: String,
    pub mailbox: String,
}

/// A waiting send, as GET /holds, GET /outbox/waiting, the decisions and a
/// cancel show it.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Hold {
    /// `snd_` and 16 hex digits: the holdId.
    pub id: String,
    pub kind: Kind,
    pub status: PendingStatus,
    pub message_id: String,
    pub from: String,
    pub to: Vec<String>,
    pub subject: String,
    /// The text's first 200 characters.
    pub preview: String,
    /// The key or person who asked for it.
    pub requested_by: Actor,
    pub created_at: String,
    /// When it goes out (scheduled).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub due_at: Option<String>,
    /// When a hold lapses unanswered, or a scheduled send that sending being
    /// paused kept from going expires unsent (24 hours past its dueAt).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<String>,
    /// The delivery once it went out (GET /outbox shows it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivery: Option<String>,
    /// Why it did not go out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl Hold {
    /// The send as it stands at `now`: one still waiting past its expiry has
    /// lapsed, though nothing has touched it since to write so (it is
    /// written when next decided, or by the scheduled-sends job).
    pub fn as_of(mut self, now: chrono::DateTime<chrono::Utc>) -> Hold {
        let lapsed = self
            .expires_at
            .as_deref()
            .and_then(|at| chrono::DateTime::parse_from_rfc3339(at).ok())
            .is_some_and(|at| at < now);
        if self.status == PendingStatus::Waiting && lapsed {
            self.status = PendingStatus::Expired;
        }
        self
    }
}

/// What a send asks to wait for.
pub struct Wait {
    pub kind: Kind,
    pub due_at: Option<chrono::DateTime<chrono::Utc>>,
}

/// Whether the caller's send must wait, and for what: a hold when the
/// scoped key's approval rule says so (always; first_contact and a
/// recipient this sender never mailed), else its time when it has one.
pub async fn wait_for(
    call: &Call<'_>,
    owner: &str,
    recipients: &[String],
    due_at: Option<chrono::DateTime<chrono::Utc>>,
) -> Result<Option<Wait>, ApiError> {
    use crate::auth::Approval;
    let held = match call.caller.scope().map(|s| s.approval) {
        Some(Approval::Always) => true,
        Some(Approval::FirstContact) => {
            !crate::service::delivery::contacts::all_known(call.ctx, owner, recipients).await?
        }
        _ => false,
    };
    Ok(match (held, due_at) {
        (true, due_at) => Some(Wait {
            kind: Kind::Held,
            due_at,
        }),
        (false, Some(at)) => Some(Wait {
            kind: Kind::Scheduled,
            due_at: Some(at),
        }),
        (false, None) => None,
    })
}

/// A send accepted to wait: what sendMail answers with 202.
pub struct Accepted {
    pub id: String,
    pub due_at: Option<String>,
    pub credits_remaining: Option<i64>,
}

/// Keeps the signed message and its record, charges a scheduled send, and
/// mails a hold's approval request to the account's contact email. The
/// caller has checked the recipients ([`check_recipients`]); they are checked
/// again when the send goes.
///
/// [`check_recipients`]: crate::service::delivery::dispatch::check_recipients
pub async fn accept(
    call: &Call<'_>,
    wait: Wait,
    payer: Payer,
    out: &Outbound<'_>,
    text: &str,
) -> Result<Accepted, ApiError> {
    let ctx = call.ctx;
    let account = call.account().await.ok();
    let now = ctx.clock.now();
    let code = (wait.kind == Kind::Held).then(|| format!("{:08}", rand::random_range(0..100_000_000u32)));
    let uid = account
        .as_ref()
        .map_or(crate::values::OPS_UID.into(), |a| a.uid.clone());
    let mut pending = record(call, &wait, payer, out, text, uid, code.as_deref());
    let id = pending.hold.id.clone();
    ctx.blobs
        .put(&blob(&id), out.raw.to_vec(), "message/rfc822")
        .await
        .map_err(ApiError::internal)?;
    // Simulator mail waits free, as it goes free: its answer says the balance.
    let credits_remaining = match wait.kind {
        Kind::Scheduled if dispatch::costs_credit(ctx, out.recipients) => {
            pending.charged = true;
            payer::charge(ctx, &pending.payer).await?
        }
        Kind::Scheduled => payer::balance(ctx, &pending.payer).await?,
        Kind::Held => None,
    };
    if let Err(e) = ctx.store.transact(accept_writes(&pending, now.timestamp())).await {
        if pending.charged {
            refund(ctx, &pending).await;
        }
        let _ = ctx.blobs.delete(&blob(&id)).await;
        // The record's id is fresh: a failed condition is the asking key,
        // revoked since it was read.
        return Err(match e {
            StoreError::ConditionFailed => error::INVALID_KEY.into(),
            e => e.into(),
        });
    }
    // The audit row names the send, to find it in GET /outbox/waiting and
    // cancel it by its Message-ID.
    call.touched(json!({ "messageId": pending.hold.message_id, "id": id, "kind": wait.kind }));
    if let (Some(code), Some(account)) = (&code, &account)
        && let Err(e) = mail_approval(call, &account.email, &pending, code, text).await
    {
        tracing::error!(error = %e, hold = %id, "the approval request was not mailed");
    }
    Ok(Accepted {
        id,
        due_at: pending.hold.due_at,
        credits_remaining,
    })
}

/// A new waiting send's record; a hold keeps only its code's digest.
pub(super) fn record(
    call: &Call<'_>,
    wait: &Wait,
    payer: Payer,
    out: &Outbound<'_>,
    text: &str,
    uid: String,
    code: Option<&str>,
) -> Pending {
    let now = call.ctx.clock.now();
    let id = crate::values::HoldId::mint().into_string();
    let (scope, mailbox) = crate::service::sending::replies::reply_scope(call.ctx, call.caller, out.from);
    Pending {
        list_key: format!("{:013}-{id}", now.timestamp_millis()),
        hold: Hold {
            id,
            kind: wait.kind,
            status: PendingStatus::Waiting,
            message_id: out.message_id.into(),
            from: out.from.into(),
            to: out.recipients.to_vec(),
            subject: out.subject.into(),
            preview: text.chars().take(200).collect(),
            requested_by: Actor::of(call.caller),
            created_at: iso(now),
            due_at: wait.due_at.map(iso),
            expires_at: match wait.kind {
                Kind::Held => Some(iso(now + chrono::Duration::hours(HOLD_HOURS))),
                Kind::Scheduled => wait.due_at.map(late_after),
            },
            delivery: None,
            error: None,
        },
        uid,
        owner: out.owner.clone(),
        payer,
        charged: false,
        code_digest: code.map(|c| call.ctx.hasher.digest("hold", c)),
        attempts: 0,
        filed_in: Some(FiledIn { scope, mailbox }),
    }
}

/// When a scheduled send due at `due` expires unsent.
pub(super) fn late_after(due: chrono::DateTime<chrono::Utc>) -> String {
    iso(due + chrono::Duration::hours(LATE_HOURS))
}

impl Pending {
    /// When it expires unsent: a hold unanswered at its expiresAt; a
    /// scheduled send that could not go [`LATE_HOURS`] past its dueAt
    /// (computed, for one a hold became or one stored before it was written).
    pub(super) fn lapses_at(&self) -> Option<String> {
        match self.hold.kind {
            Kind::Held => self.hold.expires_at.clone(),
            Kind::Scheduled => self
                .hold
                .due_at
                .as_deref()
                .and_then(|at| chrono::DateTime::parse_from_rfc3339(at).ok())
                .map(|at| late_after(at.with_timezone(&chrono::Utc))),
        }
    }
}

/// The record, its Message-ID, its row among the account's waiting sends,
/// and its hold row or its place in the queue; while a scoped key asks, on
/// condition that the key is still there, so a send accepted as its key is
/// revoked is refused, not missed by the revocation.
pub(super) fn accept_writes(p: &Pending, now: i64) -> Vec<Write> {
    let ttl = now + KEPT_DAYS * 86_400 + MAX_SCHEDULE_DAYS * 86_400;
    let mut record = item(&keys::pending(&p.hold.id), p);
    record.insert(TTL.into(), json!(ttl));
    let mut writes = vec![
        Write::Put {
            item: record,
            cond: Some(Cond::NotExists),
        },
        Write::Put {
            item: item(
                &keys::pending_message_id(&p.owner, &p.hold.message_id),
                &json!({ "id": p.hold.id, TTL: ttl }),
            ),
            cond: None,
        },
        Write::Put {
            item: item(
                &waiting_key(p),
                &json!({ "id": p.hold.id, "keyId": asking_key_id(p), TTL: ttl }),
            ),
            cond: None,
        },
    ];
    if let Some(key) = asking_key(p) {
        writes.push(Write::Check {
            key,
            cond: Cond::Exists,
        });
    }
    match p.hold.kind {
        Kind::Held => writes.push(Write::Put {
            item: item(
                &crate::store::Key::new(keys::holds(&p.uid), &p.list_key),
                &json!({ "id": p.hold.id, TTL: ttl }),
            ),
            cond: None,
        }),
        Kind::Scheduled => writes.push(due_write(p)),
    }
    writes
}

/// The send's place in the runner's queue.
pub(super) fn due_write(p: &Pending) -> Write {
    Write::Put {
        item: item(&due_key(p), &json!({ "id": p.hold.id })),
        cond: None,
    }
}

pub(super) fn due_key(p: &Pending) -> crate::store::Key {
    crate::store::Key::new(
        keys::DUE,
        format!("{}#{}", p.hold.due_at.as_deref().unwrap_or_default(), p.hold.id),
    )
}

pub(super) fn blob(id: &str) -> String {
    format!("pending/{id}.eml")
}

/// Its row among the account's waiting sends.
pub(super) fn waiting_key(p: &Pending) -> crate::store::Key {
    crate::store::Key::new(keys::waiting_sends(&p.uid), &p.list_key)
}

/// The scoped key that asked for the send, whose revocation cancels it.
pub(super) fn asking_key_id(p: &Pending) -> Option<&str> {
    match p.hold.requested_by.kind.as_str() {
        "scoped_key" => p.hold.requested_by.key_id.as_deref(),
        _ => None,
    }
}

/// The scoped key's listing row: there until the key is revoked.
pub(super) fn asking_key(p: &Pending) -> Option<crate::store::Key> {
    asking_key_id(p).map(|id| keys::scoped_key(&p.uid, id))
}

/// The approval request: what, to whom, by which key, the text, the code.
pub(super) async fn mail_approval(
    call: &Call<'_>,
    to: &str,
    p: &Pending,
    code: &str,
    text: &str,
) -> anyhow::Result<()> {
    let by = match (&p.hold.requested_by.name, &p.hold.requested_by.key_id) {
        (Some(name), Some(id)) => format!("the key \"{name}\" ({id})"),
        (None, Some(id)) => format!("the key {id}"),
        _ => p.hold.requested_by.email.clone().unwrap_or_else(|| "a caller".into()),
    };
    let body = format!(
        "{by} asked to send this mail. It waits for your approval until {expires}.\r\n\r\n\
         Sender: {from_addr}\r\nRecipients: {to_list}\r\nSubject: {subject}\r\n\r\n{text}\r\n\r\n\
         ----\r\nHold: {id}\r\nApproval code: {code}\r\n\r\n\
         Approve: POST /api/holds/approve {{\"holdId\": \"{id}\", \"code\": \"{code}\"}}\r\n\
         Deny:    POST /api/holds/deny {{\"holdId\": \"{id}\", \"code\": \"{code}\"}}\r\n\
         (on the service's API, {docs}), or with your account key and no code.\r\n\r\n\
         {page}The agent never sees this code: only you can approve.\r\n",
        expires = p.hold.expires_at.as_deref().unwrap_or_default(),
        from_addr = p.hold.from,
        to_list = p.hold.to.join(", "),
        subject = p.hold.subject,
        id = p.hold.id,
        docs = call.docs_url(),
        page = call
            .public_link("/#/guardrails")
            .map(|link| format!("Or signed in to the web app: {link}\r\n\r\n"))
            .unwrap_or_default(),
    );
    let subject = format!("Approve a send: {}", p.hold.subject);
    system_mail::send(call.ctx, Relay::CustomerFirst, to, &subject, &body).await
}

pub(super) async fn refund(ctx: &Context, p: &Pending) {
    if let Err(e) = crate::service::accounts::payer::refund(ctx, &p.payer).await {
        tracing::error!(error = %e, send = %p.hold.id, "a credit was not refunded");
    }
}
