//! The embedded backend: one redb file (or memory), items stored as JSON.
//!
//! Reads run where they are called. Writes go to the store's one writer
//! thread, which takes every write waiting when it wakes and applies them in
//! order, each checking its conditions against what the ones before it
//! wrote, in one redb write transaction with one commit (group commit): the
//! writes of concurrent requests and filings share a commit's fsync instead
//! of queueing one fsync each. A write is answered only once its commit is
//! durable; each write checks every condition and computes every item before
//! it inserts anything, so a refused write leaves nothing behind in the
//! shared transaction, and a write that fails inside redb fails its whole
//! batch (nothing of it is committed).

use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::sync::{Arc, mpsc};

use async_trait::async_trait;
use redb::{Database, ReadableDatabase, ReadableTable, TableDefinition};
use tokio::sync::OnceCell;

use super::{
    Cond, Item, Key, Page, Query, RawItem, RawPage, SortRange, Store, StoreError, StoreResult, Update, Write, limits,
};

const ITEMS: TableDefinition<(&str, &str), &[u8]> = TableDefinition::new("items");
/// Sorts after every sort key the services write.
const HIGHEST: &str = "\u{10FFFF}";

#[derive(Clone)]
pub struct EmbeddedStore {
    db: Arc<OnceCell<Opened>>,
    /// The file [`EmbeddedStore::open_at_first_use`] opens.
    path: Option<PathBuf>,
}

/// An open database and its writer thread's queue. Dropping the last clone
/// of the store ends the thread and waits for it, so the file is released
/// when the drop returns (another process, or another store in this one,
/// may open it next).
struct Opened {
    db: Arc<Database>,
    writes: Option<mpsc::Sender<Job>>,
    writer: Option<std::thread::JoinHandle<()>>,
}

impl Opened {
    fn new(db: Database) -> Opened {
        let db = Arc::new(db);
        let (writes, queue) = mpsc::channel();
        let for_writer = db.clone();
        let writer = std::thread::Builder::new()
            .name("redb-writer".into())
            .spawn(move || writer(&for_writer, &queue))
            .expect("spawning the store's writer thread");
        Opened {
            db,
            writes: Some(writes),
            writer: Some(writer),
        }
    }
}

impl Drop for Opened {
    fn drop(&mut self) {
        // The closed queue ends the writer's loop; it then drops its handle
        // on the database.
        self.writes.take();
        if let Some(writer) = self.writer.take()
            && writer.thread().id() != std::thread::current().id()
        {
            let _ = writer.join();
        }
    }
}

/// The most writes one commit takes.
const BATCH: usize = 128;

/// What a write gives the writer thread: run inside the batch's transaction
/// (or, with `None`, not run because its batch failed first), it answers
/// with a function that sends its result once the commit's outcome is known.
type Job = Box<dyn FnOnce(Option<&mut Txn<'_>>) -> Finish + Send>;
type Finish = Box<dyn FnOnce(Result<(), String>) + Send>;

/// The writer thread: one transaction and one commit for every write
/// waiting, until the store is dropped.
fn writer(db: &Database, queue: &mpsc::Receiver<Job>) {
    while let Ok(first) = queue.recv() {
        let mut batch = vec![first];
        while batch.len() < BATCH {
            match queue.try_recv() {
                Ok(job) => batch.push(job),
                Err(_) => break,
            }
        }
        commit_batch(db, batch);
    }
}

fn commit_batch(db: &Database, batch: Vec<Job>) {
    let txn = match db.begin_write() {
        Ok(txn) => txn,
        Err(e) => return fail(batch, &e.to_string()),
    };
    let mut finishes = Vec::with_capacity(batch.len());
    let broken = {
        let table = match txn.open_table(ITEMS) {
            Ok(table) => table,
            Err(e) => return fail(batch, &e.to_string()),
        };
        let mut t = Txn { table, broken: false };
        for job in batch {
            if t.broken {
                finishes.push(job(None));
                continue;
            }
            // A write that panics leaves the transaction in a state no one
            // knows: the batch is given up (its sender was dropped, so its
            // caller hears the writer went away).
            match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| job(Some(&mut t)))) {
                Ok(finish) => finishes.push(finish),
                Err(_) => t.broken = true,
            }
        }
        t.broken
    };
    let outcome = match broken {
        // Dropped uncommitted: nothing of the batch is written.
        true => Err("a write of its batch failed inside the store; nothing was written".to_string()),
        false => txn.commit().map_err(|e| e.to_string()),
    };
    for finish in finishes {
        finish(outcome.clone());
    }
}

