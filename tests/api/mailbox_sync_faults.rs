//! The mailbox sync under its faults (issue 42): the agent killed mid-run,
//! Dovecot restarted, the service answering 503 for a while; and a backlog
//! after the sync was down, in step within a minute. The invariants at the
//! end: nothing lost, nothing doubled, flags and folders equal on both
//! sides.

use std::process::{Child, Command};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use futures::StreamExt;
use serde_json::{Value, json};

use crate::mail_host::{MailHost, Rig, rig_on};
use crate::mailbox_sync::{Imap, both_sides, eventually, fill, listed, receive, within};
use crate::support::{Auth, Backend, SYNC_TOKEN};

/// The service behind a switch: forwarded, or 503 for every request, or
/// forwarded with the answer lost (the service took it, the caller hears
/// 502).
pub(crate) struct Switch {
    pub(crate) url: String,
    down: Arc<AtomicBool>,
    lose: Arc<AtomicBool>,
    server: tokio::task::JoinHandle<()>,
}

impl Drop for Switch {
    fn drop(&mut self) {
        self.server.abort();
    }
}

impl Switch {
    pub(crate) async fn start(target: String) -> Switch {
        let down = Arc::new(AtomicBool::new(false));
        let lose = Arc::new(AtomicBool::new(false));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let client = reqwest::Client::new();
        let (is_down, is_lost) = (down.clone(), lose.clone());
        let app = axum::Router::new().fallback(move |request: axum::extract::Request| {
            let (client, target, is_down, is_lost) = (client.clone(), target.clone(), is_down.clone(), is_lost.clone());
            async move {
                use axum::response::IntoResponse;
                if is_down.load(Ordering::SeqCst) {
                    return (
                        axum::http::StatusCode::SERVICE_UNAVAILABLE,
                        [("content-type", "application/json")],
                        r#"{"ok":false,"error":"Service temporarily unavailable"}"#,
                    )
                        .into_response();
                }
                let method = request.method().clone();
                let path = request
                    .uri()
                    .path_and_query()
                    .map(|p| p.to_string())
                    .unwrap_or_default();
                let headers = request.headers().clone();
                let body = axum::body::to_bytes(request.into_body(), 64 << 20).await.unwrap();
                let mut forwarded = client.request(method, format!("{target}{path}")).body(body.to_vec());
                for name in ["authorization", "content-type"] {
                    if let Some(value) = headers.get(name) {
                        forwarded = forwarded.header(name, value.clone());
                    }
                }
                match forwarded.send().await {
                    Ok(answer) if is_lost.load(Ordering::SeqCst) => {
                        let _ = answer.bytes().await;
                        axum::http::StatusCode::BAD_GATEWAY.into_response()
                    }
                    Ok(answer) => {
                        let status = answer.status();
                        let kind = answer
                            .headers()
                            .get("content-type")
                            .cloned()
                            .unwrap_or(axum::http::HeaderValue::from_static("application/octet-stream"));
                        let bytes = answer.bytes().await.unwrap_or_default();
                        (status, [("content-type", kind)], bytes.to_vec()).into_response()
                    }
                    Err(_) => axum::http::StatusCode::BAD_GATEWAY.into_response(),
                }
            }
        });
        let server = tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        Switch {
            url,
            down,
            lose,
            server,
        }
    }

    fn set_down(&self, down: bool) {
        self.down.store(down, Ordering::SeqCst);
    }

    pub(crate) fn set_answers_lost(&self, lost: bool) {
        self.lose.store(lost, Ordering::SeqCst);
    }
}

/// A `mailhost mailbox-sync` of the test's own, against `url`, with the
/// mail host's state file (so it goes on where the last one stopped).
pub(crate) struct Agent(Child);

