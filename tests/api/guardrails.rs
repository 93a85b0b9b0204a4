//! Guardrails for agents (issue 23): scoped keys (permissions, mailboxes,
//! their own daily cap and expiry, revocation), and the audit log that
//! names who did each change. On both stores, over REST and MCP.

use crate::support::{Auth, TestApp};
use serde_json::{Value, json};

on_both_backends!(
    a_read_only_key_cannot_send_over_rest_or_mcp,
    a_key_scoped_to_one_mailbox_sees_only_that_mailbox,
    a_revoked_or_expired_key_is_refused_at_once,
    a_keys_daily_cap_is_its_own_and_atomic,
    only_the_owner_mints_keys_and_at_most_twenty,
    bad_key_input_gets_a_precise_400_and_mints_nothing,
    the_audit_log_names_each_change_and_its_actor,
    a_first_contact_send_is_held_until_the_owner_decides,
    an_approval_code_never_lands_where_a_key_reads_mail,
    a_scoped_key_never_reads_the_access_code_that_would_replace_the_account_key,
    a_scheduled_send_goes_out_once_and_undo_returns_the_credit,
    a_reply_that_waited_is_filed_on_its_thread_when_it_goes,
);

const LACKS_SEND: &str = "This API key lacks the send permission";

pub(crate) async fn mint(app: &TestApp, owner: &str, body: Value) -> (String, Value) {
    let res = app.post("/keys", Auth::Bearer(owner), body).await;
    assert_eq!(res.status, 200, "{}", res.body);
    let key = res.body["apiKey"].as_str().unwrap().to_string();
    assert!(key.starts_with("svc_"));
    (key, res.body["key"].clone())
}

pub(crate) async fn tool(app: &TestApp, key: &str, name: &str, arguments: Value) -> crate::support::Response {
    let body =
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name, "arguments": arguments}});
    app.post("/mcp", Auth::Bearer(key), body).await
}

fn credits(res: &crate::support::Response) -> i64 {
    res.body["credits"]["remaining"].as_i64().unwrap()
}

async fn a_read_only_key_cannot_send_over_rest_or_mcp(app: TestApp) {
    let owner = app.acme().await;
    let (reader, _) = mint(&app, &owner, json!({"name": "reader", "permissions": ["read"]})).await;
    let before = credits(&app.get("/credits", Auth::Bearer(&owner)).await);
    let mail = json!({"from": "agent@acme.example", "to": "pal@partner.example", "subject": "Hi", "text": "Hi"});

    let res = app.send_mail(Auth::Bearer(&reader), mail.clone()).await;
    assert_eq!((res.status, res.error()), (403, LACKS_SEND), "{}", res.body);
    assert_eq!(res.body["code"], "permission_missing");

    let res = tool(&app, &reader, "send_mail", mail.clone()).await;
    assert_eq!(res.body["error"]["code"], -32000, "{}", res.body);
    assert_eq!(res.body["error"]["data"]["status"], 403);
    assert_eq!(res.body["error"]["data"]["error"], LACKS_SEND);

    // It reads: its account's status and credits, the inbox.
    assert_eq!(app.get("/inbox", Auth::Bearer(&reader)).await.status, 200);
    assert_eq!(
        credits(&app.get("/credits", Auth::Bearer(&reader)).await),
        before,
        "nothing spent"
    );
    // A key with send does send.
    let (sender, _) = mint(&app, &owner, json!({"name": "sender", "permissions": ["send"]})).await;
    let res = app.send_mail(Auth::Bearer(&sender), mail).await;
    assert_eq!(res.status, 200, "{}", res.body);
    let res = app.get("/inbox", Auth::Bearer(&sender)).await;
    assert_eq!(
        res.error(),
        "This API key lacks the read permission (inbox, attachments, outbox, threads)"
    );
}

