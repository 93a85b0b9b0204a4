//! Scoped keys: the owner (the account key, or an operator) mints keys for
//! agents, each narrowed to some permissions and mailboxes, with its own
//! daily send cap, expiry and approval rule (POST/GET/DELETE /keys). The
//! key is shown once; the store keeps its keyed hash, as for the account key.
//!
//! Items: `KEY#<digest>/K` the key's record (read at every request, see
//! `auth::keys`), `ACCT#<uid>/APIKEY#<keyId>` its listing row (with the
//! digest, so revoking removes both), and the account's `scopedKeys` count.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::auth::keys::{self as secret_keys, KeyRecord, REVOKING};
use crate::auth::{Approval, Permission, Scope};
use crate::clock::iso;
use crate::error::{self, ApiError};
use crate::keys;
use crate::service::caller::Call;
use crate::store::{Cond, Query, StoreError, StoreExt, Update, Write, item};
use crate::values::{Bounded, EmailAddress, IsoTime, KeyId, Line, List};

/// The most scoped keys one account holds at once.
pub const MAX_KEYS: i64 = 20;
/// The most mailboxes one key is scoped to.
pub const MAX_KEY_MAILBOXES: usize = 20;
/// The furthest ahead a key may expire.
const MAX_LIFETIME_DAYS: i64 = 366;

/// A scoped key as GET /keys shows it: never the key itself.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct KeyView {
    /// `key_` and 12 hex digits: what DELETE /keys?id= takes.
    pub id: String,
    pub name: String,
    /// The key's last four characters, to tell keys apart.
    pub last4: String,
    pub scope: Scope,
    pub created_at: String,
    /// When it last authenticated (to the minute); absent until first used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_used_at: Option<String>,
}

/// The listing row: the view, and the digest that finds the key's record.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Listed {
    #[serde(flatten)]
    view: KeyView,
    digest: String,
}

/// A scoped key of the account by its id, as a request with it would be
/// admitted (what a mailbox password it issued acts as); none once revoked.
pub async fn scoped(
    ctx: &crate::context::Context,
    uid: &str,
    key_id: &str,
) -> Result<Option<crate::auth::StandardKey>, ApiError> {
    let listed: Option<Listed> = ctx.store.read(&keys::scoped_key(uid, key_id)).await?;
    Ok(listed.map(|l| crate::auth::StandardKey {
        uid: uid.to_string(),
        key_id: l.view.id,
        last4: l.view.last4,
        name: Some(l.view.name),
        scope: Some(l.view.scope),
    }))
}

crate::input! {
    /// POST /keys.
    pub struct CreateKeyInput {
        /// A label for the key (at most 64 characters).
        pub name: Line<64> = (error::KEY_NAME_REQUIRED, error::KEY_NAME_INVALID),
        /// What it may do: read, send, draft, manage (at least one).
        pub permissions: List<Permission, 4, 1> = (
            error::KEY_PERMISSIONS_INVALID,
            (error::KEY_PERMISSIONS_INVALID, error::KEY_PERMISSIONS_INVALID)
        ),
        /// The account's mailbox addresses it may use; omitted means all.
        pub mailboxes: Option<List<EmailAddress, MAX_KEY_MAILBOXES, 1>> =
            (error::KEY_MAILBOXES_INVALID, error::KEY_MAILBOXES_INVALID),
        /// Sends per UTC day, 1 to 50 (the account's own limit is 50).
        pub daily_send_cap: Option<Bounded<1, 50>> = error::KEY_CAP_INVALID,
        /// When it stops working: a future time, at most a year ahead.
        pub expires_at: Option<IsoTime> = error::KEY_EXPIRY_INVALID,
        /// Which sends wait for the owner's approval: none (default),
        /// first_contact (a recipient never mailed or heard from), always.
        pub approval: Option<Approval> = error::KEY_APPROVAL_INVALID,
    }
}

#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CreatedKey {
    pub ok: bool,
    pub key: KeyView,
    /// The key itself, shown this once: send it as `Authorization: Bearer svc_...`.
    pub api_key: String,
}

