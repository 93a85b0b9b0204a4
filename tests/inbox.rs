//! Receiving mail end to end: a raw message dropped with `mailhost::deliver`,
//! filed by the poller, then listed, read, marked and downloaded over HTTP and
//! MCP (spec 2.4, 3.3, 4.2-4.4).

mod support;

use base64::Engine;
use common::service::poller::{self, Outcome};
use serde_json::{Value, json};
use support::{Auth, TestApp};

on_both_backends!(
    received_mail_is_listed_read_marked_and_downloaded,
    a_second_delivery_changes_nothing,
    forward_only_mailboxes_store_nothing_and_accounts_read_only_their_own,
    the_agent_key_and_operators_read_the_service_inbox,
    the_tools_answer_what_the_routes_answer,
    every_corpus_message_is_filed_or_failed_with_a_reason,
);

const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01\0\0\0\x01\x08\x06\0\0\0\x1f\x15\xc4\x89";

fn report(to: &str, message_id: &str) -> Vec<u8> {
    let png = base64::engine::general_purpose::STANDARD.encode(PNG);
    format!(
        "From: Ann <ann@example.org>\r\n\
         To: {to}\r\n\
         Subject: The chart\r\n\
         Date: Mon, 2 Nov 2026 10:00:00 +0000\r\n\
         Message-ID: {message_id}\r\n\
         MIME-Version: 1.0\r\n\
         Content-Type: multipart/mixed; boundary=\"b1\"\r\n\
         \r\n\
         --b1\r\n\
         Content-Type: text/plain; charset=utf-8\r\n\
         \r\n\
         Here is the chart you asked for.\r\n\
         --b1\r\n\
         Content-Type: image/png; name=\"chart.png\"\r\n\
         Content-Disposition: attachment; filename=\"chart.png\"\r\n\
         Content-Transfer-Encoding: base64\r\n\
         \r\n\
         {png}\r\n\
         --b1--\r\n"
    )
    .into_bytes()
}

fn note(to: &str, message_id: &str) -> Vec<u8> {
    format!("From: bob@example.org\r\nTo: {to}\r\nSubject: Hi\r\nMessage-ID: {message_id}\r\n\r\nHello there.\r\n")
        .into_bytes()
}

async fn deliver(app: &TestApp, raw: Vec<u8>) {
    let key = mailhost::deliver(&app.data_dir, raw).await.unwrap();
    assert!(key.starts_with("inbound/pending/") && key.ends_with(".eml"), "{key}");
}

async fn poll(app: &TestApp) -> Outcome {
    poller::run_once(&app.ctx).await.expect("the poller runs")
}

async fn blobs(app: &TestApp, prefix: &str) -> Vec<String> {
    app.ctx.blobs.list(prefix).await.unwrap()
}

async fn list(app: &TestApp, key: &str, query: &str) -> Value {
    let res = app.get(&format!("/inbox{query}"), Auth::Bearer(key)).await;
    assert_eq!(res.status, 200, "{}", res.body);
    assert_eq!(res.body["ok"], true);
    res.body
}

