//! A bare axum server answering GET /credits, and GET /inbox, with static JSON
//! bodies: the throughput baseline of benches/http.sh. Usage: bare-axum ADDR
//! [INBOX_BODY_FILE] (the inbox body is the one the service gave for the same
//! request, so both servers write the same bytes).

use axum::Router;
use axum::routing::get;

const CREDITS: &str = r#"{"ok":true,"credits":{"remaining":100,"initial":100,"humansCharged":false,"authFailureBurnsCredit":false},"agentKey":{"id":"agent:default","last4":"abcd","status":"active","disabled":false,"frozenUntil":null},"sending":{"enabled":true},"canControl":true,"canPauseAll":false,"docs":""}"#;

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    let addr = args.next().unwrap_or_else(|| "127.0.0.1:8090".into());
    let inbox: &'static str = match args.next() {
        Some(file) => std::fs::read_to_string(file)?.leak(),
        None => r#"{"ok":true,"messages":[],"unreadInPage":0}"#,
    };
    let app = Router::new()
        .route(
            "/credits",
            get(|| async { ([("content-type", "application/json")], CREDITS) }),
        )
        .route(
            "/inbox",
            get(move || async move { ([("content-type", "application/json")], inbox) }),
        );
    let listener = tokio::net::TcpListener::bind(&addr).await?;
    axum::serve(listener, app).await
}
