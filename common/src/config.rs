//! One `Config` for every binary: flags for the local server, the same names as
//! `MAILHOST_*` environment variables for Lambda (which parses no arguments).

use std::net::SocketAddr;
use std::path::PathBuf;

/// The issuer and audience of the tokens the local server signs.
pub const LOCAL_ISSUER: &str = "mailhost-local";
pub const LOCAL_AUDIENCE: &str = "mailhost";
/// Where the API description is served, under the service's base URL.
pub const DOCS_PATH: &str = "/docs/openapi.json";
/// The docs link when no base URL is known.
pub const LOCAL_DOCS_URL: &str = "https://mailhost.localhost/docs/openapi.json";

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
    pub service_domain: crate::values::DomainName,
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
    /// Nameserver for domain checks (host:port). The local server's default
    /// (or `local`) is its own loopback zone (src/local_zone.rs), `system`
    /// the system's resolver; under Lambda, unset is the system's.
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
    /// Sealing domains whose ARC chain decides DMARC for forwarded mail
    /// (comma-separated): a passing chain whose newest seal is theirs, and
    /// whose recorded `dmarc=pass` is theirs, makes the message pass.
    #[arg(
        long,
        env = "MAILHOST_TRUSTED_ARC_SEALERS",
        value_delimiter = ',',
        default_value = ""
    )]
    pub trusted_arc_sealers: Vec<String>,
    /// Origins (scheme://host[:port]) a browser page may call POST /mcp from,
    /// comma-separated, beside the service's own; any other Origin is 403.
    #[arg(
        long,
        env = "MAILHOST_MCP_ALLOWED_ORIGINS",
        value_delimiter = ',',
        default_value = ""
    )]
    pub mcp_allowed_origins: Vec<String>,
    /// PEM certificates webhook deliveries trust beside the system's roots
    /// (which `SSL_CERT_FILE` also extends); tests name their receiver's CA.
    #[arg(long, env = "MAILHOST_WEBHOOK_CA_FILE")]
    pub webhook_ca_file: Option<std::path::PathBuf>,
    /// Seconds between runs of the inbound poller and the mailbox export (local mode).
    #[arg(long, env = "MAILHOST_POLL_INTERVAL", default_value_t = 5)]
    pub poll_interval: u64,
    /// Milliseconds between the quick runs of the inbound poller (local mode),
    /// so dropped mail is listed within a tenth of a second (a run over an
    /// empty spool is one directory read); 0: only on the poll interval.
    #[arg(long, env = "MAILHOST_INBOUND_POLL_MS", default_value_t = 100)]
    pub inbound_poll_ms: u64,
    /// JWKS for identity tokens; unset: the local signing key in the data directory.
    #[arg(long, env = "MAILHOST_JWKS_URL")]
    pub jwks_url: Option<String>,
    /// Expected `iss` of identity tokens (Firebase: https://securetoken.google.com/<project>).
    #[arg(long, env = "MAILHOST_TOKEN_ISSUER", default_value = LOCAL_ISSUER)]
    pub token_issuer: String,
    /// Expected `aud` of identity tokens (Firebase: the project id).
    #[arg(long, env = "MAILHOST_TOKEN_AUDIENCE", default_value = LOCAL_AUDIENCE)]
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
    /// Unset: the public URL's (or the API's own address's) /docs/openapi.json.
    #[arg(long, env = "MAILHOST_DOCS_URL")]
    pub docs_url: Option<String>,
    /// CloudWatch namespace of the business metrics (embedded metric format
    /// lines under Lambda; debug log lines locally).
    #[arg(long, env = "MAILHOST_METRICS_NAMESPACE", default_value = "mailhost")]
    pub metrics_namespace: String,
    /// The service's public base URL (scheme://host[/path]) for links in mail:
    /// an approval request links to the web app's page of held sends. Unset:
    /// the local server's own address; a function sends no link.
    #[arg(long, env = "MAILHOST_PUBLIC_URL")]
    pub public_url: Option<String>,
    /// Bytes of memory each process may keep of inbox rows' encoded summaries
    /// (a page read again answers from it); 0 keeps none.
    #[arg(long, env = "MAILHOST_LIST_MEMO_BYTES", default_value_t = 8 << 20)]
    pub list_memo_bytes: usize,
}

