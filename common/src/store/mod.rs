//! The storage contract every backend meets, in DynamoDB's shape and nothing more.
//!
//! Items are JSON objects keyed by a partition key (`pk`) and a sort key (`sk`).
//! Contract, which the conformance suite checks on every backend:
//! - Reads are strongly consistent: a read after a successful write sees it.
//! - `put`, `update`, `delete` and `transact` evaluate their condition and apply the
//!   write atomically; a false condition changes nothing and returns
//!   [`StoreError::ConditionFailed`].
//! - `update` with `add` is an atomic numeric add; a missing attribute counts as 0.
//!   A missing item is created, as DynamoDB's UpdateItem does (guard with
//!   `Cond::Exists` when that is not wanted).
//! - `transact` applies all writes or none.
//! - `query` reads one partition in sort-key order, bounded by `limit`, and hands
//!   back a continuation token when more items may follow.
//!
//! Every rule that must hold under concurrency is written as a condition or a
//! transaction here, never as read-then-write in a service.

mod cond;
pub mod conformance;
pub mod dynamo;
pub mod embedded;
pub mod limits;
pub mod metered;
mod ops;

/// A stored status is compared and set as its typed value, never as a
/// string literal: `stored_as_json!(Status)` beside the enum makes it the
/// JSON value serde writes for it.
macro_rules! stored_as_json {
    ($($status:ty),* $(,)?) => {$(
        impl From<$status> for serde_json::Value {
            fn from(status: $status) -> serde_json::Value {
                serde_json::to_value(status).expect("a status serializes")
            }
        }
    )*};
}
pub(crate) use stored_as_json;

pub use ops::StoreExt;

use async_trait::async_trait;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

pub use cond::{Cond, Update};

pub type Item = serde_json::Map<String, Value>;

pub const PK: &str = "pk";
pub const SK: &str = "sk";
/// Epoch seconds after which the backend may delete the item (DynamoDB TTL).
pub const TTL: &str = "ttl";

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Key {
    pub pk: String,
    pub sk: String,
}

impl Key {
    pub fn new(pk: impl Into<String>, sk: impl Into<String>) -> Self {
        Self {
            pk: pk.into(),
            sk: sk.into(),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("condition failed")]
    ConditionFailed,
    #[error("storage backend: {0}")]
    Backend(String),
    /// Throttled, failing or unreachable through the SDK's retries: worth
    /// asking again shortly (the API answers 503 with Retry-After).
    #[error("storage unavailable: {0}")]
    Unavailable(String),
    /// A request DynamoDB refuses as invalid (see `limits`).
    #[error("refused by the store's limits: {0}")]
    Invalid(String),
}

pub type StoreResult<T> = Result<T, StoreError>;

/// A query over one partition.
#[derive(Debug, Clone)]
pub struct Query {
    pub pk: String,
    pub range: SortRange,
    pub limit: usize,
    /// true: ascending sort keys; false: descending.
    pub forward: bool,
    /// Continuation token from a previous page.
    pub after: Option<String>,
}

#[derive(Debug, Clone, Default)]
pub enum SortRange {
    #[default]
    All,
    Prefix(String),
    /// Inclusive on both ends.
    Between(String, String),
}

impl Query {
    pub fn partition(pk: impl Into<String>) -> Self {
        Self {
            pk: pk.into(),
            range: SortRange::All,
            limit: 100,
            forward: true,
            after: None,
        }
    }
    pub fn prefix(mut self, prefix: impl Into<String>) -> Self {
        self.range = SortRange::Prefix(prefix.into());
        self
    }
    pub fn between(mut self, from: impl Into<String>, to: impl Into<String>) -> Self {
        self.range = SortRange::Between(from.into(), to.into());
        self
    }
    pub fn limit(mut self, limit: usize) -> Self {
        self.limit = limit;
        self
    }
    pub fn backward(mut self) -> Self {
        self.forward = false;
        self
    }
    pub fn after(mut self, token: Option<String>) -> Self {
        self.after = token;
        self
    }

