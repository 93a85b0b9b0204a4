//! Drafts end to end (spec 2.5, 4.5): a signed-in operator's own, at most 50
//! however many creates race, the newest 25 listed, every 400 precise.

use crate::support::{Auth, SECOND_OPERATOR, TestApp};
use serde_json::{Value, json};

on_both_backends!(
    an_operator_keeps_reads_updates_and_deletes_drafts,
    a_draft_keeps_its_copies_and_sender_beside_the_spec_fields,
    the_cap_of_fifty_holds_under_concurrent_creates,
    only_signed_in_operators_have_drafts_and_only_their_own,
);

async fn an_operator_keeps_reads_updates_and_deletes_drafts(app: TestApp) {
    let op = app.operator_token().await;
    let op = Auth::Bearer(&op);
    let created = app
        .post(
            "/drafts",
            op,
            json!({"to": "pal@partner.example", "subject": "Plans", "text": "Draft one", "inReplyTo": "root@partner.example", "references": "<a@x.example> <b@x.example>"}),
        )
        .await;
    assert_eq!(created.status, 200, "{}", created.body);
    let draft = &created.body["draft"];
    let id = draft["id"].as_str().unwrap().to_string();
    assert_eq!(draft["to"], json!(["pal@partner.example"]));
    assert_eq!(draft["inReplyTo"], "<root@partner.example>");
    assert_eq!(draft["references"], json!(["<a@x.example>", "<b@x.example>"]));
    let read = app.get(&format!("/drafts?id={id}"), op).await;
    assert_eq!(read.body, created.body);

    let updated = app
        .post(
            "/drafts",
            op,
            json!({"id": id, "subject": "Plans, again", "text": "Draft two"}),
        )
        .await;
    assert_eq!(updated.status, 200, "{}", updated.body);
    assert_eq!(updated.body["draft"]["id"], id.as_str());
    assert_eq!(updated.body["draft"]["subject"], "Plans, again");
    assert_eq!(updated.body["draft"]["to"], json!([]), "an update replaces the content");
    assert_eq!(updated.body["draft"]["createdAt"], draft["createdAt"]);

    for i in 0..30 {
        app.ctx.clock.advance(1);
        let res = app.post("/drafts", op, json!({"subject": format!("n{i}")})).await;
        assert_eq!(res.status, 200);
    }
    let listed = app.get("/drafts", op).await;
    let drafts = listed.body["drafts"].as_array().unwrap();
    assert_eq!(drafts.len(), 25, "the newest 25");
    assert_eq!(drafts[0]["subject"], "n29");
    assert_eq!(drafts[24]["subject"], "n5");

    let deleted = app.delete(&format!("/drafts?id={id}"), op, json!({})).await;
    assert_eq!(deleted.body, json!({"ok": true, "id": id}));
    let gone = app.get(&format!("/drafts?id={id}"), op).await;
    assert_eq!((gone.status, gone.error()), (404, "Message not found"));
    let again = app.delete(&format!("/drafts?id={id}"), op, json!({})).await;
    assert_eq!(again.status, 404);
    let update_gone = app.post("/drafts", op, json!({"id": id, "text": "x"})).await;
    assert_eq!(update_gone.status, 404);

    let long_subject = "s".repeat(999);
    let cases: Vec<(Value, &str)> = vec![
        (
            json!({}),
            "A draft needs at least one of to, subject, text or inReplyTo",
        ),
        (
            json!({"subject": "  ", "text": ""}),
            "A draft needs at least one of to, subject, text or inReplyTo",
        ),
        (
            json!({"id": "a/b", "text": "x"}),
            "id must match ^[A-Za-z0-9_-]{1,128}$",
        ),
        (
            json!({"subject": long_subject}),
            "subject must be one line of at most 998 characters",
        ),
        (
            json!({"subject": "a\r\nBcc: x@evil.example"}),
            "subject must be one line of at most 998 characters",
        ),
        (
            json!({"text": "x".repeat(100 * 1024 + 1)}),
            "Body too large (max 100KB)",
        ),
        (
            json!({"to": "a@x.org,b@x.org,c@x.org,d@x.org,e@x.org,f@x.org"}),
            "Max 5 recipients per request",
        ),
        (
            json!({"to": "not-an-address"}),
            "Invalid recipient address: not-an-address",
        ),
        (json!({"to": 7}), "to must be a string or an array of addresses"),
        (json!({"text": ["x"]}), "text must be a string"),
        (json!({"inReplyTo": "no id"}), "inReplyTo is not a valid Message-ID"),
    ];
    for (body, error) in cases {
        let res = app.post("/drafts", op, body.clone()).await;
        assert_eq!((res.status, res.error()), (400, error), "{body}");
    }
    let bad_get = app.get("/drafts?id=a.b", op).await;
    assert_eq!(bad_get.status, 400);
    let no_id = app.delete("/drafts", op, json!({})).await;
    assert_eq!((no_id.status, no_id.error()), (400, "id is required"));
}

