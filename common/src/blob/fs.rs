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

/// Runs one blob operation's file system calls on a blocking thread: one
/// hand-off each (tokio::fs would take one per call).
async fn blocking<T: Send + 'static>(f: impl FnOnce() -> std::io::Result<T> + Send + 'static) -> BlobResult<T> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| BlobError(e.to_string()))?
        .map_err(io)
}

/// Runs `f`, and when it finds no directory, makes `dir` and runs it again:
/// a directory is made once, not checked before every write.
fn making(dir: Option<&Path>, mut f: impl FnMut() -> std::io::Result<()>) -> std::io::Result<()> {
    match (f(), dir) {
        (Err(e), Some(dir)) if e.kind() == std::io::ErrorKind::NotFound => {
            std::fs::create_dir_all(dir)?;
            f()
        }
        (other, _) => other,
    }
}

#[async_trait]
impl BlobStore for FsBlobStore {
    async fn put(&self, key: &str, bytes: Vec<u8>, _content_type: &str) -> BlobResult<()> {
        let path = self.path(key)?;
        // Write then rename, so a reader never sees half a file. The partial
        // file lives outside the key space, so no key is ever hidden by it.
        let staging = self.root.join(STAGING);
        blocking(move || {
            let tmp = staging.join(format!("{:016x}", rand::random::<u64>()));
            making(Some(&staging), || std::fs::write(&tmp, &bytes))?;
            making(path.parent(), || std::fs::rename(&tmp, &path)).inspect_err(|_| {
                std::fs::remove_file(&tmp).ok();
            })
        })
        .await
    }

    async fn get(&self, key: &str) -> BlobResult<Option<Vec<u8>>> {
        let path = self.path(key)?;
        blocking(move || match std::fs::read(path) {
            Ok(bytes) => Ok(Some(bytes)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        })
        .await
    }

    async fn delete(&self, key: &str) -> BlobResult<()> {
        let path = self.path(key)?;
        blocking(move || match std::fs::remove_file(path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        })
        .await
    }

    async fn list(&self, prefix: &str) -> BlobResult<Vec<String>> {
        // Start at the deepest folder the prefix names, not at the root.
        let start = match prefix.rsplit_once('/') {
            Some((dir, _)) if !dir.is_empty() => self.path(dir)?,
            _ => self.root.clone(),
        };
        let (root, prefix) = (self.root.clone(), prefix.to_string());
        blocking(move || {
            let mut out = Vec::new();
            let mut stack = vec![start];
            while let Some(dir) = stack.pop() {
                let entries = match std::fs::read_dir(&dir) {
                    Ok(e) => e,
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                    Err(e) => return Err(e),
                };
                for entry in entries {
                    let entry = entry?;
                    let path = entry.path();
                    if entry.file_type()?.is_dir() {
                        if path != root.join(STAGING) {
                            stack.push(path);
                        }
                    } else if let Ok(rel) = path.strip_prefix(&root) {
                        let key = rel.to_string_lossy().replace('\\', "/");
                        if key.starts_with(&prefix) {
                            out.push(key);
                        }
                    }
                }
            }
            out.sort();
            Ok(out)
        })
        .await
    }

    /// A rename: the file keeps its bytes and its inode (on a busy ext4,
    /// making a new inode was most of a filed message's system time).
    async fn move_to(&self, from: &str, to: &str, bytes: Vec<u8>, content_type: &str) -> BlobResult<()> {
        let (from_path, to_path) = (self.path(from)?, self.path(to)?);
        let moved = blocking(move || {
            match making(to_path.parent(), || std::fs::rename(&from_path, &to_path)) {
                Ok(()) => Ok(true),
                // Gone already (another run moved it): the bytes are written.
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
                Err(e) => Err(e),
            }
        })
        .await?;
        if !moved {
            self.put(to, bytes, content_type).await?;
        }
        Ok(())
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
        // A move renames; a blob already gone is written from the bytes.
        store
            .move_to("b/3.eml", "c/d/3.eml", b"three".to_vec(), "message/rfc822")
            .await
            .unwrap();
        assert_eq!(store.get("b/3.eml").await.unwrap(), None);
        assert_eq!(store.get("c/d/3.eml").await.unwrap().as_deref(), Some(&b"three"[..]));
        store
            .move_to("b/3.eml", "c/e/3.eml", b"three".to_vec(), "message/rfc822")
            .await
            .unwrap();
        assert_eq!(store.get("c/e/3.eml").await.unwrap().as_deref(), Some(&b"three"[..]));
        assert!(store.move_to("../x", "c/f", vec![], "text/plain").await.is_err());
        for escape in ["../outside", "/etc/passwd", "a/../../x", ""] {
            assert!(
                store.put(escape, b"x".to_vec(), "text/plain").await.is_err(),
                "{escape}"
            );
        }
        std::fs::remove_dir_all(root).ok();
    }
}