pub async fn create(call: &Call<'_>, input: CreateKeyInput) -> Result<CreatedKey, ApiError> {
    let ctx = call.ctx;
    let account = call.account().await?;
    let now = ctx.clock.now();
    let scope = scope_of(call, &account.uid, input.permissions, input.mailboxes).await?;
    let scope = Scope {
        daily_send_cap: input.daily_send_cap.map(Bounded::get),
        expires_at: expiry(input.expires_at, now)?,
        approval: input.approval.unwrap_or_default(),
        ..scope
    };
    let key = secret_keys::new_key();
    let digest = ctx.hasher.key_digest(&key);
    let view = KeyView {
        id: secret_keys::new_key_id(),
        name: input.name.into_string(),
        last4: secret_keys::last4(&key),
        scope,
        created_at: iso(now),
        last_used_at: None,
    };
    match ctx.store.transact(create_writes(&account.uid, &digest, &view)).await {
        Ok(()) => Ok(CreatedKey {
            ok: true,
            key: view,
            api_key: key,
        }),
        // A fresh random key and id never collide: the count is full.
        Err(StoreError::ConditionFailed) => Err(error::KEY_TOO_MANY.into()),
        Err(e) => Err(e.into()),
    }
}

/// The key's record (read on every call), its row in the account's list,
/// and the account's count, refused at the limit.
fn create_writes(uid: &str, digest: &str, view: &KeyView) -> Vec<Write> {
    let record = KeyRecord {
        uid: uid.to_string(),
        key_id: view.id.clone(),
        last4: view.last4.clone(),
        created_at: view.created_at.clone(),
        name: Some(view.name.clone()),
        scope: Some(view.scope.clone()),
        last_used_at: None,
    };
    let listed = Listed {
        view: view.clone(),
        digest: digest.to_string(),
    };
    vec![
        Write::Put {
            item: item(&keys::api_key(digest), &record),
            cond: Some(Cond::NotExists),
        },
        Write::Put {
            item: item(&keys::scoped_key(uid, &view.id), &listed),
            cond: Some(Cond::NotExists),
        },
        Write::Update {
            key: keys::account(uid),
            update: Update::new().add("scopedKeys", 1),
            cond: Some(Cond::Or(vec![
                Cond::missing("scopedKeys"),
                Cond::Lt("scopedKeys".into(), MAX_KEYS),
            ])),
        },
    ]
}

/// The permissions, each once, and the mailboxes, each an active mailbox of
/// the account.
async fn scope_of(
    call: &Call<'_>,
    uid: &str,
    permissions: List<Permission, 4, 1>,
    mailboxes: Option<List<EmailAddress, MAX_KEY_MAILBOXES, 1>>,
) -> Result<Scope, ApiError> {
    let mut wanted: Vec<Permission> = Vec::new();
    for p in permissions.0 {
        if !wanted.contains(&p) {
            wanted.push(p);
        }
    }
    wanted.sort_by_key(|p| Permission::ALL.iter().position(|q| q == p));
    let mailboxes = match mailboxes {
        None => None,
        Some(List(list)) => {
            // Each once, in the order first given.
            let mut addresses: Vec<String> = Vec::new();
            for address in list.into_iter().map(EmailAddress::into_string) {
                if !addresses.contains(&address) {
                    addresses.push(address);
                }
            }
            let mut unknown = Vec::new();
            for address in &addresses {
                let mine = crate::service::mailboxes::mailbox::by_address(call.ctx, address)
                    .await?
                    .is_some_and(|m| m.is_active() && m.uid == uid);
                if !mine {
                    unknown.push(address.clone());
                }
            }
            if !unknown.is_empty() {
                let mut refused: ApiError = error::KEY_MAILBOX_UNKNOWN.into();
                refused.addresses = Some(unknown);
                return Err(refused);
            }
            Some(addresses)
        }
    };
    Ok(Scope {
        mailboxes,
        permissions: wanted,
        daily_send_cap: None,
        expires_at: None,
        approval: Approval::None,
    })
}

/// A requested expiry: in the future, within a year.
fn expiry(at: Option<IsoTime>, now: chrono::DateTime<chrono::Utc>) -> Result<Option<String>, ApiError> {
    match at {
        None => Ok(None),
        Some(IsoTime(at)) if at > now && at <= now + chrono::Duration::days(MAX_LIFETIME_DAYS) => Ok(Some(iso(at))),
        Some(_) => Err(error::KEY_EXPIRY_INVALID.into()),
    }
}

