//! Webhooks (spec 2.6, 3.6, 4.7, 6): one registration per key (the agent
//! key's, and each standard key's account's), the signed `inbound.received`
//! event for each newly stored message, and beyond the spec a delivery log
//! and replay.
//!
//! Items: `WEBHOOK#<owner>/W` the registration (url, secret, enabled);
//! `WHEVENT#<owner>/<event>` each event's body, kept for replay;
//! `WHLOG#<owner>/<ms>-<event>-<attempt>` each attempt. Events and attempts
//! expire after `RETENTION_DAYS`. The owner is `agent` for the agent key (and
//! the service-domain mailboxes it reads), else the account's uid.

use std::time::Duration;

use futures::StreamExt;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::auth::Caller;
use crate::clock::iso;
use crate::context::Context;
use crate::error::{self, ApiError};
use crate::keys;
use crate::ratelimit::{self, Limit, MINUTE};
use crate::service::caller::Call;
use crate::service::mail_store::{self, Row};
use crate::store::{Cond, StoreError, StoreExt, TTL, item};
use crate::validate::Fields;
use crate::values::Page;
use crate::values::page;
use crate::values::{Cursor, EventId, IsoTime, Line, List, WEBHOOK_EVENTS, WebhookEvent};
use crate::webhook::{self, Refused};

/// How long events and attempts are kept for the log and replay.
pub const RETENTION_DAYS: i64 = 7;
/// The wait before the one retry (spec 6).
pub const RETRY_AFTER: Duration = Duration::from_millis(750);
/// Deliveries made at once by one poller run, so one slow receiver does not
/// hold up the others for long.
pub const CONCURRENCY: usize = 8;
/// Replays a key may ask for per minute.
pub const REPLAYS_PER_MINUTE: i64 = 10;
/// The most events one time-range replay re-sends.
pub const MAX_REPLAY: usize = 50;
/// The widest time range a replay covers.
pub const MAX_REPLAY_RANGE_SECS: i64 = 86_400;
pub const AGENT_OWNER: &str = "agent";

/// The registration as stored and shown (with its secret, as spec 4.7 has
/// GET return it).
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Webhook {
    pub url: String,
    /// `whsec_` and the base64 of 32 random bytes.
    pub secret: String,
    pub enabled: bool,
    /// The event types sent to it.
    #[serde(default = "default_events")]
    pub events: Vec<String>,
    pub created_at: String,
    pub updated_at: String,
}

impl Webhook {
    /// Whether an event of `kind` goes to it: switched on and asking for it.
    fn sends(&self, kind: Option<&str>) -> bool {
        self.enabled && kind.is_some_and(|kind| self.events.iter().any(|e| e == kind))
    }
}

/// What a registration that names no events receives: what every
/// registration received before there were other kinds.
fn default_events() -> Vec<String> {
    vec!["inbound.received".into()]
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct WebhookView {
    pub ok: bool,
    pub webhook: Option<Webhook>,
}

/// One delivery attempt, as the log keeps it.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Delivery {
    pub event_id: String,
    /// The stored message's id and Message-ID.
    pub id: String,
    pub message_id: String,
    /// 1 for the first try, 2 for the retry.
    pub attempt: u8,
    pub replay: bool,
    pub at: String,
    pub url: String,
    /// The receiver's status; absent when none came.
    pub status: Option<u16>,
    /// Why no 2xx came: a dropped connection, a timeout, a refused URL.
    pub error: Option<String>,
    pub latency_ms: u64,
}

/// The event body of spec 6, and what replay sends again.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Event {
    event_id: String,
    id: String,
    message_id: String,
    body: String,
    created_at: String,
}

impl Event {
    /// The event's type, as its body names it.
    fn kind(&self) -> Option<String> {
        let body: serde_json::Value = serde_json::from_str(&self.body).ok()?;
        body.get("type")?.as_str().map(str::to_string)
    }
}

fn owner(call: &Call<'_>) -> Result<String, ApiError> {
    // One registration per account announces every mailbox's mail: a key
    // held to some mailboxes would read the others' through it.
    if call.caller.scope().is_some_and(|s| s.mailboxes.is_some()) {
        return Err(error::WEBHOOK_KEY_MAILBOXES.into());
    }
    match call.caller {
        Caller::Agent => Ok(AGENT_OWNER.into()),
        Caller::Standard(key) => Ok(key.uid.clone()),
        _ => Err(error::WEBHOOKS_AGENT_KEY.into()),
    }
}

