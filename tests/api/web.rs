//! The web app in a real browser: Debian's chromium driven by Playwright for
//! Python (tests/python/web_e2e.py), against the service started here. The
//! script does what a person does; what only the world outside the service
//! can do (read the emailed code, publish DNS records, deliver a message) it
//! asks of a small harness server this test runs beside the service.

use std::sync::Arc;

use axum::extract::{Query, State};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{Value, json};

use crate::support::webhooks::Receiver;
use crate::support::{Auth, Backend, OPERATOR, TestApp, standin, standin_command};

/// The service, and the webhook receiver the agent's page registers.
struct Harness {
    app: TestApp,
    hook_port: u16,
    hook_dir: std::path::PathBuf,
    receiver: std::sync::Mutex<Option<Receiver>>,
}

type Shared = Arc<Harness>;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn people_and_operators_use_the_web_app_in_a_real_browser() {
    let (Some(venv), Some(()), Some(axe)) = (
        standin("MAILHOST_TEST_VENV"),
        standin_command("chromium"),
        standin("MAILHOST_TEST_AXE"),
    ) else {
        return;
    };
    let (hook_port, hook_dir) = Receiver::prepare();
    let ca = Receiver::ca_file(&hook_dir);
    let Some(app) = TestApp::spawn_with(Backend::Embedded, move |config| {
        config.webhook_allow_hosts = vec!["localhost".into()];
        config.webhook_ca_file = Some(ca);
    })
    .await
    else {
        return;
    };
    let operator = app.operator_token().await;
    let agent_key = app.agent_key.clone();
    let base = app.base.clone();
    let shared = Arc::new(Harness {
        app,
        hook_port,
        hook_dir,
        receiver: Default::default(),
    });
    let harness = harness(shared.clone()).await;
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let shots = std::env::var("MAILHOST_WEB_SHOTS")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|_| root.join("target-web/screenshots"));
    let script = root.join("tests/python/web_e2e.py");
    let hook_url = format!("https://localhost:{hook_port}/hook");
    let out = tokio::task::spawn_blocking(move || {
        std::process::Command::new(format!("{venv}/bin/python"))
            .arg(script)
            .env("WEB_BASE", base)
            .env("WEB_HARNESS", harness)
            .env("WEB_OPERATOR_TOKEN", operator)
            .env("WEB_OPERATOR", OPERATOR)
            .env("WEB_AGENT_KEY", agent_key)
            .env("WEB_HOOK_URL", hook_url)
            .env("WEB_SHOTS", shots)
            .env("WEB_AXE", axe)
            .output()
            .expect("python runs")
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "web_e2e.py failed\n{stdout}\n{stderr}");
    println!("{stdout}");
}

/// The harness: the emailed code, DNS records to publish, a delivered message.
async fn harness(app: Shared) -> String {
    let router = Router::new()
        .route("/code", get(code))
        .route("/sign-in-code", get(sign_in_code))
        .route("/approval-code", get(approval_code))
        .route("/next-minute", post(next_minute))
        .route("/dns", post(publish))
        .route("/deliver", post(deliver))
        .route("/apply", post(apply))
        .route("/receiver", post(receiver).get(received))
        .with_state(app);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, router).await });
    format!("http://{addr}")
}

async fn code(State(h): State<Shared>, Query(q): Query<std::collections::HashMap<String, String>>) -> String {
    h.app.code_for(&q["to"])
}

/// The newest operator sign-in code mailed to `to`.
async fn sign_in_code(State(h): State<Shared>, Query(q): Query<std::collections::HashMap<String, String>>) -> String {
    sign_in_code_in(h.app.outbox_for(&q["to"]).last().expect("a sign-in mail"))
}

/// Moves the service's clock a minute on: a new send-rate window.
async fn next_minute(State(h): State<Shared>) -> Json<Value> {
    h.app.ctx.clock.advance(61);
    Json(json!({ "ok": true }))
}

/// The newest hold approval code mailed to `to`.
async fn approval_code(State(h): State<Shared>, Query(q): Query<std::collections::HashMap<String, String>>) -> String {
    let mail = h.app.outbox_for(&q["to"]).pop().expect("an approval mail");
    let line = mail
        .lines()
        .find(|l| l.starts_with("Approval code: "))
        .expect("the code line");
    line.trim_start_matches("Approval code: ").trim().to_string()
}

fn sign_in_code_in(message: &str) -> String {
    let line = "Your sign-in code is ";
    let at = message.find(line).expect("a code line") + line.len();
    message[at..at + 8].to_string()
}