async fn a_key_scoped_to_one_mailbox_sees_only_that_mailbox(app: TestApp) {
    let owner = app.acme().await;
    app.receive("pal@partner.example", "agent@acme.example", "for-agent")
        .await;
    app.receive("pal@partner.example", "boss@acme.example", "for-boss")
        .await;
    let (agent, view) = mint(
        &app,
        &owner,
        json!({"name": "support agent", "permissions": ["read", "send"], "mailboxes": ["Agent@acme.example"]}),
    )
    .await;
    assert_eq!(view["scope"]["mailboxes"], json!(["agent@acme.example"]));
    assert_eq!(view["scope"]["permissions"], json!(["read", "send"]));
    // The account's one webhook announces every mailbox: a key held to some
    // neither reads nor sets it, even with the manage permission.
    let (manager, _) = mint(
        &app,
        &owner,
        json!({"name": "hooks", "permissions": ["manage"], "mailboxes": ["agent@acme.example"]}),
    )
    .await;
    let hooks = "This API key is limited to some mailboxes; the webhook announces every mailbox's mail";
    let res = app
        .post(
            "/webhooks",
            Auth::Bearer(&manager),
            json!({"url": "https://hooks.example.com/x"}),
        )
        .await;
    assert_eq!((res.status, res.error()), (403, hooks), "{}", res.body);
    for path in ["/webhooks", "/webhooks/deliveries"] {
        let res = app.get(path, Auth::Bearer(&manager)).await;
        assert_eq!((res.status, res.error()), (403, hooks), "{path}: {}", res.body);
    }

    // The owner sees both; the agent only its own, in every list.
    let all = app.get("/inbox", Auth::Bearer(&owner)).await;
    assert_eq!(all.body["messages"].as_array().unwrap().len(), 2);
    let mine = app.get("/inbox", Auth::Bearer(&agent)).await;
    let subjects: Vec<&str> = mine.body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["subject"].as_str().unwrap())
        .collect();
    assert_eq!(subjects, ["for-agent"], "{}", mine.body);
    let threads = app.get("/inbox?view=threads", Auth::Bearer(&agent)).await;
    assert_eq!(threads.body["threads"].as_array().unwrap().len(), 1, "{}", threads.body);
    let found = app.get("/inbox?q=for-", Auth::Bearer(&agent)).await;
    assert_eq!(found.body["messages"].as_array().unwrap().len(), 1, "{}", found.body);

    // The boss's message by id or Message-ID, or its thread: 404, as another account's.
    let boss_row = all.body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["subject"] == "for-boss")
        .unwrap()
        .clone();
    let id = boss_row["id"].as_str().unwrap();
    let res = app.get(&format!("/inbox?id={id}"), Auth::Bearer(&agent)).await;
    assert_eq!((res.status, res.error()), (404, "Message not found"));
    let res = app
        .get("/inbox?messageId=%3Cfor-boss@received.test%3E", Auth::Bearer(&agent))
        .await;
    assert_eq!(res.status, 404, "{}", res.body);
    let thread = boss_row["threadId"].as_str().unwrap();
    let res = app.get(&format!("/inbox?thread={thread}"), Auth::Bearer(&agent)).await;
    assert_eq!(res.status, 404, "{}", res.body);
    let res = app
        .post("/inbox", Auth::Bearer(&agent), json!({"id": id, "unread": false}))
        .await;
    assert_eq!(res.status, 404, "{}", res.body);
    let res = tool(&app, &agent, "get_message", json!({"id": id})).await;
    assert_eq!(res.body["result"]["isError"], true, "{}", res.body);
    assert_eq!(res.body["result"]["structuredContent"]["status"], 404);
    // The boss's message is still unread: the refused reads marked nothing.
    let boss_now = app.get(&format!("/inbox?id={id}"), Auth::Bearer(&owner)).await;
    assert_eq!(boss_now.status, 200);

    // It sends only as its own mailbox: named or chosen for it.
    let mail = |from: Option<&str>| {
        let mut m = json!({"to": "pal@partner.example", "subject": "Hi", "text": "Hi"});
        if let Some(from) = from {
            m["from"] = json!(from);
        }
        m
    };
    let res = app
        .send_mail(Auth::Bearer(&agent), mail(Some("boss@acme.example")))
        .await;
    assert_eq!(
        (res.status, res.error()),
        (403, "This API key may not use this mailbox (see addresses)")
    );
    assert_eq!(res.body["addresses"], json!(["boss@acme.example"]));
    let res = app.send_mail(Auth::Bearer(&agent), mail(None)).await;
    assert_eq!(res.status, 200, "{}", res.body);
    assert_eq!(res.body["from"], "agent@acme.example");
    // The owner, with two mailboxes, must choose.
    let res = app.send_mail(Auth::Bearer(&owner), mail(None)).await;
    assert_eq!(res.status, 400, "{}", res.body);

    // Its outbox holds only its own mailbox's sends.
    app.send_mail(Auth::Bearer(&owner), mail(Some("boss@acme.example")))
        .await;
    let outbox = app.get("/outbox", Auth::Bearer(&agent)).await;
    let froms: Vec<&str> = outbox.body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["from"].as_str().unwrap())
        .collect();
    assert_eq!(froms, ["agent@acme.example"], "{}", outbox.body);

    // A scope naming a mailbox the account does not have mints nothing.
    let res = app
        .post(
            "/keys",
            Auth::Bearer(&owner),
            json!({"name": "x", "permissions": ["read"], "mailboxes": ["ghost@acme.example"]}),
        )
        .await;
    assert_eq!(res.status, 400, "{}", res.body);
    assert_eq!(res.body["addresses"], json!(["ghost@acme.example"]));
}

async fn a_revoked_or_expired_key_is_refused_at_once(app: TestApp) {
    let owner = app.acme().await;
    let (key, view) = mint(&app, &owner, json!({"name": "temp", "permissions": ["read"]})).await;
    assert_eq!(app.get("/credits", Auth::Bearer(&key)).await.status, 200);
    let listed = app.get("/keys", Auth::Bearer(&owner)).await;
    let shown = &listed.body["keys"][0];
    assert_eq!(shown["id"], view["id"]);
    assert!(shown["lastUsedAt"].is_string(), "its use is noted: {shown}");
    assert!(!listed.body.to_string().contains(&key), "the key is never shown again");

    let id = view["id"].as_str().unwrap();
    // Twenty concurrent revokes: one wins, the rest find nothing.
    let path = format!("/keys?id={id}");
    let revokes = (0..20).map(|_| app.delete(&path, Auth::Bearer(&owner), json!({})));
    let statuses: Vec<u16> = futures::future::join_all(revokes)
        .await
        .into_iter()
        .map(|r| r.status)
        .collect();
    assert_eq!(statuses.iter().filter(|s| **s == 200).count(), 1, "{statuses:?}");
    assert!(statuses.iter().all(|s| *s == 200 || *s == 404), "{statuses:?}");
    let res = app.get("/credits", Auth::Bearer(&key)).await;
    assert_eq!((res.status, res.error()), (401, "Invalid API key"));
    assert_eq!(app.get("/keys", Auth::Bearer(&owner)).await.body["keys"], json!([]));

    // An expiring key works until its time, then is 401 with its own sentence.
    let at = common::clock::iso_epoch(app.ctx.clock.epoch() + 3600);
    let (short, _) = mint(
        &app,
        &owner,
        json!({"name": "short", "permissions": ["read"], "expiresAt": at}),
    )
    .await;
    assert_eq!(app.get("/credits", Auth::Bearer(&short)).await.status, 200);
    app.ctx.clock.advance(3601);
    let res = app.get("/credits", Auth::Bearer(&short)).await;
    assert_eq!(
        (res.status, res.error()),
        (401, "This API key has expired; ask the account owner for a new one")
    );
}

