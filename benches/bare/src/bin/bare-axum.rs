//! A bare axum server answering every GET /credits with a static JSON body:
//! the throughput baseline of benches/http.sh. Usage: bare-axum ADDR.

use axum::Router;
use axum::routing::get;

const BODY: &str = r#"{"ok":true,"credits":{"remaining":100,"initial":100,"humansCharged":false,"authFailureBurnsCredit":false},"agentKey":{"id":"agent:default","last4":"abcd","status":"active","disabled":false,"frozenUntil":null},"sending":{"enabled":true},"canControl":true,"canPauseAll":false,"docs":""}"#;

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let addr = std::env::args().nth(1).unwrap_or_else(|| "127.0.0.1:8090".into());
    let app = Router::new().route(
        "/credits",
        get(|| async { ([("content-type", "application/json")], BODY) }),
    );
    let listener = tokio::net::TcpListener::bind(&addr).await?;
    axum::serve(listener, app).await
}
