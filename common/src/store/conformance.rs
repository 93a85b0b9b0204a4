//! The one conformance suite every `Store` backend must pass. Backends' tests call
//! [`run_all`] with a fresh store; `pk`s are prefixed with a random run id so the
//! suite can share a table with other runs.

use std::sync::Arc;

use serde_json::{Value, json};

use super::{Cond, Item, Key, Query, Store, StoreError, Update, Write};

fn obj(v: Value) -> Item {
    v.as_object().cloned().expect("object")
}

fn run_id() -> String {
    format!("t{:016x}", rand::random::<u64>())
}

pub async fn run_all(store: Arc<dyn Store>) {
    put_get_and_conditions(store.as_ref()).await;
    update_adds_atomically_and_creates(store.as_ref()).await;
    delete_with_condition(store.as_ref()).await;
    query_ranges_directions_and_continuation(store.as_ref()).await;
    raw_pages_and_batch_gets(store.as_ref()).await;
    transactions_apply_all_or_nothing(store.as_ref()).await;
    concurrent_conditional_adds_never_pass_the_limit(store.clone()).await;
    concurrent_creates_have_one_winner(store.clone()).await;
    richer_operations_over_the_primitives(store.as_ref()).await;
    dynamodb_limits_are_refused(store.as_ref()).await;
}

/// What DynamoDB refuses as invalid, every backend refuses, and writes nothing.
pub async fn dynamodb_limits_are_refused(store: &dyn Store) {
    use super::limits::{MAX_PK, MAX_SK, MAX_TRANSACTION};
    let pk = run_id();
    let invalid = |r: Result<(), StoreError>, what: &str| {
        assert!(matches!(r, Err(StoreError::Invalid(_))), "{what}: {r:?}");
    };
    let long_pk = format!("{pk}{}", "p".repeat(MAX_PK));
    invalid(
        store.get(&Key::new(&long_pk, "a")).await.map(drop),
        "a partition key over 2048 bytes",
    );
    let long_sk = "s".repeat(MAX_SK + 1);
    invalid(
        store.put(obj(json!({ "pk": pk, "sk": long_sk })), None).await,
        "a sort key over 1024 bytes",
    );
    invalid(
        store.put(obj(json!({ "pk": pk, "sk": "" })), None).await,
        "an empty sort key",
    );
    invalid(
        store
            .put(obj(json!({ "pk": pk, "sk": "big", "v": "x".repeat(400 * 1024) })), None)
            .await,
        "an item over 400 KB",
    );
    store
        .put(obj(json!({ "pk": pk, "sk": "text", "v": "x" })), None)
        .await
        .unwrap();
    invalid(
        store
            .update(&Key::new(&pk, "text"), Update::new().add("v", 1), None)
            .await
            .map(drop),
        "ADD on a string",
    );
    let many: Vec<Write> = (0..=MAX_TRANSACTION)
        .map(|i| Write::Put {
            item: obj(json!({ "pk": pk, "sk": format!("t{i}") })),
            cond: None,
        })
        .collect();
    invalid(store.transact(many).await, "a transaction over 100 items");
    let twice = vec![
        Write::Put {
            item: obj(json!({ "pk": pk, "sk": "same" })),
            cond: None,
        },
        Write::Update {
            key: Key::new(&pk, "same"),
            update: Update::new().set("n", 1),
            cond: None,
        },
    ];
    invalid(store.transact(twice).await, "two writes on one item");
    let left = store.query(&Query::partition(&pk)).await.unwrap();
    assert_eq!(left.items.len(), 1, "only the one valid put was written");
}

/// The operations of `StoreExt`, on this backend's primitives.
pub async fn richer_operations_over_the_primitives(store: &dyn Store) {
    use super::StoreExt;
    let pk = run_id();
    for i in 0..7 {
        let item = obj(json!({ "pk": pk, "sk": format!("k{i}"), "n": i }));
        assert!(store.put_new(item.clone()).await.unwrap(), "first put of k{i}");
        assert!(!store.put_new(item).await.unwrap(), "second put of k{i}");
    }
    let all = store.all(Query::partition(&pk).limit(3)).await.unwrap();
    assert_eq!(all.len(), 7, "every page");
    #[derive(serde::Deserialize)]
    struct Row {
        n: i64,
    }
    let rows: Vec<Row> = store.all_records(Query::partition(&pk).limit(2)).await.unwrap();
    assert_eq!(rows.iter().map(|r| r.n).sum::<i64>(), 21);
    let one: Option<Row> = store.read(&Key::new(&pk, "k3")).await.unwrap();
    assert_eq!(one.map(|r| r.n), Some(3));
    let counter = Key::new(&pk, "counter");
    assert_eq!(store.add(&counter, "value", 2).await.unwrap(), 2);
    assert_eq!(store.add(&counter, "value", -1).await.unwrap(), 1);
    assert_eq!(store.delete_partition(&pk).await.unwrap(), 8);
    assert!(store.all(Query::partition(&pk)).await.unwrap().is_empty());
}