async fn a_keys_daily_cap_is_its_own_and_atomic(app: TestApp) {
    let owner = app.acme().await;
    let (capped, _) = mint(
        &app,
        &owner,
        json!({"name": "capped", "permissions": ["send"], "dailySendCap": 2, "mailboxes": ["agent@acme.example"]}),
    )
    .await;
    let before = credits(&app.get("/credits", Auth::Bearer(&owner)).await);
    let mail = json!({"to": "pal@partner.example", "subject": "Hi", "text": "Hi"});
    let sends = (0..5).map(|_| app.send_mail(Auth::Bearer(&capped), mail.clone()));
    let answers = futures::future::join_all(sends).await;
    let sent = answers.iter().filter(|r| r.status == 200).count();
    assert_eq!(sent, 2, "{:?}", answers.iter().map(|r| &r.body).collect::<Vec<_>>());
    for refused in answers.iter().filter(|r| r.status != 200) {
        assert_eq!(
            (refused.status, refused.error()),
            (429, "This API key's daily send cap is reached; it resets at 00:00 UTC")
        );
        assert!(refused.body["retryAfter"].as_u64().unwrap() > 0);
    }
    assert_eq!(credits(&app.get("/credits", Auth::Bearer(&owner)).await), before - 2);
    // The account key is not held by its key's cap.
    let res = app
        .send_mail(
            Auth::Bearer(&owner),
            json!({"from": "agent@acme.example", "to": "pal@partner.example", "subject": "Hi", "text": "Hi"}),
        )
        .await;
    assert_eq!(res.status, 200, "{}", res.body);
}

async fn only_the_owner_mints_keys_and_at_most_twenty(app: TestApp) {
    let owner = app.acme().await;
    let (manager, _) = mint(
        &app,
        &owner,
        json!({"name": "manager", "permissions": ["manage", "read"]}),
    )
    .await;
    let owner_only = "This action needs the account key or an operator account, not a scoped key";
    let res = app
        .post(
            "/keys",
            Auth::Bearer(&manager),
            json!({"name": "x", "permissions": ["send"]}),
        )
        .await;
    assert_eq!((res.status, res.error()), (403, owner_only));
    let res = app.get("/audit", Auth::Bearer(&manager)).await;
    assert_eq!((res.status, res.error()), (403, owner_only));
    let res = tool(
        &app,
        &manager,
        "create_key",
        json!({"name": "x", "permissions": ["send"]}),
    )
    .await;
    assert_eq!(res.body["error"]["data"]["status"], 403, "{}", res.body);

    // 25 concurrent mints with one already held: exactly 19 more succeed.
    let mints = (0..25).map(|i| {
        app.post(
            "/keys",
            Auth::Bearer(&owner),
            json!({"name": format!("k{i}"), "permissions": ["read"]}),
        )
    });
    let answers = futures::future::join_all(mints).await;
    assert_eq!(answers.iter().filter(|r| r.status == 200).count(), 19);
    for refused in answers.iter().filter(|r| r.status != 200) {
        assert_eq!(
            (refused.status, refused.error()),
            (409, "An account holds at most 20 scoped keys; revoke one first")
        );
    }
    let listed = app.get("/keys", Auth::Bearer(&owner)).await;
    assert_eq!(listed.body["keys"].as_array().unwrap().len(), 20);
}

async fn bad_key_input_gets_a_precise_400_and_mints_nothing(app: TestApp) {
    let owner = app.acme().await;
    let past = common::clock::iso_epoch(app.ctx.clock.epoch() - 3600);
    let cases = [
        (json!({"permissions": ["read"]}), "name is required"),
        (
            json!({"name": "x\ny", "permissions": ["read"]}),
            "name must be one line",
        ),
        (json!({"name": "x"}), "permissions must be a non-empty list"),
        (
            json!({"name": "x", "permissions": []}),
            "permissions must be a non-empty list",
        ),
        (
            json!({"name": "x", "permissions": ["root"]}),
            "permissions must be a non-empty list",
        ),
        (
            json!({"name": "x", "permissions": "read"}),
            "permissions must be a non-empty list",
        ),
        (
            json!({"name": "x", "permissions": ["read"], "mailboxes": "a@acme.example"}),
            "mailboxes must be",
        ),
        (
            json!({"name": "x", "permissions": ["read"], "mailboxes": []}),
            "mailboxes must be",
        ),
        (
            json!({"name": "x", "permissions": ["read"], "dailySendCap": 51}),
            "dailySendCap must be",
        ),
        (
            json!({"name": "x", "permissions": ["read"], "dailySendCap": "2"}),
            "dailySendCap must be",
        ),
        (
            json!({"name": "x", "permissions": ["read"], "expiresAt": past}),
            "expiresAt must be",
        ),
        (
            json!({"name": "x", "permissions": ["read"], "expiresAt": "soon"}),
            "expiresAt must be",
        ),
        (
            json!({"name": "x", "permissions": ["read"], "approval": "maybe"}),
            "approval must be",
        ),
    ];
    for (body, error) in cases {
        let res = app.post("/keys", Auth::Bearer(&owner), body.clone()).await;
        assert_eq!(res.status, 400, "{body}: {}", res.body);
        assert!(res.error().starts_with(error), "{body}: {}", res.error());
    }
    for bad in ["", "key_12", "key_ABCDEFABCDEF", "nope"] {
        let res = app
            .delete(&format!("/keys?id={bad}"), Auth::Bearer(&owner), json!({}))
            .await;
        assert_eq!(res.status, 400, "{bad}: {}", res.body);
    }
    let res = app
        .delete("/keys?id=key_000000000000", Auth::Bearer(&owner), json!({}))
        .await;
    assert_eq!((res.status, res.error()), (404, "Key not found"));
    assert_eq!(app.get("/keys", Auth::Bearer(&owner)).await.body["keys"], json!([]));
}

