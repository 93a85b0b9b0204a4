//! IMAP changes applied in batches (`mailbox_sync::imap_batch`), exactly:
//! a report mixing threads and folders is applied once, in one
//! transaction; a transaction refused because an API change came between
//! the batch's read and its write is applied again one change at a time,
//! the later change winning (the conflict rule); a report sent again
//! applies nothing twice.

use serde_json::{Value, json};

use crate::support::{Auth, SYNC_TOKEN, TestApp};
use common::auth::{Caller, Via};
use common::service::caller::Call;
use common::service::mail_store::{self, Row, Thread};
use common::service::mailboxes::{self, Mailbox};
use common::service::receiving::mailbox_sync::imap::{self, ImapChange};
use common::service::receiving::mailbox_sync::{Place, imap_batch};
use common::service::receiving::poller;

const ME: &str = "me@tom.example";

fn message(id: &str, replies_to: Option<&str>) -> Vec<u8> {
    let thread = replies_to
        .map(|r| format!("In-Reply-To: {r}\r\nReferences: {r}\r\n"))
        .unwrap_or_default();
    format!(
        "From: pal@partner.example\r\nTo: {ME}\r\nSubject: Plans {id}\r\nMessage-ID: {id}\r\n{thread}\r\nHello.\r\n"
    )
    .into_bytes()
}

/// The mailbox with a1 and its reply a2 (one thread), b1, and c1, unread
/// in the inbox: the key, and each message's id and thread by Message-ID.
async fn filled(app: &TestApp) -> String {
    let key = app.sender("tom@tom.example", "tom.example", "me").await;
    for (id, reply) in [
        ("<a1@p.example>", None),
        ("<a2@p.example>", Some("<a1@p.example>")),
        ("<b1@p.example>", None),
        ("<c1@p.example>", None),
    ] {
        mailhost::deliver(&app.data_dir, message(id, reply)).await.unwrap();
    }
    assert_eq!(poller::run_once(&app.ctx).await.unwrap().filed, 4);
    key
}

async fn scope(app: &TestApp) -> String {
    let mailbox = mailboxes::by_address(&app.ctx, ME).await.unwrap().unwrap();
    mailbox.reading_scope(&app.ctx.config.service_domain)
}

/// The stored row (a read over the API would mark it read), its main copy
/// agreeing with its copy by Message-ID.
async fn row(app: &TestApp, message_id: &str) -> Row {
    let scope = scope(app).await;
    let by_mid = mail_store::by_message_id(&app.ctx, &scope, message_id, None, |p| p.mailbox == ME)
        .await
        .unwrap()
        .unwrap();
    let main = mail_store::by_id(&app.ctx, &scope, &by_mid.id).await.unwrap().unwrap();
    assert_eq!(
        (main.unread, main.folder()),
        (by_mid.unread, by_mid.folder()),
        "{message_id}'s copies agree"
    );
    main
}

async fn summary(app: &TestApp, message_id: &str) -> Thread {
    let thread = row(app, message_id).await.thread_id;
    mail_store::thread(&app.ctx, &scope(app).await, &thread)
        .await
        .unwrap()
        .unwrap()
}

/// (unread, folder) of a message.
async fn state(app: &TestApp, message_id: &str) -> (bool, &'static str) {
    let r = row(app, message_id).await;
    (r.unread, r.folder().as_str())
}

/// The Message-IDs of a list of messages, sorted.
fn ids_of(messages: &Value) -> Vec<String> {
    let mut ids: Vec<String> = messages
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["messageId"].as_str().unwrap().to_string())
        .collect();
    ids.sort();
    ids
}

