//! Keeping spam out (issue 44), on both stores: the content verdict the
//! mail host passes in the envelope line (as `mailhost deliver
//! --verdict-header` writes it) files spam apart (`view=spam`), never
//! unread, waking no wait, announced only as `message.spam` to a webhook that
//! asks; a verdict header in the message itself is believed by no one; the
//! owner's threshold and switch, and an allow-list entry for an authenticated
//! sender alone, decide; reports move mail both ways, queue one lesson for
//! the mail host's rspamd per move (also under concurrent reports) and are
//! audited. The real Postfix and rspamd path is `mail_host_spam`.

use crate::support::webhooks::Receiver;
use crate::support::{Auth, Backend, SYNC_TOKEN, TestApp};
use base64::Engine;
use common::mail::inbound::Envelope;
use common::mail::spam::{self, SpamVerdict};
use common::service::receiving::poller;
use serde_json::{Value, json};

on_both_stores!(
    spam_is_filed_apart_read_with_its_rules_never_unread_and_announced_only_when_asked,
    a_verdict_written_inside_the_message_changes_nothing,
    reports_move_mail_both_ways_queue_one_lesson_each_and_are_audited,
    concurrent_reports_move_a_message_once_and_keep_its_thread_exact,
    the_owners_threshold_and_switch_and_an_authenticated_allowed_sender_decide,
);

const TO: &str = "me@tom.example";
const GTUBE: &str = r#"{"score":15,"action":"reject","symbols":{"GTUBE":15}}"#;
const HAM: &str = r#"{"score":-0.2,"action":"no action","symbols":{"MIME_GOOD":-0.1,"ARC_NA":0,"R_SPF_ALLOW":-0.1}}"#;
const ALONE: &str = "spam is reported alone, for one message: id or messageId, without thread, unread or folder";
const MARKED: &str = r#"{"score":8.7,"action":"add header","symbols":{"MISSING_MID":2.5,"DATE_IN_PAST":1}}"#;

async fn app(backend: Backend) -> Option<TestApp> {
    TestApp::spawn(backend).await
}

fn letter(from: &str, id: &str, subject: &str, extra: &str) -> Vec<u8> {
    format!(
        "{extra}From: {from}\r\nTo: {TO}\r\nSubject: {subject}\r\nMessage-ID: {id}\r\n\
         Date: Mon, 23 Nov 2026 10:00:00 +0000\r\n\r\nHello, about {subject}.\r\n"
    )
    .into_bytes()
}

/// Hands `raw` over as the mail host's pipe does, rspamd's verdict (as its
/// header reads) in the envelope line, and files it.
async fn deliver(app: &TestApp, raw: &[u8], sender: &str, client: &str, verdict: Option<&str>) -> poller::Outcome {
    let envelope = Envelope {
        recipient: Some(TO.into()),
        sender: Some(sender.into()),
        client_address: Some(client.into()),
        helo: Some("mail.sender.example".into()),
    };
    let verdict = verdict.map(|v| SpamVerdict::from_header(v).expect("a verdict"));
    mailhost::deliver(&app.data_dir, spam::prepend(&envelope, verdict.as_ref(), raw))
        .await
        .unwrap();
    poller::run_once(&app.ctx).await.unwrap()
}

async fn rows(app: &TestApp, key: &str, query: &str) -> Vec<Value> {
    let res = app.get(&format!("/inbox{query}"), Auth::Bearer(key)).await;
    assert_eq!(res.status, 200, "{}", res.body);
    res.body["messages"].as_array().unwrap().clone()
}

fn ids(rows: &[Value]) -> Vec<String> {
    let mut ids: Vec<String> = rows
        .iter()
        .map(|r| r["messageId"].as_str().unwrap().to_string())
        .collect();
    ids.sort();
    ids
}

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

async fn lessons(app: &TestApp) -> Vec<Value> {
    let res = app.get("/mtaSpamTraining", Auth::Bearer(SYNC_TOKEN)).await;
    assert_eq!(res.status, 200, "{}", res.body);
    res.body["jobs"].as_array().unwrap().clone()
}

