//! A bare lambda_http function (an axum router with one static JSON route):
//! the init-time baseline of `cargo bench --bench init`.

use axum::Router;
use axum::routing::get;

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    let app = Router::new().route(
        "/credits",
        get(|| async { ([("content-type", "application/json")], r#"{"ok":true}"#) }),
    );
    lambda_http::run(app).await
}
