//! DynamoDB's limits, enforced by the embedded backend too, so a test on it
//! fails where DynamoDB would refuse: key sizes, item size, transaction size,
//! one write per key in a transaction, no empty key strings, ADD on numbers.

use std::collections::HashSet;

use serde_json::Value;

use super::{Item, Key, PK, SK, StoreError, StoreResult, Update, Write};

/// A partition key's largest size in bytes.
pub const MAX_PK: usize = 2048;
/// A sort key's largest size in bytes.
pub const MAX_SK: usize = 1024;
/// An item's largest size (names and values), 400 KB.
pub const MAX_ITEM: usize = 400 * 1024;
/// The most writes (and checks) one transaction may hold.
pub const MAX_TRANSACTION: usize = 100;
/// The most keys one BatchGetItem may ask for.
pub const MAX_BATCH_GET: usize = 100;

fn refused(why: impl Into<String>) -> StoreError {
    StoreError::Invalid(why.into())
}

pub fn key(key: &Key) -> StoreResult<()> {
    if key.pk.is_empty() || key.sk.is_empty() {
        return Err(refused("a key attribute is an empty string"));
    }
    if key.pk.len() > MAX_PK {
        return Err(refused(format!(
            "partition key of {} bytes (max {MAX_PK})",
            key.pk.len()
        )));
    }
    if key.sk.len() > MAX_SK {
        return Err(refused(format!("sort key of {} bytes (max {MAX_SK})", key.sk.len())));
    }
    Ok(())
}

/// An item's size as DynamoDB counts it, near enough: attribute names plus
/// values (strings by their UTF-8 length, numbers and nested values by their
/// JSON text).
pub fn size(item: &Item) -> usize {
    item.iter()
        .map(|(name, value)| {
            name.len()
                + match value {
                    Value::String(s) => s.len(),
                    other => json_len(other),
                }
        })
        .sum()
}

/// The length of a value's JSON text, counted as it is written (no copy).
fn json_len(value: &Value) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0 += bytes.len();
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    // Writing to a counter cannot fail.
    let _ = serde_json::to_writer(&mut count, value);
    count.0
}

pub fn item(item: &Item) -> StoreResult<()> {
    let k = super::key_of(item).ok_or_else(|| refused(format!("item without string {PK} and {SK}")))?;
    key(&k)?;
    let size = size(item);
    if size > MAX_ITEM {
        return Err(refused(format!("item of {size} bytes (max {MAX_ITEM})")));
    }
    Ok(())
}

/// ADD only on numbers (or an absent attribute), and no change to a key
/// attribute (setting one to the key's own value changes nothing).
pub fn update(key: &Key, update: &Update, current: Option<&Item>) -> StoreResult<()> {
    for (name, _) in &update.add {
        if name == PK || name == SK {
            return Err(refused("ADD on a key attribute"));
        }
        match current.and_then(|i| i.get(name)) {
            None | Some(Value::Number(_)) => {}
            Some(_) => return Err(refused(format!("ADD on {name}, which is not a number"))),
        }
    }
    let changes = |name: &str, own: &str| update.set.get(name).is_some_and(|v| v.as_str() != Some(own));
    if changes(PK, &key.pk) || changes(SK, &key.sk) || update.remove.iter().any(|n| n == PK || n == SK) {
        return Err(refused("an update changes a key attribute"));
    }
    Ok(())
}

pub fn batch_get(keys: &[Key]) -> StoreResult<()> {
    if keys.is_empty() || keys.len() > MAX_BATCH_GET {
        return Err(refused(format!(
            "a batch of {} keys (1 to {MAX_BATCH_GET})",
            keys.len()
        )));
    }
    for (i, k) in keys.iter().enumerate() {
        key(k)?;
        // At most 100 keys: comparing with the earlier ones beats hashing
        // them for the two or three a request reads.
        if keys[..i].contains(k) {
            return Err(refused("two keys of one batch the same"));
        }
    }
    Ok(())
}

pub fn transaction(writes: &[Write]) -> StoreResult<()> {
    if writes.is_empty() || writes.len() > MAX_TRANSACTION {
        return Err(refused(format!(
            "a transaction of {} items (1 to {MAX_TRANSACTION})",
            writes.len()
        )));
    }
    let mut seen = HashSet::new();
    for write in writes {
        let k = match write {
            Write::Put { item: i, .. } => {
                item(i)?;
                super::key_of(i).expect("checked")
            }
            Write::Update { key: k, .. } | Write::Delete { key: k, .. } | Write::Check { key: k, .. } => {
                key(k)?;
                k.clone()
            }
        };
        if !seen.insert((k.pk, k.sk)) {
            return Err(refused("two operations of one transaction on the same item"));
        }
    }
    Ok(())
}