/// The marks waiting for the mail host: each one's kind and the
/// Message-IDs it carries the state of, sorted.
async fn marked(app: &TestApp) -> Vec<(String, Vec<String>)> {
    let marks = app
        .get("/mtaMailboxChanges?limit=200", Auth::Bearer(SYNC_TOKEN))
        .await
        .body;
    let mut marked: Vec<(String, Vec<String>)> = marks["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["kind"].as_str().unwrap().to_string(), ids_of(&c["messages"])))
        .collect();
    marked.sort();
    marked
}

/// The Message-IDs a folder lists, and the unread counts of its threads.
async fn listed(app: &TestApp, key: &str, folder: &str) -> (Vec<String>, i64) {
    let messages = app
        .get(&format!("/inbox?folder={folder}"), Auth::Bearer(key))
        .await
        .body;
    let ids = ids_of(&messages["messages"]);
    let threads = app
        .get(&format!("/inbox?view=threads&folder={folder}"), Auth::Bearer(key))
        .await
        .body;
    let unread = threads["threads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["unreadCount"].as_i64().unwrap())
        .sum();
    (ids, unread)
}

fn change(seq: i64, message_id: &str, seen: Option<bool>, place: Option<&str>) -> Value {
    let mut c = json!({"seq": seq, "mailbox": ME, "messageId": message_id});
    if let Some(seen) = seen {
        c["seen"] = json!(seen);
    }
    if let Some(place) = place {
        c["place"] = json!(place);
    }
    c
}

async fn report(app: &TestApp, changes: Vec<Value>) -> Value {
    let res = app
        .post(
            "/mtaImapChanges",
            Auth::Bearer(SYNC_TOKEN),
            json!({ "changes": changes }),
        )
        .await;
    assert_eq!(res.status, 200, "{}", res.body);
    res.body
}

/// Four changes over three threads, a flag on each and a move of one,
/// applied in one transaction: every row and summary as IMAP left them,
/// each change marked for the way back. The same report again applies
/// nothing, even after the API changed a message back: its number says it
/// was applied.
async fn a_batch_over_threads_and_folders_is_applied_once(app: TestApp) {
    let key = filled(&app).await;
    let before = app.ctx.store_meter.counts();
    let batch = vec![
        change(1, "<a1@p.example>", Some(true), None),
        change(2, "<a2@p.example>", Some(true), None),
        change(3, "<b1@p.example>", Some(true), None),
        change(4, "<c1@p.example>", Some(true), Some("archive")),
    ];
    let answer = report(&app, batch.clone()).await;
    let spent = app.ctx.store_meter.counts().since(&before);
    assert_eq!(
        (answer["applied"].clone(), answer["ignored"].clone()),
        (json!(4), json!(0)),
        "{answer}"
    );
    assert_eq!(spent.transactions, 1, "four changes, one transaction: {spent:?}");
    assert!(spent.batch_gets >= 2, "rows and summaries read together: {spent:?}");
    for id in ["<a1@p.example>", "<a2@p.example>", "<b1@p.example>"] {
        assert_eq!(state(&app, id).await, (false, "inbox"), "{id}");
    }
    assert_eq!(state(&app, "<c1@p.example>").await, (false, "archive"));
    assert_eq!(summary(&app, "<a1@p.example>").await.unread_count, 0);
    let c = summary(&app, "<c1@p.example>").await;
    assert_eq!((c.unread_count, c.folder.as_str()), (0, "archive"));
    // The folders' copies and thread lists followed.
    assert_eq!(listed(&app, &key, "archive").await, (vec!["<c1@p.example>".into()], 0));
    let inbox = ["<a1@p.example>", "<a2@p.example>", "<b1@p.example>"]
        .map(String::from)
        .to_vec();
    assert_eq!(listed(&app, &key, "inbox").await, (inbox, 0));
    // Each change marked for IMAP: a thread moved or with two flags by
    // its thread, a flag alone in its thread by its row.
    assert_eq!(
        marked(&app).await,
        [
            ("message".into(), vec!["<b1@p.example>".into()]),
            ("thread".into(), vec!["<a1@p.example>".into(), "<a2@p.example>".into()]),
            ("thread".into(), vec!["<c1@p.example>".into()]),
        ]
    );

    // The API marks a1 unread again; the same report comes again (the mail
    // host stopped before it saved its place), with one new change.
    let a1 = row(&app, "<a1@p.example>").await;
    let res = app
        .post("/inbox", Auth::Bearer(&key), json!({"id": a1.id, "unread": true}))
        .await;
    assert_eq!(res.status, 200, "{}", res.body);
    let mut again = batch;
    again.push(change(5, "<b1@p.example>", Some(false), None));
    let answer = report(&app, again).await;
    assert_eq!(
        (answer["applied"].clone(), answer["ignored"].clone()),
        (json!(1), json!(4)),
        "{answer}"
    );
    assert_eq!(state(&app, "<a1@p.example>").await, (true, "inbox"), "not read again");
    assert_eq!(state(&app, "<b1@p.example>").await, (true, "inbox"));
    assert_eq!(summary(&app, "<a1@p.example>").await.unread_count, 1);
    assert_eq!(summary(&app, "<b1@p.example>").await.unread_count, 1);
    assert_eq!(listed(&app, &key, "inbox").await.1, 2);
}

fn imap_change(seq: i64, message_id: &str, seen: Option<bool>, place: Option<Place>) -> ImapChange {
    ImapChange {
        seq,
        mailbox: ME.into(),
        message_id: message_id.into(),
        seen,
        place,
        direction: None,
        raw: None,
        settled: false,
    }
}

/// The batch reads its rows, then the API reads b1, moves a's thread to
/// the trash and c's to the archive, then the batch writes: its
/// transaction is refused, and each change is applied one at a time as
/// the rows are now. IMAP's changes reached the store last, so they win:
/// b1 unread again (a change the rows as first read made look like none),
/// a's thread in the archive, c1 read where the API put it; nothing
/// applied twice, the counts exact.
async fn a_batch_that_loses_a_race_is_applied_one_change_at_a_time(app: TestApp) {
    let key = filled(&app).await;
    let mailbox: Mailbox = mailboxes::by_address(&app.ctx, ME).await.unwrap().unwrap();
    let scope = mailbox.reading_scope(&app.ctx.config.service_domain);
    let changes = vec![
        imap_change(1, "<a1@p.example>", Some(true), Some(Place::Archive)),
        imap_change(2, "<b1@p.example>", Some(false), None),
        imap_change(3, "<c1@p.example>", Some(true), None),
    ];
    let known = imap_batch::known(&app.ctx, &scope, ME, &changes).await.unwrap();

    let b1 = row(&app, "<b1@p.example>").await;
    let res = app
        .post("/inbox", Auth::Bearer(&key), json!({"id": b1.id, "unread": false}))
        .await;
    assert_eq!(res.status, 200, "{}", res.body);
    for (id, folder) in [("<a1@p.example>", "trash"), ("<c1@p.example>", "archive")] {
        let moved = row(&app, id).await.id;
        let res = app
            .post("/inbox", Auth::Bearer(&key), json!({"id": moved, "folder": folder}))
            .await;
        assert_eq!(res.status, 200, "{}", res.body);
    }

    let before = app.ctx.store_meter.counts();
    let caller = Caller::Sync;
    let call = Call::new(&app.ctx, &caller, Via::Bearer, "127.0.0.1");
    let answer = imap::report_mailbox(&call, &mailbox, changes.clone(), Some(known))
        .await
        .unwrap();
    let spent = app.ctx.store_meter.counts().since(&before);
    assert_eq!((answer.applied, answer.ignored), (3, 0), "{answer:?}");
    assert!(spent.transactions >= 3, "refused, then one at a time: {spent:?}");
    assert_eq!(state(&app, "<a1@p.example>").await, (false, "archive"));
    assert_eq!(state(&app, "<a2@p.example>").await, (true, "archive"));
    assert_eq!(state(&app, "<b1@p.example>").await, (true, "inbox"));
    assert_eq!(state(&app, "<c1@p.example>").await, (false, "archive"));
    let a = summary(&app, "<a1@p.example>").await;
    assert_eq!((a.unread_count, a.folder.as_str()), (1, "archive"));
    assert_eq!(summary(&app, "<b1@p.example>").await.unread_count, 1);
    assert_eq!(summary(&app, "<c1@p.example>").await.unread_count, 0);
    assert_eq!(listed(&app, &key, "trash").await, (vec![], 0));
    assert_eq!(listed(&app, &key, "inbox").await, (vec!["<b1@p.example>".into()], 1));

    // Sent again with the rows as first read: numbered, nothing applied.
    let stale = imap_batch::known(&app.ctx, &scope, ME, &changes).await.unwrap();
    let answer = imap::report_mailbox(&call, &mailbox, changes, Some(stale))
        .await
        .unwrap();
    assert_eq!((answer.applied, answer.ignored), (0, 3), "{answer:?}");
}

/// Flag changes the mail host found IMAP holding (`settled`) are applied
/// and marked nothing back: the mail host would only read them to set
/// what IMAP has. One not settled in the same thread, and a move, are.
async fn settled_flags_are_applied_and_not_marked_back(app: TestApp) {
    let key = filled(&app).await;
    let settled = |mut c: Value| {
        c["settled"] = json!(true);
        c
    };
    let answer = report(
        &app,
        vec![
            settled(change(1, "<a1@p.example>", Some(true), None)),
            settled(change(2, "<b1@p.example>", Some(true), None)),
            change(3, "<a2@p.example>", Some(true), None),
            settled(change(4, "<c1@p.example>", Some(true), Some("archive"))),
        ],
    )
    .await;
    assert_eq!(answer["applied"], 4, "{answer}");
    for id in ["<a1@p.example>", "<a2@p.example>", "<b1@p.example>"] {
        assert_eq!(state(&app, id).await, (false, "inbox"), "{id}");
    }
    assert_eq!(state(&app, "<c1@p.example>").await, (false, "archive"));
    assert_eq!(listed(&app, &key, "inbox").await.1, 0);
    assert_eq!(
        marked(&app).await,
        [
            ("message".into(), vec!["<a2@p.example>".into()]),
            ("thread".into(), vec!["<c1@p.example>".into()]),
        ]
    );
}

crate::on_both_backends!(
    settled_flags_are_applied_and_not_marked_back,
    a_batch_over_threads_and_folders_is_applied_once,
    a_batch_that_loses_a_race_is_applied_one_change_at_a_time
);