fn fail(batch: Vec<Job>, why: &str) {
    for job in batch {
        job(None)(Err(why.to_string()));
    }
}

/// The batch's table. `broken` is set when redb fails during an insert or a
/// removal: what the transaction holds is then unknown, and it is dropped.
struct Txn<'t> {
    table: Table<'t>,
    broken: bool,
}

impl Txn<'_> {
    fn get(&self, key: &Key) -> StoreResult<Option<Item>> {
        read(&self.table, key)
    }

    fn insert(&mut self, key: &Key, bytes: &[u8]) -> StoreResult<()> {
        let done = self.table.insert((key.pk.as_str(), key.sk.as_str()), bytes);
        self.broken |= done.is_err();
        done.map(drop).map_err(backend)
    }

    fn remove(&mut self, key: &Key) -> StoreResult<()> {
        let done = self.table.remove((key.pk.as_str(), key.sk.as_str()));
        self.broken |= done.is_err();
        done.map(drop).map_err(backend)
    }
}

fn backend<E: std::fmt::Display>(e: E) -> StoreError {
    StoreError::Backend(e.to_string())
}

impl EmbeddedStore {
    pub fn open(path: &Path) -> StoreResult<Self> {
        Ok(Self::opened(create(path)?))
    }

    /// A store whose file opens when it is first used. Opening a redb file
    /// for writing writes its header and syncs it to disk, and a Lambda
    /// function's init writes nothing (the first request pays instead). An
    /// open that fails is tried again by the next use.
    pub fn open_at_first_use(path: &Path) -> Self {
        Self {
            db: Arc::new(OnceCell::new()),
            path: Some(path.to_path_buf()),
        }
    }

    pub fn in_memory() -> StoreResult<Self> {
        let db = Database::builder()
            .create_with_backend(redb::backends::InMemoryBackend::new())
            .map_err(backend)?;
        Ok(Self::opened(with_items_table(db)?))
    }

    fn opened(db: Database) -> Self {
        Self {
            db: Arc::new(OnceCell::new_with(Some(Opened::new(db)))),
            path: None,
        }
    }

    async fn opened_db(&self) -> StoreResult<&Opened> {
        self.db
            .get_or_try_init(|| async {
                let path = self.path.clone().ok_or_else(|| backend("the store has no file"))?;
                let db = tokio::task::spawn_blocking(move || create(&path))
                    .await
                    .map_err(backend)??;
                Ok(Opened::new(db))
            })
            .await
    }

    /// A read runs where it is called: a redb read transaction is a snapshot
    /// that takes no lock and, on cached pages, microseconds, less than the
    /// hand-off to a blocking thread would cost. Queries too: the services
    /// read pages of at most a few hundred items.
    async fn read_now<T>(&self, f: impl FnOnce(&Database) -> StoreResult<T>) -> StoreResult<T> {
        f(&self.opened_db().await?.db)
    }

    /// A write, made by the writer thread in the next batch; answered once
    /// that batch's commit is durable.
    async fn write<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Txn<'_>) -> StoreResult<T> + Send + 'static,
    ) -> StoreResult<T> {
        let opened = self.opened_db().await?;
        let (answer, answered) = tokio::sync::oneshot::channel();
        let job: Job = Box::new(move |txn: Option<&mut Txn<'_>>| {
            let result = match txn {
                Some(txn) => f(txn),
                None => Err(backend(
                    "a write of its batch failed inside the store; nothing was written",
                )),
            };
            Box::new(move |commit: Result<(), String>| {
                let _ = answer.send(match (result, commit) {
                    (Ok(value), Ok(())) => Ok(value),
                    (Ok(_), Err(e)) => Err(StoreError::Backend(e)),
                    (Err(refused), _) => Err(refused),
                });
            })
        });
        let gone = || backend("the store's writer stopped");
        opened.writes.as_ref().ok_or_else(gone)?.send(job).map_err(|_| gone())?;
        answered.await.map_err(|_| gone())?
    }
}

