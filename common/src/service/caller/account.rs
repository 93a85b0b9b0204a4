//! Accounts and their standard keys.
//!
//! Items (see `keys`): the account, its email index, and its key's owner.

use serde::{Deserialize, Serialize};

use crate::auth::keys::{self as secret_keys, KeyHasher, KeyRecord};
use crate::context::Context;
use crate::keys;
use crate::store::{Cond, StoreExt, StoreResult, Update, Write, item};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AccountStatus {
    Ready,
    SettingUp,
    Unavailable,
}

crate::store::stored_as_json!(AccountStatus);

impl AccountStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            AccountStatus::Ready => "ready",
            AccountStatus::SettingUp => "setting_up",
            AccountStatus::Unavailable => "unavailable",
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Account {
    pub uid: String,
    pub email: String,
    pub status: AccountStatus,
    pub created_at: String,
    #[serde(default)]
    pub key_digest: Option<String>,
    #[serde(default)]
    pub key_id: Option<String>,
    #[serde(default)]
    pub key_last4: Option<String>,
}

pub use crate::values::OPS_UID;

pub fn new_uid() -> String {
    format!("u_{}", hex::encode(rand::random::<[u8; 12]>()))
}

pub use crate::values::valid_uid;

pub async fn get(ctx: &Context, uid: &str) -> StoreResult<Option<Account>> {
    ctx.store.read(&keys::account(uid)).await
}

pub async fn by_email(ctx: &Context, email: &str) -> StoreResult<Option<Account>> {
    let Some(index) = ctx.store.get(&keys::email(email)).await? else {
        return Ok(None);
    };
    match index.get("uid").and_then(|v| v.as_str()) {
        Some(uid) => get(ctx, uid).await,
        None => Ok(None),
    }
}

/// The writes that create an account (and its email index), to go in the same
/// transaction as whatever decided to create it.
pub fn create_writes(account: &Account) -> Vec<Write> {
    vec![
        Write::Put {
            item: item(&keys::account(&account.uid), account),
            cond: Some(Cond::NotExists),
        },
        Write::Put {
            item: item(&keys::email(&account.email), &serde_json::json!({ "uid": account.uid })),
            cond: Some(Cond::NotExists),
        },
    ]
}

/// A new standard key for the account and the writes that make it the
/// account's one key. For an existing account the previous key stops working in
/// the same transaction; for a new one, create the returned account with
/// [`create_writes`].
pub fn issue_key_writes(
    hasher: &KeyHasher,
    account: &Account,
    now: &str,
    account_is_new: bool,
) -> (String, Account, Vec<Write>) {
    let key = secret_keys::new_key();
    let digest = hasher.key_digest(&key);
    let key_id = secret_keys::new_key_id();
    let last4 = secret_keys::last4(&key);
    let mut updated = account.clone();
    updated.key_digest = Some(digest.clone());
    updated.key_id = Some(key_id.clone());
    updated.key_last4 = Some(last4.clone());
    let owner = KeyRecord {
        uid: account.uid.clone(),
        key_id: key_id.clone(),
        last4: last4.clone(),
        created_at: now.into(),
        name: None,
        scope: None,
        last_used_at: None,
    };
    let mut writes = vec![Write::Put {
        item: item(&keys::api_key(&digest), &owner),
        cond: Some(Cond::NotExists),
    }];
    if !account_is_new {
        if let Some(old) = &account.key_digest {
            writes.push(Write::Delete {
                key: keys::api_key(old),
                cond: None,
            });
        }
        // Fails if another verify replaced the key since this one read it.
        let unchanged = match &account.key_digest {
            Some(old) => Cond::eq("keyDigest", old.clone()),
            None => Cond::And(vec![Cond::Exists, Cond::missing("keyDigest")]),
        };
        let update = Update::new()
            .set("keyDigest", digest)
            .set("keyId", key_id)
            .set("keyLast4", last4);
        writes.push(Write::Update {
            key: keys::account(&account.uid),
            update,
            cond: Some(unchanged),
        });
    }
    (key, updated, writes)
}

/// The writes that revoke the account's key (a denied request): the key stops
/// authenticating in the same transaction as the decision.
pub fn revoke_key_writes(account: &Account) -> Vec<Write> {
    let Some(digest) = &account.key_digest else {
        return Vec::new();
    };
    vec![
        Write::Delete {
            key: keys::api_key(digest),
            cond: None,
        },
        Write::Update {
            key: keys::account(&account.uid),
            update: Update::new().remove("keyDigest").remove("keyId").remove("keyLast4"),
            cond: Some(Cond::eq("keyDigest", digest.clone())),
        },
    ]
}

/// The account a customer-route caller acts for, once its setup is complete. An
/// operator without an account of their own acts for the operators' account.
pub async fn acting(ctx: &Context, caller: &crate::auth::Caller) -> Result<Account, crate::error::ApiError> {
    use crate::auth::Caller;
    let account = match caller {
        Caller::Standard(key) => get(ctx, &key.uid).await?,
        Caller::Identity(user) => match by_email(ctx, &user.email).await? {
            Some(account) => Some(account),
            None if user.operator => get(ctx, OPS_UID).await?,
            None => None,
        },
        _ => None,
    };
    match account {
        Some(account) if account.status == AccountStatus::Ready => Ok(account),
        _ => Err(crate::error::SETUP_INCOMPLETE.into()),
    }
}

/// The operators' account exists from the start.
pub async fn ensure_ops_account(ctx: &Context) -> StoreResult<()> {
    let account = Account {
        uid: OPS_UID.into(),
        email: format!("operators@{}", ctx.config.service_domain),
        status: AccountStatus::Ready,
        created_at: crate::clock::iso(ctx.clock.now()),
        key_digest: None,
        key_id: None,
        key_last4: None,
    };
    ctx.store.put_new(item(&keys::account(OPS_UID), &account)).await?;
    Ok(())
}
