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
    /// Requests under way now.
    in_flight: AtomicU64,
    /// Requests begun while none was under way: the store round trips one
    /// after another, for a caller that makes one request of its own at a
    /// time (a benchmark's or a test's single client).
    round_trips: AtomicU64,
    /// Write units by DynamoDB's rule: 1 per KB begun of each item written
    /// (an item's size taken as its JSON's; an update or a delete counted
    /// at 1 KB), twice that inside a transaction, a condition check
    /// included.
    write_units: AtomicU64,
}

/// The round trips and write units of [`Meter`] at one moment.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Cost {
    pub round_trips: u64,
    pub write_units: u64,
}

impl Cost {
    pub fn since(&self, earlier: &Cost) -> Cost {
        Cost {
            round_trips: self.round_trips - earlier.round_trips,
            write_units: self.write_units - earlier.write_units,
        }
    }
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

    pub fn cost(&self) -> Cost {
        Cost {
            round_trips: self.round_trips.load(Ordering::Relaxed),
            write_units: self.write_units.load(Ordering::Relaxed),
        }
    }

    /// One request begun: counted as a round trip of its own when no other
    /// was under way; under way until the answer is dropped. It yields once
    /// first, so the requests a caller starts together (`tokio::join!`) are
    /// all under way before any is answered, even on a store that answers
    /// at once (the embedded one).
    async fn begin(&self, write_units: u64) -> InFlight<'_> {
        if self.in_flight.fetch_add(1, Ordering::SeqCst) == 0 {
            tick(&self.round_trips);
        }
        self.write_units.fetch_add(write_units, Ordering::Relaxed);
        let flight = InFlight(self);
        tokio::task::yield_now().await;
        flight
    }
}

struct InFlight<'a>(&'a Meter);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Write units of one item of `bytes` (DynamoDB: per KB begun, at least 1).
fn units(bytes: usize) -> u64 {
    bytes.div_ceil(1024).max(1) as u64
}

fn item_units(item: &Item) -> u64 {
    units(serde_json::to_vec(item).map_or(0, |bytes| bytes.len()))
}

fn write_units(write: &Write) -> u64 {
    match write {
        Write::Put { item, .. } => item_units(item),
        Write::Update { .. } | Write::Delete { .. } | Write::Check { .. } => 1,
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
        let _flight = self.meter.begin(0).await;
        self.inner.get(key).await
    }
    async fn put(&self, item: Item, cond: Option<Cond>) -> StoreResult<()> {
        tick(&self.meter.puts);
        let _flight = self.meter.begin(item_units(&item)).await;
        self.inner.put(item, cond).await
    }
    async fn update(&self, key: &Key, update: Update, cond: Option<Cond>) -> StoreResult<Item> {
        tick(&self.meter.updates);
        let _flight = self.meter.begin(1).await;
        self.inner.update(key, update, cond).await
    }
    async fn delete(&self, key: &Key, cond: Option<Cond>) -> StoreResult<Option<Item>> {
        tick(&self.meter.deletes);
        let _flight = self.meter.begin(1).await;
        self.inner.delete(key, cond).await
    }
    async fn query(&self, query: &Query) -> StoreResult<Page> {
        tick(&self.meter.queries);
        let _flight = self.meter.begin(0).await;
        self.inner.query(query).await
    }
    async fn query_raw(&self, query: &Query) -> StoreResult<RawPage> {
        tick(&self.meter.queries);
        let _flight = self.meter.begin(0).await;
        self.inner.query_raw(query).await
    }
    async fn get_many(&self, keys: &[Key]) -> StoreResult<Vec<Option<Item>>> {
        tick(&self.meter.batch_gets);
        let _flight = self.meter.begin(0).await;
        self.inner.get_many(keys).await
    }
    async fn transact(&self, writes: Vec<Write>) -> StoreResult<()> {
        tick(&self.meter.transactions);
        let _flight = self.meter.begin(2 * writes.iter().map(write_units).sum::<u64>()).await;
        self.inner.transact(writes).await
    }
}
