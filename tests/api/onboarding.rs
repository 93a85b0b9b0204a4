//! Onboarding end to end over HTTP (spec 2.9, 2.10, 3.4, 4.11, 7, 8).

use crate::support::{ALLOWED_DOMAIN, Auth, TestApp};
use serde_json::json;

on_both_backends!(
    an_allowlisted_person_gets_a_key_once_and_sees_their_account,
    a_new_account_waits_for_an_operator_then_gets_a_key_with_a_fresh_request,
    a_denied_account_is_unavailable_and_gets_no_key,
    verify_answers_every_error_row,
    five_wrong_codes_lock_the_code_even_in_parallel,
    parallel_verifies_never_hand_out_two_keys,
    a_second_ready_verify_replaces_the_previous_key,
    request_access_refuses_bad_input_and_changes_nothing,
    request_access_limits_per_email_and_per_ip_and_ignores_forwarded_for,
    get_request_status_never_tells_whether_an_email_is_on_file,
    get_request_status_has_its_own_identical_rate_limits,
    get_account_status_is_for_the_account_key_only,
);

async fn an_allowlisted_person_gets_a_key_once_and_sees_their_account(app: TestApp) {
    app.allowlist(ALLOWED_DOMAIN).await;
    let email = format!("ann@{ALLOWED_DOMAIN}");
    let res = app.request_access(&email).await;
    assert_eq!(res.status, 200, "{}", res.body);
    let id = res.body["requestId"].as_str().unwrap().to_string();
    assert!(id.starts_with("ar_") && id.len() == 27 && id[3..].chars().all(|c| c.is_ascii_hexdigit()));
    assert_eq!(res.body["expiresIn"], 86400);
    assert!(res.body["message"].is_string());
    assert!(
        !res.body.to_string().contains(&app.code_for(&email)),
        "the code is not in the response"
    );

    let verified = app.verify(&id, &app.code_for(&email)).await;
    assert_eq!(verified.status, 200, "{}", verified.body);
    let b = &verified.body;
    assert_eq!(b["ok"], true);
    assert_eq!(b["status"], "ready");
    assert_eq!(b["requestId"], id.as_str());
    assert_eq!(b["access"], "standard");
    assert_eq!(b["tokenType"], "Bearer");
    assert_eq!(
        b["quotas"],
        json!({"credits": 100, "burstPerMinute": 5, "perUtcDay": 50})
    );
    let key = b["apiKey"].as_str().unwrap().to_string();
    assert!(key.starts_with("svc_") && key.len() >= 47);

    let again = app.verify(&id, &app.code_for(&email)).await;
    assert_eq!(again.status, 409);
    assert_eq!(again.body["code"], "already_complete");
    assert!(again.body.get("apiKey").is_none());

    let status = app.post("/getAccountStatus", Auth::Bearer(&key), json!({})).await;
    assert_eq!(status.status, 200, "{}", status.body);
    assert_eq!(status.body["status"], "ready");
    assert_eq!(status.body["accessLevel"], "standard");
    assert_eq!(status.body["ready"], true);
    assert_eq!(status.body["domains"], json!([]));
    assert_eq!(status.body["mailboxes"], json!([]));
    assert_eq!(status.body["canSend"], false);
    let reason = status.body["reason"].as_str().unwrap();
    assert!(reason.contains("/addDomain") && !reason.contains(&key));

    let by_header = app.post("/api/getAccountStatus", Auth::ApiKey(&key), json!({})).await;
    assert_eq!(by_header.status, 200);

    let credits = app.get("/credits", Auth::Bearer(&key)).await;
    assert_eq!(credits.status, 200, "{}", credits.body);
    assert_eq!(credits.body["credits"]["remaining"], 100);
    assert_eq!(credits.body["agentKey"]["last4"], &key[key.len() - 4..]);
    assert!(
        !credits.body.to_string().contains(&key),
        "the full key is never returned"
    );

    let polled = app.poll(&id, &email).await;
    assert_eq!(
        polled.body,
        json!({"ok": true, "status": "ready", "ready": true, "requestId": id})
    );
}

