//! The scheduled `mta-export` function: every 60 s (an EventBridge schedule)
//! writes a new `mtaMailboxExport` version for the mail host, then looks at
//! the MX of the verified domains due their daily look (`recheck`).
//!
//! Its first run in each container also runs the bootstrap (the agent key's
//! balance, the operators' account, the service domain and its mailboxes):
//! at the first run rather than at init, because init writes nothing.

use common::config::Config;
use common::context::{Context, Mode};
use common::service::{bootstrap, mta_export, recheck};
use lambda_runtime::{LambdaEvent, service_fn};
use serde_json::{Value, json};
use tokio::sync::OnceCell;

/// Set once a run's bootstrap has succeeded; a failed one is tried again by
/// the next run.
static BOOTSTRAPPED: OnceCell<()> = OnceCell::const_new();

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    common::telemetry::init(true);
    let ctx = Context::build(Config::from_env()?, Mode::Lambda).await?.context;
    lambda_runtime::run(service_fn(|_: LambdaEvent<Value>| {
        let ctx = ctx.clone();
        async move {
            BOOTSTRAPPED.get_or_try_init(|| bootstrap::run(&ctx)).await?;
            let outcome = mta_export::run_once(&ctx).await?;
            // A domain dropped now leaves the next minute's export.
            let looked = recheck::run_once(&ctx, &outcome.routed).await?;
            Ok::<_, lambda_runtime::Error>(json!({
                "version": outcome.version,
                "mailboxes": outcome.mailboxes,
                "mxLooked": looked.looked,
                "dropped": looked.dropped,
            }))
        }
    }))
    .await
}