pub async fn put_get_and_conditions(store: &dyn Store) {
    let pk = run_id();
    let key = Key::new(&pk, "a");
    assert!(store.get(&key).await.unwrap().is_none());
    let item = obj(json!({"pk": pk, "sk": "a", "n": 1, "s": "x", "b": true, "l": ["p", 2], "m": {"k": "v"}}));
    store.put(item.clone(), Some(Cond::NotExists)).await.unwrap();
    assert_eq!(store.get(&key).await.unwrap(), Some(item.clone()));
    let again = store.put(item.clone(), Some(Cond::NotExists)).await;
    assert!(matches!(again, Err(StoreError::ConditionFailed)));
    let wrong = store.put(item.clone(), Some(Cond::eq("s", "y"))).await;
    assert!(matches!(wrong, Err(StoreError::ConditionFailed)));
    let mut changed = item.clone();
    changed.insert("s".into(), json!("z"));
    store
        .put(
            changed.clone(),
            Some(Cond::And(vec![
                Cond::eq("s", "x"),
                Cond::Ge("n".into(), 1),
                Cond::missing("nope"),
            ])),
        )
        .await
        .unwrap();
    assert_eq!(store.get(&key).await.unwrap(), Some(changed.clone()));
    // Text compares byte by byte; a number or an absent attribute is never at most a text.
    for (cond, holds) in [
        (Cond::TextAtMost("s".into(), "z".into()), true),
        (Cond::TextAtMost("s".into(), "zz".into()), true),
        (Cond::TextAtMost("s".into(), "y".into()), false),
        (Cond::TextAtMost("n".into(), "9".into()), false),
        (Cond::TextAtMost("nope".into(), "z".into()), false),
    ] {
        let put = store.put(changed.clone(), Some(cond.clone())).await;
        assert_eq!(put.is_ok(), holds, "{cond:?}: {put:?}");
        assert_eq!(cond.holds(Some(&changed)), holds, "{cond:?} as the reference reads it");
    }
}

pub async fn update_adds_atomically_and_creates(store: &dyn Store) {
    let pk = run_id();
    let key = Key::new(&pk, "counter");
    let refused = store.update(&key, Update::new().add("n", 1), Some(Cond::Exists)).await;
    assert!(matches!(refused, Err(StoreError::ConditionFailed)));
    assert!(
        store.get(&key).await.unwrap().is_none(),
        "a failed update writes nothing"
    );
    let created = store
        .update(&key, Update::new().add("n", 2).set("s", "v"), None)
        .await
        .unwrap();
    assert_eq!(created.get("n"), Some(&json!(2)));
    assert_eq!(created.get("pk"), Some(&json!(pk)));
    let limited = Cond::Or(vec![Cond::missing("n"), Cond::Lt("n".into(), 3)]);
    let third = store
        .update(&key, Update::new().add("n", 1), Some(limited.clone()))
        .await
        .unwrap();
    assert_eq!(third.get("n"), Some(&json!(3)));
    let over = store.update(&key, Update::new().add("n", 1), Some(limited)).await;
    assert!(matches!(over, Err(StoreError::ConditionFailed)));
    let down = store
        .update(
            &key,
            Update::new().add("n", -3).remove("s"),
            Some(Cond::Ge("n".into(), 3)),
        )
        .await
        .unwrap();
    assert_eq!(down.get("n"), Some(&json!(0)));
    assert!(!down.contains_key("s"));
}

