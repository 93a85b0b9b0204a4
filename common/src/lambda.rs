//! A scheduled Lambda function: one declared job (`jobs::JOBS`) run on each
//! event. The HTTP functions are `http::serve_lambda`'s.

use lambda_http::lambda_runtime::{self, LambdaEvent, service_fn};
use serde_json::Value;
use tokio::sync::OnceCell;

use crate::config::Config;
use crate::context::{Context, Mode};
use crate::jobs::Job;

pub use lambda_http::Error;

/// Set once a run's bootstrap has succeeded; a failed one is tried again by
/// the next run.
static BOOTSTRAPPED: OnceCell<()> = OnceCell::const_new();

/// Serves `job` as a scheduled function: builds the context (writing nothing),
/// then runs the job on each event (EventBridge's schedule, or for the
/// poller an object-created event, which names its file), and answers its
/// summary. A job that `bootstraps` runs the bootstrap at its first run in the
/// container rather than at init, because init writes nothing.
pub async fn schedule(job: &'static Job) -> Result<(), Error> {
    crate::telemetry::init(true);
    let ctx = Context::build(Config::from_env()?, Mode::Lambda).await?.context;
    lambda_runtime::run(service_fn(|event: LambdaEvent<Value>| {
        let ctx = ctx.clone();
        async move {
            if job.bootstraps {
                BOOTSTRAPPED
                    .get_or_try_init(|| crate::service::operators::bootstrap::run(&ctx))
                    .await?;
            }
            Ok::<_, Error>((job.run)(&ctx, &event.payload).await?)
        }
    }))
    .await
}

/// Every Lambda function, by its crate's name under `functions/`: one per
/// route family, then one per scheduled job. The Lambda tests, the template
/// check and `benches/init.rs` read this list, so none keeps its own.
pub fn functions() -> Vec<&'static str> {
    let http = crate::api::Family::ALL.iter().map(|f| f.function());
    http.chain(crate::jobs::JOBS.iter().map(|job| job.name)).collect()
}

/// A scheduled function's whole `main`: `common::schedule!(POLLER)` runs
/// the job `common::jobs::POLLER`.
#[macro_export]
macro_rules! schedule {
    ($job:ident) => {
        #[tokio::main]
        async fn main() -> Result<(), $crate::lambda::Error> {
            $crate::lambda::schedule(&$crate::jobs::$job).await
        }
    };
}
