//! Allow and block lists (issue 23): entries added, listed and removed over
//! REST and MCP; a send to a blocked recipient, or to one an allow list does
//! not name, refused whole before any credit over REST, MCP and SMTP
//! submission; mailbox-narrowed entries; the bound under concurrency; and
//! the receive verdict, and the mail it keeps out of the inbox. On both stores.

use crate::support::{self, Auth, TestApp};
use base64::Engine;
use common::service::guardrails::lists;
use common::service::mail_store::Quarantine;
use common::store::{StoreExt, Update};
use serde_json::{Value, json};

on_both_backends!(
    entries_are_added_listed_and_removed_over_rest_and_mcp,
    bad_list_input_gets_a_precise_answer_and_changes_nothing,
    a_blocked_recipient_refuses_the_whole_send_with_no_credit_spent,
    a_blocked_recipient_is_answered_after_the_sender_and_the_switches,
    an_allow_list_refuses_every_other_recipient,
    a_mailbox_entry_applies_only_to_that_mailbox,
    a_key_narrowed_to_a_mailbox_manages_only_its_entries,
    concurrent_adds_stop_exactly_at_the_bound,
    the_receive_verdict_follows_the_receive_lists,
    mail_the_receive_lists_refuse_is_kept_out_of_the_inbox,
);

const NOT_FOUND: &str = "That entry is not on the list";

async fn add(app: &TestApp, key: &str, body: Value) -> crate::support::Response {
    app.post("/lists", Auth::Bearer(key), body).await
}

async fn added(app: &TestApp, key: &str, body: Value) -> Value {
    let res = add(app, key, body).await;
    assert_eq!(res.status, 200, "{}", res.body);
    assert_eq!(res.body["added"], true, "{}", res.body);
    res.body["entry"].clone()
}

/// A tool's result (`structuredContent`, `isError`); a JSON-RPC error reads
/// as a result whose `structuredContent` is the REST body.
async fn tool(app: &TestApp, key: &str, name: &str, arguments: Value) -> Value {
    let body =
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name, "arguments": arguments}});
    let res = app.post("/mcp", Auth::Bearer(key), body).await;
    assert_eq!(res.status, 200, "{}", res.body);
    match res.body.get("error") {
        Some(error) => json!({"isError": true, "structuredContent": error["data"]}),
        None => res.body["result"].clone(),
    }
}

async fn credits(app: &TestApp, key: &str) -> i64 {
    app.get("/credits", Auth::Bearer(key)).await.body["credits"]["remaining"]
        .as_i64()
        .unwrap()
}

async fn entries(app: &TestApp, key: &str, query: &str) -> Vec<Value> {
    let res = app.get(&format!("/lists{query}"), Auth::Bearer(key)).await;
    assert_eq!(res.status, 200, "{}", res.body);
    res.body["entries"].as_array().unwrap().clone()
}

/// The mail host's milter handing over a mailbox's SMTP submission.
async fn submit(app: &TestApp, mailbox: &str, to: &[&str]) -> crate::support::Response {
    let raw = format!(
        "From: {mailbox}\r\nTo: {}\r\nSubject: Over SMTP\r\n\r\nHello\r\n",
        to.join(", ")
    );
    let body = json!({
        "login": mailbox,
        "sender": mailbox,
        "recipients": to,
        "raw": base64::engine::general_purpose::STANDARD.encode(raw),
    });
    app.post("/mtaSubmission", Auth::Bearer(support::SYNC_TOKEN), body)
        .await
}

