//! The scheduled `mta-export` function: every 60 s (an EventBridge schedule)
//! writes a new `mtaMailboxExport` version for the mail host.

use common::config::Config;
use common::context::{Context, Mode};
use common::service::mta_export;
use lambda_runtime::{LambdaEvent, service_fn};
use serde_json::{Value, json};

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    common::telemetry::init(true);
    let ctx = Context::build(Config::from_env(), Mode::Lambda).await?.context;
    common::service::bootstrap::run(&ctx).await?;
    lambda_runtime::run(service_fn(|_: LambdaEvent<Value>| {
        let ctx = ctx.clone();
        async move {
            let outcome = mta_export::run_once(&ctx).await?;
            Ok::<_, lambda_runtime::Error>(json!({ "version": outcome.version, "mailboxes": outcome.mailboxes }))
        }
    }))
    .await
}
