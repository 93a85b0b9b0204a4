//! Defects found by trying the service as an attacker and as a careless
//! client would (access control, mail routing, hostile input, retries), each
//! with the test that failed before its fix; and a standing sweep of
//! malformed input over every route.

use std::sync::Arc;

use crate::support::{self, ALLOWED_DOMAIN, Auth, TestApp};
use common::http::routes;
use serde_json::{Value, json};

on_both_backends!(
    a_denied_request_revokes_its_key,
    an_operator_without_an_account_holds_only_the_service_domain,
    a_fresh_key_does_not_reset_the_send_windows,
    verify_access_request_is_limited_per_ip,
    only_verified_domains_reach_the_export,
    an_unverified_claim_lapses_after_seven_days,
    a_domain_removal_leaves_no_mailbox_behind_under_concurrent_adds,
    oversized_and_deep_bodies_are_refused_before_parsing,
    values_too_long_for_a_key_are_refused_not_stored,
    sending_paused_wins_over_a_broken_body,
    an_idempotency_key_sends_once,
    every_route_refuses_malformed_input_and_writes_nothing,
);

fn mail(to: &str) -> Value {
    json!({"to": to, "subject": "Hello", "text": "Hi there"})
}

async fn a_denied_request_revokes_its_key(app: TestApp) {
    app.allowlist(ALLOWED_DOMAIN).await;
    let email = format!("deny@{ALLOWED_DOMAIN}");
    let verified = app.request_and_verify(&email).await;
    let id = verified.body["requestId"].as_str().unwrap().to_string();
    let key = verified.body["apiKey"].as_str().unwrap().to_string();
    assert_eq!(app.get("/credits", Auth::Bearer(&key)).await.status, 200);
    let op = app.operator_token().await;
    let denied = app
        .post(
            "/admin/requestDecision",
            Auth::Bearer(&op),
            json!({ "id": id, "decision": "deny" }),
        )
        .await;
    assert_eq!(denied.body["status"], "unavailable", "{}", denied.body);
    for path in ["/credits"] {
        let res = app.get(path, Auth::Bearer(&key)).await;
        assert_eq!((res.status, res.error()), (401, "Invalid API key"), "{path}");
    }
    let res = app.post("/getAccountStatus", Auth::Bearer(&key), json!({})).await;
    assert_eq!((res.status, res.error()), (401, "Invalid API key"));
}

async fn an_operator_without_an_account_holds_only_the_service_domain(app: TestApp) {
    let op = app.operator_token().await;
    let res = app
        .post("/addDomain", Auth::Bearer(&op), json!({ "domain": "second.test" }))
        .await;
    assert_eq!(
        (res.status, res.body["code"].as_str()),
        (409, Some("one_domain_per_account")),
        "{}",
        res.body
    );
}

async fn a_fresh_key_does_not_reset_the_send_windows(app: TestApp) {
    let owner = format!("windows@{ALLOWED_DOMAIN}");
    let key = app.sender(&owner, "windows.test", "me").await;
    for _ in 0..5 {
        let res = app.send_mail(Auth::Bearer(&key), mail("a@example.org")).await;
        assert_eq!(res.status, 200, "{}", res.body);
    }
    let fresh = app.request_and_verify(&owner).await;
    let fresh = fresh.body["apiKey"].as_str().unwrap().to_string();
    assert_ne!(fresh, key);
    let res = app.send_mail(Auth::Bearer(&fresh), mail("a@example.org")).await;
    assert_eq!((res.status, res.error()), (429, "Rate limit exceeded"), "{}", res.body);
}

async fn verify_access_request_is_limited_per_ip(app: TestApp) {
    let body = json!({ "requestId": "ar_0123456789abcdef01234567", "code": "12345678" });
    for _ in 0..30 {
        let res = app.post("/verifyAccessRequest", Auth::None, body.clone()).await;
        assert_eq!(res.status, 404, "{}", res.body);
    }
    let res = app.post("/verifyAccessRequest", Auth::None, body).await;
    assert_eq!((res.status, res.error()), (429, "Rate limit exceeded"));
    assert!(res.body["retryAfter"].as_u64().unwrap() >= 1);
}