async fn the_audit_log_names_each_change_and_its_actor(app: TestApp) {
    let owner = app.acme().await;
    let (reader, view) = mint(&app, &owner, json!({"name": "reader", "permissions": ["read"]})).await;
    let reader_id = view["id"].as_str().unwrap().to_string();
    // A refused send (403), a read (not logged), a mailbox change by the owner.
    let mail = json!({"from": "agent@acme.example", "to": "pal@partner.example", "subject": "Hi", "text": "Hi"});
    app.send_mail(Auth::Bearer(&reader), mail.clone()).await;
    app.get("/inbox", Auth::Bearer(&reader)).await;
    let res = app.send_mail(Auth::Bearer(&owner), mail).await;
    assert_eq!(res.status, 200, "{}", res.body);
    tool(&app, &owner, "revoke_key", json!({"id": reader_id})).await;

    let log = app.get("/audit", Auth::Bearer(&owner)).await;
    assert_eq!(log.status, 200, "{}", log.body);
    let changes = log.body["changes"].as_array().unwrap();
    let ops: Vec<&str> = changes.iter().map(|c| c["operation"].as_str().unwrap()).collect();
    assert_eq!(
        ops[..4],
        ["revokeKey", "sendMail", "sendMail", "createKey"],
        "newest first, reads left out: {}",
        log.body
    );
    let (revoke, owner_send, refused, create) = (&changes[0], &changes[1], &changes[2], &changes[3]);
    assert_eq!(revoke["via"], "mcp");
    assert_eq!(revoke["actor"]["kind"], "account_key");
    assert_eq!(revoke["target"]["id"], reader_id.as_str());
    assert_eq!(owner_send["status"], 200);
    assert_eq!(owner_send["target"]["to"], "pal@partner.example");
    assert!(owner_send["target"].get("text").is_none(), "no body text in the log");
    assert_eq!(refused["status"], 403);
    assert_eq!(refused["error"], LACKS_SEND);
    assert_eq!(refused["actor"]["kind"], "scoped_key");
    assert_eq!(refused["actor"]["keyId"], reader_id.as_str());
    assert_eq!(refused["actor"]["name"], "reader");
    assert!(refused["requestId"].as_str().unwrap().starts_with("req_"));
    assert!(!refused["ip"].as_str().unwrap().is_empty());
    assert_eq!(create["status"], 200);
    assert!(!log.body.to_string().contains("svc_"), "no key in the log");

    // Filters: by actor and by operation.
    let by_reader = app
        .get(&format!("/audit?actor={reader_id}"), Auth::Bearer(&owner))
        .await;
    assert_eq!(
        by_reader.body["changes"].as_array().unwrap().len(),
        1,
        "{}",
        by_reader.body
    );
    let sends = app.get("/audit?operation=sendMail&limit=1", Auth::Bearer(&owner)).await;
    assert_eq!(sends.body["changes"].as_array().unwrap().len(), 1);
    let cursor = sends.body["nextCursor"].as_str().unwrap();
    let next = app
        .get(
            &format!("/audit?operation=sendMail&cursor={cursor}"),
            Auth::Bearer(&owner),
        )
        .await;
    assert_eq!(next.body["changes"][0]["status"], 403, "{}", next.body);
    let res = app.get("/audit?actor=nobody", Auth::Bearer(&owner)).await;
    assert_eq!(res.status, 400);
    // Each row goes after 90 days (TTL), the store's own clock for it.
    let uid = common::auth::keys::owner(
        app.ctx.store.as_ref(),
        &app.ctx.hasher.key_digest(&owner),
        app.ctx.clock.now(),
    )
    .await
    .unwrap()
    .unwrap()
    .uid;
    let rows = app
        .ctx
        .store
        .query(&common::store::Query::partition(common::keys::audit_log(&uid)).limit(5))
        .await
        .unwrap()
        .items;
    let ttl = rows[0]["ttl"].as_i64().unwrap();
    assert!((ttl - app.ctx.clock.epoch() - 90 * 86_400).abs() < 60, "{ttl}");
    // The MCP tool lists the same log.
    let res = tool(&app, &owner, "list_audit", json!({"limit": 2})).await;
    assert_eq!(
        res.body["result"]["structuredContent"]["changes"][0]["operation"],
        "revokeKey"
    );
}