async fn spam_is_filed_apart_read_with_its_rules_never_unread_and_announced_only_when_asked(backend: Backend) {
    let (port, dir) = Receiver::prepare();
    let ca = Receiver::ca_file(&dir);
    let Some(app) = TestApp::spawn_with(backend, move |config| {
        config.webhook_allow_hosts = vec!["localhost".into()];
        config.webhook_ca_file = Some(ca);
    })
    .await
    else {
        return;
    };
    let key = app.sender("tom@tom.example", "tom.example", "me").await;
    let url = format!("https://localhost:{port}/hook");
    let registered = app.post("/webhooks", Auth::Bearer(&key), json!({"url": url})).await;
    let secret = registered.body["webhook"]["secret"].as_str().unwrap().to_string();
    let Some(receiver) = Receiver::start(port, dir, &secret, "200") else {
        return;
    };

    // A wait for any new mail, while spam arrives: it wakes nothing.
    let waiting = {
        let (base, key) = (app.base.clone(), key.clone());
        tokio::spawn(async move {
            reqwest::Client::new()
                .get(format!("{base}/inbox?wait=3"))
                .bearer_auth(key)
                .send()
                .await
                .unwrap()
                .json::<Value>()
                .await
                .unwrap()
        })
    };
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let spam_letter = letter("win@prize.example", "<gtube@prize.example>", "You won", "");
    assert_eq!(
        deliver(&app, &spam_letter, "win@prize.example", "203.0.113.9", Some(GTUBE))
            .await
            .filed,
        1
    );
    let woke = waiting.await.unwrap();
    assert_eq!(woke["messages"], json!([]), "spam woke a wait: {woke}");

    deliver(
        &app,
        &letter("ann@friend.example", "<ham@friend.example>", "Lunch", ""),
        "ann@friend.example",
        "198.51.100.2",
        Some(HAM),
    )
    .await;
    // No mail host in front (the local server alone): no verdict at all.
    app.receive("bob@local.example", TO, "unjudged").await;

    let inbox = rows(&app, &key, "").await;
    assert_eq!(
        ids(&inbox),
        ["<ham@friend.example>", "<unjudged@received.test>"],
        "spam is not in the inbox"
    );
    let ham = inbox.iter().find(|r| r["messageId"] == "<ham@friend.example>").unwrap();
    assert_eq!(ham["spam"], json!({"score": -0.2, "action": "no_action"}), "{ham}");
    let unjudged = inbox
        .iter()
        .find(|r| r["messageId"] == "<unjudged@received.test>")
        .unwrap();
    assert!(
        unjudged.get("spam").is_none(),
        "no verdict is not a clean one: {unjudged}"
    );
    assert!(rows(&app, &key, "?view=quarantine").await.is_empty());
    assert!(
        rows(&app, &key, "?q=won").await.is_empty(),
        "search reads the inbox's rows"
    );

    let spam_rows = rows(&app, &key, "?view=spam").await;
    assert_eq!(ids(&spam_rows), ["<gtube@prize.example>"]);
    let listed = &spam_rows[0];
    assert_eq!(listed["spam"], json!({"score": 15.0, "action": "reject"}), "{listed}");
    assert_eq!(listed["quarantine"]["reason"], "spam");
    assert_eq!(listed["unread"], false);
    let id = listed["id"].as_str().unwrap().to_string();

    // Read by id: every rule; still never unread.
    let read = app.get(&format!("/inbox?id={id}"), Auth::Bearer(&key)).await;
    assert_eq!(read.status, 200, "{}", read.body);
    assert_eq!(
        read.body["message"]["spam"],
        json!({"score": 15.0, "action": "reject", "symbols": [{"name": "GTUBE", "score": 15.0}]})
    );
    assert_eq!(read.body["message"]["unread"], false);
    // An agent reads the verdict in words, outside the envelope.
    let got = tool(&app, &key, "get_message", json!({"id": id})).await;
    let words = got["structuredContent"]["envelope"]["provenance"]["spam"]
        .as_str()
        .unwrap();
    assert!(words.contains("judged spam") && words.contains("15"), "{words}");
    let got = tool(&app, &key, "get_message", json!({"messageId": "<ham@friend.example>"})).await;
    let words = got["structuredContent"]["envelope"]["provenance"]["spam"]
        .as_str()
        .unwrap();
    assert!(words.contains("scanned") && words.contains("inbox"), "{words}");
    // Nothing judged it: the envelope says nothing (never that it is clean).
    let got = tool(
        &app,
        &key,
        "get_message",
        json!({"messageId": "<unjudged@received.test>"}),
    )
    .await;
    assert!(
        got["structuredContent"]["envelope"]["provenance"].get("spam").is_none(),
        "{got}"
    );
    let listed = tool(&app, &key, "list_inbox", json!({"view": "spam"})).await;
    assert_eq!(listed["structuredContent"]["messages"][0]["id"], id.as_str());

    // The webhook heard of the two inbox messages alone.
    let got = receiver.wait_for(2).await;
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let kinds: Vec<String> = receiver
        .deliveries()
        .iter()
        .map(|d| {
            let body: Value = serde_json::from_str(d["body"].as_str().unwrap()).unwrap();
            format!(
                "{} {}",
                body["type"].as_str().unwrap(),
                body["messageId"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(got.len(), 2, "{kinds:?}");
    assert!(kinds.iter().all(|k| k.starts_with("inbound.received")), "{kinds:?}");

    // Asked for, spam is announced as message.spam with its score.
    let asked = app
        .post(
            "/webhooks",
            Auth::Bearer(&key),
            json!({"url": url, "events": ["inbound.received", "message.spam"]}),
        )
        .await;
    assert_eq!(asked.status, 200, "{}", asked.body);
    deliver(
        &app,
        &letter("win@prize.example", "<gtube-2@prize.example>", "You won again", ""),
        "win@prize.example",
        "203.0.113.9",
        Some(MARKED),
    )
    .await;
    let got = receiver.wait_for(3).await;
    let body: Value = serde_json::from_str(got[2]["body"].as_str().unwrap()).unwrap();
    assert_eq!(body["type"], "message.spam");
    assert_eq!(body["messageId"], "<gtube-2@prize.example>");
    assert_eq!(body["spam"], json!({"score": 8.7, "action": "add_header"}));

    // Kept 30 days.
    app.ctx.clock.advance(30 * 86_400 + 1);
    assert!(rows(&app, &key, "?view=spam").await.is_empty());
    let gone = app.get(&format!("/inbox?id={id}"), Auth::Bearer(&key)).await;
    assert_eq!(gone.status, 404, "{}", gone.body);
}

async fn a_verdict_written_inside_the_message_changes_nothing(backend: Backend) {
    let Some(app) = app(backend).await else {
        return;
    };
    let key = app.sender("tom@tom.example", "tom.example", "me").await;
    // Headers a sender wrote to look judged clean, on mail rspamd rejects...
    let clean_looking = "X-Spam: No\r\nX-Spam-Status: No, score=-100.0\r\nX-Spam-Score: -100\r\n\
                         X-Spamd-Result: default: False [-100.00 / 15.00]\r\nX-Rspamd-Action: no action\r\n\
                         X-Rspamd-Score: -100\r\n";
    deliver(
        &app,
        &letter(
            "win@prize.example",
            "<forged-clean@prize.example>",
            "Prize",
            clean_looking,
        ),
        "win@prize.example",
        "203.0.113.9",
        Some(GTUBE),
    )
    .await;
    // ...and headers that look judged spam, or like the mail host's own
    // verdict, on mail that has no verdict or a clean one.
    let spam_looking = "X-Spam: Yes\r\nX-Spam-Flag: YES\r\nX-Spamd-Result: default: True [99.00 / 15.00]\r\n\
                        X-Rspamd-Action: reject\r\nX-Mailhost-Verdict-00000000000000000000000000000000: \
                        {\"score\":99,\"action\":\"reject\"}\r\n";
    deliver(
        &app,
        &letter(
            "ann@friend.example",
            "<forged-spam@friend.example>",
            "Minutes",
            spam_looking,
        ),
        "ann@friend.example",
        "198.51.100.2",
        Some(HAM),
    )
    .await;
    deliver(
        &app,
        &letter(
            "ann@friend.example",
            "<forged-unjudged@friend.example>",
            "Agenda",
            spam_looking,
        ),
        "ann@friend.example",
        "198.51.100.2",
        None,
    )
    .await;
    assert_eq!(
        ids(&rows(&app, &key, "").await),
        ["<forged-spam@friend.example>", "<forged-unjudged@friend.example>"]
    );
    let spam_rows = rows(&app, &key, "?view=spam").await;
    assert_eq!(ids(&spam_rows), ["<forged-clean@prize.example>"]);
    assert_eq!(spam_rows[0]["spam"]["score"], 15.0);
    let inbox = rows(&app, &key, "").await;
    let unjudged = inbox
        .iter()
        .find(|r| r["messageId"] == "<forged-unjudged@friend.example>")
        .unwrap();
    assert!(unjudged.get("spam").is_none(), "{unjudged}");

    // `mailhost deliver --verdict-header`: the host's header alone is read,
    // and taken out of the file the pipe hands Dovecot next.
    let dir = std::env::temp_dir().join(format!("mailhost-verdict-{:016x}", rand::random::<u64>()));
    std::fs::create_dir_all(&dir).unwrap();
    let header = "X-Mailhost-Verdict-0123456789abcdef0123456789abcdef";
    let cases = [
        (format!("{header}: {GTUBE}\r\n"), Some(15.0)),
        // Two (a sender's that rspamd failed to remove, and its own): none.
        (format!("{header}: {HAM}\r\n{header}: {GTUBE}\r\n"), None),
        // Another host's name: not this host's verdict.
        (format!("X-Mailhost-Verdict-ffff: {HAM}\r\n"), None),
    ];
    for (n, (headers, score)) in cases.into_iter().enumerate() {
        let file = dir.join(format!("{n}.eml"));
        let raw = letter("a@b.example", &format!("<cli-{n}@b.example>"), "cli", &headers);
        std::fs::write(&file, &raw).unwrap();
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_mailhost"))
            .args(["deliver", "--data-dir"])
            .arg(&app.data_dir)
            .args(["--recipient", TO, "--verdict-header", header])
            .arg(&file)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let left = std::fs::read_to_string(&file).unwrap();
        assert!(
            !left.contains("X-Mailhost-Verdict-0123"),
            "the host's header leaves the file: {left}"
        );
        let pending = app.ctx.blobs.list(common::mail::inbound::PENDING).await.unwrap();
        assert_eq!(pending.len(), 1);
        let dropped = app.ctx.blobs.get(&pending[0]).await.unwrap().unwrap();
        assert_eq!(spam::verdict_in(&dropped).map(|v| v.score), score, "case {n}");
        poller::run_once(&app.ctx).await.unwrap();
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// A reply to the first message (so the thread holds an outbound row too).
async fn reply(app: &TestApp, key: &str, to_message: &str) -> Value {
    let sent = app
        .send_mail(
            Auth::Bearer(key),
            json!({"from": TO, "to": "ann@friend.example", "subject": "Re: Lunch", "text": "Yes.", "inReplyTo": to_message}),
        )
        .await;
    assert_eq!(sent.status, 200, "{}", sent.body);
    sent.body
}

async fn thread(app: &TestApp, key: &str, thread: &str) -> Value {
    let res = app.get("/inbox?view=threads&folder=inbox", Auth::Bearer(key)).await;
    res.body["threads"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["threadId"] == thread)
        .cloned()
        .unwrap_or(Value::Null)
}

async fn reports_move_mail_both_ways_queue_one_lesson_each_and_are_audited(backend: Backend) {
    let Some(app) = app(backend).await else {
        return;
    };
    let key = app.sender("tom@tom.example", "tom.example", "me").await;
    let raw = letter("ann@friend.example", "<lunch@friend.example>", "Lunch", "");
    deliver(&app, &raw, "ann@friend.example", "198.51.100.2", Some(HAM)).await;
    let second = format!(
        "From: ann@friend.example\r\nTo: {TO}\r\nSubject: Re: Lunch\r\nMessage-ID: <lunch-2@friend.example>\r\n\
         In-Reply-To: <lunch@friend.example>\r\nReferences: <lunch@friend.example>\r\n\r\nAt noon?\r\n"
    );
    deliver(&app, second.as_bytes(), "ann@friend.example", "198.51.100.2", Some(HAM)).await;
    reply(&app, &key, "<lunch@friend.example>").await;
    let inbox = rows(&app, &key, "").await;
    let first = inbox
        .iter()
        .find(|r| r["messageId"] == "<lunch@friend.example>")
        .unwrap();
    let (id, thread_id) = (
        first["id"].as_str().unwrap().to_string(),
        first["threadId"].as_str().unwrap().to_string(),
    );
    let before = thread(&app, &key, &thread_id).await;
    assert_eq!(
        (before["messageCount"].as_i64(), before["unreadCount"].as_i64()),
        (Some(3), Some(2))
    );

    // Reported spam: out of the inbox and its thread, into spam.
    let res = app
        .post("/inbox", Auth::Bearer(&key), json!({"id": id, "spam": true}))
        .await;
    assert_eq!(res.status, 200, "{}", res.body);
    assert_eq!(res.body["moved"], true);
    assert_eq!(res.body["learning"], true);
    assert_eq!(res.body["message"]["quarantine"]["reason"], "spam");
    assert_eq!(ids(&rows(&app, &key, "?view=spam").await), ["<lunch@friend.example>"]);
    assert_eq!(ids(&rows(&app, &key, "").await), ["<lunch-2@friend.example>"]);
    let after = thread(&app, &key, &thread_id).await;
    assert_eq!(
        (
            after["messageCount"].as_i64(),
            after["inboundCount"].as_i64(),
            after["unreadCount"].as_i64()
        ),
        (Some(2), Some(1), Some(1)),
        "{after}"
    );
    let jobs = lessons(&app).await;
    assert_eq!(jobs.len(), 1, "{jobs:?}");
    assert_eq!(
        (jobs[0]["learn"].as_str(), jobs[0]["user"].as_str()),
        (Some("spam"), Some("tom.example"))
    );
    let message = base64::engine::general_purpose::STANDARD
        .decode(jobs[0]["message"].as_str().unwrap())
        .unwrap();
    assert_eq!(message, raw, "the message as received, without the envelope line");

    // Not spam after all: back in the inbox, unread, on its thread.
    let res = app
        .post(
            "/inbox",
            Auth::Bearer(&key),
            json!({"messageId": "<lunch@friend.example>", "spam": false}),
        )
        .await;
    assert_eq!(res.status, 200, "{}", res.body);
    assert_eq!(res.body["moved"], true);
    assert_eq!(res.body["message"]["unread"], true);
    assert!(res.body["message"].get("quarantine").is_none(), "{}", res.body);
    assert!(rows(&app, &key, "?view=spam").await.is_empty());
    assert_eq!(
        ids(&rows(&app, &key, "").await),
        ["<lunch-2@friend.example>", "<lunch@friend.example>"]
    );
    let back = thread(&app, &key, &thread_id).await;
    assert_eq!(
        (back["messageCount"].as_i64(), back["unreadCount"].as_i64()),
        (Some(3), Some(2)),
        "{back}"
    );
    let read = app.get(&format!("/inbox?thread={thread_id}"), Auth::Bearer(&key)).await;
    assert_eq!(read.body["messages"].as_array().unwrap().len(), 3, "{}", read.body);
    // Said again: nothing moves, nothing more to learn.
    let res = app
        .post("/inbox", Auth::Bearer(&key), json!({"id": id, "spam": false}))
        .await;
    assert_eq!(
        (res.status, res.body["moved"].as_bool()),
        (200, Some(false)),
        "{}",
        res.body
    );
    let jobs = lessons(&app).await;
    let learned: Vec<&str> = jobs.iter().map(|j| j["learn"].as_str().unwrap()).collect();
    assert_eq!(learned, ["spam", "ham"]);

    // The tool, spam by default.
    let got = tool(
        &app,
        &key,
        "mark_spam",
        json!({"messageId": "<lunch-2@friend.example>"}),
    )
    .await;
    assert_eq!(got["isError"], false, "{got}");
    assert_eq!(got["structuredContent"]["moved"], true);
    assert_eq!(ids(&rows(&app, &key, "?view=spam").await), ["<lunch-2@friend.example>"]);

    // The mail host is done with them: acknowledged, they are gone.
    let done: Vec<Value> = lessons(&app).await.iter().map(|j| j["id"].clone()).collect();
    assert_eq!(done.len(), 3);
    let ack = app
        .post("/mtaSpamTraining", Auth::Bearer(SYNC_TOKEN), json!({"done": done}))
        .await;
    assert_eq!(
        (ack.status, ack.body["removed"].as_i64()),
        (200, Some(3)),
        "{}",
        ack.body
    );
    assert!(lessons(&app).await.is_empty());
    for bad in [json!({"done": "x"}), json!({"done": ["a b"]}), json!({})] {
        let res = app.post("/mtaSpamTraining", Auth::Bearer(SYNC_TOKEN), bad).await;
        assert_eq!(res.status, 400, "{}", res.body);
        assert_eq!(res.error(), "done must be an array of at most 100 training job ids");
    }
    // Only the mail host reads them.
    assert_eq!(app.get("/mtaSpamTraining", Auth::Bearer(&key)).await.status, 403);

    // Each report is in the audit log, which way and what it did.
    let log = app.get("/audit?operation=markSpam", Auth::Bearer(&key)).await;
    let changes = log.body["changes"].as_array().unwrap();
    let seen: Vec<(bool, bool)> = changes
        .iter()
        .map(|c| {
            (
                c["target"]["spam"].as_bool().unwrap(),
                c["details"][0]["moved"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        seen,
        [(true, true), (false, false), (false, true), (true, true)],
        "{}",
        log.body
    );
    assert!(changes.iter().all(|c| c["actor"]["kind"] == "account_key"));

    // What a report may not do.
    let outbound = rows(&app, &key, "?q=Yes.").await;
    let sent_id = outbound.iter().find(|r| r["box"] == "outbound").unwrap()["id"].clone();
    for (body, status, error) in [
        (json!({"id": id, "spam": true, "folder": "archive"}), 400, ALONE),
        (json!({"thread": thread_id, "spam": true}), 400, ALONE),
        (json!({"id": id, "spam": "yes"}), 400, "spam must be a boolean"),
        (
            json!({"id": sent_id, "spam": true}),
            400,
            "Only received mail can be reported as spam or not spam",
        ),
        (
            json!({"id": "0000000000000abcdef", "spam": true}),
            404,
            "Message not found",
        ),
    ] {
        let res = app.post("/inbox", Auth::Bearer(&key), body.clone()).await;
        assert_eq!((res.status, res.error()), (status, error), "{body}: {}", res.body);
    }
    // Another account's message is not found.
    let other = app.sender("eve@eve.example", "eve.example", "eve").await;
    let res = app
        .post("/inbox", Auth::Bearer(&other), json!({"id": id, "spam": true}))
        .await;
    assert_eq!(res.status, 404, "{}", res.body);
}

async fn concurrent_reports_move_a_message_once_and_keep_its_thread_exact(backend: Backend) {
    let Some(app) = app(backend).await else {
        return;
    };
    let key = app.sender("tom@tom.example", "tom.example", "me").await;
    deliver(
        &app,
        &letter("ann@friend.example", "<root@friend.example>", "Plans", ""),
        "ann@friend.example",
        "198.51.100.2",
        Some(HAM),
    )
    .await;
    let second = format!(
        "From: ann@friend.example\r\nTo: {TO}\r\nSubject: Re: Plans\r\nMessage-ID: <next@friend.example>\r\n\
         References: <root@friend.example>\r\n\r\nAnd?\r\n"
    );
    deliver(&app, second.as_bytes(), "ann@friend.example", "198.51.100.2", Some(HAM)).await;
    let inbox = rows(&app, &key, "").await;
    let target = inbox
        .iter()
        .find(|r| r["messageId"] == "<root@friend.example>")
        .unwrap();
    let (id, thread_id) = (target["id"].as_str().unwrap(), target["threadId"].as_str().unwrap());

    // Eight reports and eight read-flag flips of the same message at once.
    let calls = (0..16).map(|i| {
        let body = match i % 2 {
            0 => json!({"id": id, "spam": true}),
            _ => json!({"id": id, "unread": i % 4 == 1}),
        };
        let (app, key) = (&app, &key);
        async move { app.post("/inbox", Auth::Bearer(key), body).await }
    });
    let answers = futures::future::join_all(calls).await;
    let moved = answers
        .iter()
        .filter(|r| r.body.get("moved").and_then(Value::as_bool) == Some(true))
        .count();
    assert_eq!(moved, 1, "one report moved it");
    for res in &answers {
        // A flip that came after the move finds it in no inbox: 404.
        assert!(res.status == 200 || res.status == 404, "{}", res.body);
    }
    assert_eq!(lessons(&app).await.len(), 1, "one lesson");
    assert_eq!(ids(&rows(&app, &key, "?view=spam").await), ["<root@friend.example>"]);
    // The thread counts what it holds, whatever order the writes took (the
    // flat list reads flags without marking them).
    let summary = thread(&app, &key, thread_id).await;
    let held: Vec<Value> = rows(&app, &key, "")
        .await
        .into_iter()
        .filter(|r| r["threadId"] == thread_id)
        .collect();
    assert_eq!(ids(&held), ["<next@friend.example>"]);
    assert_eq!(summary["messageCount"], 1, "{summary}");
    let unread_rows = held.iter().filter(|m| m["unread"] == true).count() as i64;
    assert_eq!(summary["unreadCount"].as_i64(), Some(unread_rows), "{summary}");
}

async fn mailbox(app: &TestApp, key: &str, settings: Value) -> crate::support::Response {
    let mut body = json!({"domainId": "tom.example", "localPart": "me", "mode": "hosted", "forwardTo": []});
    body.as_object_mut()
        .unwrap()
        .extend(settings.as_object().unwrap().clone());
    app.post("/setMailboxMode", Auth::Bearer(key), body).await
}

async fn the_owners_threshold_and_switch_and_an_authenticated_allowed_sender_decide(backend: Backend) {
    let Some(app) = app(backend).await else {
        return;
    };
    let key = app.sender("tom@tom.example", "tom.example", "me").await;
    let shown = app.get("/listDomains", Auth::Bearer(&key)).await.body;
    let me = &shown["domains"][0]["mailboxes"][0];
    assert_eq!(
        (me["spamFilter"].as_bool(), me["spamThreshold"].is_null()),
        (Some(true), true),
        "{me}"
    );
    let mut n = 0;
    let mut arrive = |verdict: &'static str| {
        n += 1;
        let (app, id) = (&app, format!("<m{n}@prize.example>"));
        async move {
            deliver(
                app,
                &letter("win@prize.example", &id, "Offer", ""),
                "win@prize.example",
                "203.0.113.9",
                Some(verdict),
            )
            .await;
            id
        }
    };
    const GREY: &str = r#"{"score":4.5,"action":"greylist"}"#;

    // rspamd's own judgement: reject and marked mail go to spam, greylisted not.
    let (a, b, c) = (arrive(GTUBE).await, arrive(MARKED).await, arrive(GREY).await);
    assert_eq!(ids(&rows(&app, &key, "?view=spam").await), [a.clone(), b.clone()]);
    assert_eq!(ids(&rows(&app, &key, "").await), std::slice::from_ref(&c));

    // A threshold of the owner's: above it, whatever rspamd would do.
    let set = mailbox(&app, &key, json!({"spamThreshold": 4})).await;
    assert_eq!(set.status, 200, "{}", set.body);
    assert_eq!(set.body["mailbox"]["spamThreshold"], 4.0);
    let d = arrive(GREY).await;
    mailbox(&app, &key, json!({"spamThreshold": 20})).await;
    let e = arrive(GTUBE).await;
    // Off: everything to the inbox, its verdict shown.
    let off = mailbox(&app, &key, json!({"spamFilter": false, "spamThreshold": null})).await;
    assert_eq!(off.body["mailbox"]["spamFilter"], false);
    assert!(off.body["mailbox"]["spamThreshold"].is_null(), "{}", off.body);
    let f = arrive(GTUBE).await;
    assert_eq!(ids(&rows(&app, &key, "?view=spam").await), [a.clone(), b.clone(), d]);
    let inbox = rows(&app, &key, "").await;
    assert_eq!(ids(&inbox), [c, e, f.clone()]);
    let filed = inbox.iter().find(|r| r["messageId"] == f.as_str()).unwrap();
    assert_eq!(filed["spam"]["action"], "reject");

    // Bad settings change nothing.
    for (settings, error) in [
        (
            json!({"spamThreshold": "high"}),
            "spamThreshold must be a number from -50 to 100, or null",
        ),
        (
            json!({"spamThreshold": 100.5}),
            "spamThreshold must be a number from -50 to 100, or null",
        ),
        (json!({"spamFilter": "no"}), "spamFilter must be a boolean"),
    ] {
        let res = mailbox(&app, &key, settings).await;
        assert_eq!((res.status, res.error()), (400, error), "{}", res.body);
    }
    let shown = app.get("/listDomains", Auth::Bearer(&key)).await.body;
    assert_eq!(shown["domains"][0]["mailboxes"][0]["spamFilter"], false);

    // The allow list wins over a spam verdict only for an authenticated
    // sender: SPF passes for 192.0.2.0/24 and DMARC with it.
    mailbox(&app, &key, json!({"spamFilter": true})).await;
    app.dns.set_txt("_dmarc.bank.example", &["v=DMARC1; p=none"]);
    app.dns.set_txt("bank.example", &["v=spf1 ip4:192.0.2.0/24 -all"]);
    let allowed = app
        .post(
            "/lists",
            Auth::Bearer(&key),
            json!({"direction": "receive", "kind": "allow", "entry": "bank.example"}),
        )
        .await;
    assert_eq!(allowed.status, 200, "{}", allowed.body);
    for (id, client) in [
        ("<real@bank.example>", "192.0.2.7"),
        ("<forged@bank.example>", "203.0.113.5"),
    ] {
        deliver(
            &app,
            &letter("ceo@bank.example", id, "Statement", ""),
            "ceo@bank.example",
            client,
            Some(GTUBE),
        )
        .await;
    }
    let inbox = rows(&app, &key, "").await;
    let real = inbox
        .iter()
        .find(|r| r["messageId"] == "<real@bank.example>")
        .expect("allowed and authenticated");
    assert_eq!(real["authentication"]["summary"], "pass");
    let kept = rows(&app, &key, "?view=spam").await;
    let forged = kept
        .iter()
        .find(|r| r["messageId"] == "<forged@bank.example>")
        .expect("not authenticated: spam");
    assert_ne!(forged["authentication"]["summary"], "pass");
}
