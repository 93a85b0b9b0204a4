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
    /// Each standard key's record as this process last read it, by its
    /// digest: a send starts on it while the read that confirms it is out
    /// (`http::preamble`).
    pub known_keys: crate::hint::Hint<crate::auth::StandardKey>,
    pub clock: Clock,
    /// DKIM signers by the name of the secret holding their key.
    pub signers: std::sync::Mutex<std::collections::HashMap<String, Arc<crate::mail::message::Signer>>>,
    /// The inbox list's encoded summaries, by the row text they came from.
    pub summaries: crate::memo::EncodingMemo,
    /// Held by the inbound poller's run: runs of one process take turns
    /// (the local server's quick tick and its job interval both run it).
    pub poller_runs: tokio::sync::Mutex<()>,
    /// Set when this process queued a webhook event, so the local server's
    /// quick poller runs deliver it at once rather than read the queue ten
    /// times a second (scheduled runs always read it).
    pub webhooks_queued: std::sync::atomic::AtomicBool,
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
    /// Each await of an AWS SDK call is boxed (the secrets' are, by their
    /// trait): their futures are 10 KB and more, and held inline they made
    /// this future, which a function's main holds on the main thread's stack,
    /// 13 KB; every page of stack that a cold start touches is a page fault.
    pub async fn build(config: Config, mode: Mode) -> anyhow::Result<Built> {
        let aws = if needs_aws(&config) {
            Some(Box::pin(aws_defaults().load()).await)
        } else {
            None
        };
        let secrets = secrets(&config, aws.as_ref());
        // Lambda: the clients are built first so that their connections are
        // opened (TLS included) while the secrets are read, in one request.
        let dynamo = (config.store == StoreKind::Dynamodb)
            .then(|| aws_sdk_dynamodb::Client::new(aws.as_ref().expect("aws config")));
        let s3 = config
            .bucket
            .as_ref()
            .map(|_| crate::blob::s3::client_for(aws.as_ref().expect("aws config")));
        let (loaded, ()) = tokio::join!(
            load_secrets(secrets.as_ref(), &config, mode),
            Box::pin(warm_up(dynamo.as_ref(), s3.as_ref(), &config, mode))
        );
        let mut loaded = loaded?;
        let hasher = KeyHasher::new(loaded.hmac_secret.clone());
        let (agent_key_digest, agent_key_last4) = agent_key(&hasher, secrets.as_ref(), &mut loaded).await?;
        let Loaded {
            sync_token,
            new_agent_key,
            ..
        } = loaded;
        let identity = identity(&config, secrets.as_ref()).await?;
        let store = Box::pin(open_store(&config, mode, dynamo)).await?;
        let (metered, store_meter) = crate::store::metered::Metered::new(store);
        let store: Arc<dyn Store> = Arc::new(metered);
        let blobs: Arc<dyn BlobStore> = match (&config.bucket, s3) {
            (Some(bucket), Some(s3)) => Arc::new(crate::blob::s3::S3BlobStore::new(s3, bucket)),
            _ => Arc::new(FsBlobStore::new(config.data_dir.join("blobs"))),
        };
        let (customer_mail, system_mail) = transports(&config, mode, aws.as_ref())?;
        let dns = Dns::new(config.dns_server.as_deref())?;
        let summaries = crate::memo::EncodingMemo::with_budget(config.list_memo_bytes);
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
            known_keys: Default::default(),
            clock: Clock::default(),
            signers: Default::default(),
            summaries,
            poller_runs: Default::default(),
            webhooks_queued: Default::default(),
        });
        Ok(Built { context, new_agent_key })
    }
}

/// Where the secrets are: the data directory, or Secrets Manager.
fn secrets(config: &Config, aws: Option<&aws_config::SdkConfig>) -> Arc<dyn Secrets> {
    match config.secrets {
        SecretsKind::Dir => Arc::new(DirSecrets::new(config.data_dir.join("secrets"))),
        SecretsKind::Aws => Arc::new(crate::secrets::aws::SecretsManagerSecrets::new(
            aws_sdk_secretsmanager::Client::new(aws.expect("aws config")),
            &config.secret_prefix,
        )),
    }
}