/// The registration a stored message's event goes to: the account's, or the
/// agent key's for the service-domain mailboxes.
fn owner_of_scope(scope: &str) -> String {
    match scope.strip_prefix("acct:") {
        Some(uid) => uid.to_string(),
        None => AGENT_OWNER.into(),
    }
}

async fn registration(ctx: &Context, owner: &str) -> Result<Option<Webhook>, ApiError> {
    Ok(ctx.store.read(&keys::webhook(owner)).await?)
}

fn url_problem(refused: Refused) -> ApiError {
    match refused {
        Refused::NotHttps => error::WEBHOOK_URL_HTTPS.into(),
        Refused::HostNotAllowed => error::WEBHOOK_HOST.into(),
        Refused::Unresolved => error::WEBHOOK_HOST_UNRESOLVED.into(),
    }
}

// ----------------------------------------------------------- registration

pub async fn get(call: &Call<'_>, _: crate::validate::NoInput) -> Result<WebhookView, ApiError> {
    let owner = owner(call)?;
    Ok(WebhookView {
        ok: true,
        webhook: registration(call.ctx, &owner).await?,
    })
}

crate::input! {
    pub struct WebhookInput {
        /// An https URL whose host is public; required to register.
        #[schemars(url)]
        pub url: Option<Line<{ webhook::MAX_URL }>> = error::WEBHOOK_URL_HTTPS,
        /// false keeps the registration and skips delivery.
        pub enabled: Option<bool> = error::ENABLED_TYPE,
        /// true issues a new secret.
        pub rotate_secret: Option<bool> = error::ROTATE_SECRET_TYPE,
        /// The event types to send (default `["inbound.received"]`): inbound.received,
        /// outbound.delivered, outbound.deferred, outbound.bounced, outbound.complained,
        /// suppression.added, message.spam (received mail filed into spam).
        pub events: Option<List<WebhookEvent, 7, 1>> = (error::WEBHOOK_EVENTS_INVALID, error::WEBHOOK_EVENTS_INVALID),
    }
}

impl WebhookInput {
    /// The named types, once each, in the catalogue's order.
    fn events(&self) -> Option<Vec<String>> {
        let named = self.events.as_ref()?;
        Some(
            WEBHOOK_EVENTS
                .iter()
                .filter(|kind| named.0.iter().any(|e| e.as_str() == **kind))
                .map(|kind| kind.to_string())
                .collect(),
        )
    }
}

pub async fn set(call: &Call<'_>, input: WebhookInput) -> Result<WebhookView, ApiError> {
    let owner = owner(call)?;
    let ctx = call.ctx;
    // Stored as checked: a host's one spelling (`name.` is kept as `name`).
    let url = match &input.url {
        Some(url) => Some(
            webhook::check(&ctx.dns, &ctx.config.webhook_allow_hosts, url.as_str())
                .await
                .map_err(url_problem)?
                .url
                .to_string(),
        ),
        None => None,
    };
    // Read, changed and written on condition that no other change landed
    // between: two changes at once both apply, one on top of the other.
    for _ in 0..CHANGE_ATTEMPTS {
        let current: Option<Versioned> = ctx.store.read(&keys::webhook(&owner)).await?;
        let now = iso(ctx.clock.now());
        let (webhook, version) = match current {
            Some(Versioned { webhook: w, version }) => (
                Webhook {
                    url: url.clone().unwrap_or(w.url),
                    secret: if input.rotate_secret == Some(true) {
                        webhook::new_secret()
                    } else {
                        w.secret
                    },
                    enabled: input.enabled.unwrap_or(w.enabled),
                    events: input.events().unwrap_or(w.events),
                    created_at: w.created_at,
                    updated_at: now,
                },
                Some(version),
            ),
            None => (
                Webhook {
                    url: url.clone().ok_or(error::WEBHOOK_URL_REQUIRED)?,
                    secret: webhook::new_secret(),
                    enabled: input.enabled.unwrap_or(true),
                    events: input.events().unwrap_or_else(default_events),
                    created_at: now.clone(),
                    updated_at: now,
                },
                None,
            ),
        };
        let cond = match version {
            None => Cond::NotExists,
            // Written before registrations carried a version.
            Some(0) => Cond::And(vec![Cond::Exists, Cond::Missing(VERSION.into())]),
            Some(v) => Cond::eq(VERSION, v),
        };
        let mut stored = item(&keys::webhook(&owner), &webhook);
        stored.insert(VERSION.into(), (version.unwrap_or(0) + 1).into());
        match ctx.store.put(stored, Some(cond)).await {
            Ok(()) => {
                return Ok(WebhookView {
                    ok: true,
                    webhook: Some(webhook),
                });
            }
            Err(StoreError::ConditionFailed) => continue,
            Err(e) => return Err(e.into()),
        }
    }
    Err(error::STORE_UNAVAILABLE.into())
}