    /// Whether a sort key falls inside the range (used by backends that filter).
    pub fn admits(&self, sk: &str) -> bool {
        match &self.range {
            SortRange::All => true,
            SortRange::Prefix(p) => sk.starts_with(p.as_str()),
            SortRange::Between(a, b) => sk >= a.as_str() && sk <= b.as_str(),
        }
    }
}

#[derive(Debug, Clone, Default)]
pub struct Page {
    pub items: Vec<Item>,
    /// Present when more items may follow; pass it back as `Query::after`.
    pub next: Option<String>,
}

/// A [`Page`] whose items are JSON text beside their sort keys.
#[derive(Debug, Clone, Default)]
pub struct RawPage {
    pub items: Vec<RawItem>,
    pub next: Option<String>,
}

#[derive(Debug, Clone)]
pub struct RawItem {
    pub sk: String,
    /// The whole item, `pk` and `sk` included, as a JSON object.
    pub json: Vec<u8>,
}

impl RawItem {
    /// The item read as its record, straight from the text: fields the
    /// record does not name are skipped, not built.
    pub fn record<T: DeserializeOwned>(&self) -> StoreResult<T> {
        serde_json::from_slice(&self.json).map_err(not_its_record)
    }
}

/// One write inside a transaction.
#[derive(Debug, Clone)]
pub enum Write {
    Put {
        item: Item,
        cond: Option<Cond>,
    },
    Update {
        key: Key,
        update: Update,
        cond: Option<Cond>,
    },
    Delete {
        key: Key,
        cond: Option<Cond>,
    },
    /// Writes nothing; the transaction fails unless the condition holds.
    Check {
        key: Key,
        cond: Cond,
    },
}

#[async_trait]
pub trait Store: Send + Sync {
    async fn get(&self, key: &Key) -> StoreResult<Option<Item>>;
    async fn put(&self, item: Item, cond: Option<Cond>) -> StoreResult<()>;
    /// Returns the item as it is after the update.
    async fn update(&self, key: &Key, update: Update, cond: Option<Cond>) -> StoreResult<Item>;
    /// Returns the item as it was, when there was one.
    async fn delete(&self, key: &Key, cond: Option<Cond>) -> StoreResult<Option<Item>>;
    async fn query(&self, query: &Query) -> StoreResult<Page>;
    /// `query`, each item as JSON text: a reader decodes it straight into its
    /// own type. The embedded store keeps items as JSON and hands over the
    /// bytes without decoding them; other backends encode their items.
    async fn query_raw(&self, query: &Query) -> StoreResult<RawPage> {
        let page = self.query(query).await?;
        let items = page
            .items
            .into_iter()
            .map(|item| {
                let sk = item.get(SK).and_then(Value::as_str).unwrap_or_default().to_string();
                let json = serde_json::to_vec(&item).map_err(|e| StoreError::Backend(e.to_string()))?;
                Ok(RawItem { sk, json })
            })
            .collect::<StoreResult<_>>()?;
        Ok(RawPage { items, next: page.next })
    }
    /// Several items in one request, in the order of `keys`: one read
    /// transaction on the embedded store, BatchGetItem on DynamoDB. At most
    /// 100 keys, no two the same.
    async fn get_many(&self, keys: &[Key]) -> StoreResult<Vec<Option<Item>>>;
    /// At most 100 writes, no two on the same key.
    async fn transact(&self, writes: Vec<Write>) -> StoreResult<()>;
}

/// Builds an item from a record and its key.
pub fn item<T: Serialize>(key: &Key, record: &T) -> Item {
    let mut item = match serde_json::to_value(record) {
        Ok(Value::Object(map)) => map,
        _ => Item::new(),
    };
    // Absent optional fields are dropped rather than stored as null, as DynamoDB
    // items usually are.
    item.retain(|_, v| !v.is_null());
    item.insert(PK.into(), Value::String(key.pk.clone()));
    item.insert(SK.into(), Value::String(key.sk.clone()));
    item
}

/// Reads a record back out of an item.
pub fn record<T: DeserializeOwned>(item: Item) -> StoreResult<T> {
    serde_json::from_value(Value::Object(item)).map_err(not_its_record)
}

fn not_its_record(e: serde_json::Error) -> StoreError {
    StoreError::Backend(format!("stored item does not match its record: {e}"))
}

pub fn key_of(item: &Item) -> Option<Key> {
    Some(Key::new(item.get(PK)?.as_str()?, item.get(SK)?.as_str()?))
}