async fn entries_are_added_listed_and_removed_over_rest_and_mcp(app: TestApp) {
    let key = app.acme().await;
    let block = json!({"direction": "send", "kind": "block", "entry": "Spam.Example"});
    let entry = added(&app, &key, block.clone()).await;
    assert_eq!(entry["entry"], "spam.example");
    assert!(entry.get("mailbox").is_none(), "{entry}");
    // The same entry again: 200, not added, the first one shown.
    let again = add(&app, &key, block.clone()).await;
    assert_eq!(
        (again.status, &again.body["added"]),
        (200, &json!(false)),
        "{}",
        again.body
    );
    assert_eq!(again.body["entry"]["createdAt"], entry["createdAt"]);
    added(
        &app,
        &key,
        json!({"direction": "receive", "kind": "allow", "entry": "pal@partner.example", "mailbox": "agent@acme.example"}),
    )
    .await;
    added(
        &app,
        &key,
        json!({"direction": "send", "kind": "allow", "entry": "partner.example"}),
    )
    .await;

    // Sorted by direction (receive before send), kind, mailbox, entry.
    let all = entries(&app, &key, "").await;
    let shape: Vec<(String, String, String)> = all
        .iter()
        .map(|e| {
            (
                e["direction"].as_str().unwrap().into(),
                e["kind"].as_str().unwrap().into(),
                e["entry"].as_str().unwrap().into(),
            )
        })
        .collect();
    assert_eq!(
        shape,
        [
            ("receive".into(), "allow".into(), "pal@partner.example".into()),
            ("send".into(), "allow".into(), "partner.example".into()),
            ("send".into(), "block".into(), "spam.example".into()),
        ]
    );
    assert_eq!(entries(&app, &key, "?direction=send").await.len(), 2);
    assert_eq!(entries(&app, &key, "?direction=send&kind=block").await.len(), 1);
    assert_eq!(entries(&app, &key, "?kind=allow").await.len(), 2);

    // Removed by the query string; then it is gone: 404 with its own sentence.
    let gone = app
        .delete(
            "/lists?direction=send&kind=block&entry=spam.example",
            Auth::Bearer(&key),
            json!({}),
        )
        .await;
    assert_eq!(gone.status, 200, "{}", gone.body);
    assert_eq!(gone.body["removed"]["entry"], "spam.example");
    let again = app.delete("/lists", Auth::Bearer(&key), block.clone()).await;
    assert_eq!((again.status, again.error()), (404, NOT_FOUND), "{}", again.body);
    // A mailbox entry is removed by naming its mailbox, not without it.
    let receive = json!({"direction": "receive", "kind": "allow", "entry": "pal@partner.example"});
    let res = app.delete("/lists", Auth::Bearer(&key), receive.clone()).await;
    assert_eq!((res.status, res.error()), (404, NOT_FOUND));

    // MCP: the same operations as tools.
    let listed = tool(&app, &key, "get_lists", json!({"direction": "receive"})).await;
    assert_eq!(
        listed["structuredContent"]["entries"][0]["mailbox"], "agent@acme.example",
        "{listed}"
    );
    let mut named = receive.clone();
    named["mailbox"] = json!("agent@acme.example");
    let removed = tool(&app, &key, "remove_list_entry", named).await;
    assert_eq!(
        removed["structuredContent"]["removed"]["entry"], "pal@partner.example",
        "{removed}"
    );
    let added = tool(&app, &key, "add_list_entry", block).await;
    assert_eq!(added["structuredContent"]["added"], true, "{added}");
    let missing = tool(
        &app,
        &key,
        "remove_list_entry",
        json!({"direction": "send", "kind": "block", "entry": "nope.example"}),
    )
    .await;
    assert_eq!(missing["isError"], true);
    assert_eq!(missing["structuredContent"]["error"], NOT_FOUND, "{missing}");
    assert_eq!(entries(&app, &key, "").await.len(), 2);

    // A read-only key reads them and changes none.
    let reader = app
        .post(
            "/keys",
            Auth::Bearer(&key),
            json!({"name": "r", "permissions": ["read"]}),
        )
        .await;
    let reader = reader.body["apiKey"].as_str().unwrap().to_string();
    assert_eq!(entries(&app, &reader, "").await.len(), 2);
    let res = add(
        &app,
        &reader,
        json!({"direction": "send", "kind": "block", "entry": "x.example"}),
    )
    .await;
    assert_eq!(res.status, 403, "{}", res.body);
    assert_eq!(res.body["code"], "permission_missing");
}

