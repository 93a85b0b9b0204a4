//! The audit log (GET /audit, MCP list_audit): one row per change made
//! through the API, written by the catalogue's one execution path
//! (`api::Operation::execute`), never route by route, in the acting
//! account's log (the operators' own for operator and agent-key changes).
//! A service adds what a change touched beyond its input
//! (`Call::touched`: a domain removal's mailboxes, a request's email).
//! Kept 90 days.
//!
//! A refusal is counted, not written row by row: one actor's refusals of one
//! operation with one error within a minute are one row with a `count`, so
//! a burst of refused calls (a key without the permission, guesses at a
//! locked hold) cannot flood the log.
//!
//! Items: `AUDIT#<owner>/<ms>-<hex>` one change (newest first);
//! `AUDITRUN#<owner>/<minute>#<digest>` the row counting a minute's
//! refusals of one kind.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::auth::Caller;
use crate::context::Context;
use crate::error::{self, ApiError};
use crate::keys;
use crate::service::caller::Call;
use crate::store::{Cond, Key, StoreError, StoreResult, TTL, Update, Write, item};
use crate::validate::Fields;
use crate::values::Page;
use crate::values::{Cursor, EmailAddress, KeyId, Limit};

/// How long a change stays in the log.
pub const KEPT_DAYS: i64 = 90;
/// The input fields that name what a change was about. Only these are
/// copied: a body's text, a password, a URL or a code never reaches the log.
const TARGET_FIELDS: &[&str] = &[
    "id",
    "domainId",
    "domain",
    "localPart",
    "mailboxId",
    "address",
    "messageId",
    "thread",
    "holdId",
    "entry",
    "direction",
    "kind",
    "mailbox",
    "name",
    "to",
    "email",
    "requestId",
];
/// The longest text kept of one target field.
const TARGET_CHARS: usize = 200;

/// Who made a change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Actor {
    /// account_key, scoped_key, agent_key, operator, person, emailed_code
    /// or mail_host.
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_id: Option<String>,
    /// A scoped key's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// An identity token's email.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub email: Option<String>,
}

impl Actor {
    pub fn of(caller: &Caller) -> Actor {
        let actor = |kind: &str| Actor {
            kind: kind.into(),
            key_id: None,
            name: None,
            email: None,
        };
        match caller {
            Caller::Standard(key) => Actor {
                key_id: Some(key.key_id.clone()),
                name: key.name.clone(),
                ..actor(if key.scope.is_some() {
                    "scoped_key"
                } else {
                    "account_key"
                })
            },
            Caller::Agent => actor("agent_key"),
            Caller::Identity(user) => Actor {
                email: Some(user.email.clone()),
                ..actor(if user.operator { "operator" } else { "person" })
            },
            // Only a hold's decision is made without a credential: by the
            // code mailed to the owner.
            Caller::Public => actor("emailed_code"),
            Caller::Sync => actor("mail_host"),
        }
    }

    /// Whether `filter` (a key id or an email) names this actor.
    fn is(&self, filter: &str) -> bool {
        self.key_id.as_deref() == Some(filter) || self.email.as_deref() == Some(filter)
    }
}

/// One change, as GET /audit lists it.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Change {
    pub at: String,
    pub actor: Actor,
    /// The operationId (sendMail, createKey, ...).
    pub operation: String,
    /// The input fields that name what it was about (never secrets).
    pub target: Map<String, Value>,
    /// The HTTP status it answered with (MCP calls too).
    pub status: u16,
    /// The error sentence, when it was refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// A refusal: how many times this actor was refused this operation with
    /// this error within the minute from `at` (the row shows the first).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<i64>,
    /// A refusal counted more than once: when the last one was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_at: Option<String>,
    /// What the change touched beyond its input (an operator's removal,
    /// decision or credit switch), when the service said.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub details: Vec<Map<String, Value>>,
    /// rest or mcp.
    pub via: String,
    pub request_id: String,
    pub ip: String,
}

/// The log a call's changes go in: its account's (the agent key's and an
/// operator's without an account of their own: the operators').
pub fn owner_of(call: &Call<'_>) -> String {
    match call.caller {
        Caller::Standard(key) => key.uid.clone(),
        _ => call.acting_uid().unwrap_or_else(|| crate::values::OPS_UID.to_string()),
    }
}

/// The target fields of an input, cut to a bounded size.
pub fn target_of(fields: Option<&Fields>) -> Map<String, Value> {
    let mut target = Map::new();
    let Some(fields) = fields else {
        return target;
    };
    let cut = |s: &str| s.chars().take(TARGET_CHARS).collect::<String>();
    for name in TARGET_FIELDS {
        let value = match fields.get(name) {
            Some(Value::String(s)) => Value::String(cut(s)),
            Some(Value::Array(list)) => Value::Array(
                list.iter()
                    .take(10)
                    .filter_map(Value::as_str)
                    .map(|s| Value::String(cut(s)))
                    .collect(),
            ),
            Some(v @ (Value::Bool(_) | Value::Number(_))) => v.clone(),
            _ => continue,
        };
        target.insert((*name).into(), value);
    }
    target
}