async fn a_new_account_waits_for_an_operator_then_gets_a_key_with_a_fresh_request(app: TestApp) {
    let email = "bob@elsewhere.test";
    let res = app.request_access(email).await;
    let id = res.body["requestId"].as_str().unwrap().to_string();
    let operator = app.operator_token().await;

    let early = app
        .post(
            "/api/admin/requestDecision",
            Auth::Bearer(&operator),
            json!({"id": id, "decision": "approve"}),
        )
        .await;
    assert_eq!(early.status, 409);
    assert_eq!(early.error(), "This request is not ready for a decision.");

    let verified = app.verify(&id, &app.code_for(email)).await;
    assert_eq!(verified.status, 200);
    assert_eq!(verified.body["status"], "setting_up");
    assert!(verified.body.get("apiKey").is_none());
    // It says how the key comes: this request never gives one (verifying it
    // again is 409 already_complete); a fresh one, once ready, does (below).
    let says = verified.body["message"].as_str().unwrap();
    assert!(says.contains("ask again with requestAccess"), "{says}");
    let polled = app.poll(&id, email).await;
    assert_eq!(
        polled.body,
        json!({"ok": true, "status": "setting_up", "ready": false, "requestId": id})
    );

    let second = app.request_and_verify(email).await;
    assert_eq!(second.body["status"], "setting_up", "setup in progress: still no key");
    assert!(second.body.get("apiKey").is_none());

    let approved = app
        .post(
            "/admin/requestDecision",
            Auth::Bearer(&operator),
            json!({"id": id, "decision": "approve"}),
        )
        .await;
    assert_eq!(approved.status, 200, "{}", approved.body);
    let polled = app.poll(&id, email).await;
    assert_eq!(polled.body["status"], "ready");
    assert_eq!(polled.body["ready"], true);

    let fresh = app.request_and_verify(email).await;
    assert_eq!(fresh.body["status"], "ready", "{}", fresh.body);
    let key = fresh.body["apiKey"].as_str().unwrap();
    let status = app.post("/getAccountStatus", Auth::Bearer(key), json!({})).await;
    assert_eq!(status.body["status"], "ready");
}

async fn a_denied_account_is_unavailable_and_gets_no_key(app: TestApp) {
    let email = "eve@elsewhere.test";
    let res = app.request_and_verify(email).await;
    assert_eq!(res.body["status"], "setting_up");
    let id = res.body["requestId"].as_str().unwrap().to_string();
    let operator = app.operator_token().await;
    let denied = app
        .post(
            "/admin/requestDecision",
            Auth::Bearer(&operator),
            json!({"id": id, "decision": "deny"}),
        )
        .await;
    assert_eq!(denied.status, 200);
    let again = app.request_and_verify(email).await;
    assert_eq!(again.status, 200);
    assert_eq!(again.body["status"], "unavailable");
    assert!(again.body.get("apiKey").is_none());
    assert!(again.body["message"].is_string());
    let bad = app
        .post(
            "/admin/requestDecision",
            Auth::Bearer(&operator),
            json!({"id": id, "decision": "maybe"}),
        )
        .await;
    assert_eq!(bad.status, 400);
    let missing = app
        .post(
            "/admin/requestDecision",
            Auth::Bearer(&operator),
            json!({"id": "ar_000000000000000000000000", "decision": "deny"}),
        )
        .await;
    assert_eq!(missing.status, 404);
    assert_eq!(missing.error(), "Message not found");
}

