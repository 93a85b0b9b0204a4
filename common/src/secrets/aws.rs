//! Secrets in AWS Secrets Manager, one secret string per name under a prefix
//! (for example `mailhost/prod/`), so one account can hold several deployments.

use async_trait::async_trait;
use aws_sdk_secretsmanager::error::DisplayErrorContext;

use super::{SecretError, Secrets};

pub struct SecretsManagerSecrets {
    client: aws_sdk_secretsmanager::Client,
    prefix: String,
}

impl SecretsManagerSecrets {
    pub fn new(client: aws_sdk_secretsmanager::Client, prefix: impl Into<String>) -> Self {
        Self {
            client,
            prefix: prefix.into(),
        }
    }

    fn id(&self, name: &str) -> String {
        format!("{}{name}", self.prefix)
    }
}

fn err(e: impl std::error::Error) -> SecretError {
    SecretError(DisplayErrorContext(e).to_string())
}

#[async_trait]
impl Secrets for SecretsManagerSecrets {
    async fn get(&self, name: &str) -> Result<Option<String>, SecretError> {
        match self.client.get_secret_value().secret_id(self.id(name)).send().await {
            Ok(out) => Ok(out.secret_string().map(str::to_string)),
            Err(e)
                if e.as_service_error()
                    .is_some_and(|e| e.is_resource_not_found_exception()) =>
            {
                Ok(None)
            }
            Err(e) => Err(err(e)),
        }
    }

    async fn get_many(&self, names: &[&str]) -> Result<Vec<Option<String>>, SecretError> {
        // One request for up to 20 ids; a missing id comes back in `errors`.
        let ids: Vec<String> = names.iter().map(|n| self.id(n)).collect();
        let out = self
            .client
            .batch_get_secret_value()
            .set_secret_id_list(Some(ids.clone()))
            .send()
            .await
            .map_err(err)?;
        if let Some(e) = out
            .errors()
            .iter()
            .find(|e| e.error_code() != Some("ResourceNotFoundException"))
        {
            return Err(SecretError(format!(
                "{}: {}",
                e.secret_id().unwrap_or_default(),
                e.message().unwrap_or_default()
            )));
        }
        Ok(ids
            .iter()
            .map(|id| {
                out.secret_values()
                    .iter()
                    .find(|v| v.name() == Some(id.as_str()))
                    .and_then(|v| v.secret_string().map(str::to_string))
            })
            .collect())
    }

    async fn put(&self, name: &str, value: &str) -> Result<(), SecretError> {
        // Create first: `put` mostly follows a `get` that found nothing, and when
        // two instances race to create, the loser falls through to an update.
        let id = self.id(name);
        match self.client.create_secret().name(&id).secret_string(value).send().await {
            Ok(_) => return Ok(()),
            Err(e) if e.as_service_error().is_some_and(|e| e.is_resource_exists_exception()) => {}
            Err(e) => return Err(err(e)),
        }
        self.client
            .put_secret_value()
            .secret_id(&id)
            .secret_string(value)
            .send()
            .await
            .map_err(err)?;
        Ok(())
    }

    /// CreateSecret refuses a name that exists: the loser of a race reads
    /// the winner's value.
    async fn create(&self, name: &str, value: &str) -> Result<String, SecretError> {
        match self
            .client
            .create_secret()
            .name(self.id(name))
            .secret_string(value)
            .send()
            .await
        {
            Ok(_) => Ok(value.to_string()),
            Err(e) if e.as_service_error().is_some_and(|e| e.is_resource_exists_exception()) => self
                .get(name)
                .await?
                .ok_or_else(|| SecretError(format!("{name} exists without a value"))),
            Err(e) => Err(err(e)),
        }
    }

    async fn delete(&self, name: &str) -> Result<(), SecretError> {
        // Immediately: a deleted DKIM key is never wanted back, and a name in its
        // recovery window could not be created again.
        let deleted = self
            .client
            .delete_secret()
            .secret_id(self.id(name))
            .force_delete_without_recovery(true)
            .send()
            .await;
        match deleted {
            Ok(_) => Ok(()),
            Err(e)
                if e.as_service_error()
                    .is_some_and(|e| e.is_resource_not_found_exception()) =>
            {
                Ok(())
            }
            Err(e) => Err(err(e)),
        }
    }
}