async fn received_mail_is_listed_read_marked_and_downloaded(app: TestApp) {
    let key = app.sender("tom@tom.example", "tom.example", "me").await;
    // No Delivered-To: the recipients are the To and Cc addresses hosted here.
    deliver(
        &app,
        report("Me <me@tom.example>, someone@else.org", "<chart-1@example.org>"),
    )
    .await;
    assert_eq!(
        poll(&app).await,
        Outcome {
            filed: 1,
            duplicates: 0,
            failed: 0,
            pending: 0
        }
    );
    assert!(blobs(&app, "inbound/pending/").await.is_empty());
    assert_eq!(blobs(&app, "inbound/done/").await.len(), 1);

    let listed = list(&app, &key, "").await;
    assert_eq!(listed["unreadInPage"], 1);
    let messages = listed["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 1);
    let row = &messages[0];
    let id = row["id"].as_str().unwrap().to_string();
    assert!(id.len() <= 128 && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-'));
    assert_eq!(row["messageId"], "<chart-1@example.org>");
    assert_eq!(row["mailbox"], "me@tom.example");
    assert_eq!(row["from"], "ann@example.org");
    assert_eq!(row["subject"], "The chart");
    assert_eq!(row["unread"], true);
    assert_eq!(row["folder"], "inbox");
    assert!(row["preview"].as_str().unwrap().starts_with("Here is the chart"));
    assert!(row["ingestedAt"].is_string());
    assert!(row.get("text").is_none(), "list rows carry no body: {row}");
    assert_eq!(
        row["attachments"],
        json!([{"index": 0, "filename": "chart.png", "contentType": "image/png", "size": PNG.len(),
                "downloadPath": format!("/attachment?id={id}&index=0")}])
    );

    // Reading it returns the text and marks it read.
    let read = list(&app, &key, &format!("?id={id}")).await;
    assert_eq!(read["message"]["id"], id.as_str());
    assert!(
        read["message"]["text"]
            .as_str()
            .unwrap()
            .contains("Here is the chart you asked for.")
    );
    assert_eq!(read["message"]["unread"], false);
    assert_eq!(list(&app, &key, "").await["unreadInPage"], 0);

    // Marked unread again, then read: the answer is the updated thread.
    let marked = app
        .post("/inbox", Auth::Bearer(&key), json!({"id": id, "unread": true}))
        .await;
    assert_eq!(marked.status, 200, "{}", marked.body);
    assert_eq!(marked.body["messages"][0]["unread"], true);
    assert_eq!(marked.body["thread"]["unreadCount"], 1);
    assert_eq!(list(&app, &key, "").await["unreadInPage"], 1);
    let marked = app
        .post("/inbox", Auth::Bearer(&key), json!({"id": id, "unread": false}))
        .await;
    assert_eq!(marked.body["messages"][0]["unread"], false);
    assert_eq!(marked.body["thread"]["unreadCount"], 0);
    for (body, status, error) in [
        (json!({}), 400, "thread, id or messageId is required"),
        (json!({"id": id}), 400, "unread or folder is required"),
        (
            json!({"id": "no/such", "unread": true}),
            400,
            "id must match ^[A-Za-z0-9_-]{1,128}$",
        ),
        (json!({"id": id, "unread": "yes"}), 400, "unread must be a boolean"),
        (
            json!({"id": id, "folder": "spam"}),
            400,
            "folder must be inbox, archive or trash",
        ),
        (
            json!({"thread": "ABC", "unread": true}),
            400,
            "thread must be 64 lowercase hex characters",
        ),
        (
            json!({"messageId": "<a b>", "unread": true}),
            400,
            "messageId must be a Message-ID such as <id@example.com>",
        ),
        (
            json!({"id": "0000000000000feedface", "unread": false}),
            404,
            "Message not found",
        ),
        (
            json!({"thread": "0".repeat(64), "unread": false}),
            404,
            "Message not found",
        ),
        (
            json!({"messageId": "<nope@example.org>", "folder": "trash"}),
            404,
            "Message not found",
        ),
    ] {
        let res = app.post("/inbox", Auth::Bearer(&key), body.clone()).await;
        assert_eq!((res.status, res.error()), (status, error), "{body}: {}", res.body);
    }
    let unknown = app.get("/inbox?id=0000000000000feedface", Auth::Bearer(&key)).await;
    assert_eq!((unknown.status, unknown.error()), (404, "Message not found"));
    for (query, error) in [
        ("?limit=0", "limit must be an integer from 1 to 50"),
        ("?limit=51", "limit must be an integer from 1 to 50"),
        ("?limit=x", "limit must be an integer from 1 to 50"),
        ("?id=a.b", "id must match ^[A-Za-z0-9_-]{1,128}$"),
        (
            "?mailbox=inbox@svc.test",
            "mailbox must be an address at the service domain, and only the agent key or an operator may name one",
        ),
        (
            "?messageId=%3Ca%20b%3E",
            "messageId must be a Message-ID such as <id@example.com>",
        ),
        ("?thread=xyz", "thread must be 64 lowercase hex characters"),
        ("?view=list", "view must be threads"),
        ("?q=a", "q must be 2 to 200 characters"),
        ("?q=", "q must be 2 to 200 characters"),
        ("?folder=spam", "folder must be inbox, archive or trash"),
        (
            "?cursor=a%2Fb",
            "cursor and after must be a cursor or message id from this API",
        ),
        ("?wait=26", "wait must be an integer from 1 to 25"),
        ("?wait=0", "wait must be an integer from 1 to 25"),
    ] {
        let res = app.get(&format!("/inbox{query}"), Auth::Bearer(&key)).await;
        assert_eq!((res.status, res.error()), (400, error), "{query}: {}", res.body);
    }
    let q = "q=".to_string() + &"x".repeat(201);
    assert_eq!(app.get(&format!("/inbox?{q}"), Auth::Bearer(&key)).await.status, 400);
    // The same message by its Message-ID.
    let by_mid = list(&app, &key, "?messageId=%3Cchart-1%40example.org%3E").await;
    assert_eq!(by_mid["message"]["id"], id.as_str());
    assert_eq!(
        list(&app, &key, "?messageId=chart-1%40example.org").await["message"]["id"],
        id.as_str()
    );

    // The attachment, as stored.
    let res = app
        .client
        .get(format!("{}/api/attachment?id={id}&index=0", app.base))
        .bearer_auth(&key)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    assert_eq!(res.headers()["content-type"], "image/png");
    assert_eq!(
        res.headers()["content-disposition"],
        "attachment; filename=\"chart.png\""
    );
    assert_eq!(res.bytes().await.unwrap().as_ref(), PNG);
    // Inline when asked, for a type a browser shows; by Message-ID too.
    let inline = app
        .client
        .get(format!(
            "{}/attachment?messageId=%3Cchart-1%40example.org%3E&index=0&disposition=inline",
            app.base
        ))
        .bearer_auth(&key)
        .send()
        .await
        .unwrap();
    assert_eq!(inline.status(), 200);
    assert_eq!(
        inline.headers()["content-disposition"],
        "inline; filename=\"chart.png\""
    );
    for (query, status) in [
        (format!("?id={id}&index=1"), 404),
        (format!("?id={id}&index=3"), 400),
        (format!("?id={id}"), 400),
        ("?index=0".to_string(), 400),
        ("?id=0000000000000feedface&index=0".to_string(), 404),
        (format!("?id={id}&index=0&box=outbound"), 404),
        (format!("?id={id}&index=0&box=sideways"), 400),
        (format!("?id={id}&index=0&disposition=attachment"), 400),
    ] {
        let res = app.get(&format!("/attachment{query}"), Auth::Bearer(&key)).await;
        assert_eq!(res.status, status, "{query}: {}", res.body);
    }
}

async fn a_second_delivery_changes_nothing(app: TestApp) {
    let key = app.sender("tom@tom.example", "tom.example", "me").await;
    let raw = report("me@tom.example", "<chart-2@example.org>");
    deliver(&app, raw.clone()).await;
    assert_eq!(poll(&app).await.filed, 1);
    let stored = blobs(&app, "mail/").await;
    assert_eq!(stored.len(), 1, "one attachment: {stored:?}");
    deliver(&app, raw).await;
    assert_eq!(
        poll(&app).await,
        Outcome {
            filed: 0,
            duplicates: 1,
            failed: 0,
            pending: 0
        }
    );
    assert_eq!(blobs(&app, "mail/").await, stored, "no extra blob");
    assert_eq!(list(&app, &key, "").await["messages"].as_array().unwrap().len(), 1);
    assert!(blobs(&app, "inbound/pending/").await.is_empty());
    assert_eq!(blobs(&app, "inbound/done/").await.len(), 2);

    // Removing the domain deletes its stored mail: rows, index and blobs.
    let uid = app
        .ctx
        .store
        .get(&common::store::Key::new("EMAIL#tom@tom.example", "A"))
        .await
        .unwrap()
        .unwrap()["uid"]
        .as_str()
        .unwrap()
        .to_string();
    let op = app.operator_token().await;
    let removed = app
        .post(
            "/operatorRemoveDomain",
            Auth::Bearer(&op),
            json!({"uid": uid, "domainId": "tom.example", "confirm": "tom.example"}),
        )
        .await;
    assert_eq!(removed.status, 200, "{}", removed.body);
    let scope = common::service::keys::inbox_account_scope(&uid);
    for pk in [
        common::service::keys::mail_partition(&scope, false),
        common::service::keys::message_ids_of(&scope),
        common::service::keys::folder_partition(&scope, "inbox"),
        common::service::keys::threads_partition(&scope, "inbox"),
    ] {
        let rows = app
            .ctx
            .store
            .query(&common::store::Query::partition(&pk))
            .await
            .unwrap();
        assert!(rows.items.is_empty(), "{pk}");
    }
    assert!(blobs(&app, "mail/").await.is_empty());
}

async fn forward_only_mailboxes_store_nothing_and_accounts_read_only_their_own(app: TestApp) {
    let tom = app.sender("tom@tom.example", "tom.example", "me").await;
    let added = app
        .add_mailbox(&tom, "tom.example", "fwd", "forward", json!(["tom@elsewhere.org"]))
        .await;
    assert_eq!(added.status, 200, "{}", added.body);
    let mut to_fwd = b"Delivered-To: fwd@tom.example\n".to_vec();
    to_fwd.extend(note("fwd@tom.example", "<fwd-1@example.org>"));
    deliver(&app, to_fwd).await;
    assert_eq!(poll(&app).await, Outcome::default());
    assert_eq!(blobs(&app, "inbound/done/").await.len(), 1);
    assert!(list(&app, &tom, "").await["messages"].as_array().unwrap().is_empty());

    // Nobody here: failed, with a reason beside it.
    deliver(&app, note("nobody@nowhere.example", "<lost@example.org>")).await;
    assert_eq!(poll(&app).await.failed, 1);
    let failed = blobs(&app, "inbound/failed/").await;
    assert_eq!(failed.len(), 2, "{failed:?}");
    assert!(failed.iter().any(|k| k.ends_with(".eml.reason")));

    deliver(&app, note("me@tom.example", "<mine@example.org>")).await;
    assert_eq!(poll(&app).await.filed, 1);
    let listed = list(&app, &tom, "").await;
    let id = listed["messages"][0]["id"].as_str().unwrap().to_string();

    let ann = app.sender("ann@ann.example", "ann.example", "me").await;
    assert!(list(&app, &ann, "").await["messages"].as_array().unwrap().is_empty());
    let res = app.get(&format!("/inbox?id={id}"), Auth::Bearer(&ann)).await;
    assert_eq!((res.status, res.error()), (404, "Message not found"));
    let res = app
        .post("/inbox", Auth::Bearer(&ann), json!({"id": id, "unread": false}))
        .await;
    assert_eq!(res.status, 404);
    let res = app
        .get(&format!("/attachment?id={id}&index=0"), Auth::Bearer(&ann))
        .await;
    assert_eq!(res.status, 404);
    // Still unread for its owner.
    assert_eq!(list(&app, &tom, "").await["unreadInPage"], 1);
}

async fn the_agent_key_and_operators_read_the_service_inbox(app: TestApp) {
    let tom = app.sender("tom@tom.example", "tom.example", "me").await;
    let mut raw = b"Delivered-To: inbox@svc.test\n".to_vec();
    raw.extend(note("Service <inbox@svc.test>", "<to-service@example.org>"));
    deliver(&app, raw).await;
    assert_eq!(poll(&app).await.filed, 1);
    let agent = app.agent_key.clone();
    let listed = list(&app, &agent, "").await;
    assert_eq!(listed["messages"].as_array().unwrap().len(), 1, "{listed}");
    assert_eq!(listed["messages"][0]["mailbox"], "inbox@svc.test");
    assert_eq!(list(&app, &agent, "?mailbox=inbox@svc.test&limit=50").await, listed);
    assert!(
        list(&app, &agent, "?mailbox=abuse@svc.test").await["messages"]
            .as_array()
            .unwrap()
            .is_empty()
    );
    let res = app.get("/inbox?mailbox=me@tom.example", Auth::Bearer(&agent)).await;
    assert_eq!(res.status, 400, "{}", res.body);
    let operator = app.operator_token().await;
    assert_eq!(list(&app, &operator, "").await, listed);
    let id = listed["messages"][0]["id"].as_str().unwrap();
    let read = list(&app, &operator, &format!("?id={id}")).await;
    assert_eq!(read["message"]["text"], "Hello there.\r\n");
    assert!(list(&app, &tom, "").await["messages"].as_array().unwrap().is_empty());
    let res = app.get(&format!("/inbox?id={id}"), Auth::Bearer(&tom)).await;
    assert_eq!(res.status, 404);
    let someone = app.token("someone@people.test").await;
    let res = app.get("/inbox", Auth::Bearer(&someone)).await;
    assert_eq!(
        (res.status, res.error()),
        (403, "This mailbox requires an operator account")
    );
}

async fn tool(app: &TestApp, key: &str, name: &str, arguments: Value) -> Value {
    let body =
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name, "arguments": arguments}});
    let res = app.post("/mcp", Auth::Bearer(key), body).await;
    assert_eq!(res.status, 200, "{}", res.body);
    assert_eq!(res.body["result"]["isError"], false, "{}", res.body);
    res.body["result"]["structuredContent"].clone()
}

