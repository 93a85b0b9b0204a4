//! Blob storage: raw mail, attachments, the mail-server export. Keys are
//! `/`-separated paths such as `inbound/pending/<id>.eml`.

pub mod fs;
pub mod s3;

use async_trait::async_trait;

#[derive(Debug, thiserror::Error)]
#[error("blob store: {0}")]
pub struct BlobError(pub String);

pub type BlobResult<T> = Result<T, BlobError>;

#[async_trait]
pub trait BlobStore: Send + Sync {
    async fn put(&self, key: &str, bytes: Vec<u8>, content_type: &str) -> BlobResult<()>;
    async fn get(&self, key: &str) -> BlobResult<Option<Vec<u8>>>;
    /// Deleting a missing blob is not an error.
    async fn delete(&self, key: &str) -> BlobResult<()>;
    /// Keys under a prefix, in key order.
    async fn list(&self, prefix: &str) -> BlobResult<Vec<String>>;
    /// Moves the blob at `from` (whose `bytes` the caller has read) to `to`,
    /// replacing what is there: `to` holds the bytes before `from` is gone,
    /// so a crash in between leaves both, never neither. A store that can
    /// move in place does (the file system: a rename); S3 writes them again
    /// and deletes.
    async fn move_to(&self, from: &str, to: &str, bytes: Vec<u8>, content_type: &str) -> BlobResult<()> {
        self.put(to, bytes, content_type).await?;
        self.delete(from).await
    }
}