impl Agent {
    pub(crate) fn start(host: &MailHost, url: &str) -> Agent {
        let dir = &host.dir;
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.join("test-agent.log"))
            .unwrap();
        let child = Command::new(env!("CARGO_BIN_EXE_mailhost"))
            .args(["mailbox-sync", "--url", url, "--interval-ms", "100"])
            .arg("--dovecot-log")
            .arg(dir.join("state/dovecot.log"))
            .arg("--doveadm")
            .arg(format!("doveadm -c {}", dir.join("dovecot.conf").display()))
            .arg("--state")
            .arg(dir.join("state/mailbox-sync.json"))
            .env("MAILHOST_SYNC_TOKEN", SYNC_TOKEN)
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap();
        Agent(child)
    }

    /// SIGKILL: no chance to finish or save anything.
    pub(crate) fn kill(mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

pub(crate) fn script(dir: &std::path::Path, command: &str) {
    let out = Command::new(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/mail-host"))
        .args([command, dir.to_str().unwrap()])
        .env("MAILHOST_BIN", env!("CARGO_BIN_EXE_mailhost"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{command}: {out:?}");
}

fn restart_dovecot(dir: &std::path::Path) {
    let conf = dir.join("dovecot.conf");
    let _ = Command::new("doveadm")
        .arg("-c")
        .arg(&conf)
        .arg("stop")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status();
    for _ in 0..50 {
        // No pipes: the daemon would hold them open, and a wait for its
        // output would never end.
        let started = Command::new("dovecot")
            .arg("-c")
            .arg(&conf)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .unwrap();
        if started.success() {
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("dovecot did not start again");
}

type Side = Vec<(String, bool, String)>;

/// Every message of the mailbox on both sides: API rows (Message-ID,
/// read, folder) and IMAP copies in INBOX, Archive and Trash.
async fn sides(rig: &Rig, imap: &Imap) -> (Side, Side) {
    let mut api: Side = crate::mail_host::all_rows(&rig.app, &rig.key)
        .await
        .iter()
        .map(|r| {
            (
                r["messageId"].as_str().unwrap().to_string(),
                r["unread"] == false,
                r["folder"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    api.sort();
    (api, imap_side(imap).await)
}

/// The rows the API lists, as the store holds them: read in pages of a
/// megabyte, where the API's own pages of 50 took some 20 s at 10 000 (a
/// check that long put that much on every figure timed with it).
async fn stored_side(rig: &Rig) -> Side {
    let scope = common::keys::inbox_account_scope(&rig.app.uid_of_key(&rig.key).await);
    let rows: Vec<common::service::mail_store::Row> = common::store::StoreExt::all_records(
        &*rig.app.ctx.store,
        common::store::Query::partition(common::keys::mail_partition(&scope, false)),
    )
    .await
    .unwrap();
    let mut side: Side = rows
        .iter()
        .map(|r| (r.message_id.clone(), !r.unread, r.folder().as_str().to_string()))
        .collect();
    side.sort();
    side
}

async fn imap_side(imap: &Imap) -> Side {
    let mut in_imap = Vec::new();
    for (folder, name) in [("INBOX", "inbox"), ("Archive", "archive"), ("Trash", "trash")] {
        for copy in imap.messages(folder).await {
            let seen = copy["flags"].as_array().unwrap().iter().any(|f| f == "\\Seen");
            in_imap.push((
                copy["messageId"].as_str().unwrap_or_default().to_string(),
                seen,
                name.to_string(),
            ));
        }
    }
    in_imap.sort();
    in_imap
}

pub(crate) async fn started(backend: Backend) -> Option<Rig> {
    let rig = rig_on(backend, |config| config.inbound_poll_ms = 100).await?;
    rig.start().await;
    Some(rig)
}

/// Killed mid-run, Dovecot restarted, the service answering 503: nothing
/// lost, nothing applied twice, both sides equal at the end.
async fn the_sync_loses_nothing_to_its_faults(backend: Backend) {
    let Some(rig) = started(backend).await else {
        return;
    };
    let (app, key, dir) = (&rig.app, &rig.key, rig.host.dir.clone());
    let imap = Imap::of(&rig, "me@tom.example");
    let mut rows = Vec::new();
    for i in 0..24 {
        rows.push(
            receive(
                &rig,
                &imap,
                "me@tom.example",
                &format!("Fault {i}"),
                &format!("<fault-{i}@example.org>"),
            )
            .await,
        );
    }
    let mid = |i: usize| format!("<fault-{i}@example.org>");
    // The agent stops; both doors change meanwhile.
    script(&dir, "mailbox-sync-stop");
    let mut ops = Vec::new();
    for i in 0..6 {
        ops.push(json!({"op": "store", "box": "INBOX", "messageId": mid(i), "flags": "+FLAGS (\\Seen)"}));
    }
    for i in 6..9 {
        ops.push(json!({"op": "move", "box": "INBOX", "messageId": mid(i), "to": "Archive"}));
    }
    for i in 9..11 {
        ops.push(json!({"op": "expunge", "box": "INBOX", "messageId": mid(i)}));
    }
    // Old mail appended and moved on before the agent read its append: its
    // bytes are found where it went.
    let moved_on = "<fault-moved@example.org>";
    ops.push(json!({"op": "append", "box": "INBOX", "flags": "()", "raw": format!(
        "From: old@example.net\r\nTo: me@tom.example\r\nSubject: Moved on\r\nMessage-ID: {moved_on}\r\nDate: Mon, 7 Jan 2019 10:00:00 +0000\r\n\r\nOld.\r\n"
    )}));
    ops.push(json!({"op": "move", "box": "INBOX", "messageId": moved_on, "to": "Archive"}));
    for answer in imap.run(json!(ops)).await {
        assert!(answer.get("error").is_none(), "{answer}");
    }
    for row in &rows[11..15] {
        let marked = app
            .post("/inbox", Auth::Bearer(key), json!({"id": row["id"], "unread": false}))
            .await;
        assert_eq!(marked.status, 200);
    }
    for row in &rows[15..17] {
        let moved = app
            .post("/inbox", Auth::Bearer(key), json!({"id": row["id"], "folder": "trash"}))
            .await;
        assert_eq!(moved.status, 200);
    }
    let sent = app
        .send_mail(
            Auth::Bearer(key),
            json!({"from": "me@tom.example", "to": "pal@elsewhere.test", "subject": "While away", "text": "Hi."}),
        )
        .await;
    assert_eq!(sent.status, 200, "{}", sent.body);
    let sent_id = sent.body["messageId"].as_str().unwrap().to_string();

    // Back, but the service answers 503 for a while; Dovecot restarts.
    let switch = Switch::start(format!("{}/api", app.base)).await;
    switch.set_down(true);
    let agent = Agent::start(&rig.host, &switch.url);
    tokio::time::sleep(Duration::from_secs(2)).await;
    restart_dovecot(&dir);
    imap.one(json!({"op": "store", "box": "INBOX", "messageId": mid(17), "flags": "+FLAGS (\\Seen)"}))
        .await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    switch.set_down(false);
    // Killed mid-run, twice, and started again.
    tokio::time::sleep(Duration::from_millis(150)).await;
    agent.kill();
    let agent = Agent::start(&rig.host, &switch.url);
    tokio::time::sleep(Duration::from_millis(300)).await;
    agent.kill();
    imap.one(json!({"op": "move", "box": "INBOX", "messageId": mid(18), "to": "Trash"}))
        .await;
    let _agent = Agent::start(&rig.host, &switch.url);

    // In step: every message once, the same flag and folder on both sides.
    let (api, in_imap) = within(60, "both sides equal after the faults", || async {
        let (api, in_imap) = sides(&rig, &imap).await;
        (api == in_imap).then_some((api, in_imap))
    })
    .await;
    assert_eq!(api.len(), 23, "24 received, 2 expunged, 1 appended: {api:?}");
    assert_eq!(
        api.iter().find(|(m, _, _)| m == moved_on),
        Some(&(moved_on.to_string(), false, "archive".to_string())),
        "appended, then moved before the agent looked: filed where it went"
    );
    assert_eq!(api, in_imap);
    let state = |i: usize| api.iter().find(|(m, _, _)| *m == mid(i)).cloned();
    for i in (0..6).chain(11..15).chain([17]) {
        assert!(state(i).unwrap().1, "{i} read on both sides");
    }
    for i in 6..9 {
        assert_eq!(state(i).unwrap().2, "archive");
    }
    for i in [9, 10] {
        assert!(state(i).is_none(), "{i} expunged: gone from the API");
    }
    for i in [15, 16, 18] {
        assert_eq!(state(i).unwrap().2, "trash");
    }
    let saved = eventually("the send saved to Sent once", || async {
        let copies = imap.messages("Sent").await;
        let n = copies.iter().filter(|m| m["messageId"] == sent_id.as_str()).count();
        (n >= 1).then_some(n)
    })
    .await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(saved, 1);
    assert_eq!(
        imap.messages("Sent")
            .await
            .iter()
            .filter(|m| m["messageId"] == sent_id.as_str())
            .count(),
        1,
        "never doubled"
    );
    // Changes over IMAP applied once each: one audit row per report, and no
    // message counted twice across them.
    let audit = app
        .get("/audit?operation=imapChanges&limit=100", Auth::Bearer(key))
        .await
        .body;
    let mut touched: Vec<String> = audit["changes"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|c| c["details"].as_array().cloned().unwrap_or_default())
        .map(|d| d.to_string())
        .collect();
    let all = touched.len();
    touched.sort();
    touched.dedup();
    assert_eq!(touched.len(), all, "no IMAP change applied twice: {audit}");
}

/// A person's change Dovecot did not log (a session storing on a view older
/// than the agent's change) is found by the agent's second look; the
/// service answering 503 just then must not lose it: it is reported once
/// the service is back, and both sides end equal.
async fn a_change_found_on_a_second_look_survives_a_failed_report(backend: Backend) {
    let Some(rig) = started(backend).await else {
        return;
    };
    let (app, key, dir) = (&rig.app, &rig.key, rig.host.dir.clone());
    let imap = Imap::of(&rig, "me@tom.example");
    let mid = "<second-look@example.org>";
    let row = receive(&rig, &imap, "me@tom.example", "Second look", mid).await;
    script(&dir, "mailbox-sync-stop");
    let switch = Switch::start(format!("{}/api", app.base)).await;
    let _agent = Agent::start(&rig.host, &switch.url);
    // The app looks (the message unread), then stores on that view later.
    let go = dir.join("second-look-go");
    let stale_session = imap.run(json!([
        {"op": "select", "box": "INBOX"},
        {"op": "uid_of", "messageId": mid},
        {"op": "wait_file", "path": go},
        {"op": "store_uid", "flags": "-FLAGS (\\Seen)"},
    ]));
    let flip = async {
        tokio::time::sleep(Duration::from_millis(800)).await;
        let read = app
            .post("/inbox", Auth::Bearer(key), json!({"id": row["id"], "unread": false}))
            .await;
        assert_eq!(read.status, 200, "{}", read.body);
        eventually("the API's read flag in IMAP", || async {
            let (_, in_imap) = both_sides(app, key, &imap, mid).await;
            in_imap?.0.then_some(())
        })
        .await;
        let set = Instant::now();
        // Past the agent's first look (3 s after it set the flag), the
        // service away, then the app's store: the second look (15 s) finds
        // it while every report answers 503.
        tokio::time::sleep(Duration::from_secs(4)).await;
        switch.set_down(true);
        std::fs::write(&go, b"").unwrap();
        tokio::time::sleep(Duration::from_secs(20).saturating_sub(set.elapsed())).await;
    };
    let (answers, ()) = tokio::join!(stale_session, flip);
    assert!(answers.iter().all(|a| a.get("error").is_none()), "{answers:?}");
    let (api, in_imap) = both_sides(app, key, &imap, mid).await;
    assert_eq!(
        api.map(|(read, _)| read),
        Some(true),
        "nothing reached the store meanwhile"
    );
    assert_eq!(in_imap.map(|(seen, _)| seen), Some(false), "the app's store, unlogged");
    switch.set_down(false);
    within(20, "the app's later store on both sides", || async {
        let (api, in_imap) = both_sides(app, key, &imap, mid).await;
        (!api.as_ref()?.0 && api == in_imap).then_some(())
    })
    .await;
}

/// The service takes reports whose answers never reach the agent, while an
/// expunge's deletion falls due and the app appends: each report is sent
/// again, and whatever the service took before it, nothing in it is skipped.
/// (Numbered again from the agent's last saved number, the append took the
/// number the deletion had had, and the service, which skips what it has
/// applied, never filed it: in IMAP alone.)
async fn reports_whose_answers_were_lost_skip_nothing_new(backend: Backend) {
    let Some(rig) = started(backend).await else {
        return;
    };
    let (app, key, dir) = (&rig.app, &rig.key, rig.host.dir.clone());
    let imap = Imap::of(&rig, "me@tom.example");
    let gone = "<lost-answer-gone@example.org>";
    let read = "<lost-answer-read@example.org>";
    let appended = "<lost-answer-appended@example.org>";
    receive(&rig, &imap, "me@tom.example", "Gone", gone).await;
    receive(&rig, &imap, "me@tom.example", "Read", read).await;
    script(&dir, "mailbox-sync-stop");
    let switch = Switch::start(format!("{}/api", app.base)).await;
    let _agent = Agent::start(&rig.host, &switch.url);
    // Expunged with no copy left: a deletion once its grace is over.
    imap.one(json!({"op": "expunge", "box": "INBOX", "messageId": gone}))
        .await;
    let expunged = Instant::now();
    // From now on the service takes every report and the agent hears none.
    switch.set_answers_lost(true);
    imap.one(json!({"op": "store", "box": "INBOX", "messageId": read, "flags": "+FLAGS (\\Seen)"}))
        .await;
    // Past the grace: the deletion goes with the flag (the agent before
    // this fix sent them together, and the service took both, unanswered).
    let grace = Duration::from_millis(mailhost::mailbox_sync::EXPUNGE_GRACE_MS as u64);
    tokio::time::sleep((grace + Duration::from_secs(3)).saturating_sub(expunged.elapsed())).await;
    imap.one(json!({"op": "append", "box": "INBOX", "flags": "()", "raw": format!(
        "From: old@example.net\r\nTo: me@tom.example\r\nSubject: Kept\r\nMessage-ID: {appended}\r\nDate: Mon, 7 Jan 2019 10:00:00 +0000\r\n\r\nOld.\r\n"
    )}))
    .await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    switch.set_answers_lost(false);
    within(
        20,
        "the appended mail filed, the flag and the deletion kept",
        || async {
            let filed = listed(app, key, appended).await?;
            let flagged = listed(app, key, read).await?;
            (flagged["unread"] == false && listed(app, key, gone).await.is_none()).then_some(filed)
        },
    )
    .await;
    let (api, in_imap) = within(30, "both sides equal", || async {
        let (api, in_imap) = sides(&rig, &imap).await;
        (api == in_imap).then_some((api, in_imap))
    })
    .await;
    assert_eq!(api.len(), 2, "{api:?} / {in_imap:?}");
}

/// A backlog after the sync was down: the mailbox's messages changed on both
/// sides while the agent was away are in step within a minute of its return.
/// `SYNC_BACKLOG=n` messages (default 400; the benchmark runs 10 000).
async fn a_backlog_is_in_step_within_a_minute(backend: Backend) {
    let Some(rig) = started(backend).await else {
        return;
    };
    let (app, key, dir) = (&rig.app, &rig.key, rig.host.dir.clone());
    let imap = Imap::of(&rig, "me@tom.example");
    let n: usize = std::env::var("SYNC_BACKLOG")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(400);
    fill(&rig, &imap, n, "backlog").await;

    // Down: the API reads half (eight requests at a time), IMAP reads the
    // other half and archives a tenth (a mail app's selection: one command
    // per few hundred UIDs, each message its own line in Dovecot's log).
    script(&dir, "mailbox-sync-stop");
    let rows = crate::mail_host::all_rows(app, key).await;
    let (api_half, imap_half) = rows.split_at(n / 2);
    let marks: Vec<u16> = futures::stream::iter(api_half)
        .map(|row| async move {
            app.post("/inbox", Auth::Bearer(key), json!({"id": row["id"], "unread": false}))
                .await
                .status
        })
        .buffer_unordered(8)
        .collect()
        .await;
    assert!(marks.iter().all(|s| *s == 200), "{marks:?}");
    let ids = |rows: Vec<&Value>| rows.iter().map(|r| r["messageId"].clone()).collect::<Vec<Value>>();
    let archived: Vec<&Value> = imap_half.iter().step_by(10).collect();
    let answers = imap
        .run(json!([
            {"op": "store_ids", "box": "INBOX", "messageIds": ids(imap_half.iter().collect()), "flags": "+FLAGS (\\Seen)"},
            {"op": "move_ids", "box": "INBOX", "messageIds": ids(archived.clone()), "to": "Archive"},
        ]))
        .await;
    assert_eq!(answers[0]["ok"], imap_half.len(), "{answers:?}");
    assert_eq!(answers[1]["ok"], archived.len(), "{answers:?}");

    // Back: timed until both sides are equal and everything is read: the
    // store's rows (what the API lists) read straight from the store, and
    // IMAP's folders. When the check that saw it started is printed too.
    let agent_log = dir.join("mailbox-sync.log");
    let logged_before = std::fs::metadata(&agent_log).map_or(0, |m| m.len() as usize);
    let back = Instant::now();
    script(&dir, "mailbox-sync-start");
    let seen_from = within(300, "the backlog in step", || async {
        // A second between checks: the check's reads load the store the
        // sync is using.
        tokio::time::sleep(Duration::from_secs(1)).await;
        let checking = back.elapsed();
        let (stored, in_imap) = (stored_side(&rig).await, imap_side(&imap).await);
        (stored.len() == n && stored == in_imap && stored.iter().all(|(_, read, _)| *read)).then_some(checking)
    })
    .await;
    let took = back.elapsed();
    eprintln!(
        "a backlog of {n} messages in step {} ms after the sync came back (the check that saw it started at {} ms)",
        took.as_millis(),
        seen_from.as_millis()
    );
    // The agent's own account of its rounds since it came back (a round
    // prints when it ends): it applied the API's reads and the moves'
    // thread marks, and none of IMAP's own flags came back to it (the
    // agent found IMAP holding them: settled).
    let since_back = || {
        let log = std::fs::read_to_string(&agent_log).unwrap_or_default();
        log.get(logged_before..).unwrap_or(&log).to_string()
    };
    let expected = api_half.len() + archived.len();
    within(60, "the agent's rounds done", || async {
        (store_changes_applied(&since_back()) >= expected).then_some(())
    })
    .await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let log = since_back();
    eprintln!("the agent's log:\n{log}");
    assert_eq!(store_changes_applied(&log), expected, "{log}");
    assert!(took < Duration::from_secs(60), "{took:?}");
    // And the API says the same.
    let (api, in_imap) = sides(&rig, &imap).await;
    assert!(api.len() == n && api == in_imap, "the API's list and IMAP differ");
    let archived = listed(app, key, imap_half[0]["messageId"].as_str().unwrap())
        .await
        .unwrap();
    assert_eq!(archived["folder"], "archive");
}

/// The store changes the agent's rounds applied to IMAP, by its log:
/// "...; 5000 store changes applied to IMAP (...)".
fn store_changes_applied(log: &str) -> usize {
    log.lines()
        .filter_map(|l| {
            l.split("; ")
                .nth(1)?
                .split(" store changes")
                .next()?
                .parse::<usize>()
                .ok()
        })
        .sum()
}

on_both_stores!(
    the_sync_loses_nothing_to_its_faults,
    a_change_found_on_a_second_look_survives_a_failed_report,
    reports_whose_answers_were_lost_skip_nothing_new,
    a_backlog_is_in_step_within_a_minute
);
