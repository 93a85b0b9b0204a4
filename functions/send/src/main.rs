//! The `send` function: serves its route family under API Gateway.

use common::config::Config;
use common::context::{Context, Mode};
use common::http::{self, Family};

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    common::telemetry::init(true);
    let built = Context::build(Config::from_env(), Mode::Lambda).await?;
    lambda_http::run(http::router(built.context, &[Family::Send])).await
}