/// How many times a change is tried against changes landing at once.
const CHANGE_ATTEMPTS: usize = 8;
/// The stored registration's count of changes, for conditional writes.
const VERSION: &str = "version";

/// The registration as stored, with its count of changes (0: written before
/// there was one).
#[derive(Deserialize)]
struct Versioned {
    #[serde(flatten)]
    webhook: Webhook,
    #[serde(default)]
    version: u64,
}

pub async fn remove(call: &Call<'_>, _: crate::validate::NoInput) -> Result<WebhookView, ApiError> {
    let owner = owner(call)?;
    // Nothing is written when nothing is registered.
    if registration(call.ctx, &owner).await?.is_some() {
        call.ctx.store.delete(&keys::webhook(&owner), None).await?;
    }
    Ok(WebhookView {
        ok: true,
        webhook: None,
    })
}

// --------------------------------------------------------------- delivery

/// Announces newly stored messages: one `inbound.received` event each to its
/// owner's registration (none when absent or disabled), a few at a time.
/// Failures are logged; filing already succeeded.
/// Quarantined rows are never announced; mail filed into spam is announced
/// as `message.spam`, to a registration that asks for it alone.
pub async fn announce(ctx: &Context, filed: &[(String, Row)]) {
    futures::stream::iter(filed.iter().filter(|(_, row)| announced_as(row).is_some()))
        .for_each_concurrent(CONCURRENCY, |(scope, row)| async move {
            if let Err(e) = received(ctx, scope, row).await {
                tracing::error!(error = %e, id = %row.id, "webhook delivery failed");
            }
        })
        .await;
}

/// The event a newly filed row is announced as, if any.
fn announced_as(row: &Row) -> Option<&'static str> {
    match &row.quarantine {
        None => Some("inbound.received"),
        Some(kept) if kept.reason == crate::service::mail_store::Quarantine::Spam => Some("message.spam"),
        Some(_) => None,
    }
}

async fn received(ctx: &Context, scope: &str, row: &Row) -> Result<(), ApiError> {
    // A scoped key may hold the account's registration: owner-only mail
    // (an access code) is announced to no one.
    let Some(kind) = announced_as(row).filter(|_| !row.owner_only) else {
        return Ok(());
    };
    let mut body = serde_json::json!({
        "type": kind,
        "id": row.id,
        "messageId": row.message_id,
        "from": row.from,
        "to": row.to,
        "subject": row.subject,
        "preview": row.preview,
        "timestamp": row.ingested_at,
        "mailbox": row.mailbox,
    });
    // The verdicts' summary and spoofed flag, as a list row shows them.
    if let Some(auth) = &row.authentication {
        body["authentication"] = serde_json::json!(auth.compact());
    }
    // The content verdict's score and action, as a list row shows them.
    if let Some(spam) = &row.spam {
        body["spam"] = serde_json::json!(spam.compact());
    }
    emit(ctx, &owner_of_scope(scope), kind, &row.id, &row.message_id, body).await
}