async fn verify_answers_every_error_row(app: TestApp) {
    let email = "carl@elsewhere.test";
    let (id, code) = app.requested(email).await;
    let wrong = if code == "00000000" { "11111111" } else { "00000000" };

    for body in [
        json!({}),
        json!({"requestId": id}),
        json!({"requestId": 5, "code": code}),
        json!({"requestId": "nope", "code": code}),
        json!({"requestId": id, "code": code.parse::<u64>().unwrap()}),
        json!({"requestId": id, "code": [code]}),
    ] {
        let r = app.post("/verifyAccessRequest", Auth::None, body.clone()).await;
        assert_eq!(r.status, 400, "{body}: {}", r.body);
        assert_eq!(r.body["ok"], false);
    }
    // The spec's body is strings: a code of another type is invalid input,
    // not a wrong code, and spends none of the request's attempts.
    let number = json!({"requestId": "ar_0123456789abcdef01234567", "code": 12345678});
    let r = app.post("/verifyAccessRequest", Auth::None, number).await;
    assert_eq!((r.status, r.error()), (400, "code must be a string"));
    let broken = app
        .send(
            app.client
                .post(format!("{}/verifyAccessRequest", app.base))
                .body("{not json"),
        )
        .await;
    assert_eq!(broken.status, 400);

    let unknown = app
        .post(
            "/verifyAccessRequest",
            Auth::None,
            json!({"requestId": "ar_0123456789abcdef01234567", "code": code}),
        )
        .await;
    assert_eq!(unknown.status, 404);
    assert_eq!(unknown.error(), "Message not found");

    for _ in 0..5 {
        let number = json!({"requestId": id, "code": wrong.parse::<u64>().unwrap()});
        let r = app.post("/verifyAccessRequest", Auth::None, number).await;
        assert_eq!(r.status, 400);
    }
    let r = app.verify(&id, wrong).await;
    assert_eq!(
        (r.status, r.error()),
        (401, "That code is not valid"),
        "five codes of the wrong type did not lock it"
    );

    app.ctx.clock.advance(86_400);
    let expired = app.verify(&id, &code).await;
    assert_eq!((expired.status, expired.error()), (410, "That code has expired"));
    assert!(expired.body.get("apiKey").is_none());
}

async fn five_wrong_codes_lock_the_code_even_in_parallel(app: TestApp) {
    app.allowlist(ALLOWED_DOMAIN).await;
    let email = format!("dana@{ALLOWED_DOMAIN}");
    let (id, code) = app.requested(&email).await;
    let wrong = if code == "00000000" { "11111111" } else { "00000000" };
    let tries = (0..20).map(|_| app.verify(&id, wrong));
    let results = futures::future::join_all(tries).await;
    let not_valid = results.iter().filter(|r| r.error() == "That code is not valid").count();
    let locked = results
        .iter()
        .filter(|r| r.error() == "that code is no longer valid")
        .count();
    assert!(results.iter().all(|r| r.status == 401));
    assert_eq!(not_valid, 5, "exactly five attempts were counted");
    assert_eq!(locked, 15);
    let right = app.verify(&id, &code).await;
    assert_eq!((right.status, right.error()), (401, "that code is no longer valid"));
    assert!(right.body.get("apiKey").is_none());
}

async fn parallel_verifies_never_hand_out_two_keys(app: TestApp) {
    app.allowlist(ALLOWED_DOMAIN).await;
    let email = format!("erin@{ALLOWED_DOMAIN}");
    let (id, code) = app.requested(&email).await;
    let tries = (0..10).map(|_| app.verify(&id, &code));
    let results = futures::future::join_all(tries).await;
    let keys: Vec<_> = results.iter().filter_map(|r| r.body["apiKey"].as_str()).collect();
    assert_eq!(
        keys.len(),
        1,
        "{:?}",
        results.iter().map(|r| &r.body).collect::<Vec<_>>()
    );
    assert!(
        results
            .iter()
            .filter(|r| r.body.get("apiKey").is_none())
            .all(|r| r.status == 409 && r.body["code"] == "already_complete")
    );
    let status = app.post("/getAccountStatus", Auth::Bearer(keys[0]), json!({})).await;
    assert_eq!(status.status, 200);
}

async fn a_second_ready_verify_replaces_the_previous_key(app: TestApp) {
    let first = app.onboard(&format!("fay@{ALLOWED_DOMAIN}")).await;
    let second = app.request_and_verify(&format!("fay@{ALLOWED_DOMAIN}")).await;
    assert_eq!(second.body["status"], "ready");
    let second = second.body["apiKey"].as_str().unwrap();
    assert_ne!(first, second);
    assert_eq!(
        app.post("/getAccountStatus", Auth::Bearer(second), json!({}))
            .await
            .status,
        200
    );
    let old = app.post("/getAccountStatus", Auth::Bearer(&first), json!({})).await;
    assert_eq!((old.status, old.error()), (401, "Invalid API key"));
}

