//! The context a binary builds once (a Lambda cold start, or the local server's
//! start) and every request shares: configuration, store, blobs, transports,
//! secrets-derived keys and the identity verifier. It composes clients and
//! configuration and imports no service.

use std::sync::Arc;

use crate::auth::identity::{IdentityVerifier, LocalSigner};
use crate::auth::keys::{self, KeyHasher};
use crate::blob::BlobStore;
use crate::blob::fs::FsBlobStore;
use crate::clock::Clock;
use crate::config::{Config, SecretsKind, StoreKind, SystemMailKind};
use crate::dns::Dns;
use crate::mail::Transport;
use crate::mail::spool::SpoolTransport;
use crate::secrets::{DirSecrets, Secrets};
use crate::store::Store;
use crate::store::embedded::EmbeddedStore;

/// Where the binary runs: a few defaults differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// One local process: creates missing secrets, spools mail without a transport.
    Local,
    /// A Lambda function: secrets must exist; no transport means no outbound mail.
    Lambda,
}

pub struct Context {
    pub config: Config,
    pub store: Arc<dyn Store>,
    /// Requests made through `store`, by kind.
    pub store_meter: Arc<crate::store::metered::Meter>,
    pub blobs: Arc<dyn BlobStore>,
    /// Customer mail; `None` when no outbound host is configured.
    pub customer_mail: Option<Arc<dyn Transport>>,
    /// Access codes and other mail the service itself sends.
    pub system_mail: Option<Arc<dyn Transport>>,
    pub secrets: Arc<dyn Secrets>,
    pub dns: Dns,
    pub hasher: KeyHasher,
    pub identity: IdentityVerifier,
    pub agent_key_digest: String,
    pub agent_key_last4: String,
    pub sync_token_digest: String,
    pub clock: Clock,
    /// DKIM signers by the name of the secret holding their key.
    pub signers: std::sync::Mutex<std::collections::HashMap<String, Arc<crate::mail::message::Signer>>>,
}

/// What a build produced besides the context: a key created on this start,
/// to be printed once.
pub struct Built {
    pub context: Arc<Context>,
    pub new_agent_key: Option<String>,
}

const HMAC_SECRET: &str = "hmac-secret";
const AGENT_KEY_DIGEST: &str = "agent-key-digest";
const AGENT_KEY: &str = "agent-key";
const SYNC_TOKEN: &str = "sync-token";

impl Context {
    pub async fn build(config: Config, mode: Mode) -> anyhow::Result<Built> {
        let aws = if needs_aws(&config) {
            Some(aws_config::load_defaults(aws_config::BehaviorVersion::latest()).await)
        } else {
            None
        };
        let secrets: Arc<dyn Secrets> = match config.secrets {
            SecretsKind::Dir => Arc::new(DirSecrets::new(config.data_dir.join("secrets"))),
            SecretsKind::Aws => Arc::new(crate::secrets::aws::SecretsManagerSecrets::new(
                aws_sdk_secretsmanager::Client::new(aws.as_ref().expect("aws config")),
                &config.secret_prefix,
            )),
        };
        let secret = |name: &'static str| {
            let secrets = secrets.as_ref();
            async move {
                match mode {
                    Mode::Local => Ok(crate::secrets::get_or_create(secrets, name, keys::new_secret).await?),
                    Mode::Lambda => secrets
                        .get(name)
                        .await?
                        .ok_or_else(|| anyhow::anyhow!("secret {name} is missing")),
                }
            }
        };
        let hasher = KeyHasher::new(secret(HMAC_SECRET).await?);

        let mut new_agent_key = None;
        let (agent_key_digest, agent_key_last4) = match (&config.agent_key, mode) {
            (Some(key), _) => (hasher.key_digest(key), keys::last4(key)),
            (None, Mode::Lambda) => {
                let key = secrets
                    .get(AGENT_KEY)
                    .await?
                    .ok_or_else(|| anyhow::anyhow!("secret {AGENT_KEY} is missing"))?;
                (hasher.key_digest(&key), keys::last4(&key))
            }
            (None, Mode::Local) => match secrets.get(AGENT_KEY_DIGEST).await? {
                Some(stored) => {
                    let (digest, last4) = stored.split_once(':').unwrap_or((&stored, ""));
                    (digest.to_string(), last4.to_string())
                }
                None => {
                    let key = keys::new_key();
                    let pair = (hasher.key_digest(&key), keys::last4(&key));
                    secrets.put(AGENT_KEY_DIGEST, &format!("{}:{}", pair.0, pair.1)).await?;
                    new_agent_key = Some(key);
                    pair
                }
            },
        };
        let sync_token = match &config.sync_token {
            Some(token) => token.clone(),
            None => secret(SYNC_TOKEN).await?,
        };

        let identity = match &config.jwks_url {
            Some(url) => IdentityVerifier::remote(url, &config.token_issuer, &config.token_audience).await?,
            None => {
                let signer = LocalSigner::load_or_create(secrets.as_ref()).await?;
                IdentityVerifier::with_jwks(signer.jwks(), &config.token_issuer, &config.token_audience)
            }
        };

        let store: Arc<dyn Store> = match config.store {
            StoreKind::Embedded => {
                std::fs::create_dir_all(&config.data_dir)?;
                Arc::new(EmbeddedStore::open(&config.data_dir.join("store.redb"))?)
            }
            StoreKind::Dynamodb => {
                let store = crate::store::dynamo::DynamoStore::new(
                    aws_sdk_dynamodb::Client::new(aws.as_ref().expect("aws config")),
                    &config.table,
                );
                if mode == Mode::Local {
                    store.ensure_table().await?;
                }
                Arc::new(store)
            }
        };
        let (metered, store_meter) = crate::store::metered::Metered::new(store);
        let store: Arc<dyn Store> = Arc::new(metered);
        let blobs: Arc<dyn BlobStore> = match &config.bucket {
            Some(bucket) => Arc::new(crate::blob::s3::S3BlobStore::new(
                crate::blob::s3::client_for(aws.as_ref().expect("aws config")),
                bucket,
            )),
            None => Arc::new(FsBlobStore::new(config.data_dir.join("blobs"))),
        };
        let customer_mail: Option<Arc<dyn Transport>> = match (&config.smtp_url, mode) {
            (Some(url), _) => Some(Arc::new(crate::mail::smtp::SmtpTransport::from_url_with_ca(
                url,
                config.smtp_ca_file.as_deref(),
            )?)),
            (None, Mode::Local) if config.spool => Some(Arc::new(SpoolTransport::new(config.data_dir.join("outbox")))),
            (None, _) => None,
        };
        let system_mail = match config.system_mail {
            SystemMailKind::Transport => customer_mail.clone(),
            SystemMailKind::Ses => Some(Arc::new(crate::mail::ses::SesTransport::new(aws_sdk_sesv2::Client::new(
                aws.as_ref().expect("aws config"),
            ))) as Arc<dyn Transport>),
        };

        let dns = Dns::new(config.dns_server.as_deref())?;
        let context = Arc::new(Context {
            config,
            secrets,
            dns,
            store,
            store_meter,
            blobs,
            customer_mail,
            system_mail,
            agent_key_digest,
            agent_key_last4,
            sync_token_digest: hasher.key_digest(&sync_token),
            hasher,
            identity,
            clock: Clock::default(),
            signers: Default::default(),
        });
        Ok(Built { context, new_agent_key })
    }
}

fn needs_aws(config: &Config) -> bool {
    config.store == StoreKind::Dynamodb
        || config.bucket.is_some()
        || config.secrets == SecretsKind::Aws
        || config.system_mail == SystemMailKind::Ses
}