/// The approval code in the newest approval mail to `owner`.
pub(crate) fn approval_code(app: &TestApp, owner: &str) -> String {
    let mail = app.outbox_for(owner).pop().expect("an approval mail");
    let line = mail
        .lines()
        .find(|l| l.starts_with("Approval code: "))
        .expect("the code line");
    line.trim_start_matches("Approval code: ").trim().to_string()
}

/// An owner whose address is one of the account's own hosted mailboxes: the
/// approval mail, code and all, is filed where a key with read permission on
/// that mailbox reads, yet it is the owner's: the agent never sees it, so it
/// cannot approve its own send.
async fn an_approval_code_never_lands_where_a_key_reads_mail(app: TestApp) {
    let owner = app.sender("ann@ann.example", "ann.example", "ann").await;
    let (agent, _) = mint(
        &app,
        &owner,
        json!({"name": "assistant", "permissions": ["send", "read"], "approval": "always",
               "mailboxes": ["ann@ann.example"]}),
    )
    .await;
    let held = app
        .send_mail(
            Auth::Bearer(&agent),
            json!({"to": "pal@partner.example", "subject": "Wire it", "text": "Please wire it."}),
        )
        .await;
    assert_eq!(held.status, 202, "{}", held.body);
    let hold = held.body["holdId"].as_str().unwrap().to_string();

    // The mail host files the approval mail in ann@, the mailbox the agent reads.
    let request = app.outbox_for("ann@ann.example").pop().expect("the approval mail");
    let code = approval_code(&app, "ann@ann.example");
    let filed = format!("Delivered-To: ann@ann.example\r\n{request}");
    common::mail::inbound::drop_raw(&*app.ctx.blobs, filed.into_bytes())
        .await
        .unwrap();
    common::service::poller::run_once(&app.ctx).await.unwrap();
    let theirs = app.get("/inbox?q=Approve", Auth::Bearer(&owner)).await;
    assert_eq!(theirs.body["messages"].as_array().unwrap().len(), 1, "{}", theirs.body);
    for path in ["/inbox", "/inbox?q=Approve", "/inbox?wait=1"] {
        let res = app.get(path, Auth::Bearer(&agent)).await;
        assert_eq!(res.body["messages"], json!([]), "{path}: {}", res.body);
    }
    let res = tool(&app, &agent, "wait_for_message", json!({"wait": 1})).await;
    assert!(!res.body.to_string().contains(&code), "{}", res.body);
    assert!(app.outbox_for("pal@partner.example").is_empty());

    // The owner's code approves it.
    let res = app
        .post("/holds/approve", Auth::None, json!({"holdId": hold, "code": code}))
        .await;
    assert_eq!(res.status, 200, "{}", res.body);
    assert_eq!(app.outbox_for("pal@partner.example").len(), 1);
}

/// The owner's contact address is a hosted mailbox of the account, and a
/// scoped key reads every mailbox. The agent asks for a fresh access code
/// (a public route): the code, which would replace the account key, is filed
/// in that mailbox, yet the scoped key finds it nowhere; the owner reads it.
async fn a_scoped_key_never_reads_the_access_code_that_would_replace_the_account_key(app: TestApp) {
    let owner = app.sender("ann@ann.example", "ann.example", "ann").await;
    let (agent, _) = mint(
        &app,
        &owner,
        json!({"name": "reader", "permissions": ["read", "manage"]}),
    )
    .await;
    let asked = app.request_access("ann@ann.example").await;
    assert_eq!(asked.status, 200, "{}", asked.body);
    let code_mail = app.outbox_for("ann@ann.example").pop().expect("the access code mail");
    assert!(code_mail.contains("Your access code is"), "{code_mail}");
    let filed = format!("Delivered-To: ann@ann.example\r\n{code_mail}");
    common::mail::inbound::drop_raw(&*app.ctx.blobs, filed.into_bytes())
        .await
        .unwrap();
    let outcome = common::service::poller::run_once(&app.ctx).await.unwrap();
    assert_eq!(outcome.filed, 1);

    // The owner reads it, marked as the owner's.
    let theirs = app.get("/inbox", Auth::Bearer(&owner)).await;
    let rows = theirs.body["messages"].as_array().unwrap();
    assert_eq!(rows.len(), 1, "{}", theirs.body);
    let id = rows[0]["id"].as_str().unwrap().to_string();
    let thread = rows[0]["threadId"].as_str().unwrap().to_string();
    let read = app.get(&format!("/inbox?id={id}"), Auth::Bearer(&owner)).await;
    assert_eq!(read.body["message"]["ownerOnly"], true, "{}", read.body);

    // The agent: not in a list, a search, a thread, a wait, nor by id.
    for path in [
        "/inbox".to_string(),
        "/inbox?q=access".to_string(),
        "/inbox?view=threads".to_string(),
        "/inbox?wait=1".to_string(),
    ] {
        let res = app.get(&path, Auth::Bearer(&agent)).await;
        assert_eq!(res.status, 200, "{path}: {}", res.body);
        let listed = res.body.get("messages").or(res.body.get("threads")).unwrap();
        assert_eq!(listed, &json!([]), "{path}: {}", res.body);
    }
    for path in [format!("/inbox?id={id}"), format!("/inbox?thread={thread}")] {
        let res = app.get(&path, Auth::Bearer(&agent)).await;
        assert_eq!(res.status, 404, "{path}: {}", res.body);
    }
    let res = tool(&app, &agent, "wait_for_message", json!({"wait": 1})).await;
    assert!(!res.body.to_string().contains("access code"), "{}", res.body);

    // Nor can its manage permission send the owner's mail elsewhere, or log
    // in to it: the owner's own mailbox is the account key's to change.
    let owners = "A scoped key cannot change the owner's own mailbox, where the account's access codes arrive; use the account key (see addresses)";
    let forward =
        json!({"domainId": "ann.example", "localPart": "ann", "mode": "both", "forwardTo": ["me@evil.example"]});
    for (path, body) in [
        ("/setMailboxMode", forward.clone()),
        (
            "/addMailbox",
            json!({"domainId": "ann.example", "localPart": "ANN", "mode": "hosted", "forwardTo": []}),
        ),
        ("/issueMailboxCredential", json!({"address": "ann@ann.example"})),
        ("/deleteMailbox", json!({"address": "ann@ann.example"})),
    ] {
        let res = app.post(path, Auth::Bearer(&agent), body).await;
        assert_eq!((res.status, res.error()), (403, owners), "{path}: {}", res.body);
        assert_eq!(res.body["addresses"], json!(["ann@ann.example"]), "{path}");
    }
    let res = app
        .post(
            "/addMailbox",
            Auth::Bearer(&agent),
            json!({"domainId": "ann.example", "localPart": "sales", "mode": "hosted", "forwardTo": []}),
        )
        .await;
    assert_eq!(res.status, 200, "other mailboxes are its to manage: {}", res.body);
    let res = app.post("/setMailboxMode", Auth::Bearer(&owner), forward).await;
    assert_eq!(res.status, 200, "the account key may: {}", res.body);
}