impl Config {
    /// The address the service writes from itself (codes, notices,
    /// approval requests) and the agent key sends as.
    pub fn noreply(&self) -> String {
        format!("noreply@{}", self.service_domain)
    }

    /// Reads the configuration from the flags' `MAILHOST_*` variables alone,
    /// as a Lambda function does, with the flags' defaults. It reads them
    /// without clap: building and matching clap's command took 0.15 ms, the
    /// largest part of a function's own cold start (docs/benchmarks.md). The
    /// test `variables_read_as_the_flags_do` holds each variable's name,
    /// default and parsing to its flag's.
    pub fn from_env() -> anyhow::Result<Self> {
        // As clap does, a value that is not UTF-8 is refused, not taken as unset.
        if let Some((name, _)) = std::env::vars_os()
            .find(|(name, value)| name.to_str().is_some_and(|n| n.starts_with("MAILHOST_")) && value.to_str().is_none())
        {
            anyhow::bail!("{}: not UTF-8", name.to_string_lossy());
        }
        Self::from_vars(|name| std::env::var(name).ok())
    }

    fn from_vars(var: impl Fn(&str) -> Option<String>) -> anyhow::Result<Self> {
        let vars = Vars(&var);
        Ok(Config {
            addr: vars.parsed("MAILHOST_ADDR", "127.0.0.1:8080")?,
            data_dir: vars.text("MAILHOST_DATA_DIR", ".mailhost").into(),
            service_domain: vars.parsed("MAILHOST_SERVICE_DOMAIN", "mailhost.localhost")?,
            mail_host: vars.text("MAILHOST_MAIL_HOST", "mx.mailhost.localhost"),
            smtp_url: var("MAILHOST_SMTP_URL"),
            smtp_ca_file: var("MAILHOST_SMTP_CA_FILE").map(PathBuf::from),
            spool: vars.parsed("MAILHOST_SPOOL", "true")?,
            dns_server: var("MAILHOST_DNS_SERVER"),
            operator_emails: vars.list("MAILHOST_OPERATOR_EMAILS", ""),
            agent_key: var("MAILHOST_AGENT_KEY"),
            sync_token: var("MAILHOST_SYNC_TOKEN"),
            store: vars.choice("MAILHOST_STORE", "embedded")?,
            table: vars.text("MAILHOST_TABLE", "mailhost"),
            bucket: var("MAILHOST_BUCKET"),
            secrets: vars.choice("MAILHOST_SECRETS", "dir")?,
            secret_prefix: vars.text("MAILHOST_SECRET_PREFIX", "mailhost/"),
            system_mail: vars.choice("MAILHOST_SYSTEM_MAIL", "transport")?,
            webhook_allow_hosts: vars.list("MAILHOST_WEBHOOK_ALLOW_HOSTS", ""),
            mcp_allowed_origins: vars.list("MAILHOST_MCP_ALLOWED_ORIGINS", ""),
            trusted_arc_sealers: vars.list("MAILHOST_TRUSTED_ARC_SEALERS", ""),
            webhook_ca_file: var("MAILHOST_WEBHOOK_CA_FILE").map(PathBuf::from),
            poll_interval: vars.parsed("MAILHOST_POLL_INTERVAL", "5")?,
            inbound_poll_ms: vars.parsed("MAILHOST_INBOUND_POLL_MS", "100")?,
            jwks_url: var("MAILHOST_JWKS_URL"),
            token_issuer: vars.text("MAILHOST_TOKEN_ISSUER", LOCAL_ISSUER),
            token_audience: vars.text("MAILHOST_TOKEN_AUDIENCE", LOCAL_AUDIENCE),
            protected_local_parts: vars.list("MAILHOST_PROTECTED_ADDRESSES", "inbox,noreply,postmaster,abuse"),
            mta_self_apply: vars.parsed("MAILHOST_MTA_SELF_APPLY", "true")?,
            docs_url: var("MAILHOST_DOCS_URL"),
            metrics_namespace: vars.text("MAILHOST_METRICS_NAMESPACE", "mailhost"),
            public_url: var("MAILHOST_PUBLIC_URL"),
            list_memo_bytes: vars.parsed("MAILHOST_LIST_MEMO_BYTES", "8388608")?,
        })
    }