/// Queues one event of `kind` for the owner's registration when it is
/// enabled and asks for that kind: the poller's next run delivers it
/// ([`deliver_pending`]), so no request (a send to the simulator, a
/// suppression, the mail host's delivery report) waits on a receiver, which
/// may take two attempts of 5 seconds. A failure is logged (what it
/// announces is done).
pub async fn publish(
    ctx: &Context,
    owner: &str,
    kind: &'static str,
    id: &str,
    message_id: Option<&str>,
    body: serde_json::Value,
) {
    let queued = async {
        let Some((_, event_sk, _)) = keep(ctx, owner, kind, id, message_id.unwrap_or_default(), body).await? else {
            return Ok(());
        };
        let mut pending = item(
            &keys::webhook_pending(&event_sk, owner),
            &Queued {
                owner: owner.to_string(),
                event_sk,
            },
        );
        pending.insert(TTL.into(), expiry(ctx).into());
        ctx.store.put(pending, None).await?;
        ctx.webhooks_queued.store(true, std::sync::atomic::Ordering::Release);
        Ok::<_, ApiError>(())
    };
    if let Err(e) = queued.await {
        tracing::error!(error = %e, kind, id, "a webhook event could not be queued");
    }
}

/// Keeps the event for the log and replay, then delivers it (the poller's
/// own announcements: it is no request anyone waits on).
async fn emit(
    ctx: &Context,
    owner: &str,
    kind: &str,
    id: &str,
    message_id: &str,
    body: serde_json::Value,
) -> Result<(), ApiError> {
    if let Some((hook, _, event)) = keep(ctx, owner, kind, id, message_id, body).await? {
        deliver(ctx, owner, &hook, &event, false).await?;
    }
    Ok(())
}

/// The event kept for the log and replay, with its registration and its
/// key; `None` when no enabled registration asks for `kind`.
async fn keep(
    ctx: &Context,
    owner: &str,
    kind: &str,
    id: &str,
    message_id: &str,
    body: serde_json::Value,
) -> Result<Option<(Webhook, String, Event)>, ApiError> {
    let Some(hook) = registration(ctx, owner).await?.filter(|w| w.sends(Some(kind))) else {
        return Ok(None);
    };
    let now = ctx.clock.now();
    let event_sk = format!(
        "{:013}{}",
        now.timestamp_millis().max(0),
        hex::encode(rand::random::<[u8; 8]>())
    );
    let event = Event {
        event_id: format!("evt_{event_sk}"),
        id: id.to_string(),
        message_id: message_id.to_string(),
        body: body.to_string(),
        created_at: iso(now),
    };
    let mut stored = item(&keys::webhook_event(owner, &event_sk), &event);
    stored.insert(TTL.into(), expiry(ctx).into());
    ctx.store.put(stored, None).await?;
    Ok(Some((hook, event_sk, event)))
}

/// An event [`publish`] queued: whose, and which.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Queued {
    owner: String,
    event_sk: String,
}

/// The most queued events one run delivers; the rest wait for the next.
const PENDING_PER_RUN: usize = 200;

/// Delivers the queued events, oldest first, [`CONCURRENCY`] at a time, each
/// to its registration as it is now (one switched off or no longer asking
/// for the kind gets nothing). Each is claimed by deleting its queue entry
/// first, so of two runs at once one delivers it; a run that dies after its
/// claim leaves the event in the log, to replay.
pub async fn deliver_pending(ctx: &Context) {
    let query = crate::store::Query::partition(keys::WEBHOOK_PENDING.to_string())
        .between("0", "~")
        .limit(PENDING_PER_RUN);
    let queued = match ctx.store.query(&query).await {
        Ok(page) => page.items,
        Err(e) => {
            tracing::error!(error = %e, "the queued webhook events could not be read");
            return;
        }
    };
    futures::stream::iter(queued)
        .for_each_concurrent(CONCURRENCY, |entry| async move {
            if let Err(e) = deliver_queued(ctx, entry).await {
                tracing::error!(error = %e, "a queued webhook event was not delivered");
            }
        })
        .await;
}

async fn deliver_queued(ctx: &Context, entry: crate::store::Item) -> Result<(), ApiError> {
    let Queued { owner, event_sk } = crate::store::record(entry)?;
    match ctx
        .store
        .delete(&keys::webhook_pending(&event_sk, &owner), Some(Cond::Exists))
        .await
    {
        Ok(_) => {}
        Err(StoreError::ConditionFailed) => return Ok(()),
        Err(e) => return Err(e.into()),
    }
    let Some(event) = ctx.store.read::<Event>(&keys::webhook_event(&owner, &event_sk)).await? else {
        return Ok(());
    };
    let Some(hook) = registration(ctx, &owner)
        .await?
        .filter(|w| w.sends(event.kind().as_deref()))
    else {
        return Ok(());
    };
    deliver(ctx, &owner, &hook, &event, false).await?;
    Ok(())
}

