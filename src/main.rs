//! `mailhost`: run the whole service locally, and the tools a developer reaches for.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Parser, Subcommand};
use common::config::Config;
use common::mail::inbound::Envelope;
use common::secrets::DirSecrets;
use mailhost::Application;

/// The local server allocates with mimalloc: it serves many requests at
/// once, each making dozens of small allocations, and glibc's malloc and
/// free were a sixth of the instructions of a GET /credits
/// (benches/instructions.sh). The Lambda functions keep the system
/// allocator: each serves one request at a time, and mimalloc's start-up
/// added about 0.4 ms to their init (cargo bench --bench init,
/// docs/benchmarks.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(
    version,
    about = "Hosted mailboxes and mail sending over HTTPS, as one local process"
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// Serve every route (the default when no command is given).
    Serve(Box<Config>),
    /// Print an identity token that the server on the same data directory accepts.
    Token {
        #[arg(long, env = "MAILHOST_DATA_DIR", default_value = ".mailhost")]
        data_dir: PathBuf,
        #[arg(long)]
        email: String,
        /// Mark the holder as an operator.
        #[arg(long)]
        operator: bool,
        /// Lifetime in seconds.
        #[arg(long, default_value_t = 3600)]
        ttl: u64,
    },
    /// The mail host's agent: apply the mailbox export to Postfix and Dovecot
    /// every interval, and acknowledge what was applied.
    MtaSync(Box<mailhost::mta_sync::Agent>),
    /// The mail host's IMAP side of one mailbox through every door: keeps
    /// Dovecot and the service's store one state (flags, folders,
    /// deletions, sent copies), both ways, from Dovecot's log and the
    /// store's change marks.
    MailboxSync(Box<mailhost::mailbox_sync::Settings>),
    /// The mail host's submission filter: hand each message a mailbox submits
    /// on port 587 to the service, which checks, charges, signs and sends it.
    Milter(Box<mailhost::milter::Settings>),
    /// Drop raw messages (.eml files) into the inbound queue of the server on
    /// the same data directory; its poller files them within about a second.
    /// The mail host's pipe passes the envelope of each copy; without
    /// --recipient a message is filed by its first Delivered-To: line, or
    /// else by its To and Cc.
    Deliver(Box<Deliver>),
    /// Print the limits the mail host's configuration takes from the service,
    /// as `name value` lines (scripts/mail-host writes them into main.cf).
    Limits,
}

/// `mailhost deliver`'s arguments.
#[derive(clap::Args)]
struct Deliver {
    #[arg(long, env = "MAILHOST_DATA_DIR", default_value = ".mailhost")]
    data_dir: PathBuf,
    /// Drop into this S3 bucket's spool instead of `<data-dir>/blobs`
    /// (a mail host in front of a deployed stack).
    #[arg(long, env = "MAILHOST_BUCKET")]
    bucket: Option<String>,
    /// The envelope recipient this copy is for (Postfix's ${recipient}).
    #[arg(long)]
    recipient: Option<String>,
    /// The envelope sender (${sender}; empty for a bounce).
    #[arg(long, requires = "recipient")]
    sender: Option<String>,
    /// The mail host's SRS domain (postsrsd's -d): a sender it rewrote is
    /// kept as the original.
    #[arg(long, requires = "sender")]
    srs_domain: Option<String>,
    /// The SMTP client's address (${client_address}).
    #[arg(long, requires = "recipient")]
    client_address: Option<String>,
    /// The name the SMTP client gave in HELO (${client_helo}).
    #[arg(long, requires = "recipient")]
    helo: Option<String>,
    /// The header rspamd's milter writes its verdict in on this mail host
    /// (`X-Mailhost-Verdict-<secret>`, mail-host/rspamd): read into the
    /// envelope line and taken out of the file too, so the maildir copy
    /// never shows it. A message without it (or with two) has no verdict.
    #[arg(long, requires = "recipient")]
    verdict_header: Option<String>,
    #[arg(required = true)]
    files: Vec<PathBuf>,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.command {
        None => serve(Config::from_env()?).await,
        Some(Command::Serve(config)) => serve(*config).await,
        Some(Command::Token {
            data_dir,
            email,
            operator,
            ttl,
        }) => {
            let secrets = DirSecrets::new(data_dir.join("secrets"));
            let signer = common::auth::identity::LocalSigner::load_or_create(&secrets).await?;
            println!("{}", signer.mint(&email, operator, Duration::from_secs(ttl))?);
            Ok(())
        }
        Some(Command::MtaSync(settings)) => mailhost::mta_sync::run(*settings).await,
        Some(Command::Milter(settings)) => mailhost::milter::run(*settings).await,
        Some(Command::MailboxSync(settings)) => mailhost::mailbox_sync::run(*settings).await,
        Some(Command::Deliver(args)) => deliver(*args).await,
        Some(Command::Limits) => {
            for (name, value) in mailhost::mail_host_limits() {
                println!("{name} {value}");
            }
            Ok(())
        }
    }
}

