//! The `send` function: serves its route family under API Gateway.

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    common::http::serve_lambda(|ctx| common::http::router(ctx, &[&common::api::SEND, &common::api::DELIVERY])).await
}