async fn the_tools_answer_what_the_routes_answer(app: TestApp) {
    let key = app.sender("tom@tom.example", "tom.example", "me").await;
    deliver(&app, report("me@tom.example", "<chart-3@example.org>")).await;
    deliver(&app, note("me@tom.example", "<note-3@example.org>")).await;
    assert_eq!(poll(&app).await.filed, 2);
    let rest = list(&app, &key, "?limit=1").await;
    assert_eq!(tool(&app, &key, "list_inbox", json!({"limit": 1})).await, rest);
    let all = list(&app, &key, "").await;
    assert_eq!(tool(&app, &key, "list_inbox", json!({})).await, all);
    let id = all["messages"][1]["id"].as_str().unwrap().to_string();
    let mut read = tool(&app, &key, "get_message", json!({"id": id})).await;
    assert_eq!(read["message"]["unread"], false);
    assert_eq!(read["truncated"], false, "{read}");
    read.as_object_mut().unwrap().remove("truncated");
    assert_eq!(list(&app, &key, &format!("?id={id}")).await, read);
    let marked = tool(&app, &key, "mark_read", json!({"id": id, "unread": true})).await;
    assert_eq!(marked["messages"][0]["unread"], true);
    let again = app
        .post("/inbox", Auth::Bearer(&key), json!({"id": id, "unread": true}))
        .await;
    assert_eq!(again.body, marked);
    // The agent key's tools read the service inbox.
    let agent = app.agent_key.clone();
    assert_eq!(
        tool(&app, &agent, "list_inbox", json!({})).await,
        list(&app, &agent, "").await
    );
}