#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct KeyList {
    pub ok: bool,
    /// Newest first.
    pub keys: Vec<KeyView>,
}

pub async fn list(call: &Call<'_>, _: crate::validate::NoInput) -> Result<KeyList, ApiError> {
    let account = call.account().await?;
    let query = Query::partition(keys::account_partition(&account.uid)).prefix(keys::SCOPED_KEY_PREFIX);
    let listed: Vec<Listed> = call.ctx.store.all_records(query).await?;
    let mut keys: Vec<KeyView> = listed.into_iter().map(|l| l.view).collect();
    keys.sort_by(|a, b| b.created_at.cmp(&a.created_at).then(b.id.cmp(&a.id)));
    Ok(KeyList { ok: true, keys })
}

crate::input! {
    /// DELETE /keys.
    pub struct RevokeKeyInput {
        /// The key's id from GET /keys.
        pub id: KeyId = (error::ID_REQUIRED, error::KEY_ID_INVALID),
    }
}

#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RevokedKey {
    pub ok: bool,
    /// The key as it was; it stopped working with this answer.
    pub revoked: KeyView,
    /// How many of its sends that had not gone out (held or scheduled)
    /// were cancelled with it, each one's credit back.
    pub cancelled_sends: usize,
}

/// Revokes a scoped key at once: its record and listing row go in one
/// transaction, so the next request with it is 401. First the key is marked
/// as being revoked, which stops it issuing mailbox passwords; then the
/// ones it issued are taken away; then it goes. So no password it issued
/// outlives it, however it races the revoke. Last, the sends it asked for
/// that still wait are cancelled.
pub async fn revoke(call: &Call<'_>, input: RevokeKeyInput) -> Result<RevokedKey, ApiError> {
    let ctx = call.ctx;
    let account = call.account().await?;
    let row = keys::scoped_key(&account.uid, input.id.as_str());
    let marked = ctx
        .store
        .update(&row, Update::new().set(REVOKING, true), Some(Cond::Exists))
        .await;
    let listed: Listed = match marked {
        Ok(item) => crate::store::record(item)?,
        Err(StoreError::ConditionFailed) => return Err(error::KEY_NOT_FOUND.into()),
        Err(e) => return Err(e.into()),
    };
    let domains: Vec<String> = crate::service::domains::of_account(ctx, &account.uid)
        .await?
        .into_iter()
        .map(|d| d.name)
        .collect();
    let dropped = crate::service::mailboxes::drop_key_passwords(ctx, &domains, &listed.view.id).await?;
    let writes = vec![
        Write::Delete {
            key: row,
            cond: Some(Cond::Exists),
        },
        Write::Delete {
            key: keys::api_key(&listed.digest),
            cond: None,
        },
        Write::Update {
            key: keys::account(&account.uid),
            update: Update::new().add("scopedKeys", -1),
            cond: None,
        },
    ];
    match ctx.store.transact(writes).await {
        Ok(()) => {
            if !dropped.is_empty() {
                call.touched(serde_json::json!({ "passwordsRevoked": dropped }));
            }
            Ok(RevokedKey {
                ok: true,
                cancelled_sends: cancel_its_sends(ctx, &account.uid, &listed.view.id).await,
                revoked: listed.view,
            })
        }
        // Another revoke of the same key won.
        Err(StoreError::ConditionFailed) => Err(error::KEY_NOT_FOUND.into()),
        Err(e) => Err(e.into()),
    }
}

/// Cancels the sends a revoked key asked for that still wait. A failure is
/// logged, not returned: the key is revoked either way, and a send of a
/// revoked key never goes out (it is cancelled when it would).
async fn cancel_its_sends(ctx: &crate::context::Context, uid: &str, key_id: &str) -> usize {
    crate::service::sending::pending::cancel_asked_by(ctx, uid, key_id)
        .await
        .unwrap_or_else(|e| {
            tracing::error!(error = %e.error, key = %key_id, "a revoked key's waiting sends were not all cancelled");
            0
        })
}
