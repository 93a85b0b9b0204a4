//! The store conformance suite on every backend.

use std::sync::Arc;

use common::store::conformance;
use common::store::embedded::EmbeddedStore;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn embedded_in_memory_store_meets_the_contract() {
    conformance::run_all(Arc::new(EmbeddedStore::in_memory().unwrap())).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn embedded_file_store_meets_the_contract() {
    let dir = std::env::temp_dir().join(format!("mailhost-conf-{}", rand::random::<u64>()));
    std::fs::create_dir_all(&dir).unwrap();
    conformance::run_all(Arc::new(EmbeddedStore::open(&dir.join("store.redb")).unwrap())).await;
    std::fs::remove_dir_all(dir).ok();
}

/// A Lambda function's store: the file is created by the first request, and
/// an open that failed is tried again by the next.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn embedded_store_opened_at_first_use_meets_the_contract() {
    use common::store::{Key, Store};
    let dir = std::env::temp_dir().join(format!("mailhost-conf-{}", rand::random::<u64>()));
    let file = dir.join("store.redb");
    let store = EmbeddedStore::open_at_first_use(&file);
    // No directory yet: the open fails, and leaves nothing behind.
    assert!(store.get(&Key::new("p", "s")).await.is_err());
    std::fs::create_dir_all(&dir).unwrap();
    assert!(!file.exists(), "built without opening");
    assert_eq!(store.get(&Key::new("p", "s")).await.unwrap(), None);
    assert!(file.exists(), "opened by its first use");
    conformance::run_all(Arc::new(store)).await;
    std::fs::remove_dir_all(dir).ok();
}