async fn bad_list_input_gets_a_precise_answer_and_changes_nothing(app: TestApp) {
    let key = app.acme().await;
    let other = app.sender("eve@other.example", "other.example", "eve").await;
    let cases = [
        (
            json!({"kind": "block", "entry": "a.example"}),
            "direction is required: send or receive",
        ),
        (
            json!({"direction": "out", "kind": "block", "entry": "a.example"}),
            "direction must be send or receive",
        ),
        (
            json!({"direction": "send", "entry": "a.example"}),
            "kind is required: allow or block",
        ),
        (
            json!({"direction": "send", "kind": "deny", "entry": "a.example"}),
            "kind must be allow or block",
        ),
        (
            json!({"direction": "send", "kind": "block"}),
            "entry is required: an email address or a domain",
        ),
        (
            json!({"direction": "send", "kind": "block", "entry": "localhost"}),
            "entry must be an email address or a domain name such as example.com",
        ),
        (
            json!({"direction": "send", "kind": "block", "entry": 7}),
            "entry must be an email address or a domain name such as example.com",
        ),
        (
            json!({"direction": "send", "kind": "block", "entry": "a.example", "mailbox": "not an address"}),
            "mailbox must be a mailbox address of this account",
        ),
    ];
    for (body, sentence) in cases {
        let res = add(&app, &key, body.clone()).await;
        assert_eq!((res.status, res.error()), (400, sentence), "{body}: {}", res.body);
        let res = app.delete("/lists", Auth::Bearer(&key), body.clone()).await;
        assert_eq!(
            (res.status, res.error()),
            (400, sentence),
            "DELETE {body}: {}",
            res.body
        );
    }
    // A mailbox of another account, or none at all, is named back.
    for mailbox in ["eve@other.example", "nobody@acme.example"] {
        let body = json!({"direction": "send", "kind": "block", "entry": "a.example", "mailbox": mailbox});
        let res = add(&app, &key, body).await;
        assert_eq!(
            (res.status, res.error()),
            (400, "mailbox must be an active mailbox of this account (see addresses)")
        );
        assert_eq!(res.body["addresses"], json!([mailbox]));
    }
    for query in ["?direction=both", "?kind=maybe"] {
        let res = app.get(&format!("/lists{query}"), Auth::Bearer(&key)).await;
        assert_eq!(res.status, 400, "{query}: {}", res.body);
    }
    assert!(entries(&app, &key, "").await.is_empty());
    assert!(entries(&app, &other, "").await.is_empty());
    // Nothing was counted either: the bound is whole.
    let uid = app.uid_of_key(&key).await;
    let account: Value = app.ctx.store.read(&common::keys::account(&uid)).await.unwrap().unwrap();
    assert!(account["listEntries"].as_i64().unwrap_or(0) == 0, "{account}");
}

/// The acme account's key, with these entries on its send block list.
async fn acme_blocking(app: &TestApp, entries: &[&str]) -> String {
    let key = app.acme().await;
    for entry in entries {
        added(app, &key, json!({"direction": "send", "kind": "block", "entry": entry})).await;
    }
    key
}

