//! The store conformance suite on DynamoDB (DynamoDB Local in tests).

use std::sync::Arc;

use common::store::conformance;
use common::store::dynamo::DynamoStore;
use common::store::embedded::EmbeddedStore;
use common::store::{Key, Store, Update};

/// A store on a fresh table, or None when no DynamoDB stand-in is running.
async fn store() -> Option<DynamoStore> {
    let endpoint = common::testing::standin("MAILHOST_TEST_DYNAMODB_ENDPOINT")?;
    let config = aws_config::defaults(aws_config::BehaviorVersion::latest())
        .endpoint_url(endpoint)
        .region(aws_config::Region::new("us-east-1"))
        .credentials_provider(aws_sdk_dynamodb::config::Credentials::new(
            "test", "test", None, None, "test",
        ))
        .load()
        .await;
    let table = format!("conformance-{:016x}", rand::random::<u64>());
    let store = DynamoStore::new(aws_sdk_dynamodb::Client::new(&config), table);
    store.ensure_table().await.unwrap();
    Some(store)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn dynamodb_store_meets_the_contract() {
    let Some(store) = store().await else { return };
    // A second call finds the table and leaves it be.
    store.ensure_table().await.unwrap();
    conformance::run_all(Arc::new(store)).await;
}

/// DynamoDB refuses an expression that names one attribute twice, so the backend
/// folds overlapping set/remove/add into one action each; the result must still
/// be what `Update::apply` (and so the embedded store) produces.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn overlapping_updates_match_the_embedded_store() {
    let Some(dynamo) = store().await else { return };
    let embedded = EmbeddedStore::in_memory().unwrap();
    let key = Key::new(format!("t{:016x}", rand::random::<u64>()), "u");
    let updates = [
        Update::new()
            .set("pk", key.pk.as_str())
            .set("a", 1)
            .set("s", "x")
            .add("n", 2)
            .add("n", 3),
        Update::new()
            .set("a", 10)
            .add("a", 1)
            .set("b", "t")
            .remove("b")
            .remove("s")
            .remove("s"),
        Update::new().remove("n").add("n", 4).set("c", "word").add("c", 1),
        Update::new().add("a", -11),
        Update::new(),
    ];
    for update in updates {
        let expected = embedded.update(&key, update.clone(), None).await.unwrap();
        let got = dynamo.update(&key, update.clone(), None).await.unwrap();
        assert_eq!(got, expected, "after {update:?}");
    }
}
