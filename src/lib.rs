//! The local server: every route family in one process, on the embedded store
//! by default, with the scheduled jobs on an interval. Tests start it on port 0.

pub mod connections;
pub mod local_zone;
pub mod mailbox_sync;
pub mod maillog;
pub mod milter;
pub mod mta_sync;
pub mod spam_training;
pub mod verdict;

use std::net::SocketAddr;
use std::sync::Arc;

use common::config::Config;
use common::context::{Built, Context, Mode};
use common::http;
use common::jobs;
use common::service::operators::mta_export;
use tokio::net::{TcpListener, TcpSocket};
use tokio::task::JoinHandle;

pub use connections::Limits;

pub struct Application {
    pub context: Arc<Context>,
    pub addr: SocketAddr,
    /// The agent key created on this start, to be shown once.
    pub new_agent_key: Option<String>,
    /// The connections' deadlines and cap (tests shorten them).
    pub limits: Limits,
    listener: TcpListener,
}

impl Application {
    /// Binds the address (port 0 picks a free port, which the configuration
    /// then holds), builds the context and only then listens: a client that
    /// can connect finds every secret the server made in place (a `mailhost
    /// token` run as soon as the port answers signs with the server's key).
    pub async fn build(mut config: Config) -> anyhow::Result<Self> {
        let socket = match config.addr {
            SocketAddr::V4(_) => TcpSocket::new_v4()?,
            SocketAddr::V6(_) => TcpSocket::new_v6()?,
        };
        // As TcpListener::bind does: a restart may take its port at once. Not
        // for port 0: Linux may then hand one free port to two sockets that
        // both set it, and the second's listen fails (two tests' servers
        // once did, the context being built between the bind and the listen).
        socket.set_reuseaddr(config.addr.port() != 0)?;
        socket.bind(config.addr)?;
        let addr = socket.local_addr()?;
        config.addr = addr;
        let Built { context, new_agent_key } = Context::build(config, Mode::Local).await?;
        common::service::operators::bootstrap::run(&context).await?;
        let listener = socket.listen(1024)?;
        Ok(Self {
            context,
            addr,
            new_agent_key,
            limits: Limits::default(),
            listener,
        })
    }

    /// Serves until the task is dropped or aborted.
    pub fn spawn(self) -> JoinHandle<std::io::Result<()>> {
        tokio::spawn(self.run())
    }

    pub async fn run(self) -> std::io::Result<()> {
        let jobs = tokio::spawn(run_jobs(self.context.clone()));
        let poller = tokio::spawn(run_poller(self.context.clone()));
        let router = http::local_router(self.context.clone());
        let _stop_jobs = AbortOnDrop(jobs);
        let _stop_poller = AbortOnDrop(poller);
        connections::serve(self.listener, router, self.limits).await
    }
}

/// The scheduled jobs (`common::jobs::JOBS`), each `--poll-interval` seconds rather than on their
/// minutes, in list order; a failed run is logged and the next tick runs it again. With no mail
/// host attached (`--mta-self-apply`), each export version is acknowledged at once.
async fn run_jobs(ctx: Arc<Context>) {
    let period = std::time::Duration::from_secs(ctx.config.poll_interval.max(1));
    let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        for job in jobs::JOBS {
            match (job.run)(&ctx, &serde_json::Value::Null).await {
                Ok(summary) if job.name == jobs::MTA_EXPORT.name => self_apply(&ctx, &summary).await,
                Ok(_) => {}
                Err(e) => tracing::error!(job = job.name, error = %e, "a scheduled job failed"),
            }
        }
    }
}

/// Acknowledges the export version an `mta-export` run wrote, as a mail host would after applying
/// it, when none is attached.
async fn self_apply(ctx: &Context, summary: &serde_json::Value) {
    if !ctx.config.mta_self_apply {
        return;
    }
    let Some(version) = summary["version"].as_i64() else {
        tracing::error!(%summary, "the mailbox export answered no version");
        return;
    };
    if let Err(e) = mta_export::acknowledge(ctx, version).await {
        tracing::error!(error = %e, "applying the mailbox export failed");
    }
}

/// The inbound poller's quick runs (every 100 ms by default), so a dropped
/// message is listed within a tenth of a second; the same job as on the poll
/// interval.
async fn run_poller(ctx: Arc<Context>) {
    if ctx.config.inbound_poll_ms == 0 {
        return;
    }
    let mut tick = tokio::time::interval(std::time::Duration::from_millis(ctx.config.inbound_poll_ms));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        if let Err(e) = common::service::receiving::poller::run_quick(&ctx).await {
            tracing::error!(job = jobs::POLLER.name, error = %e, "a scheduled job failed");
        }
    }
}

/// Drops raw messages into the inbound queue of the blob store under a data
/// directory (`<data-dir>/blobs`), without opening the store the server holds.
pub async fn deliver(data_dir: &std::path::Path, raw: Vec<u8>) -> anyhow::Result<String> {
    Ok(common::mail::inbound::drop_raw(spool(data_dir, None).await.as_ref(), raw).await?)
}

/// Where `mailhost deliver` drops mail: the S3 bucket a deployed stack's
/// poller reads (credentials and endpoint from the AWS environment), or the
/// local server's `<data-dir>/blobs`.
pub async fn spool(data_dir: &std::path::Path, bucket: Option<&str>) -> Box<dyn common::blob::BlobStore> {
    match bucket {
        Some(bucket) => {
            let conf = aws_config::load_defaults(aws_config::BehaviorVersion::latest()).await;
            Box::new(common::blob::s3::S3BlobStore::new(
                common::blob::s3::client_for(&conf),
                bucket,
            ))
        }
        None => Box::new(common::blob::fs::FsBlobStore::new(data_dir.join("blobs"))),
    }
}

/// The limits the mail host's Postfix takes from the service, by the names
/// `scripts/mail-host` fills in: one value each, said once, here.
pub fn mail_host_limits() -> [(&'static str, usize); 2] {
    [
        ("message_size_limit", common::mail::inbound::MESSAGE_SIZE_LIMIT),
        (
            "submission_message_size_limit",
            common::service::sending::submission::SUBMISSION_SIZE_LIMIT,
        ),
    ]
}

struct AbortOnDrop(JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}