fn create(path: &Path) -> StoreResult<Database> {
    with_items_table(Database::create(path).map_err(backend)?)
}

fn with_items_table(db: Database) -> StoreResult<Database> {
    // A write (and its fsync) only on a new file: opening an existing
    // store, as every start after the first does, writes nothing more.
    let exists = db.begin_read().map_err(backend)?.open_table(ITEMS).is_ok();
    if !exists {
        let txn = db.begin_write().map_err(backend)?;
        txn.open_table(ITEMS).map_err(backend)?;
        txn.commit().map_err(backend)?;
    }
    Ok(db)
}

fn decode(bytes: &[u8]) -> StoreResult<Item> {
    serde_json::from_slice(bytes).map_err(backend)
}

fn encode(item: &Item) -> StoreResult<Vec<u8>> {
    serde_json::to_vec(item).map_err(backend)
}

fn key_parts(item: &Item) -> StoreResult<Key> {
    super::key_of(item).ok_or_else(|| StoreError::Backend("item without pk and sk".into()))
}

type Table<'t> = redb::Table<'t, (&'static str, &'static str), &'static [u8]>;

fn read(table: &Table<'_>, key: &Key) -> StoreResult<Option<Item>> {
    match table.get((key.pk.as_str(), key.sk.as_str())).map_err(backend)? {
        Some(v) => Ok(Some(decode(v.value())?)),
        None => Ok(None),
    }
}

/// The items of one partition a query reads, each made by `each` from its
/// sort key and stored bytes, and the continuation token when more follow.
/// Runs where it is called, as reads do (see `read_now`).
fn scan<T>(
    db: &Database,
    query: &Query,
    mut each: impl FnMut(&str, &[u8]) -> StoreResult<T>,
) -> StoreResult<(Vec<T>, Option<String>)> {
    if query.pk.is_empty() || query.pk.len() > limits::MAX_PK {
        return Err(StoreError::Invalid("query partition key size".into()));
    }
    let txn = db.begin_read().map_err(backend)?;
    let table = txn.open_table(ITEMS).map_err(backend)?;
    let pk = query.pk.as_str();
    let (lo, hi) = match &query.range {
        SortRange::All => (String::new(), HIGHEST.to_string()),
        SortRange::Prefix(p) => (p.clone(), format!("{p}{HIGHEST}")),
        SortRange::Between(a, b) => (a.clone(), b.clone()),
    };
    let mut lower = Bound::Included((pk, lo.as_str()));
    let mut upper = Bound::Included((pk, hi.as_str()));
    if let Some(after) = query.after.as_deref() {
        if query.forward && after >= lo.as_str() {
            lower = Bound::Excluded((pk, after));
        } else if !query.forward && after <= hi.as_str() {
            upper = Bound::Excluded((pk, after));
        }
    }
    let range = table.range::<(&str, &str)>((lower, upper)).map_err(backend)?;
    let entries: Box<dyn Iterator<Item = _>> = if query.forward {
        Box::new(range)
    } else {
        Box::new(range.rev())
    };
    let mut items = Vec::new();
    let mut last = None;
    for entry in entries {
        let (k, v) = entry.map_err(backend)?;
        if items.len() == query.limit {
            // One more exists: the page ends at the last item taken.
            let next = last.map(|k: redb::AccessGuard<(&str, &str)>| k.value().1.to_string());
            return Ok((items, next));
        }
        items.push(each(k.value().1, v.value())?);
        last = Some(k);
    }
    Ok((items, None))
}

