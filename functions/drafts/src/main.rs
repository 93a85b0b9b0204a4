//! The `drafts` function: serves GET/POST/DELETE /drafts under API Gateway.

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    common::http::serve_lambda(|ctx| common::http::router(ctx, &[&common::api::DRAFTS])).await
}