async fn a_blocked_recipient_refuses_the_whole_send_with_no_credit_spent(app: TestApp) {
    let key = acme_blocking(&app, &["spam.example", "rival@partner.example"]).await;
    let before = credits(&app, &key).await;
    let mail = json!({
        "from": "agent@acme.example",
        "to": ["pal@partner.example", "x@eu.spam.example", "Rival@Partner.example"],
        "subject": "Hi",
        "text": "Hi",
    });

    let res = app.send_mail(Auth::Bearer(&key), mail.clone()).await;
    assert_eq!(res.status, 400, "{}", res.body);
    assert_eq!(res.body["code"], "recipient_blocked");
    assert_eq!(
        res.body["addresses"],
        json!(["x@eu.spam.example", "rival@partner.example"])
    );
    assert!(
        res.error().contains("x@eu.spam.example, rival@partner.example"),
        "{}",
        res.error()
    );

    let refused = tool(&app, &key, "send_mail", mail.clone()).await;
    assert_eq!(refused["isError"], true, "{refused}");
    assert_eq!(refused["structuredContent"]["code"], "recipient_blocked", "{refused}");

    let res = submit(&app, "agent@acme.example", &["pal@partner.example", "x@spam.example"]).await;
    assert_eq!(res.status, 400, "{}", res.body);
    assert_eq!(res.body["code"], "recipient_blocked");
    assert_eq!(res.body["addresses"], json!(["x@spam.example"]));

    // A send that would wait (undo, schedule) is refused when accepted.
    let mut later = mail.clone();
    later["undoSeconds"] = json!(60);
    let res = app.send_mail(Auth::Bearer(&key), later).await;
    assert_eq!(
        (res.status, &res.body["code"]),
        (400, &json!("recipient_blocked")),
        "{}",
        res.body
    );

    assert_eq!(credits(&app, &key).await, before, "no credit spent");
    let outbox = app.get("/outbox", Auth::Bearer(&key)).await;
    assert_eq!(outbox.body["messages"], json!([]), "nothing recorded: {}", outbox.body);

    // The others go once the blocked ones are left out.
    let res = app
        .send_mail(
            Auth::Bearer(&key),
            json!({"from": "agent@acme.example", "to": "pal@partner.example", "subject": "Hi", "text": "Hi"}),
        )
        .await;
    assert_eq!(res.status, 200, "{}", res.body);
    assert_eq!(credits(&app, &key).await, before - 1);
}

async fn a_blocked_recipient_is_answered_after_the_sender_and_the_switches(app: TestApp) {
    let key = acme_blocking(&app, &["spam.example"]).await;
    let mail = json!({"from": "agent@acme.example", "to": "x@spam.example", "subject": "Hi", "text": "Hi"});
    // The recipients are read beside the earlier checks but answered after
    // them: a sender the account may not use, and sending paused, come first.
    let mut foreign = mail.clone();
    foreign["from"] = json!("agent@elsewhere.example");
    let res = app.send_mail(Auth::Bearer(&key), foreign).await;
    assert_eq!(
        (res.status, res.error()),
        (400, "from must be a hosted mailbox on your verified domain")
    );
    let operator = app.operator_token().await;
    let pause = |enabled: bool| app.post("/credits", Auth::Bearer(&operator), json!({"sendingEnabled": enabled}));
    assert_eq!(pause(false).await.status, 200);
    let res = app.send_mail(Auth::Bearer(&key), mail.clone()).await;
    assert_eq!((res.status, res.error()), (503, "Sending temporarily disabled"));
    assert_eq!(pause(true).await.status, 200);

    let res = app.send_mail(Auth::Bearer(&key), mail).await;
    assert_eq!((res.status, &res.body["code"]), (400, &json!("recipient_blocked")));
}