fn check(cond: Option<&Cond>, current: Option<&Item>) -> StoreResult<()> {
    match cond {
        Some(c) if !c.holds(current) => Err(StoreError::ConditionFailed),
        _ => Ok(()),
    }
}

/// The item an update makes of what is stored, checked against the limits
/// (nothing is written yet).
fn updated(txn: &Txn<'_>, key: &Key, update: &Update) -> StoreResult<Item> {
    let current = txn.get(key)?;
    limits::update(key, update, current.as_ref())?;
    let item = update.apply(key, current);
    limits::item(&item)?;
    Ok(item)
}

#[async_trait]
impl Store for EmbeddedStore {
    async fn get(&self, key: &Key) -> StoreResult<Option<Item>> {
        limits::key(key)?;
        self.read_now(|db| {
            let txn = db.begin_read().map_err(backend)?;
            let table = txn.open_table(ITEMS).map_err(backend)?;
            match table.get((key.pk.as_str(), key.sk.as_str())).map_err(backend)? {
                Some(v) => Ok(Some(decode(v.value())?)),
                None => Ok(None),
            }
        })
        .await
    }

    async fn put(&self, item: Item, cond: Option<Cond>) -> StoreResult<()> {
        limits::item(&item)?;
        let key = key_parts(&item)?;
        let bytes = encode(&item)?;
        self.write(move |txn| {
            check(cond.as_ref(), txn.get(&key)?.as_ref())?;
            txn.insert(&key, &bytes)
        })
        .await
    }

    async fn update(&self, key: &Key, update: Update, cond: Option<Cond>) -> StoreResult<Item> {
        limits::key(key)?;
        let key = key.clone();
        self.write(move |txn| {
            check(cond.as_ref(), txn.get(&key)?.as_ref())?;
            let item = updated(txn, &key, &update)?;
            txn.insert(&key, &encode(&item)?)?;
            Ok(item)
        })
        .await
    }

    async fn delete(&self, key: &Key, cond: Option<Cond>) -> StoreResult<Option<Item>> {
        limits::key(key)?;
        let key = key.clone();
        self.write(move |txn| {
            let current = txn.get(&key)?;
            check(cond.as_ref(), current.as_ref())?;
            txn.remove(&key)?;
            Ok(current)
        })
        .await
    }

    async fn query(&self, query: &Query) -> StoreResult<Page> {
        let (items, next) = self.read_now(|db| scan(db, query, |_, json| decode(json))).await?;
        Ok(Page { items, next })
    }

    async fn query_raw(&self, query: &Query) -> StoreResult<RawPage> {
        let (items, next) = self
            .read_now(|db| {
                scan(db, query, |sk, json| {
                    Ok(RawItem {
                        sk: sk.to_string(),
                        json: json.to_vec(),
                    })
                })
            })
            .await?;
        Ok(RawPage { items, next })
    }

    async fn get_many(&self, keys: &[Key]) -> StoreResult<Vec<Option<Item>>> {
        limits::batch_get(keys)?;
        self.read_now(|db| {
            let txn = db.begin_read().map_err(backend)?;
            let table = txn.open_table(ITEMS).map_err(backend)?;
            keys.iter()
                .map(
                    |key| match table.get((key.pk.as_str(), key.sk.as_str())).map_err(backend)? {
                        Some(v) => Ok(Some(decode(v.value())?)),
                        None => Ok(None),
                    },
                )
                .collect()
        })
        .await
    }