pub async fn delete_with_condition(store: &dyn Store) {
    let pk = run_id();
    let key = Key::new(&pk, "d");
    store
        .put(obj(json!({"pk": pk, "sk": "d", "v": 1})), None)
        .await
        .unwrap();
    let refused = store.delete(&key, Some(Cond::eq("v", 2))).await;
    assert!(matches!(refused, Err(StoreError::ConditionFailed)));
    let old = store.delete(&key, Some(Cond::eq("v", 1))).await.unwrap();
    assert_eq!(old.and_then(|i| i.get("v").cloned()), Some(json!(1)));
    assert!(store.get(&key).await.unwrap().is_none());
    assert!(store.delete(&key, None).await.unwrap().is_none());
}

async fn collect(store: &dyn Store, mut q: Query) -> Vec<String> {
    let mut out = Vec::new();
    loop {
        let page = store.query(&q).await.unwrap();
        assert!(page.items.len() <= q.limit);
        out.extend(page.items.iter().map(|i| i["sk"].as_str().unwrap().to_string()));
        match page.next {
            Some(token) => q = q.after(Some(token)),
            None => return out,
        }
    }
}

pub async fn query_ranges_directions_and_continuation(store: &dyn Store) {
    let pk = run_id();
    let other = run_id();
    for sk in ["a#1", "a#2", "a#3", "b#1", "b#2", "c"] {
        store.put(obj(json!({"pk": pk, "sk": sk})), None).await.unwrap();
    }
    store.put(obj(json!({"pk": other, "sk": "a#9"})), None).await.unwrap();
    let all = collect(store, Query::partition(&pk).limit(2)).await;
    assert_eq!(all, ["a#1", "a#2", "a#3", "b#1", "b#2", "c"]);
    let back = collect(store, Query::partition(&pk).backward().limit(4)).await;
    assert_eq!(back, ["c", "b#2", "b#1", "a#3", "a#2", "a#1"]);
    let a = collect(store, Query::partition(&pk).prefix("a#").limit(1)).await;
    assert_eq!(a, ["a#1", "a#2", "a#3"]);
    let a_back = collect(store, Query::partition(&pk).prefix("a#").backward().limit(2)).await;
    assert_eq!(a_back, ["a#3", "a#2", "a#1"]);
    let mid = collect(store, Query::partition(&pk).between("a#2", "b#1")).await;
    assert_eq!(mid, ["a#2", "a#3", "b#1"]);
    let first = store.query(&Query::partition(&pk).limit(1)).await.unwrap();
    assert_eq!(first.items.len(), 1);
    assert!(first.next.is_some());
    let none = store.query(&Query::partition(run_id())).await.unwrap();
    assert!(none.items.is_empty() && none.next.is_none());
}

/// `query_raw` reads what `query` reads, page for page; `get_many` answers in
/// the order asked, with None for what is missing.
pub async fn raw_pages_and_batch_gets(store: &dyn Store) {
    let pk = run_id();
    for (i, sk) in ["a", "b", "c", "d", "e"].into_iter().enumerate() {
        store
            .put(obj(json!({"pk": pk, "sk": sk, "n": i, "s": "caf\u{e9} \"q\""})), None)
            .await
            .unwrap();
    }
    for query in [
        Query::partition(&pk).limit(2),
        Query::partition(&pk).backward().limit(3),
        Query::partition(&pk).between("b", "d").after(Some("b".into())),
        Query::partition(&pk).backward().limit(2).after(Some("d".into())),
    ] {
        let page = store.query(&query).await.unwrap();
        let raw = store.query_raw(&query).await.unwrap();
        assert_eq!(raw.next, page.next, "{query:?}");
        let decoded: Vec<Item> = raw.items.iter().map(|i| i.record().unwrap()).collect();
        assert_eq!(decoded, page.items, "{query:?}");
        let sks: Vec<&str> = raw.items.iter().map(|i| i.sk.as_str()).collect();
        let expected: Vec<&str> = page.items.iter().map(|i| i["sk"].as_str().unwrap()).collect();
        assert_eq!(sks, expected);
    }
    let got = store
        .get_many(&[Key::new(&pk, "c"), Key::new(&pk, "zz"), Key::new(&pk, "a")])
        .await
        .unwrap();
    let ns: Vec<Option<i64>> = got
        .iter()
        .map(|i| i.as_ref().map(|i| i["n"].as_i64().unwrap()))
        .collect();
    assert_eq!(ns, [Some(2), None, Some(0)]);
    for (keys, what) in [
        (vec![], "no keys"),
        (vec![Key::new(&pk, "a"), Key::new(&pk, "a")], "the same key twice"),
        ((0..=100).map(|i| Key::new(&pk, format!("k{i}"))).collect(), "101 keys"),
        (vec![Key::new(&pk, "")], "an empty sort key"),
    ] {
        let refused = store.get_many(&keys).await;
        assert!(matches!(refused, Err(StoreError::Invalid(_))), "{what}: {refused:?}");
    }
}

