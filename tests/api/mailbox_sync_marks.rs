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

/// A page of thread marks reads its threads' rows together: 30 threads
/// marked read through the API come back in one page whose rows are one
/// BatchGetItem (one a thread before), each with its message's state.
async fn a_page_of_thread_marks_reads_its_rows_together(app: TestApp) {
    let key = app.sender(&format!("mo@{ALLOWED_DOMAIN}"), "marks.example", "mo").await;
    for i in 0..30 {
        app.receive("a@example.org", "mo@marks.example", &format!("m{i:02}"))
            .await;
    }
    let list = app.get("/inbox?view=threads&limit=50", Auth::Bearer(&key)).await;
    let threads = list.body["threads"].as_array().unwrap().clone();
    assert_eq!(threads.len(), 30, "{}", list.body);
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
    let threads: Vec<&Value> = page.body["changes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["kind"] == "thread")
        .collect();
    assert_eq!(threads.len(), 30, "{}", page.body);
    for change in &threads {
        let messages = change["messages"].as_array().unwrap();
        assert_eq!(messages.len(), 1, "{change}");
        assert_eq!(
            (&messages[0]["unread"], &messages[0]["folder"]),
            (&json!(false), &json!("inbox"))
        );
    }
    assert_eq!(read.batch_gets, 1, "{read:?}");
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
    a_page_of_thread_marks_reads_its_rows_together,
    a_backlog_of_marks_pages_in_order_and_clears_once,
    a_report_takes_up_to_500_changes
);