async fn a_first_contact_send_is_held_until_the_owner_decides(app: TestApp) {
    let owner = app.acme().await;
    let mail = |to: &str| json!({"to": to, "subject": format!("For {to}"), "text": "Shall we meet?"});
    // The owner has mailed known@ before; the agent's key asks about anyone else.
    let res = app
        .send_mail(
            Auth::Bearer(&owner),
            json!({"from": "agent@acme.example", "to": "known@partner.example", "subject": "Hi", "text": "Hi"}),
        )
        .await;
    assert_eq!(res.status, 200, "{}", res.body);
    let (agent, _) = mint(
        &app,
        &owner,
        json!({"name": "outreach", "permissions": ["send", "read"], "approval": "first_contact",
               "mailboxes": ["agent@acme.example"]}),
    )
    .await;
    let res = app.send_mail(Auth::Bearer(&agent), mail("known@partner.example")).await;
    assert_eq!(res.status, 200, "a known contact goes at once: {}", res.body);
    app.ctx.clock.advance(61);
    let before = credits(&app.get("/credits", Auth::Bearer(&owner)).await);

    // A stranger: held, nothing sent or spent, the owner mailed a code.
    let held = app.send_mail(Auth::Bearer(&agent), mail("new@partner.example")).await;
    assert_eq!(held.status, 202, "{}", held.body);
    assert_eq!(held.body["status"], "held");
    let hold = held.body["holdId"].as_str().unwrap().to_string();
    assert!(app.outbox_for("new@partner.example").is_empty());
    assert_eq!(credits(&app.get("/credits", Auth::Bearer(&owner)).await), before);
    let request = app.outbox_for("owner@acme.example").pop().expect("the approval mail");
    assert!(request.contains("outreach") && request.contains("new@partner.example"));
    assert!(request.contains("Shall we meet?"), "the body is shown to the owner");
    assert!(
        request.contains("Or signed in to the web app: https://mail.svc.test/#/guardrails\r\n"),
        "a link to the held sends: {request}"
    );
    let code = approval_code(&app, "owner@acme.example");

    // The agent cannot approve its own send: not with its key, not by guessing.
    let res = app
        .post("/holds/approve", Auth::Bearer(&agent), json!({"holdId": hold}))
        .await;
    assert_eq!(res.status, 403, "{}", res.body);
    let wrong = if code == "00000000" { "11111111" } else { "00000000" };
    let res = app
        .post("/holds/approve", Auth::None, json!({"holdId": hold, "code": wrong}))
        .await;
    assert_eq!(
        (res.status, res.error()),
        (401, "That approval code is not valid for this hold")
    );
    let res = app.post("/holds/approve", Auth::None, json!({"holdId": hold})).await;
    assert_eq!(res.status, 401, "{}", res.body);

    // The emailed code approves it: sent once, charged once.
    let res = app
        .post("/holds/approve", Auth::None, json!({"holdId": hold, "code": code}))
        .await;
    assert_eq!(res.status, 200, "{}", res.body);
    assert_eq!(res.body["hold"]["status"], "sent");
    assert_eq!(app.outbox_for("new@partner.example").len(), 1);
    assert_eq!(credits(&app.get("/credits", Auth::Bearer(&owner)).await), before - 1);
    let res = app
        .post("/holds/approve", Auth::None, json!({"holdId": hold, "code": code}))
        .await;
    assert_eq!(
        (res.status, res.error()),
        (409, "This send was already decided or has gone out")
    );

    // Twenty approvals at once by the owner's key: one sends.
    let again = app.send_mail(Auth::Bearer(&agent), mail("other@partner.example")).await;
    assert_eq!(again.status, 202, "{}", again.body);
    let hold = again.body["holdId"].as_str().unwrap().to_string();
    let approvals = (0..20).map(|_| app.post("/holds/approve", Auth::Bearer(&owner), json!({"holdId": hold})));
    let answers = futures::future::join_all(approvals).await;
    let statuses: Vec<u16> = answers.iter().map(|r| r.status).collect();
    assert_eq!(statuses.iter().filter(|s| **s == 200).count(), 1, "{statuses:?}");
    assert!(statuses.iter().all(|s| *s == 200 || *s == 409), "{statuses:?}");
    assert_eq!(app.outbox_for("other@partner.example").len(), 1, "sent exactly once");

    // Denied: never sent. Unanswered for a day: expired.
    app.ctx.clock.advance(61);
    let denied = app.send_mail(Auth::Bearer(&agent), mail("third@partner.example")).await;
    let hold = denied.body["holdId"].as_str().unwrap().to_string();
    let res = tool(&app, &owner, "deny_hold", json!({"holdId": hold})).await;
    assert_eq!(
        res.body["result"]["structuredContent"]["hold"]["status"], "denied",
        "{}",
        res.body
    );
    let res = app
        .post("/holds/approve", Auth::Bearer(&owner), json!({"holdId": hold}))
        .await;
    assert_eq!(res.status, 409);
    let lapsed = app
        .send_mail(Auth::Bearer(&agent), mail("fourth@partner.example"))
        .await;
    let lapsed = lapsed.body["holdId"].as_str().unwrap().to_string();
    app.ctx.clock.advance(24 * 3600 + 1);
    let res = app
        .post("/holds/approve", Auth::Bearer(&owner), json!({"holdId": lapsed}))
        .await;
    assert_eq!(res.status, 410, "{}", res.body);
    assert!(app.outbox_for("third@partner.example").is_empty());
    assert!(app.outbox_for("fourth@partner.example").is_empty());

    let listed = app.get("/holds", Auth::Bearer(&owner)).await;
    let statuses: Vec<&str> = listed.body["holds"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["status"].as_str().unwrap())
        .collect();
    assert_eq!(statuses, ["expired", "denied", "sent", "sent"], "{}", listed.body);
    // What only the service reads stays in the store: whose, who pays, the code's digest.
    for hold in listed.body["holds"].as_array().unwrap() {
        for private in [
            "codeDigest",
            "uid",
            "owner",
            "payer",
            "charged",
            "attempts",
            "listKey",
            "filedIn",
        ] {
            assert!(hold.get(private).is_none(), "{private} shown: {hold}");
        }
    }
    // The audit log names who decided: the emailed code, then the owner.
    let log = app.get("/audit?operation=approveHold", Auth::Bearer(&owner)).await;
    let kinds: Vec<&str> = log.body["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["actor"]["kind"].as_str().unwrap())
        .collect();
    assert!(
        kinds.contains(&"emailed_code") && kinds.contains(&"account_key"),
        "{kinds:?}"
    );
}

async fn a_scheduled_send_goes_out_once_and_undo_returns_the_credit(app: TestApp) {
    use common::service::pending;
    let owner = app.acme().await;
    let before = credits(&app.get("/credits", Auth::Bearer(&owner)).await);
    let mail = |to: &str, extra: Value| {
        let mut m = json!({"from": "agent@acme.example", "to": to, "subject": "Later", "text": "Later"});
        m.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        m
    };
    // Undo: cancelled inside its window, the credit comes back, nothing leaves.
    let res = app
        .send_mail(
            Auth::Bearer(&owner),
            mail("undo@partner.example", json!({"undoSeconds": 60})),
        )
        .await;
    assert_eq!(res.status, 202, "{}", res.body);
    assert_eq!(res.body["status"], "scheduled");
    assert_eq!(res.body["creditsRemaining"], before - 1);
    let message_id = res.body["messageId"].as_str().unwrap().to_string();
    let res = tool(&app, &owner, "cancel_send", json!({"messageId": message_id})).await;
    let cancelled = &res.body["result"]["structuredContent"];
    assert_eq!(cancelled["cancelled"]["status"], "cancelled", "{}", res.body);
    assert_eq!(cancelled["creditsRemaining"], before);
    let res = app
        .post("/outbox/cancel", Auth::Bearer(&owner), json!({"messageId": message_id}))
        .await;
    assert_eq!(res.status, 409, "{}", res.body);
    app.ctx.clock.advance(120);
    pending::run_due(&app.ctx).await.unwrap();
    assert!(app.outbox_for("undo@partner.example").is_empty());

    // sendAt: nothing before its time; two runners at once send it once.
    let at = common::clock::iso_epoch(app.ctx.clock.epoch() + 600);
    let res = app
        .send_mail(
            Auth::Bearer(&owner),
            mail("later@partner.example", json!({"sendAt": at})),
        )
        .await;
    assert_eq!(res.status, 202, "{}", res.body);
    assert_eq!(res.body["sendAt"], at.as_str());
    let message_id = res.body["messageId"].as_str().unwrap().to_string();
    assert_eq!(pending::run_due(&app.ctx).await.unwrap()["sent"], 0);
    assert!(app.outbox_for("later@partner.example").is_empty());
    app.ctx.clock.advance(601);
    let (a, b) = tokio::join!(pending::run_due(&app.ctx), pending::run_due(&app.ctx));
    let sent = a.unwrap()["sent"].as_i64().unwrap() + b.unwrap()["sent"].as_i64().unwrap();
    assert_eq!(sent, 1);
    assert_eq!(app.outbox_for("later@partner.example").len(), 1, "sent exactly once");
    assert_eq!(pending::run_due(&app.ctx).await.unwrap()["sent"], 0);
    let path = format!("/outbox?messageId={}", crate::delivery::urlencode(&message_id));
    assert_eq!(
        app.get(&path, Auth::Bearer(&owner)).await.status,
        200,
        "in the outbox once sent"
    );
    let res = app
        .post("/outbox/cancel", Auth::Bearer(&owner), json!({"messageId": message_id}))
        .await;
    assert_eq!(res.status, 409, "it has left: {}", res.body);
    assert_eq!(credits(&app.get("/credits", Auth::Bearer(&owner)).await), before - 1);
    let log = app.get("/audit?operation=cancelSend", Auth::Bearer(&owner)).await;
    let cancel = &log.body["changes"][log.body["changes"].as_array().unwrap().len() - 1];
    assert_eq!(
        (cancel["status"].as_i64(), cancel["via"].as_str()),
        (Some(200), Some("mcp")),
        "{}",
        log.body
    );
    assert_eq!(cancel["actor"]["kind"], "account_key");

    // Bad times change nothing.
    let past = common::clock::iso_epoch(app.ctx.clock.epoch() - 60);
    let far = common::clock::iso_epoch(app.ctx.clock.epoch() + 31 * 86_400);
    for extra in [
        json!({"sendAt": past}),
        json!({"sendAt": far}),
        json!({"sendAt": "tomorrow"}),
        json!({"undoSeconds": 601}),
        json!({"undoSeconds": -1}),
    ] {
        let res = app
            .send_mail(Auth::Bearer(&owner), mail("x@partner.example", extra.clone()))
            .await;
        assert_eq!(res.status, 400, "{extra}: {}", res.body);
    }
    assert_eq!(credits(&app.get("/credits", Auth::Bearer(&owner)).await), before - 1);
}

/// A reply that waits (scheduled, or held for approval) joins its
/// conversation when it goes out, as a reply sent at once does: the thread
/// shows it, its text and its attachment.
async fn a_reply_that_waited_is_filed_on_its_thread_when_it_goes(app: TestApp) {
    use common::service::pending;
    let owner = app.acme().await;
    app.receive("pal@partner.example", "agent@acme.example", "lunch").await;
    let inbox = app.get("/inbox", Auth::Bearer(&owner)).await.body;
    let received = inbox["messages"][0].clone();
    let thread = received["threadId"].as_str().unwrap().to_string();
    let rows = |body: Value| -> Vec<(String, String)> {
        body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| (m["box"].as_str().unwrap().into(), m["preview"].as_str().unwrap().into()))
            .collect()
    };
    let path = format!("/inbox?thread={thread}");
    let view = || app.get(&path, Auth::Bearer(&owner));
    let reply = |text: &str| {
        json!({"from": "agent@acme.example", "to": "pal@partner.example", "subject": "Re: lunch",
               "text": text, "inReplyTo": received["messageId"]})
    };

    // Scheduled: not in the thread while it waits, in it once it went.
    let mut later = reply("Thursday suits me");
    later["undoSeconds"] = json!(30);
    let res = app.send_mail(Auth::Bearer(&owner), later).await;
    assert_eq!(
        (res.status, res.body["status"].as_str()),
        (202, Some("scheduled")),
        "{}",
        res.body
    );
    assert_eq!(rows(view().await.body).len(), 1);
    app.ctx.clock.advance(31);
    assert_eq!(pending::run_due(&app.ctx).await.unwrap()["sent"], 1);
    let shown = view().await.body;
    assert_eq!(
        rows(shown.clone())[1],
        ("outbound".to_string(), "Thursday suits me".to_string()),
        "{shown}"
    );
    assert_eq!(shown["messages"][1]["messageId"], res.body["messageId"]);
    assert!(shown["messages"][1]["delivery"].is_object(), "{shown}");

    // Held, then approved by the owner: filed with its attachment.
    let (agent, _) = mint(
        &app,
        &owner,
        json!({"name": "careful", "permissions": ["send", "read"], "approval": "always",
               "mailboxes": ["agent@acme.example"]}),
    )
    .await;
    let mut held = reply("The menu is attached");
    held["attachments"] = json!([{"filename": "menu.txt", "contentBase64": "U291cCBvZiB0aGUgZGF5"}]);
    let res = app.send_mail(Auth::Bearer(&agent), held).await;
    assert_eq!(
        (res.status, res.body["status"].as_str()),
        (202, Some("held")),
        "{}",
        res.body
    );
    assert_eq!(rows(view().await.body).len(), 2, "a hold is not in the thread");
    let hold = res.body["holdId"].as_str().unwrap();
    let res = app
        .post("/holds/approve", Auth::Bearer(&owner), json!({"holdId": hold}))
        .await;
    assert_eq!(res.body["hold"]["status"], "sent", "{}", res.body);
    let shown = view().await.body;
    assert_eq!(rows(shown.clone())[2].1, "The menu is attached", "{shown}");
    let attached = &shown["messages"][2]["attachments"];
    assert_eq!(attached[0]["filename"], "menu.txt", "{shown}");
    let file = app
        .client
        .get(format!("{}{}", app.base, attached[0]["downloadPath"].as_str().unwrap()))
        .bearer_auth(&owner)
        .send()
        .await
        .unwrap();
    assert_eq!(file.status(), 200);
    assert_eq!(file.bytes().await.unwrap().as_ref(), b"Soup of the day");
    assert_eq!(shown["thread"]["outboundCount"], 2, "{shown}");
}
