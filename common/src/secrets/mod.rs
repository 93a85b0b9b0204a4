//! Server secrets (HMAC secret, agent key, sync token, signing keys): Secrets
//! Manager in production, files in the data directory or the environment locally.

pub mod aws;

use std::path::PathBuf;

use async_trait::async_trait;

#[derive(Debug, thiserror::Error)]
#[error("secrets: {0}")]
pub struct SecretError(pub String);

#[async_trait]
pub trait Secrets: Send + Sync {
    async fn get(&self, name: &str) -> Result<Option<String>, SecretError>;
    /// Several secrets, in the order named; a backend that can reads them in
    /// one request (Secrets Manager: BatchGetSecretValue).
    async fn get_many(&self, names: &[&str]) -> Result<Vec<Option<String>>, SecretError> {
        let mut values = Vec::with_capacity(names.len());
        for name in names {
            values.push(self.get(name).await?);
        }
        Ok(values)
    }
    async fn put(&self, name: &str, value: &str) -> Result<(), SecretError>;
    /// Stores `value` under `name` unless the name holds a value already,
    /// atomically across processes (create-exclusive), and answers the value
    /// stored afterwards: this one, or the one that was there first.
    async fn create(&self, name: &str, value: &str) -> Result<String, SecretError>;
    /// Deleting a missing secret is not an error.
    async fn delete(&self, name: &str) -> Result<(), SecretError>;
}

/// Returns the named secret, creating it with `make` when it does not exist
/// yet. Two processes that create it at once (a server's first start and a
/// `mailhost token` beside it) both end up with the one that was stored first.
pub async fn get_or_create(
    secrets: &dyn Secrets,
    name: &str,
    make: impl FnOnce() -> String,
) -> Result<String, SecretError> {
    if let Some(value) = secrets.get(name).await? {
        return Ok(value);
    }
    secrets.create(name, &make()).await
}

/// Secrets as files under `<data-dir>/secrets/`, readable by the owner only.
/// `MAILHOST_SECRET_<NAME>` in the environment overrides a file.
pub struct DirSecrets {
    dir: PathBuf,
}

impl DirSecrets {
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }

    fn env_name(name: &str) -> String {
        format!("MAILHOST_SECRET_{}", name.to_ascii_uppercase().replace('-', "_"))
    }

    /// Writes `value` whole to a new file of its own beside the secrets,
    /// readable by the owner only, so that it can be put in place in one step.
    fn draft(&self, value: &str) -> Result<PathBuf, SecretError> {
        use std::io::Write;
        let err = |e: std::io::Error| SecretError(e.to_string());
        std::fs::create_dir_all(&self.dir).map_err(err)?;
        let path = self.dir.join(format!(".draft-{:016x}", rand::random::<u64>()));
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let written = options.open(&path).and_then(|mut file| {
            file.write_all(value.as_bytes())?;
            file.sync_all()
        });
        if let Err(e) = written {
            std::fs::remove_file(&path).ok();
            return Err(err(e));
        }
        Ok(path)
    }
}

#[async_trait]
impl Secrets for DirSecrets {
    async fn get(&self, name: &str) -> Result<Option<String>, SecretError> {
        if let Ok(value) = std::env::var(Self::env_name(name)) {
            return Ok(Some(value));
        }
        match tokio::fs::read_to_string(self.dir.join(name)).await {
            Ok(v) => Ok(Some(v.trim_end().to_string())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(SecretError(e.to_string())),
        }
    }

    /// Replaces the file in one rename: a reader sees the old value or the
    /// new one, never half of one.
    async fn put(&self, name: &str, value: &str) -> Result<(), SecretError> {
        let draft = self.draft(value)?;
        std::fs::rename(&draft, self.dir.join(name)).map_err(|e| {
            std::fs::remove_file(&draft).ok();
            SecretError(e.to_string())
        })
    }

    /// A hard link to the finished draft: it fails when the name exists, so
    /// of two processes creating the same secret exactly one puts its value
    /// in place, and the other reads that one back.
    async fn create(&self, name: &str, value: &str) -> Result<String, SecretError> {
        let draft = self.draft(value)?;
        let linked = std::fs::hard_link(&draft, self.dir.join(name));
        std::fs::remove_file(&draft).ok();
        match linked {
            Ok(()) => Ok(value.to_string()),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => self
                .get(name)
                .await?
                .ok_or_else(|| SecretError(format!("{name} was removed while it was created"))),
            Err(e) => Err(SecretError(e.to_string())),
        }
    }

    async fn delete(&self, name: &str) -> Result<(), SecretError> {
        match std::fs::remove_file(self.dir.join(name)) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(SecretError(e.to_string())),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Creators racing on one name (a server's first start and `mailhost
    /// token` beside it) all end up with one value: the one on disk.
    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn of_racing_creators_one_value_is_stored_and_each_reads_it() {
        let dir = std::env::temp_dir().join(format!("mailhost-secrets-{:016x}", rand::random::<u64>()));
        let racers = (0..16).map(|i| {
            let dir = dir.clone();
            tokio::spawn(async move { DirSecrets::new(dir).create("key", &format!("value {i}")).await })
        });
        let got: Vec<String> = futures::future::join_all(racers)
            .await
            .into_iter()
            .map(|r| r.unwrap().unwrap())
            .collect();
        let stored = DirSecrets::new(&dir).get("key").await.unwrap().unwrap();
        assert!(got.iter().all(|v| *v == stored), "{got:?} vs {stored}");
        assert_eq!(
            DirSecrets::new(&dir).create("key", "later").await.unwrap(),
            stored,
            "a later create keeps the first"
        );
        // Nothing is left beside the secret but the secret.
        let names: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["key"]);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(dir.join("key")).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        DirSecrets::new(&dir).put("key", "replaced").await.unwrap();
        assert_eq!(
            DirSecrets::new(&dir).get("key").await.unwrap().as_deref(),
            Some("replaced")
        );
        std::fs::remove_dir_all(&dir).ok();
    }
}