async fn request_access_refuses_bad_input_and_changes_nothing(app: TestApp) {
    let good = json!({"contactEmail": "gus@org.test", "domain": "org.test", "agentName": "a", "intendedUse": "b"});
    let mut cases = Vec::new();
    for field in ["contactEmail", "domain", "agentName", "intendedUse"] {
        let mut missing = good.clone();
        missing.as_object_mut().unwrap().remove(field);
        cases.push(missing);
        let mut wrong_type = good.clone();
        wrong_type[field] = json!(["x"]);
        cases.push(wrong_type);
        let mut empty = good.clone();
        empty[field] = json!("   ");
        cases.push(empty);
    }
    let mut bad_email = good.clone();
    bad_email["contactEmail"] = json!("not an email");
    cases.push(bad_email);
    let mut bad_domain = good.clone();
    bad_domain["domain"] = json!("exa mple");
    cases.push(bad_domain);
    let mut huge = good.clone();
    huge["intendedUse"] = json!("x".repeat(5000));
    cases.push(huge);
    let mut odd = good.clone();
    odd["agentName"] = json!("bot\u{0007}\u{202e}");
    cases.push(odd);
    cases.push(json!([1, 2]));
    cases.push(json!("text"));
    for body in cases {
        let r = app.post("/requestAccess", Auth::None, body.clone()).await;
        assert_eq!(r.status, 400, "{body}: {}", r.body);
        assert_eq!(r.body["ok"], false);
        assert!(r.body["error"].as_str().is_some_and(|e| !e.is_empty()));
    }
    let big = app
        .send(
            app.client
                .post(format!("{}/requestAccess", app.base))
                .body(vec![b' '; 9 * 1024 * 1024]),
        )
        .await;
    assert_eq!(big.status, 413);
    assert!(app.outbox_for("gus@org.test").is_empty(), "no code went out");
    // None of those counted against the email's limit: three real requests pass.
    for _ in 0..3 {
        assert_eq!(app.request_access("gus@org.test").await.status, 200);
    }
}

async fn request_access_limits_per_email_and_per_ip_and_ignores_forwarded_for(app: TestApp) {
    for _ in 0..3 {
        assert_eq!(app.request_access("hal@org.test").await.status, 200);
    }
    let limited = app.request_access("hal@org.test").await;
    assert_eq!(limited.status, 429);
    assert_eq!(limited.error(), "Rate limit exceeded");
    let retry = limited.body["retryAfter"].as_u64().unwrap();
    assert!((1..=3600).contains(&retry));
    assert_eq!(limited.headers["retry-after"].to_str().unwrap(), retry.to_string());
    assert_eq!(app.outbox_for("hal@org.test").len(), 3);

    // Four requests from this address so far; one more passes, then the IP is capped
    // whatever X-Forwarded-For claims.
    let body = json!({"contactEmail": "ida@org.test", "domain": "org.test", "agentName": "a", "intendedUse": "b"});
    let fifth = app
        .send(
            app.client
                .post(format!("{}/requestAccess", app.base))
                .header("X-Forwarded-For", "198.51.100.1")
                .json(&body),
        )
        .await;
    assert_eq!(fifth.status, 200, "{}", fifth.body);
    let sixth = app
        .send(
            app.client
                .post(format!("{}/requestAccess", app.base))
                .header("X-Forwarded-For", "198.51.100.2")
                .json(&body),
        )
        .await;
    assert_eq!(sixth.status, 429);
    assert!(sixth.headers.contains_key("retry-after"));

    app.ctx.clock.advance(3600);
    assert_eq!(
        app.request_access("hal@org.test").await.status,
        200,
        "the window has passed"
    );
}

