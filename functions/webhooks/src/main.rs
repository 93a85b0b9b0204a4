//! The `webhooks` function: serves /webhooks, its delivery log and replay
//! under API Gateway.

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    common::http::serve_lambda(|ctx| common::http::router(ctx, &[&common::api::WEBHOOKS])).await
}