async fn only_verified_domains_reach_the_export(app: TestApp) {
    let key = app.onboard(&format!("squat@{ALLOWED_DOMAIN}")).await;
    let added = app
        .post("/addDomain", Auth::Bearer(&key), json!({ "domain": "gmail.com" }))
        .await;
    assert_eq!(added.body["verified"], false, "{}", added.body);
    app.sender(&format!("real@{ALLOWED_DOMAIN}"), "proven.test", "me").await;
    common::service::operators::mta_export::run_once(&app.ctx)
        .await
        .unwrap();
    let export = app
        .get("/mtaMailboxExport", Auth::Bearer(support::SYNC_TOKEN))
        .await
        .body;
    let domains = &export["export"]["postfix"]["virtualMailboxDomains"];
    assert!(domains.as_str().unwrap().contains("proven.test OK"), "{domains}");
    assert!(!domains.as_str().unwrap().contains("gmail.com"), "{domains}");
    assert!(
        !export["export"]["domains"]
            .as_array()
            .unwrap()
            .contains(&json!("gmail.com"))
    );
}

async fn an_unverified_claim_lapses_after_seven_days(app: TestApp) {
    let squatter = app.onboard(&format!("early@{ALLOWED_DOMAIN}")).await;
    let owner = app.onboard(&format!("owner@{ALLOWED_DOMAIN}")).await;
    let name = json!({ "domain": "wanted.test" });
    assert_eq!(
        app.post("/addDomain", Auth::Bearer(&squatter), name.clone())
            .await
            .status,
        200
    );
    let refused = app.post("/addDomain", Auth::Bearer(&owner), name.clone()).await;
    assert_eq!(refused.body["code"], "domain_claimed", "{}", refused.body);
    app.ctx.clock.advance(6 * 86_400);
    let still = app.post("/addDomain", Auth::Bearer(&owner), name.clone()).await;
    assert_eq!(still.body["code"], "domain_claimed", "six days are not seven");
    app.ctx.clock.advance(2 * 86_400);
    let added = app.post("/addDomain", Auth::Bearer(&owner), name.clone()).await;
    assert_eq!(
        (added.status, &added.body["created"]),
        (200, &json!(true)),
        "{}",
        added.body
    );
    // The squatter's domain is gone, and its slot free for another name.
    let listed = app.get("/listDomains", Auth::Bearer(&squatter)).await;
    assert_eq!(listed.body["domains"], json!([]), "{}", listed.body);
    let other = app
        .post("/addDomain", Auth::Bearer(&squatter), json!({ "domain": "mine.test" }))
        .await;
    assert_eq!(other.body["created"], true, "{}", other.body);
}

async fn a_domain_removal_leaves_no_mailbox_behind_under_concurrent_adds(app: TestApp) {
    let owner = format!("race@{ALLOWED_DOMAIN}");
    let key = app.sender(&owner, "race.test", "first").await;
    let op = app.operator_token().await;
    let app = Arc::new(app);
    let mut adds = Vec::new();
    for i in 0..8 {
        let (app, key) = (app.clone(), key.clone());
        adds.push(tokio::spawn(async move {
            app.add_mailbox(&key, "race.test", &format!("m{i}"), "hosted", json!([]))
                .await
                .status
        }));
    }
    let removal = app
        .post(
            "/operatorRemoveDomain",
            Auth::Bearer(&op),
            json!({ "ownerEmail": owner, "domainId": "race.test", "confirm": "race.test" }),
        )
        .await;
    assert_eq!(removal.status, 200, "{}", removal.body);
    for add in adds {
        let status = add.await.unwrap();
        assert!(status == 200 || status == 409 || status == 404, "{status}");
    }
    let left = common::service::mailboxes::of_domain(&app.ctx, "race.test")
        .await
        .unwrap();
    assert!(left.is_empty(), "active mailboxes after removal: {left:?}");
}

