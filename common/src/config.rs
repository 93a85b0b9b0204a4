//! One `Config` for every binary: flags for the local server, the same names as
//! `MAILHOST_*` environment variables for Lambda (which parses no arguments).

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{Args, ValueEnum};

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum StoreKind {
    Embedded,
    Dynamodb,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SecretsKind {
    /// Files under `<data-dir>/secrets`, overridable by `MAILHOST_SECRET_<NAME>`.
    Dir,
    /// AWS Secrets Manager, ids `<secret-prefix><name>`.
    Aws,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SystemMailKind {
    /// The same transport as customer mail (spool or SMTP).
    Transport,
    /// The local outbox (`<data-dir>/outbox`), whatever customer mail uses:
    /// access codes stay readable on a developer's machine whose customer
    /// mail goes to a real relay.
    Outbox,
    /// Amazon SES v2.
    Ses,
}

#[derive(Debug, Clone, Args)]
pub struct Config {
    /// Address the local server listens on.
    #[arg(long, env = "MAILHOST_ADDR", default_value = "127.0.0.1:8080")]
    pub addr: SocketAddr,
    /// Directory for the embedded store, blobs, outbox and local secrets.
    #[arg(long, env = "MAILHOST_DATA_DIR", default_value = ".mailhost")]
    pub data_dir: PathBuf,
    /// The service's own mail domain.
    #[arg(long, env = "MAILHOST_SERVICE_DOMAIN", default_value = "mailhost.localhost")]
    pub service_domain: String,
    /// The mail host: MX target for customer domains and the outbound submission host.
    #[arg(long, env = "MAILHOST_MAIL_HOST", default_value = "mx.mailhost.localhost")]
    pub mail_host: String,
    /// Outbound SMTP in lettre's URL form (smtp://user:pass@host:587?tls=required).
    /// Unset: mail is spooled under `<data-dir>/outbox` (local) or not sent (Lambda).
    #[arg(long, env = "MAILHOST_SMTP_URL")]
    pub smtp_url: Option<String>,
    /// A PEM file of CA certificates to trust for the SMTP relay, besides the
    /// system roots.
    #[arg(long, env = "MAILHOST_SMTP_CA_FILE")]
    pub smtp_ca_file: Option<PathBuf>,
    /// Without an SMTP URL, spool outgoing mail to `<data-dir>/outbox` (local
    /// mode). `false` leaves no outbound transport: sends fail with 500.
    #[arg(long, env = "MAILHOST_SPOOL", default_value_t = true, action = clap::ArgAction::Set)]
    pub spool: bool,
    /// Nameserver for domain checks (host:port); default: the system's.
    #[arg(long, env = "MAILHOST_DNS_SERVER")]
    pub dns_server: Option<String>,
    /// Operator emails, comma-separated.
    #[arg(long, env = "MAILHOST_OPERATOR_EMAILS", value_delimiter = ',', default_value = "")]
    pub operator_emails: Vec<String>,
    /// The shared agent key; unset, a local server creates one on first start.
    #[arg(long, env = "MAILHOST_AGENT_KEY", hide_env_values = true)]
    pub agent_key: Option<String>,
    /// The mail host's sync token; unset, a local server creates one on first start.
    #[arg(long, env = "MAILHOST_SYNC_TOKEN", hide_env_values = true)]
    pub sync_token: Option<String>,
    #[arg(long, env = "MAILHOST_STORE", value_enum, default_value = "embedded")]
    pub store: StoreKind,
    /// DynamoDB table (the endpoint comes from AWS_ENDPOINT_URL).
    #[arg(long, env = "MAILHOST_TABLE", default_value = "mailhost")]
    pub table: String,
    /// S3 bucket for blobs; unset: `<data-dir>/blobs`.
    #[arg(long, env = "MAILHOST_BUCKET")]
    pub bucket: Option<String>,
    #[arg(long, env = "MAILHOST_SECRETS", value_enum, default_value = "dir")]
    pub secrets: SecretsKind,
    #[arg(long, env = "MAILHOST_SECRET_PREFIX", default_value = "mailhost/")]
    pub secret_prefix: String,
    #[arg(long, env = "MAILHOST_SYSTEM_MAIL", value_enum, default_value = "transport")]
    pub system_mail: SystemMailKind,
    /// Hosts exempt from the webhook private-address rule, comma-separated.
    #[arg(
        long,
        env = "MAILHOST_WEBHOOK_ALLOW_HOSTS",
        value_delimiter = ',',
        default_value = ""
    )]
    pub webhook_allow_hosts: Vec<String>,
    /// PEM certificates webhook deliveries trust beside the system's roots
    /// (which `SSL_CERT_FILE` also extends); tests name their receiver's CA.
    #[arg(long, env = "MAILHOST_WEBHOOK_CA_FILE")]
    pub webhook_ca_file: Option<std::path::PathBuf>,
    /// Seconds between runs of the inbound poller and the mailbox export (local mode).
    #[arg(long, env = "MAILHOST_POLL_INTERVAL", default_value_t = 5)]
    pub poll_interval: u64,
    /// Milliseconds between the quick runs of the inbound poller (local mode),
    /// so dropped mail is listed well within a second (a run over an empty
    /// spool is one directory read); 0: only on the poll interval.
    #[arg(long, env = "MAILHOST_INBOUND_POLL_MS", default_value_t = 250)]
    pub inbound_poll_ms: u64,
    /// JWKS for identity tokens; unset: the local signing key in the data directory.
    #[arg(long, env = "MAILHOST_JWKS_URL")]
    pub jwks_url: Option<String>,
    /// Expected `iss` of identity tokens (Firebase: https://securetoken.google.com/<project>).
    #[arg(long, env = "MAILHOST_TOKEN_ISSUER", default_value = crate::auth::identity::LOCAL_ISSUER)]
    pub token_issuer: String,
    /// Expected `aud` of identity tokens (Firebase: the project id).
    #[arg(long, env = "MAILHOST_TOKEN_AUDIENCE", default_value = crate::auth::identity::LOCAL_AUDIENCE)]
    pub token_audience: String,
    /// Local parts on the service domain that exist from the start and are protected.
    #[arg(
        long,
        env = "MAILHOST_PROTECTED_ADDRESSES",
        value_delimiter = ',',
        default_value = "inbox,noreply,postmaster,abuse"
    )]
    pub protected_local_parts: Vec<String>,
    /// Apply each mailbox export as soon as it is written (local mode with no mail
    /// host attached); a real mail host acknowledges versions itself.
    #[arg(long, env = "MAILHOST_MTA_SELF_APPLY", default_value_t = true, action = clap::ArgAction::Set)]
    pub mta_self_apply: bool,
    /// Public URL of the API documentation, returned in the credits payload.
    #[arg(
        long,
        env = "MAILHOST_DOCS_URL",
        default_value = "https://mailhost.localhost/docs/openapi.json"
    )]
    pub docs_url: String,
}

impl Config {
    /// Reads the configuration from the environment alone (Lambda).
    pub fn from_env() -> Self {
        Self::from_env_with(&[])
    }

    /// Reads the configuration from the environment and the given flags.
    pub fn from_env_with(args: &[&str]) -> Self {
        #[derive(clap::Parser)]
        struct EnvOnly {
            #[command(flatten)]
            config: Config,
        }
        <EnvOnly as clap::Parser>::parse_from(std::iter::once("mailhost").chain(args.iter().copied())).config
    }

    pub fn is_operator_email(&self, email: &str) -> bool {
        self.operator_emails
            .iter()
            .any(|o| !o.is_empty() && o.trim().eq_ignore_ascii_case(email))
    }
}
