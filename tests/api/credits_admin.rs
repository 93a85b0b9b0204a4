//! Credits, the sending switches and the operator routes (spec 2.11, 3.5, 4.6, 4.13).

use crate::support::{ALLOWED_DOMAIN, Auth, TestApp};
use serde_json::{Value, json};

on_both_backends!(
    credits_show_the_full_payload_for_each_caller,
    credits_are_read_in_one_storage_request,
    the_agent_key_freezes_and_thaws_itself,
    only_an_operator_pauses_all_sending,
    credit_controls_refuse_bad_input_and_change_nothing,
    the_allowlist_is_kept_by_operators,
    request_delete_removes_exactly_the_named_requests,
    request_duplicates_previews_by_email_and_domain,
);

async fn credits_show_the_full_payload_for_each_caller(app: TestApp) {
    let res = app.get("/credits", Auth::Bearer(&app.agent_key)).await;
    assert_eq!(res.status, 200);
    let b = &res.body;
    assert_eq!(b["ok"], true);
    assert_eq!(
        b["credits"],
        json!({"remaining": 100, "initial": 100, "humansCharged": false, "authFailureBurnsCredit": false})
    );
    assert_eq!(b["agentKey"]["id"], "agent:default");
    assert_eq!(b["agentKey"]["last4"], &app.agent_key[app.agent_key.len() - 4..]);
    assert_eq!(b["agentKey"]["status"], "active");
    assert_eq!(b["agentKey"]["disabled"], false);
    assert_eq!(b["agentKey"]["frozenUntil"], Value::Null);
    assert_eq!(b["sending"], json!({"enabled": true}));
    assert_eq!(b["canControl"], true);
    assert_eq!(b["canPauseAll"], false);
    // The configured public URL's description (the test app's is https://mail.svc.test/).
    assert_eq!(b["docs"], "https://mail.svc.test/docs/openapi.json");
    assert!(!b.to_string().contains(&app.agent_key));

    let operator = app.operator_token().await;
    let op = app.get("/api/credits", Auth::Bearer(&operator)).await;
    assert_eq!(
        (op.body["canControl"].clone(), op.body["canPauseAll"].clone()),
        (json!(true), json!(true))
    );
    let person = app.token("pat@people.test").await;
    let p = app.get("/credits", Auth::Bearer(&person)).await;
    assert_eq!(p.status, 200);
    assert_eq!(
        (p.body["canControl"].clone(), p.body["canPauseAll"].clone()),
        (json!(false), json!(false))
    );
    let bad = app.get("/credits", Auth::Bearer("svc_wrong")).await;
    assert_eq!(bad.status, 401);
    let after = app.get("/credits", Auth::ApiKey(&app.agent_key)).await;
    assert_eq!(after.body["credits"]["remaining"], 100, "a 401 spends no credit");
}

/// GET /credits reads the balance and both switches in one request
/// (docs/data-model.md): one read transaction, one BatchGetItem.
async fn credits_are_read_in_one_storage_request(app: TestApp) {
    let before = app.ctx.store_meter.counts();
    let res = app.get("/credits", Auth::Bearer(&app.agent_key)).await;
    assert_eq!(res.status, 200, "{}", res.body);
    let used = app.ctx.store_meter.counts().since(&before);
    assert_eq!((used.batch_gets, used.total()), (1, 1), "{used:?}");
}

async fn the_agent_key_freezes_and_thaws_itself(app: TestApp) {
    let key = Auth::Bearer(&app.agent_key);
    let frozen = app.post("/credits", key, json!({"disabled": true})).await;
    assert_eq!(frozen.status, 200, "{}", frozen.body);
    assert_eq!(frozen.body["agentKey"]["disabled"], true);
    assert_eq!(frozen.body["agentKey"]["status"], "disabled");
    let thawed = app.post("/credits", key, json!({"disabled": false})).await;
    assert_eq!(thawed.body["agentKey"]["status"], "active");

    let until = (chrono_like_now_plus(&app, 3600)).to_string();
    let later = app.post("/api/credits", key, json!({"frozenUntil": until})).await;
    assert_eq!(later.status, 200, "{}", later.body);
    assert_eq!(later.body["agentKey"]["status"], "frozen");
    assert!(later.body["agentKey"]["frozenUntil"].is_string());
    assert!(
        common::service::accounts::credits::agent_switch(&app.ctx)
            .await
            .unwrap()
            .frozen(app.ctx.clock.now())
    );
    app.ctx.clock.advance(3601);
    let passed = app.get("/credits", key).await;
    assert_eq!(
        passed.body["agentKey"]["status"], "active",
        "a past freeze no longer holds"
    );
    let cleared = app.post("/credits", key, json!({"frozenUntil": null})).await;
    assert_eq!(cleared.body["agentKey"]["frozenUntil"], Value::Null);

    let refused = app.post("/credits", key, json!({"sendingEnabled": false})).await;
    assert_eq!(
        (refused.status, refused.error()),
        (403, "Operator control requires the agent key or an operator account")
    );
    assert_eq!(app.get("/credits", key).await.body["sending"]["enabled"], true);
}