async fn oversized_and_deep_bodies_are_refused_before_parsing(app: TestApp) {
    let big =
        json!({ "contactEmail": "x@y.test", "domain": "y.test", "agentName": "a", "intendedUse": "b".repeat(100_000) });
    let res = app.post("/requestAccess", Auth::None, big).await;
    assert_eq!((res.status, res.error()), (413, "Request body too large"));
    let deep = format!("{}{}", "[".repeat(5000), "]".repeat(5000));
    let res = app
        .send(
            app.client
                .post(format!("{}/requestAccess", app.base))
                .header("content-type", "application/json")
                .body(deep),
        )
        .await;
    assert_eq!((res.status, res.error()), (400, "Invalid JSON body"));
    // A send may carry its attachments: its limit is larger.
    let text = "a".repeat(200_000);
    let res = app
        .send_mail(
            Auth::Bearer(&app.agent_key),
            json!({ "to": "a@b.test", "subject": "s", "text": text }),
        )
        .await;
    assert_eq!((res.status, res.error()), (400, "Body too large (max 100KB)"));
}

async fn values_too_long_for_a_key_are_refused_not_stored(app: TestApp) {
    let long_email = format!("{}@example.org", "a".repeat(3000));
    let res = app
        .post(
            "/getRequestStatus",
            Auth::None,
            json!({ "requestId": "ar_0123456789abcdef01234567", "email": long_email }),
        )
        .await;
    assert_eq!(
        (res.status, &res.body["status"]),
        (200, &json!("pending")),
        "{}",
        res.body
    );
    let op = app.operator_token().await;
    let res = app
        .post(
            "/operatorRemoveDomain",
            Auth::Bearer(&op),
            json!({ "uid": "u".repeat(3000), "domainId": "x.test" }),
        )
        .await;
    assert_eq!((res.status, res.error()), (400, "uid is not a valid account id"));
    let res = app
        .post(
            "/admin/requestDelete",
            Auth::Bearer(&op),
            json!({ "ids": ["ar_".to_string() + &"f".repeat(5000)] }),
        )
        .await;
    assert_eq!(res.status, 200, "{}", res.body);
    assert_eq!(res.body["notFound"].as_array().unwrap().len(), 1);
}

async fn sending_paused_wins_over_a_broken_body(app: TestApp) {
    let op = app.operator_token().await;
    let paused = app
        .post("/credits", Auth::Bearer(&op), json!({ "sendingEnabled": false }))
        .await;
    assert_eq!(paused.status, 200);
    let res = app
        .send(
            app.client
                .post(format!("{}/sendMail", app.base))
                .bearer_auth(&app.agent_key)
                .header("content-type", "application/json")
                .body("{"),
        )
        .await;
    assert_eq!((res.status, res.error()), (503, "Sending temporarily disabled"));
}

