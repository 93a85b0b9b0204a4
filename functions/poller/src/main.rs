//! The `poller` function: files the raw messages the mail host drops under
//! `inbound/pending/`. S3's object-created event (through EventBridge) runs it
//! as each message lands; a one-minute schedule is the safety net. Any event
//! means "look at the spool": filing is idempotent, so overlapping runs file
//! each message once.

use common::config::Config;
use common::context::{Context, Mode};
use common::service::poller;
use lambda_runtime::{LambdaEvent, service_fn};
use serde_json::{Value, json};

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    common::telemetry::init(true);
    let ctx = Context::build(Config::from_env()?, Mode::Lambda).await?.context;
    lambda_runtime::run(service_fn(|_: LambdaEvent<Value>| {
        let ctx = ctx.clone();
        async move {
            let outcome = poller::run_once(&ctx).await?;
            Ok::<_, lambda_runtime::Error>(json!({
                "filed": outcome.filed,
                "duplicates": outcome.duplicates,
                "failed": outcome.failed,
                "pending": outcome.pending,
            }))
        }
    }))
    .await
}
