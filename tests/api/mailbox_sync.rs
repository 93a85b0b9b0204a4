//! One mailbox through every door (issue 42), with the real mail host:
//! Postfix, Dovecot and `mailhost mailbox-sync` started by
//! `scripts/mail-host`, a person's mail app played by Python's imaplib
//! (tests/python/imap_ops.py) and by Debian's mbsync, and the API on each
//! store. Read flags, folders, deletions and sent copies agree both ways;
//! IMAP has the folders mail apps expect; a change over IMAP is audited with
//! the mailbox login; appended mail is filed as appended; a scoped key's
//! changes reach IMAP like the owner's.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::mail_host::{Rig, rig_on, smtp, submit};
use crate::support::{Auth, Backend, TestApp};

/// A person's mail app, logged in as one mailbox.
pub(crate) struct Imap {
    port: u16,
    ca: PathBuf,
    user: String,
    password: String,
}

impl Imap {
    pub(crate) fn of(rig: &Rig, user: &str) -> Imap {
        Imap {
            port: rig.host.imap_port,
            ca: rig.host.dir.join("ca.pem"),
            user: user.into(),
            password: rig.password.clone(),
        }
    }

    /// Runs operations in one IMAP session: one answer each.
    pub(crate) async fn run(&self, ops: Value) -> Vec<Value> {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/imap_ops.py");
        let args = [
            script.display().to_string(),
            self.port.to_string(),
            self.ca.display().to_string(),
            self.user.clone(),
            self.password.clone(),
        ];
        let out = tokio::task::spawn_blocking(move || {
            use std::io::Write;
            let mut child = std::process::Command::new("python3")
                .args(&args)
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap();
            child
                .stdin
                .take()
                .unwrap()
                .write_all(ops.to_string().as_bytes())
                .unwrap();
            child.wait_with_output().unwrap()
        })
        .await
        .unwrap();
        assert!(
            out.status.success(),
            "imap_ops.py: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice::<Vec<Value>>(&out.stdout).unwrap()
    }

    /// One operation, which must succeed: its answer.
    pub(crate) async fn one(&self, op: Value) -> Value {
        let answer = self.run(json!([op.clone()])).await.remove(0);
        assert!(answer.get("error").is_none(), "{op}: {answer}");
        answer["ok"].clone()
    }

    pub(crate) async fn messages(&self, folder: &str) -> Vec<Value> {
        self.one(json!({"op": "messages", "box": folder}))
            .await
            .as_array()
            .cloned()
            .unwrap_or_default()
    }

    /// The copy of a message in a folder.
    pub(crate) async fn find(&self, folder: &str, message_id: &str) -> Option<Value> {
        self.messages(folder)
            .await
            .into_iter()
            .find(|m| m["messageId"] == message_id)
    }
}

/// Polls `check` until it gives something, for up to 20 s.
pub(crate) async fn eventually<T, F, Fut>(what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Some(found) = check().await {
            return found;
        }
        assert!(Instant::now() < deadline, "{what}: not within 20 s");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The row the API lists for a Message-ID (the flat list marks nothing read).
pub(crate) async fn listed(app: &TestApp, key: &str, message_id: &str) -> Option<Value> {
    let mut cursor = String::new();
    loop {
        let page = app
            .get(&format!("/inbox?limit=50{cursor}"), Auth::Bearer(key))
            .await
            .body;
        if let Some(row) = page["messages"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["messageId"] == message_id)
        {
            return Some(row.clone());
        }
        match page["nextCursor"].as_str() {
            Some(next) => cursor = format!("&cursor={next}"),
            None => return None,
        }
    }
}

/// Sends a message to `to` over SMTP and waits until the API lists it and
/// Dovecot holds it.
pub(crate) async fn receive(rig: &Rig, imap: &Imap, to: &str, subject: &str, message_id: &str) -> Value {
    smtp(rig.host.smtp_port, "ann@example.org", to, subject, message_id)
        .await
        .unwrap();
    let row = eventually(&format!("{subject} listed"), || listed(&rig.app, &rig.key, message_id)).await;
    eventually(&format!("{subject} in IMAP"), || async {
        imap.find("INBOX", message_id).await
    })
    .await;
    row
}

fn seen(copy: &Value) -> bool {
    copy["flags"]
        .as_array()
        .unwrap()
        .iter()
        .any(|f| f == "\\Seen")
}

async fn started(backend: Backend) -> Option<Rig> {
    let rig = rig_on(backend, |config| {
        // The inbound poller in process, as `cargo run` runs it.
        config.inbound_poll_ms = 100;
    })
    .await?;
    rig.start().await;
    Some(rig)
}

/// Read flags and folders both ways, the folders mail apps expect, and a
/// scoped key's change reaching IMAP.
async fn flags_and_folders_agree_both_ways(backend: Backend) {
    let Some(rig) = started(backend).await else {
        return;
    };
    let (app, key) = (&rig.app, &rig.key);
    let imap = Imap::of(&rig, "me@tom.example");

    // The folders, made and subscribed, with their special-use flags.
    let listed_folders = imap.one(json!({"op": "list"})).await;
    let subscribed = imap.one(json!({"op": "lsub"})).await;
    for (name, flag) in [
        ("Archive", "\\Archive"),
        ("Trash", "\\Trash"),
        ("Sent", "\\Sent"),
        ("Drafts", "\\Drafts"),
        ("Junk", "\\Junk"),
    ] {
        for list in [&listed_folders, &subscribed] {
            assert!(
                list.as_array()
                    .unwrap()
                    .iter()
                    .any(|l| l.as_str().unwrap().contains(flag) && l.as_str().unwrap().ends_with(name)),
                "{name} with {flag}: {list}"
            );
        }
    }
    assert!(listed_folders.to_string().contains("INBOX"));

    let a = receive(&rig, &imap, "me@tom.example", "Alpha", "<sync-a@example.org>").await;
    let b = receive(&rig, &imap, "me@tom.example", "Bravo", "<sync-b@example.org>").await;
    receive(&rig, &imap, "me@tom.example", "Charlie", "<sync-c@example.org>").await;
    assert_eq!((a["unread"].clone(), b["unread"].clone()), (json!(true), json!(true)));

    // IMAP -> API: \Seen set in the app reads the row.
    imap.one(json!({"op": "store", "box": "INBOX", "messageId": "<sync-a@example.org>", "flags": "+FLAGS (\\Seen)"}))
        .await;
    eventually("\\Seen over IMAP reads the API row", || async {
        let row = listed(app, key, "<sync-a@example.org>").await?;
        (row["unread"] == false).then_some(())
    })
    .await;

    // API -> IMAP: a read marks it \Seen, and unread takes it off again.
    let marked = app
        .post("/inbox", Auth::Bearer(key), json!({"id": b["id"], "unread": false}))
        .await;
    assert_eq!(marked.status, 200, "{}", marked.body);
    eventually("an API read sets \\Seen", || async {
        let copy = imap.find("INBOX", "<sync-b@example.org>").await?;
        seen(&copy).then_some(())
    })
    .await;
    let marked = app
        .post("/inbox", Auth::Bearer(key), json!({"id": a["id"], "unread": true}))
        .await;
    assert_eq!(marked.status, 200, "{}", marked.body);
    eventually("API unread clears \\Seen", || async {
        let copy = imap.find("INBOX", "<sync-a@example.org>").await?;
        (!seen(&copy)).then_some(())
    })
    .await;

    // IMAP -> API: MOVE to Archive archives the thread.
    let moved = imap
        .one(json!({"op": "move", "box": "INBOX", "messageId": "<sync-c@example.org>", "to": "Archive"}))
        .await;
    assert_eq!(moved, 1);
    eventually("MOVE to Archive archives it", || async {
        let row = listed(app, key, "<sync-c@example.org>").await?;
        (row["folder"] == "archive").then_some(())
    })
    .await;
    // A message in IMAP stays where the person put it: no echo moves it back.
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(imap.find("Archive", "<sync-c@example.org>").await.is_some());
    assert!(imap.find("INBOX", "<sync-c@example.org>").await.is_none());

    // API -> IMAP: a move to trash moves the IMAP copy to Trash.
    let moved = app
        .post("/inbox", Auth::Bearer(key), json!({"thread": b["threadId"], "folder": "trash"}))
        .await;
    assert_eq!(moved.status, 200, "{}", moved.body);
    eventually("an API move to trash reaches Trash", || async {
        imap.find("Trash", "<sync-b@example.org>").await
    })
    .await;
    assert!(imap.find("INBOX", "<sync-b@example.org>").await.is_none());

    // A folder the person makes, in odd Unicode: theirs; the API sees its
    // mail as archived, and the copy stays in it.
    let odd = "Reçus ✓ 📁 «2026»";
    imap.one(json!({"op": "create", "name": odd})).await;
    imap.one(json!({"op": "move", "box": "INBOX", "messageId": "<sync-a@example.org>", "to": odd}))
        .await;
    eventually("a person's own folder reads as archived", || async {
        let row = listed(app, key, "<sync-a@example.org>").await?;
        (row["folder"] == "archive").then_some(())
    })
    .await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(imap.find(odd, "<sync-a@example.org>").await.is_some(), "it stays there");
    assert!(imap.find("Archive", "<sync-a@example.org>").await.is_none());

    // A scoped key's change reaches IMAP like the owner's.
    let scoped = app
        .post(
            "/keys",
            Auth::Bearer(key),
            json!({"name": "reader", "permissions": ["read"], "mailboxes": ["me@tom.example"]}),
        )
        .await;
    assert_eq!(scoped.status, 200, "{}", scoped.body);
    let scoped = scoped.body["apiKey"].as_str().unwrap().to_string();
    let c = listed(app, key, "<sync-c@example.org>").await.unwrap();
    let moved = app
        .post("/inbox", Auth::Bearer(&scoped), json!({"id": c["id"], "folder": "inbox", "unread": false}))
        .await;
    assert_eq!(moved.status, 200, "{}", moved.body);
    eventually("a scoped key's move and read reach IMAP", || async {
        let copy = imap.find("INBOX", "<sync-c@example.org>").await?;
        seen(&copy).then_some(())
    })
    .await;

    // Changes over IMAP are audited, the mailbox login the actor.
    let audit = app.get("/audit?operation=imapChanges", Auth::Bearer(key)).await;
    assert_eq!(audit.status, 200, "{}", audit.body);
    let changes = audit.body["changes"].as_array().unwrap();
    assert!(!changes.is_empty(), "{}", audit.body);
    assert!(
        changes
            .iter()
            .all(|c| c["actor"] == json!({"kind": "mailbox_login", "email": "me@tom.example"})),
        "{}",
        audit.body
    );
}

/// Deletion both ways, sent copies, and mail a client appends.
async fn deletions_sent_copies_and_appends_agree(backend: Backend) {
    let Some(rig) = started(backend).await else {
        return;
    };
    let (app, key) = (&rig.app, &rig.key);
    let imap = Imap::of(&rig, "me@tom.example");
    let d = receive(&rig, &imap, "me@tom.example", "Delta", "<sync-d@example.org>").await;
    let e = receive(&rig, &imap, "me@tom.example", "Echo", "<sync-e@example.org>").await;

    // IMAP -> API: an expunge deletes the message for good (row, thread).
    imap.one(json!({"op": "expunge", "box": "INBOX", "messageId": "<sync-d@example.org>"}))
        .await;
    eventually("an IMAP expunge deletes the API row", || async {
        listed(app, key, "<sync-d@example.org>").await.is_none().then_some(())
    })
    .await;
    let by_id = app.get(&format!("/inbox?id={}", d["id"]), Auth::Bearer(key)).await;
    assert_eq!(by_id.status, 404, "{}", by_id.body);
    let thread = app
        .get(&format!("/inbox?thread={}", d["threadId"]), Auth::Bearer(key))
        .await;
    assert_eq!(thread.status, 404, "its thread is gone too: {}", thread.body);

    // The API's delete for good takes only what is in the trash.
    let refused = app.post("/inbox/delete", Auth::Bearer(key), json!({"id": e["id"]})).await;
    assert_eq!(refused.status, 409, "{}", refused.body);
    assert!(imap.find("INBOX", "<sync-e@example.org>").await.is_some());
    let trashed = app
        .post("/inbox", Auth::Bearer(key), json!({"id": e["id"], "folder": "trash"}))
        .await;
    assert_eq!(trashed.status, 200);
    let deleted = app.post("/inbox/delete", Auth::Bearer(key), json!({})).await;
    assert_eq!(deleted.status, 200, "{}", deleted.body);
    assert_eq!(deleted.body["deleted"], 1, "{}", deleted.body);
    eventually("the API's delete expunges the IMAP copy", || async {
        let gone = imap.find("Trash", "<sync-e@example.org>").await.is_none()
            && imap.find("INBOX", "<sync-e@example.org>").await.is_none();
        gone.then_some(())
    })
    .await;
    let blobs = app.ctx.blobs.list("mail/me@tom.example/").await.unwrap();
    assert!(blobs.iter().all(|b| b.contains("sent-copies")), "{blobs:?}");

    // Sent: an API send is saved to Sent, as sent, read, once.
    let sent = app
        .send_mail(
            Auth::Bearer(key),
            json!({"from": "me@tom.example", "to": "pal@elsewhere.test", "subject": "From the API", "text": "Hello."}),
        )
        .await;
    assert_eq!(sent.status, 200, "{}", sent.body);
    let message_id = sent.body["messageId"].as_str().unwrap().to_string();
    let copy = eventually("an API send is saved to Sent", || async {
        imap.find("Sent", &message_id).await
    })
    .await;
    assert!(seen(&copy), "{copy}");
    assert_eq!(copy["bcc"], false);
    assert_eq!(copy["subject"], "From the API");
    tokio::time::sleep(Duration::from_secs(1)).await;
    let copies = imap.messages("Sent").await;
    assert_eq!(
        copies.iter().filter(|m| m["messageId"] == message_id.as_str()).count(),
        1,
        "one copy: {copies:?}"
    );
    // Its bytes are gone once saved.
    eventually("the saved copy's bytes are dropped", || async {
        let left = app.ctx.blobs.list("mail/me@tom.example/sent-copies/").await.unwrap();
        left.is_empty().then_some(())
    })
    .await;

    // A mail app's own submission: it saves its own Sent copy (APPEND);
    // the service keeps none of its own and files no row from the append.
    let raw = "From: me@tom.example\r\nTo: pal@elsewhere.test\r\nBcc: hidden@elsewhere.test\r\nSubject: From the app\r\nMessage-ID: <app-sub@tom.example>\r\n\r\nBy hand.\r\n";
    submit(rig.submission_port, "me@tom.example", &rig.password, "me@tom.example", &["pal@elsewhere.test"], raw)
        .await
        .unwrap();
    imap.one(json!({"op": "append", "box": "Sent", "flags": "(\\Seen)", "raw": raw.replace("Bcc: hidden@elsewhere.test\r\n", "")}))
        .await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let copies = imap.messages("Sent").await;
    assert_eq!(
        copies.iter().filter(|m| m["subject"] == "From the app").count(),
        1,
        "no second copy: {copies:?}"
    );
    assert!(listed(app, key, "<app-sub@tom.example>").await.is_none(), "no inbound row");

    // An APPEND of old mail into INBOX (a migration tool): filed, marked
    // appended, never believed authenticated, and in step after.
    let old = "From: Old Friend <old@example.net>\r\nTo: me@tom.example\r\nSubject: From 2019\r\nDate: Mon, 7 Jan 2019 10:00:00 +0000\r\nMessage-ID: <old-2019@example.net>\r\nAuthentication-Results: mx.tom.example; dkim=pass; spf=pass; dmarc=pass\r\n\r\nOld news.\r\n";
    imap.one(json!({"op": "append", "box": "INBOX", "flags": "(\\Seen)", "raw": old}))
        .await;
    let row = eventually("appended mail is filed", || listed(app, key, "<old-2019@example.net>")).await;
    assert_eq!(row["source"], "appended", "{row}");
    assert_eq!(row["unread"], false, "{row}");
    let read = app.get(&format!("/inbox?id={}", row["id"]), Auth::Bearer(key)).await;
    let auth = &read.body["message"]["authentication"];
    assert!(auth.is_null(), "no verdicts for appended mail: {}", read.body);
    // The same append again (a migration tool's retry) files nothing new.
    imap.one(json!({"op": "append", "box": "Archive", "flags": "()", "raw": old}))
        .await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let rows = app.get("/inbox?limit=50", Auth::Bearer(key)).await.body;
    let same = rows["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["messageId"] == "<old-2019@example.net>")
        .count();
    assert_eq!(same, 1, "{rows}");
}

/// 10 000 messages' flags at once from a mail app: each syncs, none lost
/// or doubled. (The mailbox is filled through Dovecot and the spool, as
/// delivery does, then one STORE flags them all.)
async fn a_flag_on_many_messages_at_once_syncs_every_one(backend: Backend) {
    let Some(rig) = started(backend).await else {
        return;
    };
    let (app, key) = (&rig.app, &rig.key);
    let imap = Imap::of(&rig, "me@tom.example");
    let n = std::env::var("MAILBOX_SYNC_MANY")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(300usize);
    for i in 0..n {
        let raw = format!(
            "From: ann@example.org\r\nTo: me@tom.example\r\nSubject: Many {i}\r\nMessage-ID: <many-{i}@example.org>\r\n\r\nOne of many.\r\n"
        );
        crate::mail_host::smtp_raw(rig.host.smtp_port, "ann@example.org", &["me@tom.example".into()], raw.as_bytes())
            .await
            .unwrap();
    }
    eventually("every message filed and in IMAP", || async {
        let rows = app.get("/inbox?limit=1", Auth::Bearer(key)).await.body;
        let filed = rows["messages"].as_array().unwrap().len() == 1;
        let inbox = imap.messages("INBOX").await.len();
        (filed && inbox == n).then_some(())
    })
    .await;
    eventually("every row filed", || async {
        let all = crate::mail_host::all_rows(app, key).await;
        (all.len() == n).then_some(())
    })
    .await;
    imap.one(json!({"op": "store_all", "box": "INBOX", "flags": "+FLAGS (\\Seen)"}))
        .await;
    let started = Instant::now();
    eventually("every row read", || async {
        let all = crate::mail_host::all_rows(app, key).await;
        (all.len() == n && all.iter().all(|r| r["unread"] == false)).then_some(())
    })
    .await;
    eprintln!("{n} flags over IMAP in step in {} ms", started.elapsed().as_millis());
}

/// Each scenario once per store.
macro_rules! on_both_stores {
    ($($name:ident),* $(,)?) => {
        mod embedded {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::$name(crate::support::Backend::Embedded).await;
                }
            )*
        }
        mod dynamodb {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::$name(crate::support::Backend::Dynamodb).await;
                }
            )*
        }
    };
}

on_both_stores!(
    flags_and_folders_agree_both_ways,
    deletions_sent_copies_and_appends_agree,
    a_flag_on_many_messages_at_once_syncs_every_one,
);