async fn an_allow_list_refuses_every_other_recipient(app: TestApp) {
    let key = app.acme().await;
    added(
        &app,
        &key,
        json!({"direction": "send", "kind": "allow", "entry": "partner.example"}),
    )
    .await;
    added(
        &app,
        &key,
        json!({"direction": "send", "kind": "allow", "entry": "boss@home.example"}),
    )
    .await;
    let before = credits(&app, &key).await;
    let send = |to: Value| {
        app.send_mail(
            Auth::Bearer(&key),
            json!({"from": "agent@acme.example", "to": to, "subject": "Hi", "text": "Hi"}),
        )
    };
    let res = send(json!([
        "pal@eu.partner.example",
        "x@other.example",
        "boss@home.example"
    ]))
    .await;
    assert_eq!(res.status, 400, "{}", res.body);
    assert_eq!(res.body["code"], "recipient_not_allowed");
    assert_eq!(res.body["addresses"], json!(["x@other.example"]));
    let res = submit(&app, "boss@acme.example", &["kid@home.example"]).await;
    assert_eq!(
        (res.status, &res.body["code"]),
        (400, &json!("recipient_not_allowed")),
        "{}",
        res.body
    );
    assert_eq!(credits(&app, &key).await, before);

    // A block wins over an allow.
    added(
        &app,
        &key,
        json!({"direction": "send", "kind": "block", "entry": "eu.partner.example"}),
    )
    .await;
    let res = send(json!("pal@eu.partner.example")).await;
    assert_eq!(res.body["code"], "recipient_blocked", "{}", res.body);

    let res = send(json!(["pal@partner.example", "boss@home.example"])).await;
    assert_eq!(res.status, 200, "{}", res.body);
    let res = submit(&app, "boss@acme.example", &["pal@partner.example"]).await;
    assert_eq!(res.status, 200, "{}", res.body);
    assert_eq!(credits(&app, &key).await, before - 2);
}

async fn a_mailbox_entry_applies_only_to_that_mailbox(app: TestApp) {
    let key = app.acme().await;
    added(
        &app,
        &key,
        json!({"direction": "send", "kind": "block", "entry": "partner.example", "mailbox": "Agent@Acme.example"}),
    )
    .await;
    added(
        &app,
        &key,
        json!({"direction": "send", "kind": "allow", "entry": "home.example", "mailbox": "boss@acme.example"}),
    )
    .await;
    let send = |from: &'static str, to: &'static str| {
        app.send_mail(
            Auth::Bearer(&key),
            json!({"from": from, "to": to, "subject": "Hi", "text": "Hi"}),
        )
    };
    let res = send("agent@acme.example", "pal@partner.example").await;
    assert_eq!(res.body["code"], "recipient_blocked", "{}", res.body);
    // boss@ is not blocked from partner.example, but its own allow list
    // holds only home.example.
    let res = send("boss@acme.example", "pal@partner.example").await;
    assert_eq!(res.body["code"], "recipient_not_allowed", "{}", res.body);
    assert_eq!(send("boss@acme.example", "kid@home.example").await.status, 200);
    // agent@ has no allow list: anyone but partner.example.
    assert_eq!(send("agent@acme.example", "x@other.example").await.status, 200);
}

async fn a_key_narrowed_to_a_mailbox_manages_only_its_entries(app: TestApp) {
    let key = app.acme().await;
    added(
        &app,
        &key,
        json!({"direction": "send", "kind": "block", "entry": "a.example"}),
    )
    .await;
    added(
        &app,
        &key,
        json!({"direction": "send", "kind": "block", "entry": "b.example", "mailbox": "boss@acme.example"}),
    )
    .await;
    let minted = app
        .post(
            "/keys",
            Auth::Bearer(&key),
            json!({"name": "agent", "permissions": ["read", "manage"], "mailboxes": ["agent@acme.example"]}),
        )
        .await;
    let narrow = minted.body["apiKey"].as_str().unwrap().to_string();
    // It sees the account-wide entry and its own mailbox's, not boss@'s.
    let seen = entries(&app, &narrow, "").await;
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert_eq!(seen[0]["entry"], "a.example");
    let res = add(
        &app,
        &narrow,
        json!({"direction": "send", "kind": "block", "entry": "c.example"}),
    )
    .await;
    assert_eq!(res.status, 403, "{}", res.body);
    assert_eq!(
        res.error(),
        "This API key is narrowed to some mailboxes: name one of them in mailbox"
    );
    let body = json!({"direction": "send", "kind": "block", "entry": "b.example", "mailbox": "boss@acme.example"});
    let res = app.delete("/lists", Auth::Bearer(&narrow), body).await;
    assert_eq!(
        (res.status, &res.body["code"]),
        (403, &json!("mailbox_out_of_scope")),
        "{}",
        res.body
    );
    added(
        &app,
        &narrow,
        json!({"direction": "send", "kind": "block", "entry": "c.example", "mailbox": "agent@acme.example"}),
    )
    .await;
    assert_eq!(entries(&app, &key, "").await.len(), 3);
}