async fn every_corpus_message_is_filed_or_failed_with_a_reason(app: TestApp) {
    let key = app.sender("tom@tom.example", "tom.example", "me").await;
    let root = std::path::Path::new("/work/shared/corpus/eml");
    let Ok(folders) = std::fs::read_dir(root) else {
        eprintln!("no corpus at {}", root.display());
        return;
    };
    let mut files = Vec::new();
    for folder in folders {
        for file in std::fs::read_dir(folder.unwrap().path()).unwrap() {
            let path = file.unwrap().path();
            if path.extension().is_some_and(|e| e == "eml") {
                files.push(path);
            }
        }
    }
    files.sort();
    assert!(!files.is_empty());
    let drop_all = || async {
        for path in &files {
            let mut raw = b"Delivered-To: me@tom.example\n".to_vec();
            raw.extend(std::fs::read(path).unwrap());
            deliver(&app, raw).await;
        }
    };
    drop_all().await;
    let first = poll(&app).await;
    assert_eq!(first.pending, 0, "{first:?}");
    eprintln!("{} corpus messages: {first:?}", files.len());
    assert!(blobs(&app, "inbound/pending/").await.is_empty());
    let done = blobs(&app, "inbound/done/").await;
    let failed = blobs(&app, "inbound/failed/").await;
    let failed_eml: Vec<_> = failed.iter().filter(|k| k.ends_with(".eml")).collect();
    assert_eq!(done.len() + failed_eml.len(), files.len(), "{first:?}");
    assert_eq!(failed_eml.len(), first.failed);
    for eml in &failed_eml {
        let reason = app.ctx.blobs.get(&format!("{eml}.reason")).await.unwrap();
        assert!(reason.is_some_and(|r| !r.is_empty()), "{eml} has a reason");
    }
    assert_eq!(first.filed + first.duplicates + first.failed, files.len(), "{first:?}");
    let listed = list(&app, &key, "?limit=50").await;
    assert_eq!(
        listed["messages"].as_array().unwrap().len(),
        first.filed.min(50),
        "{first:?}"
    );

    // Again: nothing new is filed.
    let stored = blobs(&app, "mail/").await;
    drop_all().await;
    let second = poll(&app).await;
    assert_eq!(second.filed, 0, "{second:?}");
    assert_eq!(second.failed, first.failed);
    assert!(blobs(&app, "inbound/pending/").await.is_empty());
    assert_eq!(blobs(&app, "mail/").await, stored);
}