async fn an_idempotency_key_sends_once(app: TestApp) {
    let app = Arc::new(app);
    let send = |key: &'static str, body: Value| {
        let app = app.clone();
        async move {
            app.send(
                app.client
                    .post(format!("{}/sendMail", app.base))
                    .bearer_auth(&app.agent_key)
                    .header("Idempotency-Key", key)
                    .json(&body),
            )
            .await
        }
    };
    let first = send("order-1", mail("a@example.org")).await;
    assert_eq!(first.status, 200, "{}", first.body);
    let again = send("order-1", mail("a@example.org")).await;
    assert_eq!(again.body, first.body, "the first answer, again");
    assert_eq!(app.outbox().len(), 1, "sent once");
    assert_eq!(app.agent_credits().await, 99, "charged once");
    let other = send("order-1", mail("b@example.org")).await;
    assert_eq!(
        (other.status, other.body["code"].as_str()),
        (409, Some("idempotency_key_reused"))
    );

    // Concurrent requests with one key: one send.
    let racers: Vec<_> = (0..6)
        .map(|_| tokio::spawn(send("order-2", mail("c@example.org"))))
        .collect();
    let mut ok = 0;
    for racer in racers {
        let res = racer.await.unwrap();
        match res.status {
            200 => ok += 1,
            409 => assert_eq!(res.body["code"], "idempotency_in_progress", "{}", res.body),
            other => panic!("{other}: {}", res.body),
        }
    }
    assert!(ok >= 1);
    assert_eq!(app.outbox().len(), 2, "the racing key sent once");
    assert_eq!(app.agent_credits().await, 98);

    // MCP send_mail takes it as an argument, under the same caller's records.
    let via_mcp = app
        .post(
            "/mcp",
            Auth::Bearer(&app.agent_key),
            json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
                "name": "send_mail",
                "arguments": { "to": "a@example.org", "subject": "Hello", "text": "Hi there", "idempotencyKey": "order-1" } } }),
        )
        .await;
    assert_eq!(
        via_mcp.body["result"]["structuredContent"], first.body,
        "{}",
        via_mcp.body
    );
    assert_eq!(app.outbox().len(), 2);
}