    async fn transact(&self, writes: Vec<Write>) -> StoreResult<()> {
        limits::transaction(&writes)?;
        self.write(move |txn| {
            // Every condition first, then every item made (`limits` holds
            // one write per key, so each is made from what was stored), and
            // only then anything written: a refusal leaves nothing behind.
            for write in &writes {
                let (key, cond) = match write {
                    Write::Put { item, cond } => (key_parts(item)?, cond.as_ref()),
                    Write::Update { key, cond, .. } | Write::Delete { key, cond } => (key.clone(), cond.as_ref()),
                    Write::Check { key, cond } => (key.clone(), Some(cond)),
                };
                check(cond, txn.get(&key)?.as_ref())?;
            }
            let mut made: Vec<(Key, Option<Vec<u8>>)> = Vec::with_capacity(writes.len());
            for write in &writes {
                match write {
                    Write::Put { item, .. } => made.push((key_parts(item)?, Some(encode(item)?))),
                    Write::Update { key, update, .. } => {
                        made.push((key.clone(), Some(encode(&updated(txn, key, update)?)?)));
                    }
                    Write::Delete { key, .. } => made.push((key.clone(), None)),
                    Write::Check { .. } => {}
                }
            }
            for (key, bytes) in made {
                match bytes {
                    Some(bytes) => txn.insert(&key, &bytes)?,
                    None => txn.remove(&key)?,
                }
            }
            Ok(())
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::store::item;

    /// A dropped store has let go of its file when the drop returns: the
    /// next opener (a Lambda function after another, a test reading what a
    /// server wrote) finds it free at once, the write made before it kept.
    #[tokio::test]
    async fn a_dropped_store_releases_its_file_at_once() {
        let dir = std::env::temp_dir().join(format!("mh-release-{:x}", rand::random::<u64>()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("store.redb");
        let key = Key::new("P", "s");
        for round in 0..20 {
            let store = EmbeddedStore::open(&path).expect("released by the round before");
            store.put(item(&key, &json!({"round": round})), None).await.unwrap();
            drop(store);
        }
        let store = EmbeddedStore::open(&path).unwrap();
        assert_eq!(store.get(&key).await.unwrap().unwrap()["round"], 19);
        drop(store);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Writes made at once share commits, and each is all or nothing on its
    /// own: a refused write in a batch leaves nothing behind, and its
    /// neighbours are written.
    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn writes_sharing_a_commit_each_succeed_or_fail_whole() {
        let dir = std::env::temp_dir().join(format!("mh-group-{:x}", rand::random::<u64>()));
        std::fs::create_dir_all(&dir).unwrap();
        let store = EmbeddedStore::open(&dir.join("store.redb")).unwrap();
        let counter = Key::new("C", "c");
        store
            .put(item(&counter, &json!({"n": 0, "label": "text"})), None)
            .await
            .unwrap();
        let writes = (0..200).map(|i| {
            let store = store.clone();
            let counter = counter.clone();
            tokio::spawn(async move {
                let row = Write::Put {
                    item: item(&Key::new("R", format!("{i:03}")), &json!({"i": i})),
                    cond: None,
                };
                let second = match i % 3 {
                    // Counted: every third write adds one.
                    0 => Write::Update {
                        key: counter,
                        update: Update::new().add("n", 1),
                        cond: None,
                    },
                    // Refused by its condition, after a put it must not keep.
                    1 => Write::Check {
                        key: counter,
                        cond: Cond::eq("n", -1),
                    },
                    // Refused by the limits (ADD on text) once its put is made.
                    _ => Write::Update {
                        key: counter,
                        update: Update::new().add("label", 1),
                        cond: None,
                    },
                };
                (i, store.transact(vec![row, second]).await)
            })
        });
        let results = futures::future::join_all(writes).await;
        for result in results {
            let (i, result) = result.unwrap();
            let kept = store.get(&Key::new("R", format!("{i:03}"))).await.unwrap();
            match i % 3 {
                0 => assert!(result.is_ok() && kept.is_some(), "{i}: {result:?}"),
                1 => assert!(
                    matches!(result, Err(StoreError::ConditionFailed)) && kept.is_none(),
                    "{i}"
                ),
                _ => assert!(matches!(result, Err(StoreError::Invalid(_))) && kept.is_none(), "{i}"),
            }
        }
        let n = store.get(&counter).await.unwrap().unwrap()["n"].as_i64();
        assert_eq!(n, Some(67));
        drop(store);
        std::fs::remove_dir_all(dir).ok();
    }
}