async fn concurrent_adds_stop_exactly_at_the_bound(app: TestApp) {
    let key = app.acme().await;
    let uid = app.uid_of_key(&key).await;
    // As if 490 entries were there (a shortcut: the count is what binds).
    let room = 10;
    app.ctx
        .store
        .update(
            &common::keys::account(&uid),
            Update::new().add("listEntries", lists::MAX_ENTRIES - room),
            None,
        )
        .await
        .unwrap();
    let tries = (0..20).map(|n| {
        let (app, key) = (&app, &key);
        async move {
            add(
                app,
                key,
                json!({"direction": "send", "kind": "block", "entry": format!("d{n}.example")}),
            )
            .await
        }
    });
    let answers = futures::future::join_all(tries).await;
    let ok = answers.iter().filter(|r| r.status == 200).count();
    let full: Vec<_> = answers.iter().filter(|r| r.status == 409).collect();
    assert_eq!(
        (ok, full.len()),
        (room as usize, 20 - room as usize),
        "{:?}",
        answers.iter().map(|r| r.status).collect::<Vec<_>>()
    );
    assert_eq!(
        full[0].error(),
        "An account holds at most 500 list entries; remove one first"
    );
    assert_eq!(full[0].body["code"], "lists_full");
    assert_eq!(entries(&app, &key, "").await.len(), room as usize);
    // An entry already there still answers 200 when the list is full.
    let first = entries(&app, &key, "").await[0]["entry"].clone();
    let again = add(
        &app,
        &key,
        json!({"direction": "send", "kind": "block", "entry": first}),
    )
    .await;
    assert_eq!(
        (again.status, &again.body["added"]),
        (200, &json!(false)),
        "{}",
        again.body
    );
    // Removing one makes room for one.
    let gone = app
        .delete(
            "/lists",
            Auth::Bearer(&key),
            json!({"direction": "send", "kind": "block", "entry": first}),
        )
        .await;
    assert_eq!(gone.status, 200, "{}", gone.body);
    added(
        &app,
        &key,
        json!({"direction": "send", "kind": "block", "entry": "last.example"}),
    )
    .await;
    let res = add(
        &app,
        &key,
        json!({"direction": "send", "kind": "block", "entry": "over.example"}),
    )
    .await;
    assert_eq!(res.status, 409, "{}", res.body);
}