/// Writes one change to its account's log, or counts a refusal in its
/// minute's row. A failure to write is logged, never turned into the
/// caller's error: the change itself has happened.
pub async fn note(call: &Call<'_>, operation: &str, target: Map<String, Value>, outcome: Result<(), &ApiError>) {
    let ctx = call.ctx;
    let now = ctx.clock.now();
    let change = change(call, operation, target, outcome);
    let owner = owner_of(call);
    let written = match outcome.is_err() {
        false => ctx.store.put(row(&owner, &change, now).1, None).await,
        true => count_refusal(ctx, &owner, &change, now).await,
    };
    if let Err(e) = written {
        tracing::error!(error = %e, operation, "audit row not written");
    }
}

/// The call's audit row as one write of the service's own transaction, as
/// a success: a send that goes at once takes it with its credit and its
/// record, so the log costs no round trip of its own. None when the call
/// writes no row. Once the transaction commits, the service says so
/// ([`Call::audited_in`]) and the execution path writes no second row.
pub fn in_transaction(call: &Call<'_>) -> Option<(Key, Write)> {
    let (operation, target) = call.audit_of()?;
    let change = change(call, operation, target.clone(), Ok(()));
    let (key, item) = row(&owner_of(call), &change, call.ctx.clock.now());
    let write = Write::Put {
        item,
        cond: Some(Cond::NotExists),
    };
    Some((key, write))
}

/// A change whose row its transaction wrote as a success, then answered
/// with an error (the relay refused every recipient after the credit was
/// spent): the row says what the caller was answered.
pub async fn amend(call: &Call<'_>, key: &Key, refused: &ApiError) {
    let answered = Update::new()
        .set("status", refused.status)
        .set("error", refused.error.to_string());
    if let Err(e) = call.ctx.store.update(key, answered, Some(Cond::Exists)).await {
        tracing::error!(error = %e, "audit row not amended");
    }
}

/// The row of one call's change (or refusal).
fn change(call: &Call<'_>, operation: &str, target: Map<String, Value>, outcome: Result<(), &ApiError>) -> Change {
    let refused = outcome.is_err();
    Change {
        at: crate::clock::iso(call.ctx.clock.now()),
        actor: Actor::of(call.caller),
        operation: operation.into(),
        target,
        status: outcome.map_or_else(|e| e.status, |()| 200),
        error: outcome.err().map(|e| e.error.to_string()),
        count: refused.then_some(1),
        last_at: None,
        details: call.take_details(),
        via: call.surface.into(),
        request_id: call.request_id.clone(),
        ip: call.ip.into(),
    }
}

/// A new row of the log, at `now`: its key and item.
fn row(owner: &str, change: &Change, now: chrono::DateTime<chrono::Utc>) -> (Key, crate::store::Item) {
    let key = keys::audit_change(
        owner,
        &format!(
            "{:013}-{}",
            now.timestamp_millis(),
            hex::encode(rand::random::<[u8; 4]>())
        ),
    );
    let mut row = item(&key, change);
    row.insert(TTL.into(), json!(now.timestamp() + KEPT_DAYS * 86_400));
    (key, row)
}

/// Counts a refusal: the first of its minute (by this actor, of this
/// operation, with this error) writes its row together with the minute's
/// pointer to it, on condition the pointer is new, so concurrent refusals
/// write one row between them; every other one adds 1 to that row's count
/// (an atomic add, never a read and a write back).
async fn count_refusal(
    ctx: &Context,
    owner: &str,
    change: &Change,
    now: chrono::DateTime<chrono::Utc>,
) -> StoreResult<()> {
    let minute = now.timestamp().div_euclid(60);
    let run = keys::audit_run(owner, minute, &refusal_kind(change));
    let mut pointer = ctx.store.get(&run).await?;
    if pointer.is_none() {
        let (_, first) = row(owner, change, now);
        let sk = first.get(crate::store::SK).cloned().unwrap_or_default();
        let writes = vec![
            Write::Put {
                item: item(&run, &json!({ "row": sk, TTL: (minute + 2) * 60 })),
                cond: Some(Cond::NotExists),
            },
            Write::Put {
                item: first,
                cond: None,
            },
        ];
        match ctx.store.transact(writes).await {
            Ok(()) => return Ok(()),
            // Another refusal of the same kind wrote the minute's row first.
            Err(StoreError::ConditionFailed) => pointer = ctx.store.get(&run).await?,
            Err(e) => return Err(e),
        }
    }
    let Some(sk) = pointer.as_ref().and_then(|p| p.get("row")).and_then(Value::as_str) else {
        return Err(StoreError::Backend("a refusal's row is not named".into()));
    };
    // The time of this count, read now that the row exists: a refusal that
    // began before the one that wrote the row, and counts after it, would
    // otherwise put lastAt before the row's at.
    let counted = Update::new()
        .add("count", 1)
        .set("lastAt", crate::clock::iso(ctx.clock.now()));
    ctx.store
        .update(&keys::audit_change(owner, sk), counted, Some(Cond::Exists))
        .await
        .map(drop)
}

