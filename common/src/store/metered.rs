//! A store wrapper that counts the requests made through it, by kind: what
//! `docs/data-model.md` promises per route, measured (the send benchmark prints it).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use async_trait::async_trait;

use super::{Cond, Item, Key, Page, Query, RawPage, Store, StoreResult, Update, Write};

#[derive(Debug, Default)]
pub struct Meter {
    pub gets: AtomicU64,
    pub batch_gets: AtomicU64,
    pub puts: AtomicU64,
    pub updates: AtomicU64,
    pub deletes: AtomicU64,
    pub queries: AtomicU64,
    pub transactions: AtomicU64,
}

/// A copy of the counters at one moment.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    pub gets: u64,
    pub batch_gets: u64,
    pub puts: u64,
    pub updates: u64,
    pub deletes: u64,
    pub queries: u64,
    pub transactions: u64,
}

impl Counts {
    pub fn total(&self) -> u64 {
        self.gets + self.batch_gets + self.puts + self.updates + self.deletes + self.queries + self.transactions
    }
    pub fn since(&self, earlier: &Counts) -> Counts {
        Counts {
            gets: self.gets - earlier.gets,
            batch_gets: self.batch_gets - earlier.batch_gets,
            puts: self.puts - earlier.puts,
            updates: self.updates - earlier.updates,
            deletes: self.deletes - earlier.deletes,
            queries: self.queries - earlier.queries,
            transactions: self.transactions - earlier.transactions,
        }
    }
}

impl Meter {
    pub fn counts(&self) -> Counts {
        let n = |c: &AtomicU64| c.load(Ordering::Relaxed);
        Counts {
            gets: n(&self.gets),
            batch_gets: n(&self.batch_gets),
            puts: n(&self.puts),
            updates: n(&self.updates),
            deletes: n(&self.deletes),
            queries: n(&self.queries),
            transactions: n(&self.transactions),
        }
    }
}

pub struct Metered {
    inner: Arc<dyn Store>,
    meter: Arc<Meter>,
}

impl Metered {
    pub fn new(inner: Arc<dyn Store>) -> (Self, Arc<Meter>) {
        let meter = Arc::new(Meter::default());
        (
            Self {
                inner,
                meter: meter.clone(),
            },
            meter,
        )
    }
}

fn tick(c: &AtomicU64) {
    c.fetch_add(1, Ordering::Relaxed);
}

#[async_trait]
impl Store for Metered {
    async fn get(&self, key: &Key) -> StoreResult<Option<Item>> {
        tick(&self.meter.gets);
        self.inner.get(key).await
    }
    async fn put(&self, item: Item, cond: Option<Cond>) -> StoreResult<()> {
        tick(&self.meter.puts);
        self.inner.put(item, cond).await
    }
    async fn update(&self, key: &Key, update: Update, cond: Option<Cond>) -> StoreResult<Item> {
        tick(&self.meter.updates);
        self.inner.update(key, update, cond).await
    }
    async fn delete(&self, key: &Key, cond: Option<Cond>) -> StoreResult<Option<Item>> {
        tick(&self.meter.deletes);
        self.inner.delete(key, cond).await
    }
    async fn query(&self, query: &Query) -> StoreResult<Page> {
        tick(&self.meter.queries);
        self.inner.query(query).await
    }
    async fn query_raw(&self, query: &Query) -> StoreResult<RawPage> {
        tick(&self.meter.queries);
        self.inner.query_raw(query).await
    }
    async fn get_many(&self, keys: &[Key]) -> StoreResult<Vec<Option<Item>>> {
        tick(&self.meter.batch_gets);
        self.inner.get_many(keys).await
    }
    async fn transact(&self, writes: Vec<Write>) -> StoreResult<()> {
        tick(&self.meter.transactions);
        self.inner.transact(writes).await
    }
}
