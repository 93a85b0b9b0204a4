//! The `inbox` function: serves GET/POST /inbox and GET /attachment under API
//! Gateway.

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    common::http::serve_lambda(|ctx| common::http::router(ctx, &[&common::api::INBOX])).await
}