async fn get_request_status_never_tells_whether_an_email_is_on_file(app: TestApp) {
    let email = "joy@org.test";
    let id = app.request_access(email).await.body["requestId"]
        .as_str()
        .unwrap()
        .to_string();
    let pending = json!({"ok": true, "status": "pending", "ready": false});
    let cases = [
        json!({"requestId": id, "email": "nobody@org.test"}),
        json!({"requestId": "ar_0123456789abcdef01234567", "email": email}),
        json!({"requestId": "ar_0123456789abcdef01234567", "email": "nobody@org.test"}),
        json!({"requestId": "", "email": email}),
        json!({"requestId": format!("{id}/x"), "email": email}),
        json!({"requestId": "ar_/../x", "email": email}),
    ];
    for body in cases {
        let r = app.post("/getRequestStatus", Auth::None, body.clone()).await;
        assert_eq!((r.status, &r.body), (200, &pending), "{body}");
    }
    let matched = app
        .post(
            "/getRequestStatus",
            Auth::None,
            json!({"requestId": id, "contactEmail": email}),
        )
        .await;
    assert_eq!(
        matched.body,
        json!({"ok": true, "status": "pending", "ready": false, "requestId": id})
    );
}

async fn get_request_status_has_its_own_identical_rate_limits(app: TestApp) {
    let known = "kim@org.test";
    let id = app.request_access(known).await.body["requestId"]
        .as_str()
        .unwrap()
        .to_string();
    let mut last_known = None;
    for _ in 0..7 {
        last_known = Some(app.poll(&id, known).await);
    }
    let last_known = last_known.unwrap();
    assert_eq!(last_known.status, 429);
    let unknown = "nobody@org.test";
    let mut last_unknown = None;
    for _ in 0..3 {
        last_unknown = Some(app.poll(&id, unknown).await);
    }
    let last_unknown = last_unknown.unwrap();
    // 6 + 1 + 3 = 10 calls from this address: the 11th is refused by the IP limit.
    assert_eq!(last_unknown.status, 200);
    let over_ip = app.poll(&id, unknown).await;
    assert_eq!(over_ip.status, 429);
    let strip =
        |b: &serde_json::Value| json!({"ok": b["ok"], "error": b["error"], "hasRetry": b["retryAfter"].is_u64()});
    assert_eq!(strip(&last_known.body), strip(&over_ip.body));
    assert_eq!(
        strip(&over_ip.body),
        json!({"ok": false, "error": "Rate limit exceeded", "hasRetry": true})
    );
    // Counted separately from requestAccess.
    assert_eq!(app.request_access("lee@org.test").await.status, 200);
}

async fn get_account_status_is_for_the_account_key_only(app: TestApp) {
    let key = app.onboard(&format!("max@{ALLOWED_DOMAIN}")).await;
    let agent = app
        .post("/getAccountStatus", Auth::Bearer(&app.agent_key), json!({}))
        .await;
    assert_eq!(agent.status, 403);
    assert_eq!(
        agent.error(),
        "This action is limited to the account key, or this key can only read its own account."
    );
    let none = app.post("/getAccountStatus", Auth::None, json!({})).await;
    assert_eq!(
        (none.status, none.error()),
        (401, "Missing Authorization Bearer token or X-Api-Key")
    );
    let bad = app
        .post("/getAccountStatus", Auth::Bearer("svc_not_a_key"), json!({}))
        .await;
    assert_eq!((bad.status, bad.error()), (401, "Invalid API key"));
    let other = app
        .post(
            "/getAccountStatus",
            Auth::Bearer(&key),
            json!({"email": "someone@else.test"}),
        )
        .await;
    assert_eq!(other.status, 403);
    let other_uid = app
        .post("/getAccountStatus", Auth::Bearer(&key), json!({"uid": "u_123"}))
        .await;
    assert_eq!(other_uid.status, 403);
    let own = app
        .post(
            "/getAccountStatus",
            Auth::Bearer(&key),
            json!({"email": format!("MAX@{ALLOWED_DOMAIN}")}),
        )
        .await;
    assert_eq!(own.status, 200);
    let empty = app
        .send(
            app.client
                .post(format!("{}/getAccountStatus", app.base))
                .bearer_auth(&key),
        )
        .await;
    assert_eq!(empty.status, 200, "an empty body is fine");
    let token = app.token("person@org.test").await;
    let identity = app.post("/getAccountStatus", Auth::Bearer(&token), json!({})).await;
    assert_eq!(identity.status, 403);
}
