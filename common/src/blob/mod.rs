//! Blob storage: raw mail, attachments, the mail-server export. Keys are
//! `/`-separated paths such as `inbound/pending/<id>.eml`.

pub mod fs;
pub mod s3;

use async_trait::async_trait;

#[derive(Debug, thiserror::Error)]
#[error("blob store: {0}")]
pub struct BlobError(pub String);

pub type BlobResult<T> = Result<T, BlobError>;

/// A blob as read, with the version a versioned store gave it.
pub struct Versioned {
    pub bytes: Vec<u8>,
    /// Set by an S3 bucket with versioning on: a delete then hides the blob
    /// and keeps this version, readable at [`at_version`] until the bucket's
    /// lifecycle removes it.
    pub version: Option<String>,
}

/// The key that reads one version of a blob, also after the blob is deleted:
/// `<key>?versionId=<id>`. No key written here holds a `?` (spool names,
/// ids and mailbox addresses do not), so the suffix is never part of a key.
pub fn at_version(key: &str, version: &str) -> String {
    format!("{key}{VERSION}{version}")
}

const VERSION: &str = "?versionId=";

/// A key and the version it names, if any (see [`at_version`]).
pub fn split_version(key: &str) -> (&str, Option<&str>) {
    match key.split_once(VERSION) {
        Some((key, version)) => (key, Some(version)),
        None => (key, None),
    }
}

#[async_trait]
pub trait BlobStore: Send + Sync {
    async fn put(&self, key: &str, bytes: Vec<u8>, content_type: &str) -> BlobResult<()>;
    /// `key` may name a version ([`at_version`]) on a store that keeps them.
    async fn get(&self, key: &str) -> BlobResult<Option<Vec<u8>>>;
    /// As [`BlobStore::get`], with the blob's version where the store keeps
    /// versions (a store without answers none).
    async fn get_versioned(&self, key: &str) -> BlobResult<Option<Versioned>> {
        let bytes = self.get(key).await?;
        Ok(bytes.map(|bytes| Versioned { bytes, version: None }))
    }
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
