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
    simulator_mail_waits_free_as_it_goes_free,
    a_hold_left_unanswered_shows_as_expired_once_it_lapses,
    a_reply_that_waited_is_filed_on_its_thread_when_it_goes,
    waiting_sends_wait_while_sending_is_paused_or_the_agent_key_frozen,
    a_revoked_keys_waiting_sends_are_cancelled_and_the_owner_lists_every_one,
    refusals_are_counted_per_minute_in_the_log_they_concern,
    approving_and_cancelling_a_hold_for_later_at_once_loses_no_credit,
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
    // Each mailbox once, however often and wherever it is named.
    let (_, twice) = mint(
        &app,
        &owner,
        json!({"name": "both", "permissions": ["read"],
               "mailboxes": ["boss@acme.example", "agent@acme.example", "Boss@acme.example"]}),
    )
    .await;
    assert_eq!(
        twice["scope"]["mailboxes"],
        json!(["boss@acme.example", "agent@acme.example"])
    );
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
    // The audit log pages up to 100 rows, and a bad limit names that range.
    let most = app.get("/audit?limit=100", Auth::Bearer(&owner)).await;
    assert_eq!(most.status, 200, "{}", most.body);
    let over = app.get("/audit?limit=101", Auth::Bearer(&owner)).await;
    assert_eq!(over.status, 400);
    assert_eq!(over.body["error"], "limit must be an integer from 1 to 100");
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
    common::service::receiving::poller::run_once(&app.ctx).await.unwrap();
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
    let outcome = common::service::receiving::poller::run_once(&app.ctx).await.unwrap();
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
    use common::service::sending::pending;
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
    assert_eq!(pending::run_due(&app.ctx).await.unwrap().sent, 0);
    assert!(app.outbox_for("later@partner.example").is_empty());
    app.ctx.clock.advance(601);
    let (a, b) = tokio::join!(pending::run_due(&app.ctx), pending::run_due(&app.ctx));
    let sent = a.unwrap().sent + b.unwrap().sent;
    assert_eq!(sent, 1);
    assert_eq!(app.outbox_for("later@partner.example").len(), 1, "sent exactly once");
    assert_eq!(pending::run_due(&app.ctx).await.unwrap().sent, 0);
    // Released alone, a due send waits for its record, one round of reads
    // (its message, the lists, the suppressions) and one transaction that
    // takes it, marks it sent and records its delivery: 3 round trips after
    // the run's own 2 (the switches, then the queue's page).
    let at = common::clock::iso_epoch(app.ctx.clock.epoch() + 60);
    let res = app
        .send_mail(
            Auth::Bearer(&owner),
            mail("soon@partner.example", json!({"sendAt": at})),
        )
        .await;
    assert_eq!(res.status, 202, "{}", res.body);
    app.ctx.clock.advance(61);
    let meter = &app.ctx.store_meter;
    let (cost, counts) = (meter.cost(), meter.counts());
    assert_eq!(pending::run_due(&app.ctx).await.unwrap().sent, 1);
    let (cost, counts) = (meter.cost().since(&cost), meter.counts().since(&counts));
    assert_eq!(
        (cost.round_trips, counts.transactions, counts.updates),
        (2 + 3, 1, 0),
        "{counts:?}"
    );
    let soon = format!(
        "/outbox?messageId={}",
        crate::delivery::urlencode(res.body["messageId"].as_str().unwrap())
    );
    let listed = app.get(&soon, Auth::Bearer(&owner)).await;
    assert_eq!(listed.status, 200, "{}", listed.body);
    assert_eq!(app.outbox_for("soon@partner.example").len(), 1);
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
    assert_eq!(
        credits(&app.get("/credits", Auth::Bearer(&owner)).await),
        before - 2,
        "later and soon"
    );
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
    assert_eq!(
        credits(&app.get("/credits", Auth::Bearer(&owner)).await),
        before - 2,
        "later and soon"
    );
}