async fn the_receive_verdict_follows_the_receive_lists(app: TestApp) {
    let key = app.acme().await;
    let uid = app.uid_of_key(&key).await;
    let verdict = |mailbox: &'static str, from: &'static str| {
        let (ctx, uid) = (&app.ctx, uid.clone());
        async move { lists::receive_verdict(ctx, &uid, mailbox, from).await.unwrap() }
    };
    assert_eq!(verdict("agent@acme.example", "x@spam.example").await, None);
    added(
        &app,
        &key,
        json!({"direction": "receive", "kind": "block", "entry": "spam.example"}),
    )
    .await;
    // A send list never judges received mail.
    added(
        &app,
        &key,
        json!({"direction": "send", "kind": "allow", "entry": "partner.example"}),
    )
    .await;
    added(
        &app,
        &key,
        json!({"direction": "receive", "kind": "allow", "entry": "partner.example", "mailbox": "agent@acme.example"}),
    )
    .await;
    assert_eq!(
        verdict("agent@acme.example", "X@Eu.Spam.example").await,
        Some(Quarantine::BlockedSender)
    );
    assert_eq!(
        verdict("boss@acme.example", "x@spam.example").await,
        Some(Quarantine::BlockedSender)
    );
    assert_eq!(verdict("agent@acme.example", "<pal@partner.example>").await, None);
    assert_eq!(
        verdict("agent@acme.example", "someone@else.example").await,
        Some(Quarantine::SenderNotAllowed)
    );
    // A null sender matches nothing, so the allow list keeps it out.
    assert_eq!(
        verdict("agent@acme.example", "").await,
        Some(Quarantine::SenderNotAllowed)
    );
    assert_eq!(verdict("boss@acme.example", "someone@else.example").await, None);

    // The service-domain mailboxes are the operators' account's; the
    // dispatch's `agent` owner reads the same lists.
    let operator = app.operator_token().await;
    added(
        &app,
        &operator,
        json!({"direction": "receive", "kind": "block", "entry": "spam.example"}),
    )
    .await;
    for owner in ["ops", "agent"] {
        let got = lists::receive_verdict(&app.ctx, owner, "inbox@svc.test", "x@spam.example")
            .await
            .unwrap();
        assert_eq!(got, Some(Quarantine::BlockedSender), "{owner}");
    }
    // And the agent key's sends follow the operators' send lists.
    added(
        &app,
        &operator,
        json!({"direction": "send", "kind": "block", "entry": "spam.example"}),
    )
    .await;
    let res = app
        .send_mail(
            Auth::Bearer(&app.agent_key),
            json!({"to": "x@spam.example", "subject": "Hi", "text": "Hi"}),
        )
        .await;
    assert_eq!(res.body["code"], "recipient_blocked", "{}", res.body);
}

async fn mail_the_receive_lists_refuse_is_kept_out_of_the_inbox(app: TestApp) {
    let key = app.acme().await;
    added(
        &app,
        &key,
        json!({"direction": "receive", "kind": "block", "entry": "spam.example"}),
    )
    .await;
    added(
        &app,
        &key,
        json!({"direction": "receive", "kind": "allow", "entry": "partner.example", "mailbox": "boss@acme.example"}),
    )
    .await;
    app.receive("offers@mail.spam.example", "agent@acme.example", "blocked")
        .await;
    app.receive("pal@partner.example", "agent@acme.example", "welcome")
        .await;
    app.receive("stranger@else.example", "boss@acme.example", "unlisted")
        .await;
    app.receive("pal@partner.example", "boss@acme.example", "allowed").await;

    let inbox = app.get("/inbox", Auth::Bearer(&key)).await;
    let mut subjects: Vec<&str> = inbox.body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["subject"].as_str().unwrap())
        .collect();
    subjects.sort();
    assert_eq!(subjects, ["allowed", "welcome"], "{}", inbox.body);
    let kept = app.get("/inbox?view=quarantine", Auth::Bearer(&key)).await;
    let mut reasons: Vec<(String, String)> = kept.body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["subject"].as_str().unwrap().to_string(),
                m["quarantine"]["reason"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    reasons.sort();
    assert_eq!(
        reasons,
        [
            ("blocked".to_string(), "blocked_sender".to_string()),
            ("unlisted".to_string(), "sender_not_allowed".to_string())
        ],
        "{}",
        kept.body
    );
    // Each list change is in the audit log, by the account key.
    let log = app.get("/audit?operation=addListEntry", Auth::Bearer(&key)).await;
    let changes = log.body["changes"].as_array().unwrap();
    assert_eq!(changes.len(), 2, "{}", log.body);
    assert!(
        changes
            .iter()
            .all(|c| c["actor"]["kind"] == "account_key" && c["status"] == 200)
    );
    // Kept, and readable by id with its reason.
    let id = kept.body["messages"][0]["id"].as_str().unwrap();
    let read = app.get(&format!("/inbox?id={id}"), Auth::Bearer(&key)).await;
    assert_eq!(read.status, 200, "{}", read.body);
}