/// Keeps one attempt in the owner's delivery log (GET /webhooks/deliveries).
async fn log_attempt(ctx: &Context, owner: &str, delivery: &Delivery, ok: bool) -> Result<(), ApiError> {
    if !ok {
        tracing::warn!(event = %delivery.event_id, attempt = delivery.attempt, status = ?delivery.status, error = ?delivery.error, "webhook attempt failed");
    }
    let sk = format!(
        "{:013}-{}-{}",
        ctx.clock.now().timestamp_millis().max(0),
        delivery.event_id,
        delivery.attempt
    );
    let mut logged = item(&keys::webhook_delivery(owner, &sk), delivery);
    logged.insert(TTL.into(), expiry(ctx).into());
    ctx.store.put(logged, None).await?;
    Ok(())
}

fn expiry(ctx: &Context) -> i64 {
    ctx.clock.epoch() + RETENTION_DAYS * 86_400
}

/// Sends one event: a try, and one retry 750 ms later when no 2xx came. The
/// URL is checked again first; each attempt is logged.
async fn deliver(
    ctx: &Context,
    owner: &str,
    hook: &Webhook,
    event: &Event,
    replay: bool,
) -> Result<Vec<Delivery>, ApiError> {
    let mut attempts = Vec::new();
    let target = webhook::check(&ctx.dns, &ctx.config.webhook_allow_hosts, &hook.url).await;
    let roots = match &ctx.config.webhook_ca_file {
        Some(path) => std::fs::read(path).unwrap_or_default(),
        None => Vec::new(),
    };
    for attempt in 1..=2u8 {
        // Signed when sent: a receiver checks the time against its own clock,
        // so this is the wall clock, not the service's (a test's may run ahead).
        let unix = chrono::Utc::now().timestamp();
        let outcome = match &target {
            Ok(target) => {
                let headers = webhook::signature_headers(&hook.secret, &event.event_id, unix, event.body.as_bytes());
                webhook::post(target, &headers, event.body.as_bytes(), &roots).await
            }
            Err(refused) => webhook::Attempt {
                status: None,
                error: Some(url_problem(*refused).error.into_owned()),
                latency_ms: 0,
            },
        };
        let ok = outcome.ok();
        crate::metrics::emit(
            ctx,
            &[
                crate::metrics::count(crate::metrics::WEBHOOK_ATTEMPTS, 1),
                crate::metrics::count(crate::metrics::WEBHOOK_FAILURES, usize::from(!ok)),
            ],
        );
        let delivery = Delivery {
            event_id: event.event_id.clone(),
            id: event.id.clone(),
            message_id: event.message_id.clone(),
            attempt,
            replay,
            at: iso(ctx.clock.now()),
            url: hook.url.clone(),
            status: outcome.status,
            error: outcome.error,
            latency_ms: outcome.latency_ms,
        };
        log_attempt(ctx, owner, &delivery, ok).await?;
        attempts.push(delivery);
        if ok || target.is_err() {
            break;
        }
        if attempt == 1 {
            tokio::time::sleep(RETRY_AFTER).await;
        }
    }
    Ok(attempts)
}

// ------------------------------------------------------- log and replay

crate::input! {
    pub struct DeliveriesQuery {
        pub limit: Option<page::Limit<50>>,
        /// The nextCursor of the previous page.
        pub cursor: Option<Cursor> = error::CURSOR_INVALID,
    }
}

#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Deliveries {
    pub ok: bool,
    /// Newest first.
    pub deliveries: Vec<Delivery>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

