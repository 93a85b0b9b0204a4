//! Under Lambda the client address is API Gateway's `sourceIp`: real HTTP API
//! events (events/onboarding) go through the onboarding router, and a spoofed
//! X-Forwarded-For does not escape the per-IP limit.

use common::config::Config;
use common::context::{Context, Mode};
use common::http::router;
use tower::ServiceExt;

const EVENT: &str = include_str!("../../../events/onboarding/request-access.json");

fn event(email: &str, forwarded_for: &str, source_ip: &str) -> lambda_http::Request {
    let mut json: serde_json::Value = serde_json::from_str(EVENT).unwrap();
    json["headers"]["x-forwarded-for"] = forwarded_for.into();
    json["requestContext"]["http"]["sourceIp"] = source_ip.into();
    let body =
        serde_json::json!({"contactEmail": email, "domain": "example.com", "agentName": "a", "intendedUse": "b"});
    json["body"] = body.to_string().into();
    lambda_http::request::from_str(&json.to_string()).unwrap()
}

#[tokio::test]
async fn the_per_ip_limit_keys_on_the_gateways_source_ip() {
    let dir = std::env::temp_dir().join(format!("mh-lambda-ip-{:x}", rand::random::<u64>()));
    let mut config = Config::from_env().expect("MAILHOST_* variables");
    config.data_dir = dir.clone();
    let ctx = Context::build(config, Mode::Local).await.unwrap().context;
    let app = router(ctx, &[&common::api::ONBOARDING]);
    let status = |req: lambda_http::Request| {
        let app = app.clone();
        async move { app.oneshot(req).await.unwrap().status().as_u16() }
    };
    for i in 0..5 {
        let req = event(&format!("u{i}@example.com"), &format!("198.51.100.{i}"), "203.0.113.7");
        assert_eq!(status(req).await, 200);
    }
    let spoofed = event("u9@example.com", "198.51.100.99", "203.0.113.7");
    assert_eq!(status(spoofed).await, 429, "X-Forwarded-For is not trusted");
    let other = event("u9@example.com", "198.51.100.99", "203.0.113.8");
    assert_eq!(status(other).await, 200, "another source address has its own window");
    std::fs::remove_dir_all(dir).ok();
}