/// Malformed bodies for every route, with each credential class that reaches
/// it: never a 5xx, a 4xx says why, and nothing is written. Two exceptions
/// the spec makes: getRequestStatus answers every shape with 200 (and counts
/// the call), and sendMail counts its rate window before validating (as do
/// /reply and /forward, which send through it: docs/decisions.md).
async fn every_route_refuses_malformed_input_and_writes_nothing(app: TestApp) {
    let standard = app.onboard(&format!("sweep@{ALLOWED_DOMAIN}")).await;
    let operator = app.operator_token().await;
    let agent = app.agent_key.clone();
    let credentials = [
        None,
        Some(agent.as_str()),
        Some(standard.as_str()),
        Some(operator.as_str()),
        Some(support::SYNC_TOKEN),
    ];
    let huge = "x".repeat(60_000);
    let deep = format!("{}1{}", "{\"a\":".repeat(3000), "}".repeat(3000));
    let raw_bodies: Vec<String> = vec![
        "{".into(),
        "[]".into(),
        "null".into(),
        "42".into(),
        "\"text\"".into(),
        deep,
        "{\"a\": 1,}".into(),
        "\u{feff}{}".into(),
        "{\"to\": \"\\ud800\"}".into(),
    ];
    let fields = [
        "to",
        "subject",
        "text",
        "domain",
        "domainId",
        "localPart",
        "mode",
        "forwardTo",
        "address",
        "contactEmail",
        "requestId",
        "code",
        "id",
        "ids",
        "decision",
        "disabled",
        "frozenUntil",
        "sendingEnabled",
        "version",
        "uid",
        "ownerEmail",
        "attachments",
        "references",
        "inReplyTo",
        "confirm",
    ];
    let bad_values = [
        json!(null),
        json!(12),
        json!(true),
        json!({ "nested": [1, 2, 3] }),
        json!(huge),
        json!(vec!["x"; 5000]),
        json!("\u{0}\u{202e}\u{fffd}"),
        json!("data:image/png;base64,@@@"),
        json!([{ "filename": "a.png", "contentBase64": "%%%" }]),
    ];
    let mut json_bodies: Vec<Value> = Vec::new();
    for value in &bad_values {
        let mut all = serde_json::Map::new();
        for f in fields {
            all.insert(f.into(), value.clone());
        }
        json_bodies.push(Value::Object(all));
    }
    let mut checked = 0;
    for route in routes() {
        if route.path.starts_with("/docs") || (route.path == "/mcp" && route.method == reqwest::Method::GET) {
            continue;
        }
        for credential in credentials {
            let bodies = raw_bodies
                .iter()
                .map(|b| b.clone().into_bytes())
                .chain(json_bodies.iter().map(|b| b.to_string().into_bytes()));
            for body in bodies {
                let before = app.ctx.store_meter.counts();
                let mut req = app
                    .client
                    .request(route.method.clone(), format!("{}{}", app.base, route.path))
                    .header("content-type", "application/json")
                    .body(body.clone());
                if route.method == reqwest::Method::GET {
                    let url = reqwest::Url::parse_with_params(
                        &format!("{}{}", app.base, route.path),
                        &[
                            (
                                "domainId",
                                String::from_utf8_lossy(&body[..body.len().min(200)]).into_owned(),
                            ),
                            ("domain", "x".repeat(1500)),
                            ("uid", "\u{0}".to_string()),
                            ("email", "@@".to_string()),
                        ],
                    )
                    .unwrap();
                    req = app.client.get(url);
                }
                if let Some(c) = credential {
                    req = req.bearer_auth(c);
                }
                let res = app.send(req).await;
                let what = format!(
                    "{} {} {:?}",
                    route.method,
                    route.path,
                    String::from_utf8_lossy(&body[..body.len().min(60)])
                );
                assert!(res.status < 500, "{what}: {} {}", res.status, res.body);
                let writes = app.ctx.store_meter.counts().since(&before);
                let written = writes.puts + writes.updates + writes.deletes + writes.transactions;
                let counts_by_design = matches!(route.path, "/getRequestStatus" | "/sendMail" | "/reply" | "/forward");
                if res.status >= 400 {
                    if route.path != "/mcp" {
                        assert!(!res.error().is_empty(), "{what}: a 4xx says why: {}", res.body);
                    }
                    if !counts_by_design {
                        assert_eq!(written, 0, "{what}: {} wrote {writes:?}", res.status);
                    }
                } else if !counts_by_design && route.path != "/mcp" {
                    // A 200 to malformed input is only a read (a GET whose
                    // junk parameters it ignores, or the agent's credits).
                    // DELETE /webhooks takes no input: any JSON object asks
                    // to remove the registration, and there is none here.
                    let no_input = route.method == reqwest::Method::DELETE && route.path == "/webhooks";
                    assert!(
                        route.method == reqwest::Method::GET || route.path == "/getAccountStatus" || no_input,
                        "{what}: {} {}",
                        res.status,
                        res.body
                    );
                    // Removing a registration is a change, audited even when
                    // there was none: its one write is that row.
                    let audited = if no_input { 1 } else { 0 };
                    assert_eq!(written, audited, "{what}: wrote {writes:?}");
                }
                checked += 1;
            }
        }
    }
    assert!(checked > 20 * routes().len(), "{checked}");
}

/// A forwarding loop is found however long the chain: 210 mailboxes, each
/// forwarding to the next, and the last one pointed back at the first.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forwarding_loop_longer_than_two_hundred_is_found() {
    let app = TestApp::spawn(support::Backend::Embedded).await.unwrap();
    let key = app
        .sender(&format!("chain@{ALLOWED_DOMAIN}"), "chain.test", "end")
        .await;
    let n = 210;
    let mut next = "end@chain.test".to_string();
    for i in (0..n).rev() {
        let local = format!("c{i}");
        let res = app
            .add_mailbox(&key, "chain.test", &local, "forward", json!([next]))
            .await;
        assert_eq!(res.status, 200, "{local}: {}", res.body);
        next = format!("{local}@chain.test");
    }
    let closing = app
        .post(
            "/setMailboxMode",
            Auth::Bearer(&key),
            json!({ "domainId": "chain.test", "localPart": "end", "mode": "forward", "forwardTo": ["c0@chain.test"] }),
        )
        .await;
    assert_eq!(
        (closing.status, closing.error()),
        (400, "That forwarding would create a forwarding loop"),
        "{}",
        closing.body
    );
}