    /// Where a link in mail to `path` (which starts with `/`) points, when
    /// the public URL is known (an empty value, as a stack without one
    /// passes, is none).
    pub fn public_link(&self, path: &str) -> Option<String> {
        let base = self.public_url.as_deref()?.trim().trim_end_matches('/');
        (!base.is_empty()).then(|| format!("{base}{path}"))
    }

    pub fn is_operator_email(&self, email: &str) -> bool {
        self.operator_emails
            .iter()
            .any(|o| !o.is_empty() && o.trim().eq_ignore_ascii_case(email))
    }
}

/// Variables by name, each read as its flag reads its value.
struct Vars<'a, F: Fn(&str) -> Option<String>>(&'a F);

impl<F: Fn(&str) -> Option<String>> Vars<'_, F> {
    fn text(&self, name: &str, default: &str) -> String {
        (self.0)(name).unwrap_or_else(|| default.to_string())
    }

    fn parsed<T: std::str::FromStr>(&self, name: &str, default: &str) -> anyhow::Result<T>
    where
        T::Err: std::fmt::Display,
    {
        let value = self.text(name, default);
        value.parse().map_err(|e| anyhow::anyhow!("{name}: {value:?}: {e}"))
    }

    /// Comma-separated.
    fn list(&self, name: &str, default: &str) -> Vec<String> {
        self.text(name, default).split(',').map(str::to_string).collect()
    }

    fn choice<T: ValueEnum>(&self, name: &str, default: &str) -> anyhow::Result<T> {
        let value = self.text(name, default);
        T::from_str(&value, false).map_err(|_| {
            let choices: Vec<String> = T::value_variants()
                .iter()
                .filter_map(|v| v.to_possible_value().map(|p| p.get_name().to_string()))
                .collect();
            anyhow::anyhow!("{name}: {value:?} is not one of {}", choices.join(", "))
        })
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use clap::{Command, FromArgMatches};

    use super::*;

    /// The flags' command, reading no variable: a test's environment never
    /// leaks into it.
    fn flags() -> Command {
        Config::augment_args(Command::new("mailhost")).mut_args(|arg| arg.env(None))
    }

    fn from_flags(args: &[String]) -> Result<Config, clap::Error> {
        let matches =
            flags().try_get_matches_from(std::iter::once("mailhost".to_string()).chain(args.iter().cloned()))?;
        Config::from_arg_matches(&matches)
    }

    #[test]
    fn a_link_in_mail_needs_a_public_url() {
        let mut config = Config::from_vars(|_| None).unwrap();
        assert_eq!(config.public_link("/#/guardrails"), None);
        for (url, link) in [
            ("", None),
            (" ", None),
            ("https://mail.example.com", Some("https://mail.example.com/#/x")),
            (
                "https://api.example.com/Prod/",
                Some("https://api.example.com/Prod/#/x"),
            ),
        ] {
            config.public_url = Some(url.into());
            assert_eq!(config.public_link("/#/x").as_deref(), link, "{url:?}");
        }
    }

    #[test]
    fn variables_read_as_the_flags_do() {
        // A value for every variable, none of them its default.
        let samples: HashMap<&str, &str> = HashMap::from([
            ("MAILHOST_ADDR", "10.1.2.3:9000"),
            ("MAILHOST_DATA_DIR", "/var/mailhost"),
            ("MAILHOST_SERVICE_DOMAIN", "mail.example.com"),
            ("MAILHOST_MAIL_HOST", "mx.example.com"),
            ("MAILHOST_SMTP_URL", "smtp://relay:587?tls=required"),
            ("MAILHOST_SMTP_CA_FILE", "/etc/relay-ca.pem"),
            ("MAILHOST_SPOOL", "false"),
            ("MAILHOST_DNS_SERVER", "127.0.0.1:5353"),
            ("MAILHOST_OPERATOR_EMAILS", "a@example.com,b@example.com"),
            ("MAILHOST_AGENT_KEY", "svc_sample"),
            ("MAILHOST_SYNC_TOKEN", "sync_sample"),
            ("MAILHOST_STORE", "dynamodb"),
            ("MAILHOST_TABLE", "prod-table"),
            ("MAILHOST_BUCKET", "prod-bucket"),
            ("MAILHOST_SECRETS", "aws"),
            ("MAILHOST_SECRET_PREFIX", "mailhost/prod/"),
            ("MAILHOST_SYSTEM_MAIL", "ses"),
            ("MAILHOST_WEBHOOK_ALLOW_HOSTS", "hooks.internal,,x"),
            (
                "MAILHOST_MCP_ALLOWED_ORIGINS",
                "https://app.example.com,http://localhost:5173",
            ),
            ("MAILHOST_WEBHOOK_CA_FILE", "/etc/hooks-ca.pem"),
            ("MAILHOST_TRUSTED_ARC_SEALERS", "google.com,,outlook.com"),
            ("MAILHOST_POLL_INTERVAL", "60"),
            ("MAILHOST_INBOUND_POLL_MS", "0"),
            ("MAILHOST_JWKS_URL", "https://keys.example.com/jwks"),
            ("MAILHOST_TOKEN_ISSUER", "https://securetoken.google.com/p"),
            ("MAILHOST_TOKEN_AUDIENCE", "p"),
            ("MAILHOST_PROTECTED_ADDRESSES", "inbox"),
            ("MAILHOST_MTA_SELF_APPLY", "false"),
            ("MAILHOST_DOCS_URL", "https://docs.example.com/openapi.json"),
            ("MAILHOST_METRICS_NAMESPACE", "mailhost/prod"),
            ("MAILHOST_PUBLIC_URL", "https://mail.example.com/Prod"),
            ("MAILHOST_LIST_MEMO_BYTES", "0"),
        ]);
        let mut args = Vec::new();
        for arg in Config::augment_args(Command::new("mailhost")).get_arguments() {
            let name = arg.get_env().expect("every flag has a variable").to_str().unwrap();
            let sample = samples
                .get(name)
                .unwrap_or_else(|| panic!("no sample value for {name}"));
            args.push(format!("--{}={sample}", arg.get_long().unwrap()));
        }
        assert_eq!(args.len(), samples.len(), "a sample for a variable no flag reads");

        let by_flags = from_flags(&args).unwrap();
        let by_vars = Config::from_vars(|name| samples.get(name).map(|v| v.to_string())).unwrap();
        assert_eq!(format!("{by_vars:?}"), format!("{by_flags:?}"));

        let defaults_by_flags = from_flags(&[]).unwrap();
        let defaults_by_vars = Config::from_vars(|_| None).unwrap();
        assert_eq!(format!("{defaults_by_vars:?}"), format!("{defaults_by_flags:?}"));
    }

    #[test]
    fn a_variable_that_does_not_parse_is_refused_naming_it() {
        for (name, value) in [
            ("MAILHOST_STORE", "postgres"),
            ("MAILHOST_SPOOL", "yes"),
            ("MAILHOST_POLL_INTERVAL", "-1"),
            ("MAILHOST_ADDR", "localhost"),
        ] {
            let error = Config::from_vars(|n| (n == name).then(|| value.to_string())).unwrap_err();
            assert!(
                error.to_string().starts_with(&format!("{name}: \"{value}\"")),
                "{error}"
            );
        }
        let error = Config::from_vars(|n| (n == "MAILHOST_STORE").then(|| "postgres".into())).unwrap_err();
        assert_eq!(
            error.to_string(),
            "MAILHOST_STORE: \"postgres\" is not one of embedded, dynamodb"
        );
    }
}
