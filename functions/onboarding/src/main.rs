//! The `onboarding` function: serves its route family under API Gateway.

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    common::http::serve_lambda(|ctx| common::http::router(ctx, &[&common::api::ONBOARDING, &common::api::GUARDRAILS]))
        .await
}
