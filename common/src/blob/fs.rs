//! Blobs as files under a root directory.

use std::path::{Component, Path, PathBuf};

use async_trait::async_trait;

use super::{BlobError, BlobResult, BlobStore};

pub struct FsBlobStore {
    root: PathBuf,
}

impl FsBlobStore {
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }

    /// Refuses keys that would escape the root.
    fn path(&self, key: &str) -> BlobResult<PathBuf> {
        let rel = Path::new(key);
        let staged = key == STAGING || key.starts_with(&format!("{STAGING}/"));
        if key.is_empty() || staged || rel.components().any(|c| !matches!(c, Component::Normal(_))) {
            return Err(BlobError(format!("invalid blob key {key:?}")));
        }
        Ok(self.root.join(rel))
    }
}

/// Where a put writes before its rename; `path` refuses keys under it.
const STAGING: &str = ".staging";

fn io(e: std::io::Error) -> BlobError {
    BlobError(e.to_string())
}

#[async_trait]
impl BlobStore for FsBlobStore {
    async fn put(&self, key: &str, bytes: Vec<u8>, _content_type: &str) -> BlobResult<()> {
        let path = self.path(key)?;
        if let Some(dir) = path.parent() {
            tokio::fs::create_dir_all(dir).await.map_err(io)?;
        }
        // Write then rename, so a reader never sees half a file. The partial
        // file lives outside the key space, so no key is ever hidden by it.
        let staging = self.root.join(STAGING);
        tokio::fs::create_dir_all(&staging).await.map_err(io)?;
        let tmp = staging.join(format!("{:016x}", rand::random::<u64>()));
        tokio::fs::write(&tmp, bytes).await.map_err(io)?;
        tokio::fs::rename(&tmp, &path).await.map_err(io)
    }

    async fn get(&self, key: &str) -> BlobResult<Option<Vec<u8>>> {
        match tokio::fs::read(self.path(key)?).await {
            Ok(bytes) => Ok(Some(bytes)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(io(e)),
        }
    }

    async fn delete(&self, key: &str) -> BlobResult<()> {
        match tokio::fs::remove_file(self.path(key)?).await {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(io(e)),
            _ => Ok(()),
        }
    }

    async fn list(&self, prefix: &str) -> BlobResult<Vec<String>> {
        let mut out = Vec::new();
        // Start at the deepest folder the prefix names, not at the root.
        let start = match prefix.rsplit_once('/') {
            Some((dir, _)) if !dir.is_empty() => self.path(dir)?,
            _ => self.root.clone(),
        };
        let mut stack = vec![start];
        while let Some(dir) = stack.pop() {
            let mut entries = match tokio::fs::read_dir(&dir).await {
                Ok(e) => e,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(io(e)),
            };
            while let Some(entry) = entries.next_entry().await.map_err(io)? {
                let path = entry.path();
                if entry.file_type().await.map_err(io)?.is_dir() {
                    if path != self.root.join(STAGING) {
                        stack.push(path);
                    }
                } else if let Ok(rel) = path.strip_prefix(&self.root) {
                    let key = rel.to_string_lossy().replace('\\', "/");
                    if key.starts_with(prefix) {
                        out.push(key);
                    }
                }
            }
        }
        out.sort();
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn blobs_round_trip_list_by_prefix_and_stay_inside_the_root() {
        let root = std::env::temp_dir().join(format!("mh-blobs-{:x}", rand::random::<u64>()));
        let store = FsBlobStore::new(&root);
        store.put("a/x/1.eml", b"one".to_vec(), "message/rfc822").await.unwrap();
        // A key that looks like a temporary file is an ordinary key.
        store.put("a/z/file.tmp1", b"t".to_vec(), "text/plain").await.unwrap();
        assert_eq!(store.list("a/z/").await.unwrap(), ["a/z/file.tmp1"]);
        store.delete("a/z/file.tmp1").await.unwrap();
        store.put("a/y/2.eml", b"two".to_vec(), "message/rfc822").await.unwrap();
        store.put("b/3.eml", b"three".to_vec(), "message/rfc822").await.unwrap();
        assert_eq!(store.get("a/x/1.eml").await.unwrap().as_deref(), Some(&b"one"[..]));
        assert_eq!(store.list("a/").await.unwrap(), ["a/x/1.eml", "a/y/2.eml"]);
        store.delete("a/x/1.eml").await.unwrap();
        store.delete("a/x/1.eml").await.unwrap();
        assert_eq!(store.get("a/x/1.eml").await.unwrap(), None);
        for escape in ["../outside", "/etc/passwd", "a/../../x", ""] {
            assert!(
                store.put(escape, b"x".to_vec(), "text/plain").await.is_err(),
                "{escape}"
            );
        }
        std::fs::remove_dir_all(root).ok();
    }
}