/// Drops each file into the inbound spool, behind the envelope line the
/// mail host's pipe passed.
async fn deliver(args: Deliver) -> anyhow::Result<()> {
    let sender = match (args.sender, args.srs_domain) {
        (Some(sender), Some(domain)) => Some(Envelope::original_sender(&sender, &domain)),
        (sender, _) => sender,
    };
    let envelope = args.recipient.map(|recipient| Envelope {
        recipient: Some(recipient),
        sender,
        client_address: args.client_address,
        helo: args.helo,
    });
    let spool = mailhost::spool(&args.data_dir, args.bucket.as_deref()).await;
    for file in args.files {
        let raw = std::fs::read(&file).map_err(|e| anyhow::anyhow!("{}: {e}", file.display()))?;
        // Only this command writes an envelope line: one that arrives
        // with the message was written by someone else.
        if Envelope::present(&raw) {
            anyhow::bail!("{}: already starts with an envelope line", file.display());
        }
        let (raw, spam) = match &args.verdict_header {
            Some(name) => mailhost::verdict::take(&file, raw, name)?,
            None => (raw, None),
        };
        let raw = match &envelope {
            Some(envelope) => common::mail::spam::prepend(envelope, spam.as_ref(), &raw),
            None => raw,
        };
        let key = common::mail::inbound::drop_raw(spool.as_ref(), raw).await?;
        println!("{} -> {key}", file.display());
    }
    Ok(())
}

async fn serve(mut config: Config) -> anyhow::Result<()> {
    common::telemetry::init(false);
    // Links in mail point at this server unless told otherwise.
    config
        .public_url
        .get_or_insert_with(|| format!("http://{}", config.addr));
    // The server's own DNS zone on loopback: a domain under .test or
    // .localhost is served the records it was told to publish, so it
    // verifies on a laptop (src/local_zone.rs). `--dns-server system` asks
    // the system's resolver alone; a host:port asks that nameserver.
    let zone = match config.dns_server.as_deref() {
        None | Some("local") => {
            let zone = mailhost::local_zone::LocalZone::start(std::net::Ipv4Addr::LOCALHOST.into()).await?;
            config.dns_server = Some(zone.addr.to_string());
            Some(zone)
        }
        Some("system") => {
            config.dns_server = None;
            None
        }
        Some(_) => None,
    };
    let app = Application::build(config).await?;
    if let Some(zone) = &zone {
        zone.serve(app.context.clone());
        println!(
            "DNS for .test and .localhost domains: {} (dig @{} -p {} MX example.test)",
            zone.addr,
            zone.addr.ip(),
            zone.addr.port()
        );
    }
    if let Some(key) = &app.new_agent_key {
        // Shown once, on the terminal only: the server keeps just its hash.
        println!("Agent key (shown once, store it now): {key}");
    }
    tracing::info!(addr = %app.addr, data_dir = %app.context.config.data_dir.display(), "serving");
    tokio::select! {
        served = app.run() => served?,
        _ = tokio::signal::ctrl_c() => tracing::info!("shutting down"),
    }
    common::telemetry::flush();
    Ok(())
}