/// Publishes the records the page showed: `[{type, host, value, priority}]`.
async fn publish(State(h): State<Shared>, Json(records): Json<Vec<Value>>) -> Json<Value> {
    let app = &h.app;
    let mut txt: std::collections::HashMap<String, Vec<String>> = Default::default();
    for record in &records {
        let host = record["host"].as_str().unwrap();
        let value = record["value"].as_str().unwrap();
        match record["type"].as_str().unwrap() {
            "MX" => {
                let priority = record["priority"].as_u64().unwrap_or(10) as u16;
                app.dns.set_mx(host, &[(priority, value)]);
            }
            _ => txt.entry(host.to_string()).or_default().push(value.to_string()),
        }
    }
    for (host, values) in txt {
        let refs: Vec<&str> = values.iter().map(String::as_str).collect();
        app.dns.set_txt(&host, &refs);
    }
    Json(json!({ "ok": true }))
}

/// Starts the webhook receiver with the registration's secret: `{secret}`.
async fn receiver(State(h): State<Shared>, Json(body): Json<Value>) -> Json<Value> {
    let secret = body["secret"].as_str().unwrap();
    let started = Receiver::start(h.hook_port, h.hook_dir.clone(), secret, "200").expect("the venv");
    *h.receiver.lock().unwrap() = Some(started);
    Json(json!({ "ok": true }))
}

/// What the receiver got: each POST's event type and whether its signatures verified.
async fn received(State(h): State<Shared>) -> Json<Value> {
    let got = h
        .receiver
        .lock()
        .unwrap()
        .as_ref()
        .map(Receiver::deliveries)
        .unwrap_or_default();
    Json(Value::Array(got))
}

/// Writes the mail-server export and acknowledges it, as a mail host would.
async fn apply(State(h): State<Shared>) -> Json<Value> {
    let app = &h.app;
    let summary = (common::jobs::MTA_EXPORT.run)(&app.ctx, &serde_json::Value::Null)
        .await
        .unwrap();
    let version = summary["version"].as_i64().unwrap();
    common::service::operators::mta_export::acknowledge(&app.ctx, version)
        .await
        .unwrap();
    Json(json!({ "version": version }))
}

/// Files a raw message as the mail host hands it over, and runs the poller.
async fn deliver(State(h): State<Shared>, raw: String) -> Json<Value> {
    let app = &h.app;
    mailhost::deliver(&app.data_dir, raw.into_bytes()).await.unwrap();
    let outcome = common::service::receiving::poller::run_once(&app.ctx).await.unwrap();
    Json(json!({ "filed": outcome.filed }))
}

/// The local server's operator sign-in: a code mailed to an operator named by
/// `--operator-emails` (to the outbox here) trades for an operator's identity
/// token; anyone else gets the same answer and no mail; a code is used once
/// and dies after five wrong tries. The `mcp` function (the web app in AWS)
/// has no such route.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn operators_sign_in_to_the_local_server_with_a_mailed_code() {
    let Some(app) = TestApp::spawn(Backend::Embedded).await else {
        return;
    };
    let ask = |email: &str| app.post("/local-sign-in", Auth::None, json!({ "email": email }));
    let stranger = ask("someone@else.example").await;
    let operator = ask(OPERATOR).await;
    assert_eq!((stranger.status, operator.status), (200, 200));
    assert_eq!(stranger.body, operator.body, "the same answer whoever asks");
    assert!(app.outbox_for("someone@else.example").is_empty());
    let code = sign_in_code_in(app.outbox_for(OPERATOR).last().unwrap());

    let verify = |code: String| {
        app.post(
            "/local-sign-in/verify",
            Auth::None,
            json!({ "email": OPERATOR, "code": code }),
        )
    };
    let wrong = verify("00000000".into()).await;
    assert_eq!(wrong.status, 401, "{}", wrong.body);
    assert_eq!(wrong.error(), common::error::SIGN_IN_CODE_INVALID.sentence);
    let signed = verify(code.clone()).await;
    assert_eq!(signed.status, 200, "{}", signed.body);
    let token = signed.body["token"].as_str().unwrap();
    let credits = app.get("/credits", Auth::Bearer(token)).await;
    assert_eq!(
        credits.body["canPauseAll"], true,
        "an operator's token: {}",
        credits.body
    );
    assert_eq!(verify(code).await.status, 401, "a code is used once");

    ask(OPERATOR).await;
    let code = sign_in_code_in(app.outbox_for(OPERATOR).last().unwrap());
    for _ in 0..5 {
        assert_eq!(verify("11111111".into()).await.status, 401);
    }
    assert_eq!(verify(code).await.status, 401, "five wrong tries end the code");

    // The web app in AWS: the page, and no local sign-in.
    let lambda = common::http::mcp_router(app.ctx.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, lambda).await });
    let page = app.client.get(format!("{base}/")).send().await.unwrap();
    assert_eq!(page.status(), 200);
    assert!(page.text().await.unwrap().contains(r#"content="off""#));
    let refused = app
        .client
        .post(format!("{base}/local-sign-in"))
        .body(json!({ "email": OPERATOR }).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 404);
}