/// The agent key's digest and last four: from the key itself, from the
/// stored pair, or made now for the key this first start generated. That key
/// is kept (and shown) only when its pair is the one stored: of two first
/// starts on one data directory, the one that stored its pair first wins.
async fn agent_key(hasher: &KeyHasher, secrets: &dyn Secrets, loaded: &mut Loaded) -> anyhow::Result<(String, String)> {
    Ok(match (&loaded.agent_key, &loaded.agent_key_pair) {
        (Some(key), _) => (hasher.key_digest(key), keys::last4(key)),
        (None, Some(pair)) => pair.clone(),
        (None, None) => {
            let key = loaded.new_agent_key.as_deref().expect("a new key when none is stored");
            let ours = format!("{}:{}", hasher.key_digest(key), keys::last4(key));
            let stored = secrets.create(AGENT_KEY_DIGEST, &ours).await?;
            if stored != ours {
                loaded.new_agent_key = None;
            }
            split_pair(&stored)
        }
    })
}

/// A stored `digest:last4`.
fn split_pair(stored: &str) -> (String, String) {
    let (digest, last4) = stored.split_once(':').unwrap_or((stored, ""));
    (digest.to_string(), last4.to_string())
}

/// Identity tokens: in production the JWKS is fetched when the first token
/// arrives (no network call at cold start), then cached; locally the signing
/// key in the data directory signs and verifies them.
async fn identity(config: &Config, secrets: &dyn Secrets) -> anyhow::Result<IdentityVerifier> {
    Ok(match &config.jwks_url {
        Some(url) => IdentityVerifier::remote(url, &config.token_issuer, &config.token_audience),
        None => {
            let signer = LocalSigner::load_or_create(secrets).await?;
            IdentityVerifier::with_jwks(signer.jwks(), &config.token_issuer, &config.token_audience)
        }
    })
}

/// The store the configuration names: the embedded file (opened at the first
/// request in Lambda, since opening writes), or DynamoDB (its table created
/// locally when missing).
async fn open_store(
    config: &Config,
    mode: Mode,
    dynamo: Option<aws_sdk_dynamodb::Client>,
) -> anyhow::Result<Arc<dyn Store>> {
    Ok(match config.store {
        StoreKind::Embedded => {
            std::fs::create_dir_all(&config.data_dir)?;
            let file = config.data_dir.join("store.redb");
            Arc::new(match mode {
                // A locked or broken file stops the local server at start.
                Mode::Local => EmbeddedStore::open(&file)?,
                Mode::Lambda => EmbeddedStore::open_at_first_use(&file),
            })
        }
        StoreKind::Dynamodb => {
            let store = crate::store::dynamo::DynamoStore::new(dynamo.expect("dynamodb client"), &config.table);
            if mode == Mode::Local {
                Box::pin(store.ensure_table()).await?;
            }
            Arc::new(store)
        }
    })
}

type Transports = (Option<Arc<dyn Transport>>, Option<Arc<dyn Transport>>);

/// The customer mail transport (SMTP, a local spool, or none) and the one the
/// service's own mail takes.
fn transports(config: &Config, mode: Mode, aws: Option<&aws_config::SdkConfig>) -> anyhow::Result<Transports> {
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
        SystemMailKind::Outbox => {
            Some(Arc::new(SpoolTransport::new(config.data_dir.join("outbox"))) as Arc<dyn Transport>)
        }
        SystemMailKind::Ses => Some(Arc::new(crate::mail::ses::SesTransport::new(aws_sdk_sesv2::Client::new(
            aws.expect("aws config"),
        ))) as Arc<dyn Transport>),
    };
    Ok((customer_mail, system_mail))
}

/// The secrets a context needs, read at once.
struct Loaded {
    hmac_secret: String,
    /// The agent key itself, when configured or read (Lambda).
    agent_key: Option<String>,
    /// The stored digest and last four of the agent key (local).
    agent_key_pair: Option<(String, String)>,
    sync_token: String,
    /// A key made on this start (local, first start), printed once.
    new_agent_key: Option<String>,
}

/// Lambda: the HMAC secret, the agent key and the sync token in one request
/// (`Secrets::get_many`; one BatchGetSecretValue on Secrets Manager), all
/// required. Local: read from the data directory, created when missing.
async fn load_secrets(secrets: &dyn Secrets, config: &Config, mode: Mode) -> anyhow::Result<Loaded> {
    match mode {
        Mode::Lambda => lambda_secrets(secrets, config).await,
        Mode::Local => local_secrets(secrets, config).await,
    }
}