/// A reply that waits (scheduled, or held for approval) joins its
/// conversation when it goes out, as a reply sent at once does: the thread
/// shows it, its text and its attachment.
async fn a_reply_that_waited_is_filed_on_its_thread_when_it_goes(app: TestApp) {
    use common::service::sending::pending;
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
    assert_eq!(pending::run_due(&app.ctx).await.unwrap().sent, 1);
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

/// The messageIds of the account's sends still waiting, as GET /outbox/waiting lists them.
async fn waiting(app: &TestApp, owner: &str) -> Vec<String> {
    let res = app.get("/outbox/waiting", Auth::Bearer(owner)).await;
    assert_eq!(res.status, 200, "{}", res.body);
    let mut ids: Vec<String> = res.body["sends"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["messageId"].as_str().unwrap().to_string())
        .collect();
    ids.sort();
    ids
}

/// A waiting send's record, as the store keeps it.
async fn stored_send(app: &TestApp, id: &str) -> common::service::sending::pending::Pending {
    use common::store::StoreExt;
    app.ctx.store.read(&common::keys::pending(id)).await.unwrap().unwrap()
}

fn sorted(ids: &[&str]) -> Vec<String> {
    let mut ids: Vec<String> = ids.iter().map(|s| s.to_string()).collect();
    ids.sort();
    ids
}

/// An operator's pause and the agent key's freeze hold what waits as they
/// hold a send at once: scheduled sends and an approved hold stay waiting
/// (not failed) and go once sending is allowed again; one held back past
/// its expiry expires unsent, its credit back.
async fn waiting_sends_wait_while_sending_is_paused_or_the_agent_key_frozen(app: TestApp) {
    use common::service::sending::pending;
    let owner = app.acme().await;
    let operator = app.operator_token().await;
    let agent = app.agent_key.clone();
    let (careful, _) = mint(
        &app,
        &owner,
        json!({"name": "careful", "permissions": ["send"], "approval": "always"}),
    )
    .await;
    let mail = |to: &str| json!({"from": "agent@acme.example", "to": to, "subject": "Soon", "text": "Soon", "undoSeconds": 30});
    let before = credits(&app.get("/credits", Auth::Bearer(&owner)).await);
    let agent_before = app.agent_credits().await;
    let pause = |enabled: bool| app.post("/credits", Auth::Bearer(&operator), json!({"sendingEnabled": enabled}));
    let freeze = |disabled: bool| app.post("/credits", Auth::Bearer(&agent), json!({"disabled": disabled}));

    // Three sends wait: the owner's and the agent key's for their time, a key's for approval.
    let res = app
        .send_mail(Auth::Bearer(&owner), mail("owner-later@partner.example"))
        .await;
    assert_eq!(res.status, 202, "{}", res.body);
    let res = app
        .send_mail(
            Auth::Bearer(&agent),
            json!({"to": "agent-later@partner.example", "subject": "Soon", "text": "Soon", "undoSeconds": 30}),
        )
        .await;
    assert_eq!(res.status, 202, "{}", res.body);
    let mut asked = mail("held@partner.example");
    asked.as_object_mut().unwrap().remove("undoSeconds");
    let held = app.send_mail(Auth::Bearer(&careful), asked).await;
    assert_eq!(held.status, 202, "{}", held.body);
    let hold = held.body["holdId"].as_str().unwrap().to_string();

    // Sending is paused and the agent key frozen: a send at once is refused...
    assert_eq!(pause(false).await.status, 200);
    assert_eq!(freeze(true).await.status, 200);
    let mut now = mail("now@partner.example");
    now.as_object_mut().unwrap().remove("undoSeconds");
    let res = app.send_mail(Auth::Bearer(&owner), now).await;
    assert_eq!((res.status, res.error()), (503, "Sending temporarily disabled"));
    // ...and what waits is held as well: due, it stays waiting, nothing fails.
    app.ctx.clock.advance(31);
    let run = pending::run_due(&app.ctx).await.unwrap();
    assert_eq!((run.sent, run.failed, run.waiting), (0, 0, 2), "{run:?}");
    // The door itself refuses it, whoever calls it.
    let listed = app.get("/outbox/waiting", Auth::Bearer(&owner)).await;
    let scheduled = listed.body["sends"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["to"][0] == "owner-later@partner.example")
        .expect("the owner's send is listed")
        .clone();
    let id = scheduled["id"].as_str().unwrap();
    let record = stored_send(&app, id).await;
    let refused = pending::release(&app.ctx, record).await.unwrap_err();
    assert_eq!(
        (refused.status, refused.error.as_ref()),
        (503, "Sending temporarily disabled")
    );
    // An approval is kept: the hold waits as a scheduled send, charged, due now.
    let res = app
        .post("/holds/approve", Auth::Bearer(&owner), json!({"holdId": hold}))
        .await;
    assert_eq!(res.status, 200, "{}", res.body);
    assert_eq!(
        (&res.body["hold"]["status"], &res.body["hold"]["kind"]),
        (&json!("waiting"), &json!("scheduled")),
        "{}",
        res.body
    );
    assert!(res.body["hold"]["expiresAt"].as_str().unwrap() > res.body["hold"]["dueAt"].as_str().unwrap());
    let run = pending::run_due(&app.ctx).await.unwrap();
    assert_eq!((run.sent, run.waiting), (0, 3), "{run:?}");
    for to in [
        "owner-later@partner.example",
        "agent-later@partner.example",
        "held@partner.example",
        "now@partner.example",
    ] {
        assert!(app.outbox_for(to).is_empty(), "{to} went out while sending was paused");
    }

    // Sending resumes, the agent key still frozen: its send waits on.
    assert_eq!(pause(true).await.status, 200);
    let run = pending::run_due(&app.ctx).await.unwrap();
    assert_eq!((run.sent, run.waiting), (2, 1), "{run:?}");
    assert_eq!(app.outbox_for("owner-later@partner.example").len(), 1);
    assert_eq!(app.outbox_for("held@partner.example").len(), 1);
    assert!(app.outbox_for("agent-later@partner.example").is_empty());
    // Thawed, it goes too; each was charged once.
    assert_eq!(freeze(false).await.status, 200);
    let run = pending::run_due(&app.ctx).await.unwrap();
    assert_eq!((run.sent, run.waiting), (1, 0), "{run:?}");
    assert_eq!(app.outbox_for("agent-later@partner.example").len(), 1);
    assert_eq!(credits(&app.get("/credits", Auth::Bearer(&owner)).await), before - 2);
    assert_eq!(app.agent_credits().await, agent_before - 1);

    // Held back 24 hours past its time, a send expires unsent, its credit back.
    app.ctx.clock.advance(61);
    let res = app
        .send_mail(Auth::Bearer(&owner), mail("too-late@partner.example"))
        .await;
    assert_eq!(res.status, 202, "{}", res.body);
    let message_id = res.body["messageId"].as_str().unwrap().to_string();
    assert_eq!(pause(false).await.status, 200);
    app.ctx.clock.advance(31);
    assert_eq!(pending::run_due(&app.ctx).await.unwrap().waiting, 1);
    app.ctx.clock.advance(24 * 3600);
    let run = pending::run_due(&app.ctx).await.unwrap();
    assert_eq!((run.expired, run.waiting), (1, 0), "{run:?}");
    assert_eq!(pause(true).await.status, 200);
    assert_eq!(pending::run_due(&app.ctx).await.unwrap().sent, 0);
    assert!(app.outbox_for("too-late@partner.example").is_empty());
    assert_eq!(credits(&app.get("/credits", Auth::Bearer(&owner)).await), before - 2);
    assert!(waiting(&app, &owner).await.is_empty());
    let res = app
        .post("/outbox/cancel", Auth::Bearer(&owner), json!({"messageId": message_id}))
        .await;
    assert_eq!(res.status, 409, "it expired: {}", res.body);
    // Late for another reason (the job stopped for a day), a send still goes.
    app.ctx.clock.advance(61);
    let res = app
        .send_mail(Auth::Bearer(&owner), mail("a-day-late@partner.example"))
        .await;
    assert_eq!(res.status, 202, "{}", res.body);
    app.ctx.clock.advance(25 * 3600);
    let run = pending::run_due(&app.ctx).await.unwrap();
    assert_eq!((run.sent, run.expired), (1, 0), "{run:?}");
    assert_eq!(app.outbox_for("a-day-late@partner.example").len(), 1);
}

/// Revoking a key cancels every send it asked for that has not gone out,
/// each one's credit back; the owner lists every waiting send (any key's,
/// held or scheduled) with the messageId that cancels it, and the audit row
/// of a scheduled send names it.
async fn a_revoked_keys_waiting_sends_are_cancelled_and_the_owner_lists_every_one(app: TestApp) {
    use common::service::sending::pending;
    let owner = app.acme().await;
    let before = credits(&app.get("/credits", Auth::Bearer(&owner)).await);
    let (planner, planner_view) = mint(
        &app,
        &owner,
        json!({"name": "planner", "permissions": ["send", "read"]}),
    )
    .await;
    let (careful, careful_view) = mint(
        &app,
        &owner,
        json!({"name": "careful", "permissions": ["send"], "approval": "always"}),
    )
    .await;
    let at = common::clock::iso_epoch(app.ctx.clock.epoch() + 600);
    let later =
        |to: &str| json!({"from": "agent@acme.example", "to": to, "subject": "Later", "text": "Later", "sendAt": at});
    let accepted = |res: crate::support::Response| {
        assert_eq!(res.status, 202, "{}", res.body);
        res.body["messageId"].as_str().unwrap().to_string()
    };
    let a = accepted(app.send_mail(Auth::Bearer(&planner), later("a@partner.example")).await);
    let b = accepted(app.send_mail(Auth::Bearer(&planner), later("b@partner.example")).await);
    let held = app.send_mail(Auth::Bearer(&careful), later("c@partner.example")).await;
    let hold = held.body["holdId"].as_str().unwrap().to_string();
    let c = accepted(held);
    let d = accepted(app.send_mail(Auth::Bearer(&owner), later("d@partner.example")).await);
    assert_eq!(
        credits(&app.get("/credits", Auth::Bearer(&owner)).await),
        before - 3,
        "the scheduled sends are charged, the hold is not yet"
    );

    // The audit row of a scheduled send names it.
    let planner_id = planner_view["id"].as_str().unwrap();
    let log = app
        .get(
            &format!("/audit?operation=sendMail&actor={planner_id}"),
            Auth::Bearer(&owner),
        )
        .await;
    let named: Vec<&str> = log.body["changes"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["details"][0]["messageId"].as_str())
        .collect();
    assert_eq!(named, [b.as_str(), a.as_str()], "{}", log.body);
    assert_eq!(log.body["changes"][0]["details"][0]["kind"], "scheduled");

    // The owner lists every send still waiting, over REST and MCP; a key does not.
    assert_eq!(waiting(&app, &owner).await, sorted(&[&a, &b, &c, &d]));
    let listed = app.get("/api/outbox/waiting", Auth::Bearer(&owner)).await;
    let sends = listed.body["sends"].as_array().unwrap();
    let by = |mid: &str| sends.iter().find(|s| s["messageId"] == mid).unwrap().clone();
    assert_eq!(
        (&by(&a)["kind"], &by(&a)["requestedBy"]["keyId"]),
        (&json!("scheduled"), &planner_view["id"])
    );
    assert_eq!(
        (&by(&c)["kind"], &by(&c)["requestedBy"]["keyId"]),
        (&json!("held"), &careful_view["id"])
    );
    assert_eq!(by(&d)["requestedBy"]["kind"], "account_key");
    assert_eq!(by(&a)["dueAt"], at.as_str());
    let res = tool(&app, &owner, "list_waiting_sends", json!({"limit": 3})).await;
    let page = &res.body["result"]["structuredContent"];
    assert_eq!(page["sends"].as_array().unwrap().len(), 3, "{}", res.body);
    let cursor = page["nextCursor"].as_str().unwrap();
    let rest = app
        .get(&format!("/outbox/waiting?cursor={cursor}"), Auth::Bearer(&owner))
        .await;
    assert_eq!(rest.body["sends"].as_array().unwrap().len(), 1, "{}", rest.body);
    assert!(rest.body.get("nextCursor").is_none());
    let res = app.get("/outbox/waiting", Auth::Bearer(&planner)).await;
    assert_eq!(res.status, 403, "{}", res.body);
    let res = app.get("/outbox/waiting?limit=101", Auth::Bearer(&owner)).await;
    assert_eq!(res.status, 400, "{}", res.body);
    assert_eq!(res.body["error"], "limit must be an integer from 1 to 100");
    // Its storage requests (docs/data-model.md): beyond authenticating, the
    // account, one Query and one BatchGetItem.
    let refused = app.ctx.store_meter.counts();
    app.get("/outbox/waiting?limit=0", Auth::Bearer(&owner)).await;
    let auth = app.ctx.store_meter.counts().since(&refused);
    let started = app.ctx.store_meter.counts();
    app.get("/outbox/waiting", Auth::Bearer(&owner)).await;
    let used = app.ctx.store_meter.counts().since(&started);
    assert_eq!(
        (
            used.gets - auth.gets,
            used.queries,
            used.batch_gets,
            used.total() - auth.total()
        ),
        (1, 1, 1, 3),
        "{used:?} beyond {auth:?}"
    );

    // The owner cancels one of the key's sends by its messageId: its credit is back.
    let res = app
        .post("/outbox/cancel", Auth::Bearer(&owner), json!({"messageId": b}))
        .await;
    assert_eq!(res.status, 200, "{}", res.body);
    assert_eq!(res.body["creditsRemaining"], before - 2);

    // Revoking the planner cancels the send it asked for that still waits.
    let res = app
        .delete(&format!("/keys?id={planner_id}"), Auth::Bearer(&owner), json!({}))
        .await;
    assert_eq!(
        (res.status, res.body["cancelledSends"].as_i64()),
        (200, Some(1)),
        "{}",
        res.body
    );
    assert_eq!(credits(&app.get("/credits", Auth::Bearer(&owner)).await), before - 1);
    assert_eq!(waiting(&app, &owner).await, sorted(&[&c, &d]));
    let res = app
        .post("/outbox/cancel", Auth::Bearer(&owner), json!({"messageId": a}))
        .await;
    assert_eq!(res.status, 409, "{}", res.body);
    // Revoking the careful key cancels its hold: approving it is too late.
    let res = tool(&app, &owner, "revoke_key", json!({"id": careful_view["id"]})).await;
    assert_eq!(
        res.body["result"]["structuredContent"]["cancelledSends"], 1,
        "{}",
        res.body
    );
    let res = app
        .post("/holds/approve", Auth::Bearer(&owner), json!({"holdId": hold}))
        .await;
    assert_eq!(res.status, 409, "{}", res.body);
    assert_eq!(waiting(&app, &owner).await, sorted(&[&d]));

    // A send of a key revoked that the revocation missed (stored before the
    // list of waiting sends was kept) is cancelled when due, never sent.
    let (old, old_view) = mint(&app, &owner, json!({"name": "old", "permissions": ["send"]})).await;
    let e = accepted(app.send_mail(Auth::Bearer(&old), later("e@partner.example")).await);
    let listed = app.get("/outbox/waiting", Auth::Bearer(&owner)).await;
    let id = listed.body["sends"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["messageId"] == e.as_str())
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let record = stored_send(&app, &id).await;
    let row = common::store::Key::new(common::keys::waiting_sends(&record.uid), &record.list_key);
    app.ctx.store.delete(&row, None).await.unwrap();
    let res = app
        .delete(
            &format!("/keys?id={}", old_view["id"].as_str().unwrap()),
            Auth::Bearer(&owner),
            json!({}),
        )
        .await;
    assert_eq!(
        (res.status, res.body["cancelledSends"].as_i64()),
        (200, Some(0)),
        "{}",
        res.body
    );
    assert_eq!(credits(&app.get("/credits", Auth::Bearer(&owner)).await), before - 2);

    // At their time only the owner's own send goes; the revoked key's is
    // cancelled then, its credit back.
    app.ctx.clock.advance(601);
    let run = pending::run_due(&app.ctx).await.unwrap();
    assert_eq!(run.sent, 1, "{run:?}");
    for to in [
        "a@partner.example",
        "b@partner.example",
        "c@partner.example",
        "e@partner.example",
    ] {
        assert!(app.outbox_for(to).is_empty(), "{to} went out");
    }
    assert_eq!(app.outbox_for("d@partner.example").len(), 1);
    assert_eq!(credits(&app.get("/credits", Auth::Bearer(&owner)).await), before - 1);
    let record = stored_send(&app, &id).await;
    assert_eq!(record.hold.status, pending::PendingStatus::Cancelled);
    assert_eq!(
        record.hold.error.as_deref(),
        Some("Cancelled: the key that asked for it was revoked.")
    );
}

/// Refusals are counted, not written row by row: 200 refused calls of a
/// read-only key in MCP batches are one row (two if a minute turns) whose
/// counts add up to 200, every one counted however they race; guesses at a
/// locked hold are counted in the hold's account's log, not the operators'.
async fn refusals_are_counted_per_minute_in_the_log_they_concern(app: TestApp) {
    let owner = app.acme().await;
    let (reader, view) = mint(&app, &owner, json!({"name": "reader", "permissions": ["read"]})).await;
    let reader_id = view["id"].as_str().unwrap().to_string();
    let call = |n: usize| {
        json!({"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": {"name": "send_mail", "arguments":
            {"from": "agent@acme.example", "to": "pal@partner.example", "subject": "Hi", "text": "Hi"}}})
    };
    let batches = (0..10).map(|b| {
        let batch: Vec<Value> = (0..20).map(|i| call(b * 20 + i)).collect();
        app.post("/mcp", Auth::Bearer(&reader), Value::Array(batch))
    });
    for answer in futures::future::join_all(batches).await {
        assert_eq!(answer.status, 200, "{}", answer.body);
        for one in answer.body.as_array().unwrap() {
            assert_eq!(one["error"]["data"]["status"], 403, "{one}");
        }
    }
    let counted = |log: &Value| -> (usize, i64) {
        let rows = log["changes"].as_array().unwrap();
        (rows.len(), rows.iter().map(|r| r["count"].as_i64().unwrap_or(0)).sum())
    };
    let log = app
        .get(&format!("/audit?actor={reader_id}"), Auth::Bearer(&owner))
        .await
        .body;
    let (rows, total) = counted(&log);
    assert!((1..=2).contains(&rows), "one row a minute: {log}");
    assert_eq!(total, 200, "every refusal counted: {log}");
    let row = &log["changes"][0];
    assert_eq!(
        (&row["operation"], &row["status"], &row["error"], &row["via"]),
        (&json!("sendMail"), &json!(403), &json!(LACKS_SEND), &json!("mcp"))
    );
    assert!(row["lastAt"].as_str().unwrap() >= row["at"].as_str().unwrap(), "{row}");

    // A refusal's storage requests (docs/data-model.md): the minute's
    // pointer read, then its count added.
    let started = app.ctx.store_meter.counts();
    let res = app
        .send_mail(
            Auth::Bearer(&reader),
            json!({"from": "agent@acme.example", "to": "pal@partner.example", "subject": "Hi", "text": "Hi"}),
        )
        .await;
    assert_eq!(res.status, 403);
    let used = app.ctx.store_meter.counts().since(&started);
    assert_eq!((used.updates, used.puts, used.transactions), (1, 0, 0), "{used:?}");

    // Guesses at a hold's emailed code, past the lock: counted in the
    // account's log, never in the operators'.
    let (careful, _) = mint(
        &app,
        &owner,
        json!({"name": "careful", "permissions": ["send"], "approval": "always"}),
    )
    .await;
    let held = app
        .send_mail(
            Auth::Bearer(&careful),
            json!({"from": "agent@acme.example", "to": "pal@partner.example", "subject": "Hi", "text": "Hi"}),
        )
        .await;
    let hold = held.body["holdId"].as_str().unwrap().to_string();
    let code = approval_code(&app, "owner@acme.example");
    let wrong = if code == "00000000" { "11111111" } else { "00000000" };
    let guess = || app.post("/holds/approve", Auth::None, json!({"holdId": hold, "code": wrong}));
    for _ in 0..5 {
        assert_eq!(guess().await.status, 401);
    }
    let statuses: Vec<u16> = futures::future::join_all((0..40).map(|_| guess()))
        .await
        .iter()
        .map(|r| r.status)
        .collect();
    assert!(statuses.iter().all(|s| *s == 403), "{statuses:?}");
    let log = app.get("/audit?operation=approveHold", Auth::Bearer(&owner)).await.body;
    let (rows, total) = counted(&log);
    assert!((1..=2).contains(&rows), "{log}");
    assert_eq!(total, 40, "{log}");
    assert_eq!(log["changes"][0]["actor"]["kind"], "emailed_code");
    assert_eq!(log["changes"][0]["target"]["holdId"], hold.as_str());
    let operator = app.operator_token().await;
    let theirs = app.get("/audit?operation=approveHold", Auth::Bearer(&operator)).await;
    assert_eq!(theirs.status, 200, "{}", theirs.body);
    assert_eq!(theirs.body["changes"], json!([]), "{}", theirs.body);
    // The owner still decides it; the success is a row of its own.
    let res = app
        .post("/holds/approve", Auth::Bearer(&owner), json!({"holdId": hold}))
        .await;
    assert_eq!(res.status, 200, "{}", res.body);
    let log = app.get("/audit?operation=approveHold", Auth::Bearer(&owner)).await.body;
    assert_eq!(log["changes"][0]["status"], 200, "{log}");
    assert!(log["changes"][0].get("count").is_none(), "{log}");
}

/// An approval and a cancel (or a deny) of a hold for later, at once: one
/// conditional write decides, and the credit follows it. Whatever the order,
/// the account is charged exactly for the sends still scheduled.
async fn approving_and_cancelling_a_hold_for_later_at_once_loses_no_credit(app: TestApp) {
    let owner = app.acme().await;
    let (careful, _) = mint(
        &app,
        &owner,
        json!({"name": "careful", "permissions": ["send"], "approval": "always"}),
    )
    .await;
    let before = credits(&app.get("/credits", Auth::Bearer(&owner)).await);
    let mut still_scheduled = 0;
    for round in 0..6 {
        let at = common::clock::iso_epoch(app.ctx.clock.epoch() + 3600);
        let mut holds = Vec::new();
        for i in 0..4 {
            let to = format!("r{round}-{i}@partner.example");
            let res = app
                .send_mail(
                    Auth::Bearer(&careful),
                    json!({"from": "agent@acme.example", "to": to, "subject": "Later", "text": "Later", "sendAt": at}),
                )
                .await;
            assert_eq!(res.status, 202, "{}", res.body);
            let ids = (res.body["holdId"].clone(), res.body["messageId"].clone());
            holds.push(ids);
        }
        let races = holds.iter().enumerate().map(|(i, (hold, message_id))| {
            let (app, owner) = (&app, &owner);
            async move {
                let approve = app.post("/holds/approve", Auth::Bearer(owner), json!({"holdId": hold}));
                let undo = async {
                    if i % 2 == 0 {
                        app.post("/outbox/cancel", Auth::Bearer(owner), json!({"messageId": message_id}))
                            .await
                    } else {
                        app.post("/holds/deny", Auth::Bearer(owner), json!({"holdId": hold}))
                            .await
                    }
                };
                let (approved, undone) = tokio::join!(approve, undo);
                (approved.status, undone.status)
            }
        });
        let outcomes = futures::future::join_all(races).await;
        for (approved, undone) in &outcomes {
            assert!(
                matches!((approved, undone), (200, 200) | (409, 200) | (200, 409)),
                "round {round}: {outcomes:?}"
            );
            // Approved and not undone: it waits for its time, charged.
            if (*approved, *undone) == (200, 409) {
                still_scheduled += 1;
            }
        }
        assert_eq!(
            credits(&app.get("/credits", Auth::Bearer(&owner)).await),
            before - still_scheduled,
            "round {round}: {outcomes:?}"
        );
        app.ctx.clock.advance(61);
    }
    // At their time exactly those go, charged once.
    app.ctx.clock.advance(3600);
    let run = common::service::sending::pending::run_due(&app.ctx).await.unwrap();
    assert_eq!(run.sent as i64, still_scheduled, "{run:?}");
    assert_eq!(
        credits(&app.get("/credits", Auth::Bearer(&owner)).await),
        before - still_scheduled
    );
}

/// Mail to the simulator costs no credit when it goes now, so none when it
/// waits: a scheduled send and an approved hold to it leave the balance as
/// it was, released and delivered all the same.
async fn simulator_mail_waits_free_as_it_goes_free(app: TestApp) {
    use common::service::sending::pending;
    let owner = app.acme().await;
    let before = credits(&app.get("/credits", Auth::Bearer(&owner)).await);
    let to = "delivered+later@simulator.svc.test";
    let res = app
        .send_mail(
            Auth::Bearer(&owner),
            json!({"from": "agent@acme.example", "to": to, "subject": "Later", "text": "Later", "undoSeconds": 5}),
        )
        .await;
    assert_eq!(res.status, 202, "{}", res.body);
    assert_eq!(res.body["creditsRemaining"], before, "{}", res.body);
    app.ctx.clock.advance(10);
    assert_eq!(pending::run_due(&app.ctx).await.unwrap().sent, 1);
    let outbox = app.get("/outbox", Auth::Bearer(&owner)).await;
    assert_eq!(
        outbox.body["messages"][0]["recipients"][0]["address"], to,
        "{}",
        outbox.body
    );
    assert_eq!(credits(&app.get("/credits", Auth::Bearer(&owner)).await), before);

    let hold = held_by_a_careful_key(&app, &owner, "delivered@simulator.svc.test").await;
    let approved = app
        .post("/holds/approve", Auth::Bearer(&owner), json!({"holdId": hold}))
        .await;
    assert_eq!(approved.status, 200, "{}", approved.body);
    assert_eq!(credits(&app.get("/credits", Auth::Bearer(&owner)).await), before);
    // The same to a real address is charged, once.
    let res = app
        .send_mail(
            Auth::Bearer(&owner),
            json!({"from": "agent@acme.example", "to": "pal@partner.example", "subject": "Later", "text": "Later", "undoSeconds": 5}),
        )
        .await;
    assert_eq!(res.body["creditsRemaining"], before - 1, "{}", res.body);
}

/// A hold nobody answers lapses after 24 hours: the lists say so at once,
/// before anything has touched it, and deciding it then is 410.
async fn a_hold_left_unanswered_shows_as_expired_once_it_lapses(app: TestApp) {
    let owner = app.acme().await;
    let hold = held_by_a_careful_key(&app, &owner, "pal@partner.example").await;
    let listed = app.get("/holds", Auth::Bearer(&owner)).await;
    assert_eq!(listed.body["holds"][0]["status"], "waiting", "{}", listed.body);
    app.ctx.clock.advance(25 * 3600);
    let listed = app.get("/holds", Auth::Bearer(&owner)).await;
    assert_eq!(listed.body["holds"][0]["id"], hold.as_str(), "{}", listed.body);
    assert_eq!(listed.body["holds"][0]["status"], "expired", "{}", listed.body);
    let waiting = app.get("/outbox/waiting", Auth::Bearer(&owner)).await;
    assert_eq!(waiting.body["sends"], json!([]), "{}", waiting.body);
    let late = app
        .post("/holds/approve", Auth::Bearer(&owner), json!({"holdId": hold}))
        .await;
    assert_eq!(late.status, 410, "{}", late.body);
}

/// A send to `to` by a new key of the owner's that sends only with approval:
/// its hold's id.
async fn held_by_a_careful_key(app: &TestApp, owner: &str, to: &str) -> String {
    let (agent, _) = mint(
        app,
        owner,
        json!({"name": "careful", "permissions": ["send"], "approval": "always"}),
    )
    .await;
    let held = app
        .send_mail(
            Auth::Bearer(&agent),
            json!({"from": "agent@acme.example", "to": to, "subject": "Held", "text": "Held"}),
        )
        .await;
    assert_eq!(held.status, 202, "{}", held.body);
    held.body["holdId"].as_str().unwrap().to_string()
}
