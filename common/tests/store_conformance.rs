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