async fn lambda_secrets(secrets: &dyn Secrets, config: &Config) -> anyhow::Result<Loaded> {
    let mut names = vec![HMAC_SECRET];
    if config.agent_key.is_none() {
        names.push(AGENT_KEY);
    }
    if config.sync_token.is_none() {
        names.push(SYNC_TOKEN);
    }
    let values = secrets.get_many(&names).await?;
    let mut found = std::collections::HashMap::new();
    for (name, value) in names.iter().zip(values) {
        found.insert(*name, value.ok_or_else(|| anyhow::anyhow!("secret {name} is missing"))?);
    }
    // A configured key is taken as it is; the stored one is the random part
    // CloudFormation generated, composed into `svc_` + random.
    let agent_key = match &config.agent_key {
        Some(key) => key.clone(),
        None => keys::agent_key_from_secret(&found.remove(AGENT_KEY).expect("read")),
    };
    Ok(Loaded {
        hmac_secret: found.remove(HMAC_SECRET).expect("read"),
        agent_key: Some(agent_key),
        agent_key_pair: None,
        sync_token: match &config.sync_token {
            Some(token) => token.clone(),
            None => found.remove(SYNC_TOKEN).expect("read"),
        },
        new_agent_key: None,
    })
}

async fn local_secrets(secrets: &dyn Secrets, config: &Config) -> anyhow::Result<Loaded> {
    let hmac_secret = crate::secrets::get_or_create(secrets, HMAC_SECRET, keys::new_secret).await?;
    let mut new_agent_key = None;
    let (agent_key, agent_key_pair) = match &config.agent_key {
        Some(key) => (Some(key.clone()), None),
        None => match secrets.get(AGENT_KEY_DIGEST).await? {
            Some(stored) => (None, Some(split_pair(&stored))),
            None => {
                new_agent_key = Some(keys::new_key());
                (None, None)
            }
        },
    };
    let sync_token = match &config.sync_token {
        Some(token) => token.clone(),
        None => crate::secrets::get_or_create(secrets, SYNC_TOKEN, keys::new_secret).await?,
    };
    Ok(Loaded {
        hmac_secret,
        agent_key,
        agent_key_pair,
        sync_token,
        new_agent_key,
    })
}

/// Opens the DynamoDB and S3 connections (DNS, TCP, TLS) during a Lambda
/// cold start, so the first event does not pay for them: one read of an item
/// that never exists, and a HEAD of the bucket (its answer, allowed or
/// denied, does not matter). Local mode skips it.
async fn warm_up(
    dynamo: Option<&aws_sdk_dynamodb::Client>,
    s3: Option<&aws_sdk_s3::Client>,
    config: &Config,
    mode: Mode,
) {
    if mode != Mode::Lambda {
        return;
    }
    let dynamo = async {
        if let Some(client) = dynamo {
            let key = aws_sdk_dynamodb::types::AttributeValue::S("warm-up".into());
            let _ = client
                .get_item()
                .table_name(&config.table)
                .key("pk", key.clone())
                .key("sk", key)
                .send()
                .await;
        }
    };
    let s3 = async {
        if let (Some(client), Some(bucket)) = (s3, &config.bucket) {
            let _ = client.head_bucket().bucket(bucket).send().await;
        }
    };
    tokio::join!(dynamo, s3);
}

/// The SDK's standard retries (throttling, 5xx, dropped connections; jittered
/// exponential backoff; a token bucket that stops retrying a failing
/// service), tightened so that a store call gives up within about five
/// seconds and a request answers 503 with Retry-After well inside its 29 s:
/// five attempts 20 ms to 1 s apart instead of three from 1 s up to 20 s.
/// No per-attempt timeout: a conditional write retried after a timed-out
/// attempt that did apply would fail its condition.
fn aws_defaults() -> aws_config::ConfigLoader {
    use aws_config::retry::RetryConfig;
    use aws_config::timeout::TimeoutConfig;
    use std::time::Duration;
    aws_config::defaults(aws_config::BehaviorVersion::latest())
        .retry_config(
            RetryConfig::standard()
                .with_max_attempts(5)
                .with_initial_backoff(Duration::from_millis(20))
                .with_max_backoff(Duration::from_secs(1)),
        )
        .timeout_config(
            TimeoutConfig::builder()
                .connect_timeout(Duration::from_secs(2))
                .operation_timeout(Duration::from_secs(5))
                .build(),
        )
}

fn needs_aws(config: &Config) -> bool {
    config.store == StoreKind::Dynamodb
        || config.bucket.is_some()
        || config.secrets == SecretsKind::Aws
        || config.system_mail == SystemMailKind::Ses
}