fn chrono_like_now_plus(app: &TestApp, secs: i64) -> String {
    common::clock::iso_epoch(app.ctx.clock.epoch() + secs)
}

async fn only_an_operator_pauses_all_sending(app: TestApp) {
    let operator = app.operator_token().await;
    let paused = app
        .post("/credits", Auth::Bearer(&operator), json!({"sendingEnabled": false}))
        .await;
    assert_eq!(paused.status, 200, "{}", paused.body);
    assert_eq!(paused.body["sending"]["enabled"], false);
    assert!(
        !common::service::accounts::credits::sending_enabled(&app.ctx)
            .await
            .unwrap()
    );
    let person = app.token("pat@people.test").await;
    let refused = app
        .post("/credits", Auth::Bearer(&person), json!({"sendingEnabled": true}))
        .await;
    assert_eq!(
        (refused.status, refused.error()),
        (403, "Operator control requires the agent key or an operator account")
    );
    let standard = app.onboard(&format!("sam@{ALLOWED_DOMAIN}")).await;
    let refused = app
        .post("/credits", Auth::Bearer(&standard), json!({"disabled": true}))
        .await;
    assert_eq!(refused.status, 403);
    let resumed = app
        .post(
            "/credits",
            Auth::Bearer(&operator),
            json!({"sendingEnabled": true, "disabled": true}),
        )
        .await;
    assert_eq!(resumed.body["sending"]["enabled"], true);
    assert_eq!(
        resumed.body["agentKey"]["disabled"], true,
        "an operator may freeze the agent key too"
    );
}

async fn credit_controls_refuse_bad_input_and_change_nothing(app: TestApp) {
    let key = Auth::Bearer(&app.agent_key);
    for body in [
        json!({"disabled": "yes"}),
        json!({"frozenUntil": "tomorrow"}),
        json!({"frozenUntil": 5}),
        json!({"disabled": true, "frozenUntil": "nope"}),
        json!([true]),
    ] {
        let res = app.post("/credits", key, body.clone()).await;
        assert_eq!(res.status, 400, "{body}");
    }
    let broken = app
        .send(
            app.client
                .post(format!("{}/credits", app.base))
                .bearer_auth(&app.agent_key)
                .body("{\"disabled\":"),
        )
        .await;
    assert_eq!(broken.status, 400);
    let now = app.get("/credits", key).await;
    assert_eq!(now.body["agentKey"]["disabled"], false, "nothing changed");
}

async fn the_allowlist_is_kept_by_operators(app: TestApp) {
    let op = app.operator_token().await;
    let op = Auth::Bearer(&op);
    let added = app
        .post("/api/admin/domainAllowlist", op, json!({"domain": " Partner.TEST. "}))
        .await;
    assert_eq!(added.body, json!({"ok": true, "domain": "partner.test", "added": true}));
    let again = app
        .post("/api/admin/domainAllowlist", op, json!({"domain": "partner.test"}))
        .await;
    assert_eq!(again.body["added"], false);
    let listed = app.get("/api/admin/domainAllowlist", op).await;
    assert_eq!(listed.body["domains"], json!(["partner.test"]));
    let checked = app.get("/admin/domainAllowlist/check?domain=partner.test", op).await;
    assert_eq!(checked.body["allowlisted"], true);
    let bad = app
        .post("/api/admin/domainAllowlist", op, json!({"domain": "not a domain"}))
        .await;
    assert_eq!(bad.status, 400);
    let ready = app.request_and_verify("new@partner.test").await;
    assert_eq!(ready.body["status"], "ready", "an allowlisted domain is ready at once");
    let removed = app
        .delete("/api/admin/domainAllowlist", op, json!({"domain": "partner.test"}))
        .await;
    assert_eq!(
        removed.body,
        json!({"ok": true, "domain": "partner.test", "removed": true})
    );
    let gone = app.get("/api/admin/domainAllowlist", op).await;
    assert_eq!(gone.body["domains"], json!([]));
    let waits = app.request_and_verify("later@partner.test").await;
    assert_eq!(waits.body["status"], "setting_up");
    let by_query = app
        .request(
            reqwest::Method::DELETE,
            "/admin/domainAllowlist?domain=partner.test",
            op,
            None,
        )
        .await;
    assert_eq!(by_query.body["removed"], false);
}

