//! The richer operations every service uses, written once over the `Store`
//! primitives, so each backend implements only the DynamoDB-shaped six.

use async_trait::async_trait;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::{Cond, Item, Key, Query, Store, StoreError, StoreResult, Update, key_of, record};

#[async_trait]
pub trait StoreExt {
    /// One item read back as its record.
    async fn read<T: DeserializeOwned>(&self, key: &Key) -> StoreResult<Option<T>>;
    /// Every item a query matches, page after page.
    async fn all(&self, query: Query) -> StoreResult<Vec<Item>>;
    /// Every record a query matches.
    async fn all_records<T: DeserializeOwned + Send>(&self, query: Query) -> StoreResult<Vec<T>>;
    /// Writes the item only where none exists: whether it was written.
    async fn put_new(&self, item: Item) -> StoreResult<bool>;
    /// Adds `delta` to a numeric field (from 0 when absent): its new value.
    async fn add(&self, key: &Key, field: &str, delta: i64) -> StoreResult<i64>;
    /// Deletes every item of a partition: how many.
    async fn delete_partition(&self, pk: &str) -> StoreResult<usize>;
}

#[async_trait]
impl<S: Store + ?Sized> StoreExt for S {
    async fn read<T: DeserializeOwned>(&self, key: &Key) -> StoreResult<Option<T>> {
        self.get(key).await?.map(record).transpose()
    }

    async fn all(&self, query: Query) -> StoreResult<Vec<Item>> {
        let mut items = Vec::new();
        let mut query = query;
        loop {
            let page = self.query(&query).await?;
            items.extend(page.items);
            match page.next {
                Some(next) => query = query.after(Some(next)),
                None => return Ok(items),
            }
        }
    }

    async fn all_records<T: DeserializeOwned + Send>(&self, query: Query) -> StoreResult<Vec<T>> {
        self.all(query).await?.into_iter().map(record).collect()
    }

    async fn put_new(&self, item: Item) -> StoreResult<bool> {
        match self.put(item, Some(Cond::NotExists)).await {
            Ok(()) => Ok(true),
            Err(StoreError::ConditionFailed) => Ok(false),
            Err(e) => Err(e),
        }
    }

    async fn add(&self, key: &Key, field: &str, delta: i64) -> StoreResult<i64> {
        let item = self.update(key, Update::new().add(field, delta), None).await?;
        Ok(item.get(field).and_then(Value::as_i64).unwrap_or(0))
    }

    async fn delete_partition(&self, pk: &str) -> StoreResult<usize> {
        let mut deleted = 0;
        loop {
            let page = self.query(&Query::partition(pk).limit(200)).await?;
            if page.items.is_empty() {
                return Ok(deleted);
            }
            for key in page.items.iter().filter_map(key_of) {
                self.delete(&key, None).await?;
                deleted += 1;
            }
        }
    }
}