pub async fn deliveries(call: &Call<'_>, input: DeliveriesQuery) -> Result<Deliveries, ApiError> {
    let owner = owner(call)?;
    let limit = page::Limit::rows(input.limit, 25);
    let Page {
        items: deliveries,
        next_cursor,
    } = mail_store::page::<Delivery>(
        call.ctx,
        keys::webhook_deliveries(&owner),
        true,
        input.cursor.as_deref(),
        limit,
    )
    .await?;
    Ok(Deliveries {
        ok: true,
        deliveries,
        next_cursor,
    })
}

crate::input! {
    #[schemars(extend("anyOf" = [
        {"required": ["eventId"], "properties": {"eventId": {"type": "string"}}},
        {"required": ["from", "to"], "properties": {"from": {"type": "string"}, "to": {"type": "string"}}}
    ]))]
    pub struct ReplayInput {
        /// One event of the log (`evt_...`).
        pub event_id: Option<EventId> = error::EVENT_ID_INVALID,
        /// Or every event from this time (ISO 8601) ...
        pub from: Option<IsoTime> = error::REPLAY_TARGET,
        /// ... to this one, at most 24 hours later; at most 50 events.
        pub to: Option<IsoTime> = error::REPLAY_TARGET,
    }
    check ReplayInput::target;
}

impl ReplayInput {
    fn target(self, _: &Fields) -> Result<Self, ApiError> {
        match (&self.event_id, self.from, self.to) {
            (Some(_), _, _) => Ok(self),
            (None, Some(a), Some(b))
                if a.0 <= b.0 && (b.0 - a.0).num_milliseconds() <= MAX_REPLAY_RANGE_SECS * 1000 =>
            {
                Ok(self)
            }
            _ => Err(error::REPLAY_TARGET.into()),
        }
    }
}

enum Replay {
    One(String),
    Range(i64, i64),
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Replayed {
    pub ok: bool,
    /// Events sent again.
    pub replayed: usize,
    /// Their attempts, as logged.
    pub deliveries: Vec<Delivery>,
}

/// Sends logged events again with their own ids and fresh signatures, to the
/// registration as it is now (its URL checked again). Rate limited; no credit.
pub async fn replay(call: &Call<'_>, input: ReplayInput) -> Result<Replayed, ApiError> {
    let owner = owner(call)?;
    let ctx = call.ctx;
    let which = match (input.event_id, input.from, input.to) {
        (Some(id), _, _) => Replay::One(id.into_string()),
        (None, Some(from), Some(to)) => Replay::Range(from.0.timestamp_millis(), to.0.timestamp_millis()),
        _ => return Err(error::REPLAY_TARGET.into()),
    };
    let hook = registration(ctx, &owner)
        .await?
        .filter(|w| w.enabled)
        .ok_or(error::WEBHOOK_NONE)?;
    ratelimit::hit(
        &*ctx.store,
        &format!("webhookReplay:{owner}"),
        Limit {
            max: REPLAYS_PER_MINUTE,
            period_secs: MINUTE,
        },
        ctx.clock.epoch(),
    )
    .await?;
    let events: Vec<Event> = match which {
        Replay::One(id) => {
            let sk = id.trim_start_matches("evt_");
            let event = ctx
                .store
                .read(&keys::webhook_event(&owner, sk))
                .await?
                .ok_or(error::NOT_FOUND)?;
            vec![event]
        }
        Replay::Range(from, to) => {
            let query = crate::store::Query::partition(keys::webhook_events(&owner))
                .between(format!("{from:013}"), format!("{to:013}~"))
                .limit(MAX_REPLAY);
            ctx.store
                .query(&query)
                .await?
                .items
                .into_iter()
                .map(crate::store::record::<Event>)
                .collect::<Result<Vec<_>, _>>()?
                .into_iter()
                // A range sends again what the registration asks for now;
                // an event named by its id is sent whatever its type.
                .filter(|event| hook.sends(event.kind().as_deref()))
                .collect()
        }
    };
    // Every event at once: the answer comes within one event's worst case
    // (two attempts of 5 seconds and the pause between them), well inside
    // API Gateway's 29 seconds, however many events the range holds.
    let sent = futures::future::join_all(events.iter().map(|event| deliver(ctx, &owner, &hook, event, true))).await;
    let mut deliveries = Vec::new();
    for attempts in sent {
        deliveries.extend(attempts?);
    }
    Ok(Replayed {
        ok: true,
        replayed: events.len(),
        deliveries,
    })
}