pub async fn transactions_apply_all_or_nothing(store: &dyn Store) {
    let pk = run_id();
    let a = Key::new(&pk, "a");
    let b = Key::new(&pk, "b");
    let c = Key::new(&pk, "c");
    store
        .put(obj(json!({"pk": pk, "sk": "c", "v": 1})), None)
        .await
        .unwrap();
    let failing = vec![
        Write::Put {
            item: obj(json!({"pk": pk, "sk": "a"})),
            cond: Some(Cond::NotExists),
        },
        Write::Update {
            key: b.clone(),
            update: Update::new().add("n", 1),
            cond: None,
        },
        Write::Check {
            key: c.clone(),
            cond: Cond::eq("v", 2),
        },
    ];
    assert!(matches!(
        store.transact(failing).await,
        Err(StoreError::ConditionFailed)
    ));
    assert!(store.get(&a).await.unwrap().is_none());
    assert!(store.get(&b).await.unwrap().is_none());
    let passing = vec![
        Write::Put {
            item: obj(json!({"pk": pk, "sk": "a"})),
            cond: Some(Cond::NotExists),
        },
        Write::Update {
            key: b.clone(),
            update: Update::new().add("n", 1),
            cond: None,
        },
        Write::Delete {
            key: c.clone(),
            cond: Some(Cond::eq("v", 1)),
        },
    ];
    store.transact(passing).await.unwrap();
    assert!(store.get(&a).await.unwrap().is_some());
    assert_eq!(store.get(&b).await.unwrap().unwrap()["n"], json!(1));
    assert!(store.get(&c).await.unwrap().is_none());
}

/// Twenty writers race to add to a counter capped at 5: exactly 5 succeed.
pub async fn concurrent_conditional_adds_never_pass_the_limit(store: Arc<dyn Store>) {
    let key = Key::new(run_id(), "window");
    let tasks: Vec<_> = (0..20)
        .map(|_| {
            let store = store.clone();
            let key = key.clone();
            tokio::spawn(async move {
                let cond = Cond::Or(vec![Cond::missing("count"), Cond::Lt("count".into(), 5)]);
                store.update(&key, Update::new().add("count", 1), Some(cond)).await
            })
        })
        .collect();
    let mut ok = 0;
    for t in tasks {
        match t.await.unwrap() {
            Ok(_) => ok += 1,
            Err(StoreError::ConditionFailed) => {}
            Err(e) => panic!("unexpected error: {e}"),
        }
    }
    assert_eq!(ok, 5);
    assert_eq!(store.get(&key).await.unwrap().unwrap()["count"], json!(5));
}

/// Ten writers race to create the same claim inside a transaction: one wins.
pub async fn concurrent_creates_have_one_winner(store: Arc<dyn Store>) {
    let pk = run_id();
    let tasks: Vec<_> = (0..10)
        .map(|i| {
            let store = store.clone();
            let pk = pk.clone();
            tokio::spawn(async move {
                store
                    .transact(vec![
                        Write::Put {
                            item: obj(json!({"pk": pk, "sk": "claim", "owner": i})),
                            cond: Some(Cond::NotExists),
                        },
                        Write::Put {
                            item: obj(json!({"pk": pk, "sk": format!("owner#{i}")})),
                            cond: None,
                        },
                    ])
                    .await
            })
        })
        .collect();
    let mut winners = 0;
    for t in tasks {
        match t.await.unwrap() {
            Ok(()) => winners += 1,
            Err(StoreError::ConditionFailed) => {}
            Err(e) => panic!("unexpected error: {e}"),
        }
    }
    assert_eq!(winners, 1);
    let owners = store.query(&Query::partition(&pk).prefix("owner#")).await.unwrap();
    assert_eq!(owners.items.len(), 1, "the losers' other writes were not applied");
}