/// What makes two refusals the same: the actor, the operation, the error.
fn refusal_kind(change: &Change) -> String {
    use sha2::{Digest, Sha256};
    let actor = &change.actor;
    let parts = [
        actor.kind.as_str(),
        actor.key_id.as_deref().unwrap_or_default(),
        actor.email.as_deref().unwrap_or_default(),
        change.operation.as_str(),
        change.error.as_deref().unwrap_or_default(),
    ];
    hex::encode(&Sha256::digest(parts.join("\n"))[..8])
}

crate::input! {
    /// GET /audit.
    pub struct AuditQuery {
        pub limit: Option<Limit<100>>,
        /// The nextCursor of the previous page.
        pub cursor: Option<Cursor> = error::CURSOR_INVALID,
        /// Only this actor's changes: a key id (key_...) or an email.
        pub actor: Option<ActorFilter> = error::AUDIT_ACTOR_INVALID,
        /// Only this operation's changes (an operationId, such as sendMail).
        pub operation: Option<OperationName> = error::AUDIT_OPERATION_INVALID,
    }
}

#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AuditPage {
    pub ok: bool,
    /// Newest first.
    pub changes: Vec<Change>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// Rows read for one filtered page at most: a rare actor's page may come
/// back short, with a cursor to go on from.
const SCAN: usize = 500;

pub async fn list(call: &Call<'_>, q: AuditQuery) -> Result<AuditPage, ApiError> {
    let account = call.account().await?;
    let limit = Limit::rows(q.limit, 25);
    let filtered = q.actor.is_some() || q.operation.is_some();
    let read = if filtered { SCAN } else { limit };
    let pk = keys::audit_log(&account.uid);
    let Page {
        items,
        next_cursor: next,
    } = crate::service::mail_store::page_raw(call.ctx, pk, true, q.cursor.as_deref(), read).await?;
    let mut changes = Vec::new();
    let mut last_seen = None;
    for raw in items {
        let change: Change = raw.record()?;
        last_seen = Some(raw.sk.clone());
        let wanted = q.actor.as_ref().is_none_or(|a| change.actor.is(a.as_str()))
            && q.operation.as_ref().is_none_or(|o| change.operation == o.0);
        if wanted {
            changes.push(change);
            if changes.len() == limit {
                break;
            }
        }
    }
    // Stopped early on a full page: go on after its last row.
    let next_cursor = if filtered && changes.len() == limit {
        last_seen.or(next)
    } else {
        next
    };
    Ok(AuditPage {
        ok: true,
        changes,
        next_cursor,
    })
}

/// `actor=`: a key id or an email address.
#[derive(Debug, Clone)]
pub struct ActorFilter(String);

impl ActorFilter {
    fn as_str(&self) -> &str {
        &self.0
    }
}

impl crate::values::Value for ActorFilter {
    fn parse(raw: &str) -> Option<Self> {
        <KeyId as crate::values::Value>::parse(raw)
            .map(|k| ActorFilter(k.as_str().into()))
            .or_else(|| <EmailAddress as crate::values::Value>::parse(raw).map(|e| ActorFilter(e.into_string())))
    }
}

impl JsonSchema for ActorFilter {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "AuditActor".into()
    }
    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({ "anyOf": [
            generator.subschema_for::<KeyId>(),
            generator.subschema_for::<EmailAddress>(),
        ]})
    }
}

/// `operation=`: an operationId's shape (letters, at most 64); one the
/// catalogue does not have lists nothing.
#[derive(Debug, Clone)]
pub struct OperationName(String);

impl crate::values::Value for OperationName {
    fn parse(raw: &str) -> Option<Self> {
        let raw = raw.trim();
        (!raw.is_empty() && raw.len() <= 64 && raw.bytes().all(|b| b.is_ascii_alphabetic()))
            .then(|| OperationName(raw.into()))
    }
}

impl JsonSchema for OperationName {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "OperationId".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({ "type": "string", "pattern": "^\\s*[A-Za-z]{1,64}\\s*$" })
    }
}
