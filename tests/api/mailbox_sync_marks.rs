//! The store's side of the mailbox sync at a backlog's size, without a
//! mail host: the marks a mail host pages through come in order and each
//! once however many are read side by side, a clear holds only for the
//! stamp read, and a report takes up to 500 IMAP changes, not 501.

use serde_json::{Value, json};

use crate::support::{ALLOWED_DOMAIN, Auth, SYNC_TOKEN, TestApp};
use common::service::mail_store::sync_marks;

/// 450 marks paged 200 at a time, in key order, each once; acknowledged
/// in 200s, all cleared but the one restamped meanwhile, served again.
async fn a_backlog_of_marks_pages_in_order_and_clears_once(app: TestApp) {
    let ms = app.ctx.clock.now().timestamp_millis();
    let writes: Vec<_> = (0..450)
        .map(|i| sync_marks::thread_mark("acct:u1", "me@t.example", &format!("thread-{i:04}"), ms))
        .collect();
    for chunk in writes.chunks(25) {
        app.ctx.store.transact(chunk.to_vec()).await.unwrap();
    }
    let mut served: Vec<Value> = Vec::new();
    let mut after = String::new();
    loop {
        let page = app
            .get(
                &format!("/mtaMailboxChanges?limit=200{after}"),
                Auth::Bearer(SYNC_TOKEN),
            )
            .await;
        assert_eq!(page.status, 200, "{}", page.body);
        served.extend(page.body["changes"].as_array().unwrap().iter().cloned());
        match page.body["next"].as_str() {
            Some(next) => after = format!("&after={}", crate::delivery::urlencode(next)),
            None => break,
        }
    }
    let keys: Vec<&str> = served.iter().map(|c| c["mark"].as_str().unwrap()).collect();
    let mut sorted = keys.clone();
    sorted.sort_unstable();
    sorted.dedup();
    assert_eq!(keys.len(), 450, "each mark served once");
    assert_eq!(keys, sorted, "in key order, none twice");
    // One thread changes again after the read: its old stamp clears nothing.
    app.ctx
        .store
        .transact(vec![sync_marks::thread_mark(
            "acct:u1",
            "me@t.example",
            "thread-0007",
            ms + 1,
        )])
        .await
        .unwrap();
    let applied: Vec<Value> = served
        .iter()
        .map(|c| json!({"mark": c["mark"], "stamp": c["stamp"]}))
        .collect();
    let (mut cleared, mut kept) = (0, 0);
    for chunk in applied.chunks(200) {
        let answer = app
            .post(
                "/mtaMailboxChanges",
                Auth::Bearer(SYNC_TOKEN),
                json!({ "applied": chunk }),
            )
            .await;
        assert_eq!(answer.status, 200, "{}", answer.body);
        cleared += answer.body["cleared"].as_u64().unwrap();
        kept += answer.body["kept"].as_u64().unwrap();
    }
    assert_eq!((cleared, kept), (449, 1));
    let left = app
        .get("/mtaMailboxChanges?limit=200", Auth::Bearer(SYNC_TOKEN))
        .await
        .body;
    let left: Vec<&str> = left["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["mark"].as_str().unwrap())
        .collect();
    assert_eq!(left, ["t#acct:u1#thread-0007"]);
}

/// A page of marks reads its rows together: 30 one-message threads marked
/// read through the API leave 30 row marks, and a conversation of two read
/// whole its thread's mark; the page reads the marks, that thread's
/// pointers, and every row in one BatchGetItem (a query and a batch a
/// thread before), each mark with its messages' state.
async fn a_page_of_marks_reads_its_rows_together(app: TestApp) {
    let key = app.sender(&format!("mo@{ALLOWED_DOMAIN}"), "marks.example", "mo").await;
    for i in 0..30 {
        app.receive("a@example.org", "mo@marks.example", &format!("m{i:02}"))
            .await;
    }
    for (id, irt) in [("<c1@p.example>", None), ("<c2@p.example>", Some("<c1@p.example>"))] {
        let reply = irt
            .map(|r| format!("In-Reply-To: {r}\r\nReferences: {r}\r\n"))
            .unwrap_or_default();
        let raw = format!(
            "From: pal@p.example\r\nTo: mo@marks.example\r\nSubject: Plans\r\nMessage-ID: {id}\r\n{reply}\r\nHi\r\n"
        );
        common::mail::inbound::drop_raw(&*app.ctx.blobs, raw.into_bytes())
            .await
            .unwrap();
        common::service::receiving::poller::run_once(&app.ctx).await.unwrap();
    }
    let list = app.get("/inbox?view=threads&limit=50", Auth::Bearer(&key)).await;
    let threads = list.body["threads"].as_array().unwrap().clone();
    assert_eq!(threads.len(), 31, "{}", list.body);
    for thread in &threads {
        let marked = app
            .post(
                "/inbox",
                Auth::Bearer(&key),
                json!({"thread": thread["threadId"], "unread": false}),
            )
            .await;
        assert_eq!(marked.status, 200, "{}", marked.body);
    }
    let meter = &app.ctx.store_meter;
    let before = meter.counts();
    let page = app.get("/mtaMailboxChanges?limit=200", Auth::Bearer(SYNC_TOKEN)).await;
    let read = meter.counts().since(&before);
    assert_eq!(page.status, 200, "{}", page.body);
    let changes = page.body["changes"].as_array().unwrap();
    let of_kind = |kind: &str| changes.iter().filter(|c| c["kind"] == kind).collect::<Vec<&Value>>();
    let (rows, threads) = (of_kind("message"), of_kind("thread"));
    assert_eq!((rows.len(), threads.len()), (30, 1), "{}", page.body);
    for change in rows.iter().chain(&threads) {
        let messages = change["messages"].as_array().unwrap();
        assert_eq!(
            messages.len(),
            if change["kind"] == "thread" { 2 } else { 1 },
            "{change}"
        );
        for message in messages {
            assert_eq!(
                (&message["unread"], &message["folder"]),
                (&json!(false), &json!("inbox"))
            );
        }
    }
    assert!(rows.iter().all(|c| c["mark"].as_str().unwrap().starts_with("m#")));
    assert_eq!((read.queries, read.batch_gets, read.gets), (2, 1, 0), "{read:?}");
}

/// Every door's read reaches the mail host alike: a read through REST and
/// MCP's mark_read each leave the mark the mail host pages through, with
/// the message read.
async fn rest_and_mcp_reads_are_marked_for_imap(app: TestApp) {
    let owner = format!("mo@{ALLOWED_DOMAIN}");
    let key = app.sender(&owner, "marks.example", "mo").await;
    for door in ["rest", "mcp"] {
        app.receive("a@example.org", "mo@marks.example", door).await;
    }
    let list = app.get("/inbox?limit=50", Auth::Bearer(&key)).await;
    assert_eq!(list.status, 200, "{}", list.body);
    let messages = list.body["messages"].as_array().unwrap().clone();
    let id = |door: &str| format!("<{door}@received.test>");
    let row = |door: &str| {
        let wanted = id(door);
        messages.iter().find(|m| m["messageId"] == wanted.as_str()).unwrap()["id"].clone()
    };
    let rest = app
        .post(
            "/inbox",
            Auth::Bearer(&key),
            json!({"id": row("rest"), "unread": false}),
        )
        .await;
    assert_eq!(rest.status, 200, "{}", rest.body);
    let mcp = app
        .post(
            "/mcp",
            Auth::Bearer(&key),
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": {"name": "mark_read", "arguments": {"id": row("mcp")}}}),
        )
        .await;
    assert_eq!(
        (mcp.status, &mcp.body["result"]["isError"]),
        (200, &json!(false)),
        "{}",
        mcp.body
    );
    let page = app.get("/mtaMailboxChanges?limit=200", Auth::Bearer(SYNC_TOKEN)).await;
    assert_eq!(page.status, 200, "{}", page.body);
    let mut read: Vec<String> = page.body["changes"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|c| c["messages"].as_array().unwrap().clone())
        .filter(|m| m["unread"] == false)
        .map(|m| m["messageId"].as_str().unwrap().to_string())
        .collect();
    read.sort();
    assert_eq!(read, [id("mcp"), id("rest")], "{}", page.body);
}

/// A report of 500 changes is taken (about no mailbox here: ignored);
/// one of 501 is refused whole.
async fn a_report_takes_up_to_500_changes(app: TestApp) {
    let changes = |n: usize| -> Vec<Value> {
        (0..n)
            .map(|i| json!({"seq": i + 1, "mailbox": "nobody@nowhere.example", "messageId": format!("<m{i}@x>"), "seen": true}))
            .collect()
    };
    let taken = app
        .post(
            "/mtaImapChanges",
            Auth::Bearer(SYNC_TOKEN),
            json!({"changes": changes(500)}),
        )
        .await;
    assert_eq!(taken.status, 200, "{}", taken.body);
    assert_eq!(taken.body["ignored"], 500);
    let refused = app
        .post(
            "/mtaImapChanges",
            Auth::Bearer(SYNC_TOKEN),
            json!({"changes": changes(501)}),
        )
        .await;
    assert_eq!(refused.status, 400, "{}", refused.body);
}

crate::on_both_backends!(
    a_page_of_marks_reads_its_rows_together,
    rest_and_mcp_reads_are_marked_for_imap,
    a_backlog_of_marks_pages_in_order_and_clears_once,
    a_report_takes_up_to_500_changes
);
