//! The embedded backend: one redb file (or memory), items stored as JSON.
//!
//! redb runs one write transaction at a time, so evaluating a condition and
//! applying the write inside the same write transaction is atomic.

use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::sync::Arc;

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
    db: Arc<OnceCell<Arc<Database>>>,
    /// The file [`EmbeddedStore::open_at_first_use`] opens.
    path: Option<PathBuf>,
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
            db: Arc::new(OnceCell::new_with(Some(Arc::new(db)))),
            path: None,
        }
    }

    async fn db(&self) -> StoreResult<&Arc<Database>> {
        self.db
            .get_or_try_init(|| async {
                let path = self.path.clone().ok_or_else(|| backend("the store has no file"))?;
                let db = tokio::task::spawn_blocking(move || create(&path))
                    .await
                    .map_err(backend)??;
                Ok(Arc::new(db))
            })
            .await
    }

    /// A read runs where it is called: a redb read transaction is a snapshot
    /// that takes no lock and, on cached pages, microseconds, less than the
    /// hand-off to a blocking thread would cost. Queries too: the services
    /// read pages of at most a few hundred items.
    async fn read_now<T>(&self, f: impl FnOnce(&Database) -> StoreResult<T>) -> StoreResult<T> {
        f(self.db().await?)
    }

    async fn blocking<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Database) -> StoreResult<T> + Send + 'static,
    ) -> StoreResult<T> {
        let db = self.db().await?.clone();
        tokio::task::spawn_blocking(move || f(&db)).await.map_err(backend)?
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

fn write_item(table: &mut Table<'_>, item: &Item) -> StoreResult<()> {
    let key = key_parts(item)?;
    table
        .insert((key.pk.as_str(), key.sk.as_str()), encode(item)?.as_slice())
        .map_err(backend)?;
    Ok(())
}

fn apply_update(table: &mut Table<'_>, key: &Key, update: &Update, cond: Option<&Cond>) -> StoreResult<Item> {
    let current = read(table, key)?;
    check(cond, current.as_ref())?;
    limits::update(key, update, current.as_ref())?;
    let item = update.apply(key, current);
    limits::item(&item)?;
    write_item(table, &item)?;
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
        self.blocking(move |db| {
            let txn = db.begin_write().map_err(backend)?;
            {
                let mut table = txn.open_table(ITEMS).map_err(backend)?;
                let current = read(&table, &key_parts(&item)?)?;
                check(cond.as_ref(), current.as_ref())?;
                write_item(&mut table, &item)?;
            }
            txn.commit().map_err(backend)
        })
        .await
    }

    async fn update(&self, key: &Key, update: Update, cond: Option<Cond>) -> StoreResult<Item> {
        limits::key(key)?;
        let key = key.clone();
        self.blocking(move |db| {
            let txn = db.begin_write().map_err(backend)?;
            let item = {
                let mut table = txn.open_table(ITEMS).map_err(backend)?;
                apply_update(&mut table, &key, &update, cond.as_ref())?
            };
            txn.commit().map_err(backend)?;
            Ok(item)
        })
        .await
    }

    async fn delete(&self, key: &Key, cond: Option<Cond>) -> StoreResult<Option<Item>> {
        limits::key(key)?;
        let key = key.clone();
        self.blocking(move |db| {
            let txn = db.begin_write().map_err(backend)?;
            let old = {
                let mut table = txn.open_table(ITEMS).map_err(backend)?;
                let current = read(&table, &key)?;
                check(cond.as_ref(), current.as_ref())?;
                table.remove((key.pk.as_str(), key.sk.as_str())).map_err(backend)?;
                current
            };
            txn.commit().map_err(backend)?;
            Ok(old)
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
        self.blocking(move |db| {
            let txn = db.begin_write().map_err(backend)?;
            {
                let mut table = txn.open_table(ITEMS).map_err(backend)?;
                // Evaluate every condition before writing anything, so a failure
                // leaves no partial write even before the abort.
                for write in &writes {
                    let (key, cond) = match write {
                        Write::Put { item, cond } => (key_parts(item)?, cond.as_ref()),
                        Write::Update { key, cond, .. } | Write::Delete { key, cond } => (key.clone(), cond.as_ref()),
                        Write::Check { key, cond } => (key.clone(), Some(cond)),
                    };
                    check(cond, read(&table, &key)?.as_ref())?;
                }
                for write in &writes {
                    match write {
                        Write::Put { item, .. } => write_item(&mut table, item)?,
                        Write::Update { key, update, .. } => {
                            apply_update(&mut table, key, update, None)?;
                        }
                        Write::Delete { key, .. } => {
                            table.remove((key.pk.as_str(), key.sk.as_str())).map_err(backend)?;
                        }
                        Write::Check { .. } => {}
                    }
                }
            }
            txn.commit().map_err(backend)
        })
        .await
    }
}
