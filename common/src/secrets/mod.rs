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
    /// Deleting a missing secret is not an error.
    async fn delete(&self, name: &str) -> Result<(), SecretError>;
}

/// Returns the named secret, creating it with `make` when it does not exist yet.
pub async fn get_or_create(
    secrets: &dyn Secrets,
    name: &str,
    make: impl FnOnce() -> String,
) -> Result<String, SecretError> {
    if let Some(value) = secrets.get(name).await? {
        return Ok(value);
    }
    let value = make();
    secrets.put(name, &value).await?;
    Ok(value)
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

    async fn put(&self, name: &str, value: &str) -> Result<(), SecretError> {
        use std::io::Write;
        let err = |e: std::io::Error| SecretError(e.to_string());
        std::fs::create_dir_all(&self.dir).map_err(err)?;
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create(true).truncate(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let mut file = options.open(self.dir.join(name)).map_err(err)?;
        file.write_all(value.as_bytes()).map_err(err)
    }

    async fn delete(&self, name: &str) -> Result<(), SecretError> {
        match std::fs::remove_file(self.dir.join(name)) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(SecretError(e.to_string())),
            _ => Ok(()),
        }
    }
}