async fn request_delete_removes_exactly_the_named_requests(app: TestApp) {
    let op = app.operator_token().await;
    let op = Auth::Bearer(&op);
    let key = app.onboard(&format!("zed@{ALLOWED_DOMAIN}")).await;
    let email = format!("zed@{ALLOWED_DOMAIN}");
    // The onboarding above used one of three requests for this email this hour.
    let second = app.request_access(&email).await.body["requestId"]
        .as_str()
        .unwrap()
        .to_string();
    let third = app.request_access(&email).await.body["requestId"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(app.request_access(&email).await.status, 429);

    let too_many: Vec<String> = (0..201).map(|i| format!("ar_{i:024x}")).collect();
    let refused = app.post("/api/admin/requestDelete", op, json!({"ids": too_many})).await;
    assert_eq!(refused.status, 400);
    assert_eq!(app.post("/api/admin/requestDelete", op, json!({})).await.status, 400);
    assert_eq!(
        app.post("/api/admin/requestDelete", op, json!({"ids": [1]}))
            .await
            .status,
        400
    );

    let missing = "ar_0123456789abcdef01234567";
    let res = app
        .post(
            "/api/admin/requestDelete",
            op,
            json!({"ids": [second, missing], "id": third}),
        )
        .await;
    assert_eq!(res.status, 200, "{}", res.body);
    let mut deleted: Vec<String> = serde_json::from_value(res.body["deleted"].clone()).unwrap();
    deleted.sort();
    let mut want = vec![second.clone(), third.clone()];
    want.sort();
    assert_eq!(deleted, want);
    assert_eq!(res.body["notFound"], json!([missing]));
    for id in [&second, &third] {
        assert!(
            common::service::accounts::onboarding::load(&app.ctx, id)
                .await
                .unwrap()
                .is_none()
        );
    }
    // The operators' audit log has the change, with what it touched per id.
    let audit = app.get("/api/audit?operation=requestDelete", op).await;
    assert_eq!(audit.status, 200, "{}", audit.body);
    let details = &audit.body["changes"][0]["details"];
    assert_eq!(
        details.as_array().map(Vec::len),
        Some(3),
        "one detail per id: {}",
        audit.body
    );
    let details = details.as_array().unwrap();
    assert_eq!(details.iter().filter(|d| d["found"] == true).count(), 2);
    assert!(details.contains(&json!({"id": missing, "found": false})), "{details:?}");
    // The key and the account are untouched; the email's request counter is cleared.
    assert_eq!(
        app.post("/getAccountStatus", Auth::Bearer(&key), json!({}))
            .await
            .status,
        200
    );
    assert_eq!(app.request_access(&email).await.status, 200);
}

async fn request_duplicates_previews_by_email_and_domain(app: TestApp) {
    let op = app.operator_token().await;
    let op = Auth::Bearer(&op);
    app.request_access("one@org.test").await;
    app.request_access("one@org.test").await;
    app.request_access("two@org.test").await;
    let by_email = app.get("/api/admin/requestDuplicates?email=ONE@org.test", op).await;
    assert_eq!(by_email.status, 200, "{}", by_email.body);
    assert_eq!(by_email.body["count"], 2);
    assert!(
        by_email.body["requests"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["email"] == "one@org.test")
    );
    let by_domain = app.get("/api/admin/requestDuplicates?domain=org.test", op).await;
    assert_eq!(by_domain.body["count"], 3);
    let both = app
        .get("/api/admin/requestDuplicates?domain=org.test&email=two@org.test", op)
        .await;
    assert_eq!(both.body["count"], 3);
    assert!(
        both.body.to_string().find("codeDigest").is_none(),
        "no secrets in the preview"
    );
    assert_eq!(app.get("/api/admin/requestDuplicates", op).await.status, 400);
    assert_eq!(app.get("/api/admin/requestDuplicates?email=bad", op).await.status, 400);
}
