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
pub(crate) async fn eventually<T, F, Fut>(what: &str, check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    // A bound on liveness, not a latency goal (that is the sync benchmark's):
    // generous, since DynamoDB Local on a loaded 2-core runner is slow.
    within(60, what, check).await
}

/// Polls `check` until it gives something, for up to `seconds`.
pub(crate) async fn within<T, F, Fut>(seconds: u64, what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = Instant::now() + Duration::from_secs(seconds);
    loop {
        if let Some(found) = check().await {
            return found;
        }
        assert!(Instant::now() < deadline, "{what}: not within {seconds} s");
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

/// A mailbox of `n` received messages (`<{prefix}-{i}@example.org>`), filled
/// as delivery fills it but without an SMTP session each: every message
/// written to the user's maildir (Dovecot indexes what it finds) and dropped
/// in the spool for the poller to file. Waits until the API lists all and
/// IMAP's INBOX holds all; prints how long it took.
pub(crate) async fn fill(rig: &Rig, imap: &Imap, n: usize, prefix: &str) {
    let (app, key, dir) = (&rig.app, &rig.key, &rig.host.dir);
    let maildir = dir.join("mail/tom.example/me/Maildir/cur");
    std::fs::create_dir_all(&maildir).unwrap();
    let spool = common::blob::fs::FsBlobStore::new(app.data_dir.join("blobs"));
    let started = Instant::now();
    for i in 0..n {
        let raw = format!(
            "From: ann@example.org\r\nTo: me@tom.example\r\nSubject: {prefix} {i}\r\nMessage-ID: <{prefix}-{i}@example.org>\r\nDate: Mon, 23 Nov 2026 10:00:00 +0000\r\n\r\nOne of many.\r\n"
        );
        std::fs::write(maildir.join(format!("1795000000.M{i}P{prefix}.mx:2,")), &raw).unwrap();
        let envelope = common::mail::inbound::Envelope {
            recipient: Some("me@tom.example".into()),
            sender: Some("ann@example.org".into()),
            ..Default::default()
        };
        common::mail::inbound::drop_raw(&spool, envelope.prepend(raw.as_bytes()))
            .await
            .unwrap();
    }
    std::process::Command::new("chown")
        .args(["-R", "nobody:nogroup"])
        .arg(dir.join("mail"))
        .status()
        .unwrap();
    within(1800, "the mailbox filed", || async {
        let rows = crate::mail_host::all_rows(app, key).await;
        (rows.len() >= n).then_some(())
    })
    .await;
    assert_eq!(imap.messages("INBOX").await.len(), n);
    eprintln!("{n} messages filed in {} ms", started.elapsed().as_millis());
}

fn seen(copy: &Value) -> bool {
    copy["flags"].as_array().unwrap().iter().any(|f| f == "\\Seen")
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
        .post(
            "/inbox",
            Auth::Bearer(key),
            json!({"thread": b["threadId"], "folder": "trash"}),
        )
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
        .post(
            "/inbox",
            Auth::Bearer(&scoped),
            json!({"id": c["id"], "folder": "inbox", "unread": false}),
        )
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
    let by_id = app
        .get(&format!("/inbox?id={}", d["id"].as_str().unwrap()), Auth::Bearer(key))
        .await;
    assert_eq!(by_id.status, 404, "{}", by_id.body);
    let thread = app
        .get(
            &format!("/inbox?thread={}", d["threadId"].as_str().unwrap()),
            Auth::Bearer(key),
        )
        .await;
    assert_eq!(thread.status, 404, "its thread is gone too: {}", thread.body);

    // The API's delete for good takes only what is in the trash.
    let refused = app
        .post("/inbox/delete", Auth::Bearer(key), json!({"id": e["id"]}))
        .await;
    assert_eq!(refused.status, 409, "{}", refused.body);
    assert!(imap.find("INBOX", "<sync-e@example.org>").await.is_some());
    let trashed = app
        .post("/inbox", Auth::Bearer(key), json!({"id": e["id"], "folder": "trash"}))
        .await;
    assert_eq!(trashed.status, 200);
    // Emptying the trash is asked for by name: a body naming nothing deletes nothing.
    let unnamed = app.post("/inbox/delete", Auth::Bearer(key), json!({})).await;
    assert_eq!(unnamed.status, 400, "{}", unnamed.body);
    assert_eq!(
        unnamed.body["error"],
        "Name the mail to delete (id, messageId or thread), or set emptyTrash to true to empty the trash"
    );
    let refused = app
        .post("/inbox/delete", Auth::Bearer(key), json!({"emptyTrash": "yes"}))
        .await;
    assert_eq!(
        refused.body["error"], "emptyTrash must be a boolean",
        "{}",
        refused.body
    );
    // (The deleted count of 1 below shows these deleted nothing.)
    let deleted = app
        .post("/inbox/delete", Auth::Bearer(key), json!({"emptyTrash": true}))
        .await;
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
    // Saved, then flagged `\Seen` (doveadm save takes no flags): a look
    // between the two steps sees it unread for an instant.
    let copy = eventually("an API send is saved to Sent, read", || async {
        imap.find("Sent", &message_id).await.filter(seen)
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
    // A copy this small rides in its mark: no blob was ever stored.
    assert!(
        app.ctx
            .blobs
            .list("mail/me@tom.example/sent-copies/")
            .await
            .unwrap()
            .is_empty(),
        "a small copy keeps no blob"
    );

    // A copy too large for its mark keeps its bytes in a blob until saved.
    let long = "A longer letter.\n".repeat(300);
    let large = app
        .send_mail(
            Auth::Bearer(key),
            json!({"from": "me@tom.example", "to": "pal@elsewhere.test", "subject": "A long one", "text": long}),
        )
        .await;
    assert_eq!(large.status, 200, "{}", large.body);
    let large_id = large.body["messageId"].as_str().unwrap().to_string();
    let copy = eventually("a large send is saved to Sent, read", || async {
        imap.find("Sent", &large_id).await.filter(seen)
    })
    .await;
    assert_eq!(copy["subject"], "A long one");
    // Its bytes are gone once saved.
    eventually("the saved copy's bytes are dropped", || async {
        let left = app.ctx.blobs.list("mail/me@tom.example/sent-copies/").await.unwrap();
        left.is_empty().then_some(())
    })
    .await;

    // A large send's bytes are stored beside the transaction that writes its
    // mark, so the mail host may read the mark first: it waits for the bytes.
    let late = "<stored-late@tom.example>";
    let raw = format!(
        "From: me@tom.example\r\nTo: pal@elsewhere.test\r\nSubject: Stored late\r\nMessage-ID: {late}\r\n\r\n{}",
        "Hello.\r\n".repeat(500)
    );
    let copy = common::service::mail_store::sync_marks::sent_copy(
        &app.ctx,
        "api",
        "me@tom.example",
        late,
        "0000000000000aa1",
        raw.as_bytes(),
    )
    .expect("an API send from a hosted mailbox keeps a copy");
    assert!(!copy.inline(), "{} bytes are kept in a blob", raw.len());
    app.ctx.store.transact(vec![copy.mark.clone()]).await.unwrap();
    let after = app
        .send_mail(
            Auth::Bearer(key),
            json!({"from": "me@tom.example", "to": "pal@elsewhere.test", "subject": "After", "text": "Later."}),
        )
        .await;
    assert_eq!(after.status, 200, "{}", after.body);
    let after_id = after.body["messageId"].as_str().unwrap().to_string();
    eventually("a round after the early mark ran", || async {
        imap.find("Sent", &after_id).await
    })
    .await;
    assert!(imap.find("Sent", late).await.is_none());
    let kept = common::service::mail_store::sync_marks::mark(&app.ctx, "s#0000000000000aa1")
        .await
        .unwrap();
    assert!(kept.is_some(), "a mark whose bytes are awaited is kept");
    assert!(copy.store(&app.ctx, raw.as_bytes()).await);
    eventually("a copy whose bytes came late is saved to Sent", || async {
        imap.find("Sent", late).await
    })
    .await;
    eventually("its mark is cleared", || async {
        let mark = common::service::mail_store::sync_marks::mark(&app.ctx, "s#0000000000000aa1")
            .await
            .unwrap();
        mark.is_none().then_some(())
    })
    .await;

    // A mail app's own submission: it saves its own Sent copy (APPEND);
    // the service keeps none of its own and files no row from the append.
    let raw = "From: me@tom.example\r\nTo: pal@elsewhere.test\r\nBcc: hidden@elsewhere.test\r\nSubject: From the app\r\nMessage-ID: <app-sub@tom.example>\r\n\r\nBy hand.\r\n";
    submit(
        rig.submission_port,
        "me@tom.example",
        &rig.password,
        "me@tom.example",
        &["pal@elsewhere.test"],
        raw,
    )
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
    assert!(
        listed(app, key, "<app-sub@tom.example>").await.is_none(),
        "no inbound row"
    );

    // An APPEND of old mail into INBOX (a migration tool): filed, marked
    // appended, never believed authenticated, and in step after.
    let old = "From: Old Friend <old@example.net>\r\nTo: me@tom.example\r\nSubject: From 2019\r\nDate: Mon, 7 Jan 2019 10:00:00 +0000\r\nMessage-ID: <old-2019@example.net>\r\nAuthentication-Results: mx.tom.example; dkim=pass; spf=pass; dmarc=pass\r\n\r\nOld news.\r\n";
    imap.one(json!({"op": "append", "box": "INBOX", "flags": "(\\Seen)", "raw": old}))
        .await;
    // Filed, then given its flag in the same report: wait for both.
    let row = eventually("appended mail is filed, read", || async {
        listed(app, key, "<old-2019@example.net>")
            .await
            .filter(|row| row["unread"] == false)
    })
    .await;
    assert_eq!(row["source"], "appended", "{row}");
    let read = app
        .get(&format!("/inbox?id={}", row["id"].as_str().unwrap()), Auth::Bearer(key))
        .await;
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
    let imap = &Imap::of(&rig, "me@tom.example");
    let n = std::env::var("MAILBOX_SYNC_MANY")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(300usize);
    fill(&rig, imap, n, "many").await;
    // Both sides hold each message once, with this read flag, in the inbox.
    let once_each = move |read: bool| async move {
        let rows = crate::mail_host::all_rows(app, key).await;
        let inbox = imap.messages("INBOX").await;
        let mut api: Vec<String> = rows
            .iter()
            .filter(|r| (r["unread"] == false) == read && r["folder"] == "inbox")
            .map(|r| r["messageId"].as_str().unwrap().to_string())
            .collect();
        let mut in_imap: Vec<String> = inbox
            .iter()
            .filter(|m| seen(m) == read)
            .map(|m| m["messageId"].as_str().unwrap().to_string())
            .collect();
        api.sort();
        api.dedup();
        in_imap.sort();
        in_imap.dedup();
        (rows.len() == n && inbox.len() == n && api.len() == n && api == in_imap).then_some(())
    };
    // Every message flagged in one command, then cleared in one: each way,
    // every row follows, and nothing is lost or doubled on either side.
    for (flags, read) in [("+FLAGS (\\Seen)", true), ("-FLAGS (\\Seen)", false)] {
        imap.one(json!({"op": "store_all", "box": "INBOX", "flags": flags}))
            .await;
        let started = Instant::now();
        within(600, &format!("every row {flags}"), || once_each(read)).await;
        eprintln!(
            "{flags} on {n} messages over IMAP in step in {} ms",
            started.elapsed().as_millis()
        );
    }
    // And it stays so: the store's own marks, written back, change nothing.
    tokio::time::sleep(Duration::from_secs(4)).await;
    within(60, "still every row unread", || once_each(false)).await;
}

/// The state both sides show of one message: (read, folder), or gone.
pub(crate) async fn both_sides(
    app: &TestApp,
    key: &str,
    imap: &Imap,
    message_id: &str,
) -> (Option<(bool, String)>, Option<(bool, String)>) {
    let api = listed(app, key, message_id)
        .await
        .map(|r| (r["unread"] == false, r["folder"].as_str().unwrap().to_string()));
    let mut in_imap = None;
    for (folder, name) in [("INBOX", "inbox"), ("Archive", "archive"), ("Trash", "trash")] {
        if let Some(copy) = imap.find(folder, message_id).await {
            in_imap = Some((seen(&copy), name.to_string()));
        }
    }
    (api, in_imap)
}

/// Changes to one message from both doors at once end with both sides
/// equal (the rule: applied in the order they reach the store, IMAP then
/// set to the store's state), and a deletion wins over a flag.
async fn concurrent_changes_end_equal(backend: Backend) {
    let Some(rig) = started(backend).await else {
        return;
    };
    let (app, key) = (&rig.app, &rig.key);
    let imap = Imap::of(&rig, "me@tom.example");
    let row = receive(&rig, &imap, "me@tom.example", "India", "<sync-i@example.org>").await;
    let id = row["id"].as_str().unwrap().to_string();
    for round in 0..6 {
        let imap_flag = if round % 2 == 0 {
            "+FLAGS (\\Seen)"
        } else {
            "-FLAGS (\\Seen)"
        };
        let (api_folder, imap_folder) = match round % 3 {
            0 => ("archive", "Trash"),
            1 => ("inbox", "Archive"),
            _ => ("trash", "INBOX"),
        };
        // Where the message is in IMAP now, for the app's move.
        let (_, now) = both_sides(app, key, &imap, "<sync-i@example.org>").await;
        let from = match now.map(|(_, f)| f).as_deref() {
            Some("archive") => "Archive",
            Some("trash") => "Trash",
            _ => "INBOX",
        };
        let app_side = imap.run(json!([
            {"op": "store", "box": from, "messageId": "<sync-i@example.org>", "flags": imap_flag},
            {"op": "move", "box": from, "messageId": "<sync-i@example.org>", "to": imap_folder},
        ]));
        let api_side = async {
            // Sometimes the app goes first, sometimes the API.
            tokio::time::sleep(Duration::from_millis(round as u64 * 60)).await;
            app.post(
                "/inbox",
                Auth::Bearer(key),
                json!({"id": id, "unread": round % 2 == 0, "folder": api_folder}),
            )
            .await
        };
        let (answers, answered) = tokio::join!(app_side, api_side);
        assert_eq!(answered.status, 200, "{}", answered.body);
        // The app's commands found the message, or the API's move took it
        // away first (then only the API's change happened).
        assert!(answers.iter().all(|a| a.get("error").is_none()), "{from}: {answers:?}");
        eventually(&format!("round {round}: both sides equal"), || async {
            let (api, in_imap) = both_sides(app, key, &imap, "<sync-i@example.org>").await;
            (api.is_some() && api == in_imap).then_some(())
        })
        .await;
    }
    // A session that had not looked since the API's change stores the flag
    // it thinks it lacks: Dovecot logs nothing (its own view did not
    // change), and the agent's second look still carries it to the store.
    let (_, now) = both_sides(app, key, &imap, "<sync-i@example.org>").await;
    let (seen_now, folder_now) = now.unwrap();
    let folder_now = match folder_now.as_str() {
        "archive" => "Archive",
        "trash" => "Trash",
        _ => "INBOX",
    };
    let flip = if seen_now { "+FLAGS (\\Seen)" } else { "-FLAGS (\\Seen)" };
    // One session: it looks, waits while the API flips the flag and the
    // agent writes it to IMAP, then stores on its old view.
    let go = rig.host.dir.join("stale-go");
    let stale_session = imap.run(json!([
        {"op": "select", "box": folder_now},
        {"op": "uid_of", "messageId": "<sync-i@example.org>"},
        {"op": "wait_file", "path": go},
        {"op": "store_uid", "flags": flip},
    ]));
    let api_flip = async {
        tokio::time::sleep(Duration::from_millis(800)).await;
        let flipped = app
            .post("/inbox", Auth::Bearer(key), json!({"id": id, "unread": seen_now}))
            .await;
        assert_eq!(flipped.status, 200);
        eventually("the API's flip in IMAP", || async {
            let (_, in_imap) = both_sides(app, key, &imap, "<sync-i@example.org>").await;
            (in_imap?.0 != seen_now).then_some(())
        })
        .await;
        // The app stores later than the agent's first look (3 s after it
        // set the flag), as an app that looks again when it likes does.
        tokio::time::sleep(Duration::from_secs(5)).await;
        std::fs::write(&go, b"").unwrap();
    };
    let (answers, ()) = tokio::join!(stale_session, api_flip);
    assert!(answers.iter().all(|a| a.get("error").is_none()), "{answers:?}");
    eventually("the app's later store wins on both sides", || async {
        let (api, in_imap) = both_sides(app, key, &imap, "<sync-i@example.org>").await;
        (api.as_ref()?.0 == seen_now && api == in_imap).then_some(())
    })
    .await;

    // An expunge in the app against a flag from the API: gone on both sides.
    let (_, now) = both_sides(app, key, &imap, "<sync-i@example.org>").await;
    let from = match now.map(|(_, f)| f).as_deref() {
        Some("archive") => "Archive",
        Some("trash") => "Trash",
        _ => "INBOX",
    };
    let (_, answered) = tokio::join!(
        imap.run(json!([{"op": "expunge", "box": from, "messageId": "<sync-i@example.org>"}])),
        app.post("/inbox", Auth::Bearer(key), json!({"id": id, "unread": true}))
    );
    assert!(answered.status == 200 || answered.status == 404, "{}", answered.body);
    eventually("the deletion wins on both sides", || async {
        let (api, in_imap) = both_sides(app, key, &imap, "<sync-i@example.org>").await;
        (api.is_none() && in_imap.is_none()).then_some(())
    })
    .await;
}

/// A local maildir that mbsync keeps in step with the mailbox.
struct Mbsync {
    rc: PathBuf,
    local: PathBuf,
}

impl Mbsync {
    fn new(rig: &Rig, user: &str) -> Mbsync {
        let root = rig.host.dir.join(format!("mbsync-{user}"));
        let local = root.join("local");
        std::fs::create_dir_all(&local).unwrap();
        let rc = root.join("mbsyncrc");
        std::fs::write(
            &rc,
            format!(
                "IMAPAccount me\nHost localhost\nPort {port}\nUser {user}\nPass {password}\nSSLType STARTTLS\n\
                 CertificateFile {ca}\n\nIMAPStore remote\nAccount me\n\nMaildirStore local\nPath {local}/\n\
                 Inbox {local}/INBOX\nSubFolders Verbatim\n\nChannel me\nFar :remote:\nNear :local:\nPatterns *\n\
                 Create Near\nSync All\nExpunge Both\nSyncState *\n",
                port = rig.host.imap_port,
                password = rig.password,
                ca = rig.host.dir.join("ca.pem").display(),
                local = local.display(),
            ),
        )
        .unwrap();
        Mbsync { rc, local }
    }

    async fn sync(&self) {
        let rc = self.rc.clone();
        let out = tokio::task::spawn_blocking(move || {
            std::process::Command::new("mbsync")
                .arg("-c")
                .arg(&rc)
                .arg("-a")
                .output()
                .unwrap()
        })
        .await
        .unwrap();
        assert!(
            out.status.success(),
            "mbsync: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// The local files of a folder: (file, its text).
    fn files(&self, folder: &str) -> Vec<(PathBuf, String)> {
        let mut found = Vec::new();
        for sub in ["cur", "new"] {
            let Ok(entries) = std::fs::read_dir(self.local.join(folder).join(sub)) else {
                continue;
            };
            for entry in entries.flatten() {
                let text = std::fs::read_to_string(entry.path()).unwrap_or_default();
                found.push((entry.path(), text));
            }
        }
        found
    }

    fn file_of(&self, folder: &str, message_id: &str) -> Option<PathBuf> {
        self.files(folder)
            .into_iter()
            .find(|(_, text)| text.contains(message_id))
            .map(|(path, _)| path)
    }
}

/// The maildir flags of a file name (`...:2,FS`).
fn maildir_flags(path: &Path) -> String {
    let name = path.file_name().unwrap().to_string_lossy().to_string();
    name.rsplit_once(":2,").map(|(_, f)| f.to_string()).unwrap_or_default()
}

/// A real mail app no one here wrote (Debian's mbsync) syncs the whole
/// mailbox, sees the API's changes, and its own changes reach the API.
async fn a_real_mail_app_syncs_the_whole_mailbox(backend: Backend) {
    if crate::support::standin_command("mbsync").is_none() {
        return;
    }
    let Some(rig) = started(backend).await else {
        return;
    };
    let (app, key) = (&rig.app, &rig.key);
    let imap = Imap::of(&rig, "me@tom.example");
    let f = receive(&rig, &imap, "me@tom.example", "Foxtrot", "<sync-f@example.org>").await;
    let g = receive(&rig, &imap, "me@tom.example", "Golf", "<sync-g@example.org>").await;
    receive(&rig, &imap, "me@tom.example", "Hotel", "<sync-h@example.org>").await;
    // The API's changes before the app's first sync.
    app.post("/inbox", Auth::Bearer(key), json!({"id": f["id"], "unread": false}))
        .await;
    app.post("/inbox", Auth::Bearer(key), json!({"id": g["id"], "folder": "archive"}))
        .await;
    let sent = app
        .send_mail(
            Auth::Bearer(key),
            json!({"from": "me@tom.example", "to": "pal@elsewhere.test", "subject": "Sent for mbsync", "text": "Hi."}),
        )
        .await;
    let sent_id = sent.body["messageId"].as_str().unwrap().to_string();
    eventually("the API's changes in IMAP", || async {
        let archived = imap.find("Archive", "<sync-g@example.org>").await.is_some();
        let saved = imap.find("Sent", &sent_id).await.is_some();
        let read = imap
            .find("INBOX", "<sync-f@example.org>")
            .await
            .is_some_and(|c| seen(&c));
        (archived && saved && read).then_some(())
    })
    .await;

    let mail_app = Mbsync::new(&rig, "me@tom.example");
    mail_app.sync().await;
    for folder in ["Archive", "Trash", "Sent", "Drafts", "Junk"] {
        assert!(mail_app.local.join(folder).is_dir(), "{folder} synced");
    }
    let f_file = mail_app.file_of("INBOX", "<sync-f@example.org>").expect("F synced");
    assert!(
        maildir_flags(&f_file).contains('S'),
        "read in the API, seen in the app: {f_file:?}"
    );
    let h_file = mail_app.file_of("INBOX", "<sync-h@example.org>").expect("H synced");
    assert!(!maildir_flags(&h_file).contains('S'));
    assert!(mail_app.file_of("Archive", "<sync-g@example.org>").is_some());
    assert!(mail_app.file_of("Sent", &sent_id).is_some());

    // The app's changes: H read, F moved to its trash; synced up, they
    // reach the API.
    let seen_name = format!("{}S", h_file.display());
    std::fs::rename(&h_file, &seen_name).unwrap();
    // Moved between folders, a file loses mbsync's UID (`,U=<n>`), as a
    // maildir app moving it does.
    let name = f_file.file_name().unwrap().to_string_lossy().to_string();
    let name = match name.find(",U=") {
        Some(at) => {
            let end = name[at + 3..]
                .find(|c: char| !c.is_ascii_digit())
                .map_or(name.len(), |e| at + 3 + e);
            format!("{}{}", &name[..at], &name[end..])
        }
        None => name,
    };
    let trash = mail_app.local.join("Trash/cur").join(name);
    std::fs::rename(&f_file, &trash).unwrap();
    mail_app.sync().await;
    eventually("the app's read and trash reach the API", || async {
        let h = listed(app, key, "<sync-h@example.org>").await?;
        let f = listed(app, key, "<sync-f@example.org>").await?;
        (h["unread"] == false && f["folder"] == "trash").then_some(())
    })
    .await;
    // Nothing doubled on the way.
    let rows = crate::mail_host::all_rows(app, key).await;
    assert_eq!(rows.len(), 3, "{rows:?}");

    // The API's next change reaches the app at its next sync.
    let h = listed(app, key, "<sync-h@example.org>").await.unwrap();
    app.post("/inbox", Auth::Bearer(key), json!({"id": h["id"], "unread": true}))
        .await;
    eventually("API unread in IMAP", || async {
        let copy = imap.find("INBOX", "<sync-h@example.org>").await?;
        (!seen(&copy)).then_some(())
    })
    .await;
    mail_app.sync().await;
    let h_file = mail_app.file_of("INBOX", "<sync-h@example.org>").unwrap();
    assert!(!maildir_flags(&h_file).contains('S'), "{h_file:?}");
}

/// The percentile `p` (0 to 100) of samples, nearest rank.
fn percentile(samples: &[f64], p: f64) -> f64 {
    let mut sorted = samples.to_vec();
    sorted.sort_by(f64::total_cmp);
    let rank = ((p / 100.0) * sorted.len() as f64).ceil().max(1.0) as usize;
    sorted[rank.min(sorted.len()) - 1]
}

/// The benchmark (docs/benchmarks.md): a read flag through one door until
/// the other shows it, each way, beside the same change seen through its
/// own door (the baseline: what the polling costs), interleaved in one run;
/// p50 under 1 s and p99 under 5 s each way. `SYNC_SAMPLES=n` (default 15).
async fn a_change_shows_through_the_other_door_and_its_latency_is_printed(backend: Backend) {
    let Some(rig) = started(backend).await else {
        return;
    };
    let imap = Imap::of(&rig, "me@tom.example");
    let mut ids = Vec::new();
    for i in 0..5 {
        let id = format!("<bench-{i}@example.org>");
        receive(&rig, &imap, "me@tom.example", &format!("Bench {i}"), &id).await;
        ids.push(id);
    }
    let samples = std::env::var("SYNC_SAMPLES").unwrap_or_else(|_| "15".into());
    let wanted: usize = samples.parse().unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/sync_latency.py");
    let mut args = vec![
        script.display().to_string(),
        format!("{}/api", rig.app.base),
        rig.key.clone(),
        rig.host.imap_port.to_string(),
        rig.host.dir.join("ca.pem").display().to_string(),
        "me@tom.example".into(),
        rig.password.clone(),
        samples,
    ];
    args.extend(ids);
    let out = tokio::task::spawn_blocking(move || std::process::Command::new("python3").args(&args).output().unwrap())
        .await
        .unwrap();
    assert!(
        out.status.success(),
        "sync_latency.py: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let result: Value = serde_json::from_slice(&out.stdout).unwrap();
    for kind in ["api_to_imap", "imap_to_api", "api_baseline", "imap_baseline"] {
        let ms: Vec<f64> = result[kind]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap())
            .collect();
        let (p50, p99, max) = (percentile(&ms, 50.0), percentile(&ms, 99.0), percentile(&ms, 100.0));
        let store = match backend {
            Backend::Embedded => "embedded",
            Backend::Dynamodb => "dynamodb",
        };
        eprintln!(
            "sync latency {store} {kind}: n={} p50={p50:.0} ms p99={p99:.0} ms max={max:.0} ms",
            ms.len()
        );
        // Figures, not a gate: tests never fail on timing (docs/benchmarks.md
        // records them). What is checked: every change crossed, each timed.
        assert_eq!(ms.len(), wanted, "{kind}: {result}");
    }
}

/// A mail app that moves by expunging first and appending a folder's pass
/// later (mbsync's order: INBOX, then Trash) keeps the message: the stored
/// row moves, the same row, and the expunge's grace then deletes nothing.
/// (Reported at once, the expunge deleted the row, and its gone state
/// expunged the copy appended a moment later: lost on both sides.)
async fn a_move_that_expunges_before_it_appends_loses_nothing(backend: Backend) {
    let Some(rig) = started(backend).await else {
        return;
    };
    let (app, key) = (&rig.app, &rig.key);
    let imap = Imap::of(&rig, "me@tom.example");
    let m = receive(&rig, &imap, "me@tom.example", "Mike", "<sync-m@example.org>").await;
    // A sent message the app deletes, as apps do, by moving it to the Trash.
    let sent = app
        .send_mail(
            Auth::Bearer(key),
            json!({"from": "me@tom.example", "to": "pal@elsewhere.test", "subject": "Re: Mike", "text": "Hi.",
                   "inReplyTo": "<sync-m@example.org>"}),
        )
        .await;
    assert_eq!(sent.status, 200, "{}", sent.body);
    let sent_id = sent.body["messageId"].as_str().unwrap().to_string();
    let sent_thread = format!("/inbox?thread={}", sent.body["threadId"].as_str().unwrap());
    eventually("the send is saved to Sent", || async {
        imap.find("Sent", &sent_id).await
    })
    .await;
    imap.one(json!({"op": "move", "box": "Sent", "messageId": sent_id, "to": "Trash"}))
        .await;
    // Long enough for the agent to read the expunge alone.
    imap.one(
        json!({"op": "move_by_append", "box": "INBOX", "messageId": "<sync-m@example.org>",
                    "to": "Trash", "pauseMs": 2000}),
    )
    .await;
    let moved = eventually("the move reaches the API", || async {
        let row = listed(app, key, "<sync-m@example.org>").await?;
        (row["folder"] == "trash").then_some(row)
    })
    .await;
    assert_eq!(
        moved["id"], m["id"],
        "the same row, moved, not mail filed anew: {moved}"
    );
    // Past the grace, the expunge deleted nothing on either side.
    let grace = Duration::from_millis(mailhost::mailbox_sync::EXPUNGE_GRACE_MS as u64);
    tokio::time::sleep(grace + Duration::from_secs(2)).await;
    let row = listed(app, key, "<sync-m@example.org>").await;
    assert_eq!(row.as_ref().map(|r| &r["id"]), Some(&m["id"]), "{row:?}");
    assert_eq!(row.unwrap()["folder"], "trash");
    let in_trash: Vec<Value> = imap
        .messages("Trash")
        .await
        .into_iter()
        .filter(|c| c["messageId"] == "<sync-m@example.org>")
        .collect();
    assert_eq!(in_trash.len(), 1, "one copy in Trash: {in_trash:?}");
    assert!(imap.find("INBOX", "<sync-m@example.org>").await.is_none());
    // The sent reply was moved, not deleted: the API's thread still has it.
    let thread = app.get(&sent_thread, Auth::Bearer(key)).await;
    assert_eq!(thread.status, 200, "{}", thread.body);
    let ids: Vec<&Value> = thread.body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| &m["messageId"])
        .collect();
    assert!(ids.contains(&&json!(sent_id)), "{}", thread.body);
    assert!(imap.find("Trash", &sent_id).await.is_some());
}

/// The report an IMAP change made of a message, as audited (the mailbox
/// login as the actor).
async fn reported(app: &TestApp, key: &str, message_id: &str) -> Option<Value> {
    let audit = app.get("/audit?operation=imapChanges", Auth::Bearer(key)).await.body;
    audit["changes"].as_array()?.iter().find_map(|c| {
        assert_eq!(c["actor"]["kind"], "mailbox_login", "{c}");
        let details = c["details"].as_array()?;
        let detail = details
            .iter()
            .find(|d| d["messageId"] == message_id && d.get("spam").is_some())?;
        Some(detail["spam"].clone())
    })
}

/// Spam is in IMAP's Junk (rspamd's verdict through the real mail host), and
/// a person's move out of Junk or into it is the owner's report: the store's
/// spam view and inbox follow, audited, as `POST /inbox {spam}` does.
async fn spam_is_in_junk_and_a_move_there_or_out_is_a_report(backend: Backend) {
    if crate::support::standin_command("rspamd").is_none() {
        return;
    }
    let Some(rig) = started(backend).await else {
        return;
    };
    let (app, key) = (&rig.app, &rig.key);
    let imap = Imap::of(&rig, "me@tom.example");
    let gtube = "<GTUBE1.1010101@example.com>";
    let raw = std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/spam/spamassassin/gtube.eml"))
        .unwrap();
    crate::mail_host_spam::send(rig.host.smtp_port, "sender@example.com", &raw)
        .await
        .unwrap();
    let in_spam = |id: &'static str| async move {
        let page = app.get("/inbox?view=spam&limit=50", Auth::Bearer(key)).await.body;
        page["messages"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["messageId"] == id)
            .cloned()
    };
    let spam = eventually("GTUBE in the spam view", || in_spam(gtube)).await;
    eventually("GTUBE in Junk, out of INBOX", || async {
        let junk = imap.find("Junk", gtube).await?;
        (seen(&junk) && imap.find("INBOX", gtube).await.is_none()).then_some(())
    })
    .await;

    // Out of Junk in the app: not spam, back in the API's inbox.
    imap.one(json!({"op": "move", "box": "Junk", "messageId": gtube, "to": "INBOX"}))
        .await;
    let back = eventually("the move out of Junk reaches the API", || async {
        listed(app, key, gtube).await.filter(|r| r["folder"] == "inbox")
    })
    .await;
    assert_eq!(back["id"], spam["id"], "the same message: {back}");
    assert!(in_spam(gtube).await.is_none());
    // (The audit row is written once the whole report is applied.)
    eventually("the report out of Junk audited", || async {
        (reported(app, key, gtube).await? == json!(false)).then_some(())
    })
    .await;

    // Into Junk in the app: spam, out of the inbox.
    receive(&rig, &imap, "me@tom.example", "Juliet", "<sync-j@example.org>").await;
    imap.one(json!({"op": "move", "box": "INBOX", "messageId": "<sync-j@example.org>", "to": "Junk"}))
        .await;
    eventually("the move into Junk reaches the API", || in_spam("<sync-j@example.org>")).await;
    assert!(listed(app, key, "<sync-j@example.org>").await.is_none());
    eventually("the report into Junk audited", || async {
        (reported(app, key, "<sync-j@example.org>").await? == json!(true)).then_some(())
    })
    .await;
    // It stays in Junk: the store's state agrees.
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(imap.find("Junk", "<sync-j@example.org>").await.is_some());
    assert!(imap.find("INBOX", "<sync-j@example.org>").await.is_none());
}

on_both_stores!(
    flags_and_folders_agree_both_ways,
    deletions_sent_copies_and_appends_agree,
    a_flag_on_many_messages_at_once_syncs_every_one,
    a_move_that_expunges_before_it_appends_loses_nothing,
    concurrent_changes_end_equal,
    a_change_shows_through_the_other_door_and_its_latency_is_printed,
    a_real_mail_app_syncs_the_whole_mailbox,
    spam_is_in_junk_and_a_move_there_or_out_is_a_report,
);