/// cc, bcc and from are kept as sendMail takes them, shown only when a draft
/// has them (a spec client that never sends them reads what it always read),
/// and to, cc and bcc hold 5 distinct addresses at most, as a send's do.
async fn a_draft_keeps_its_copies_and_sender_beside_the_spec_fields(app: TestApp) {
    let op = app.operator_token().await;
    let op = Auth::Bearer(&op);
    let created = app
        .post(
            "/drafts",
            op,
            json!({"to": "pal@partner.example", "cc": "ann@partner.example; bo@partner.example", "bcc": ["me@partner.example"], "from": "Inbox@svc.test", "subject": "Copies"}),
        )
        .await;
    assert_eq!(created.status, 200, "{}", created.body);
    let draft = &created.body["draft"];
    assert_eq!(draft["cc"], json!(["ann@partner.example", "bo@partner.example"]));
    assert_eq!(draft["bcc"], json!(["me@partner.example"]));
    assert_eq!(draft["from"], "inbox@svc.test");
    let id = draft["id"].as_str().unwrap();
    let read = app.get(&format!("/drafts?id={id}"), op).await;
    assert_eq!(read.body, created.body);

    let plain = app.post("/drafts", op, json!({"id": id, "subject": "No copies"})).await;
    let keys: Vec<&String> = plain.body["draft"].as_object().unwrap().keys().collect();
    for absent in ["cc", "bcc", "from"] {
        assert!(
            !keys.iter().any(|k| *k == absent),
            "{absent} absent when not kept: {keys:?}"
        );
    }

    let six = json!({"to": ["a@x.example", "b@x.example"], "cc": ["c@x.example", "b@x.example", "d@x.example"], "bcc": ["e@x.example", "f@x.example"]});
    let five = json!({"to": ["a@x.example", "b@x.example"], "cc": ["c@x.example", "b@x.example", "d@x.example"], "bcc": ["e@x.example"]});
    for (body, status, error) in [
        (six, 400, "Max 5 recipients per request"),
        (json!({"subject": "s", "cc": 5}), 400, ""),
        (json!({"subject": "s", "bcc": [5]}), 400, ""),
        (json!({"subject": "s", "from": "not an address"}), 400, ""),
        (
            json!({"cc": "c@x.example"}),
            400,
            "A draft needs at least one of to, subject, text or inReplyTo",
        ),
        (five, 200, ""),
    ] {
        let res = app.post("/drafts", op, body.clone()).await;
        assert_eq!(res.status, status, "{body}: {}", res.body);
        if !error.is_empty() {
            assert_eq!(res.error(), error, "{body}");
        }
    }
}

async fn the_cap_of_fifty_holds_under_concurrent_creates(app: TestApp) {
    let op = app.operator_token().await;
    let creates: Vec<_> = (0..60)
        .map(|i| app.post("/drafts", Auth::Bearer(&op), json!({"subject": format!("c{i}")})))
        .collect();
    let results = futures::future::join_all(creates).await;
    let made = results.iter().filter(|r| r.status == 200).count();
    let refused: Vec<_> = results.iter().filter(|r| r.status != 200).collect();
    assert_eq!(made, 50, "{:?}", refused.first().map(|r| &r.body));
    assert!(
        refused
            .iter()
            .all(|r| r.status == 400 && r.error() == "Max 50 drafts per user")
    );
    // One deleted makes room for one.
    let listed = app.get("/drafts", Auth::Bearer(&op)).await;
    let id = listed.body["drafts"][0]["id"].as_str().unwrap().to_string();
    app.delete(&format!("/drafts?id={id}"), Auth::Bearer(&op), json!({}))
        .await;
    let (a, b) = tokio::join!(
        app.post("/drafts", Auth::Bearer(&op), json!({"subject": "x"})),
        app.post("/drafts", Auth::Bearer(&op), json!({"subject": "y"})),
    );
    let mut statuses = [a.status, b.status];
    statuses.sort();
    assert_eq!(statuses, [200, 400]);
}

async fn only_signed_in_operators_have_drafts_and_only_their_own(app: TestApp) {
    let op = app.operator_token().await;
    let mine = app.post("/drafts", Auth::Bearer(&op), json!({"text": "mine"})).await;
    let id = mine.body["draft"]["id"].as_str().unwrap().to_string();
    let key = app.sender("tom@tom.example", "tom.example", "me").await;
    for auth in [
        Auth::Bearer(&app.agent_key),
        Auth::Bearer(&key),
        Auth::ApiKey(&app.agent_key),
    ] {
        let res = app.get("/drafts", auth).await;
        assert_eq!((res.status, res.error()), (403, "Drafts require a signed-in user"));
    }
    let person = app.token("someone@people.test").await;
    let res = app.post("/drafts", Auth::Bearer(&person), json!({"text": "x"})).await;
    assert_eq!(
        (res.status, res.error()),
        (403, "This mailbox requires an operator account")
    );
    let missing = app.get("/drafts", Auth::None).await;
    assert_eq!(missing.status, 401);
    // Another operator sees none of them, and cannot touch them.
    let other = app.token(SECOND_OPERATOR).await;
    let theirs = app.get("/drafts", Auth::Bearer(&other)).await;
    assert_eq!(theirs.body, json!({"ok": true, "drafts": []}));
    for res in [
        app.get(&format!("/drafts?id={id}"), Auth::Bearer(&other)).await,
        app.post("/drafts", Auth::Bearer(&other), json!({"id": id, "text": "mine now"}))
            .await,
        app.delete(&format!("/drafts?id={id}"), Auth::Bearer(&other), json!({}))
            .await,
    ] {
        assert_eq!((res.status, res.error()), (404, "Message not found"));
    }
    assert_eq!(
        app.get(&format!("/drafts?id={id}"), Auth::Bearer(&op)).await.body["draft"]["text"],
        "mine"
    );
    // The tools, for an operator's identity token on /mcp.
    let call =
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "list_drafts", "arguments": {}}});
    let res = app.post("/mcp", Auth::Bearer(&op), call).await;
    assert_eq!(
        res.body["result"]["structuredContent"]["drafts"][0]["id"],
        id.as_str(),
        "{}",
        res.body
    );
}
