//! The mail host end to end, with the real servers from Debian's packages:
//! a private Postfix instance, Dovecot and postsrsd started by
//! `scripts/mail-host` from `mail-host/`, fed by `mailhost mta-sync` from the
//! service under test. Mail sent over SMTP reaches the Dovecot maildir (read
//! back with Python's imaplib), the inbox API (through the pipe, the spool and
//! the poller) and the account's webhook; forwarded mail leaves with an SRS
//! sender; unknown recipients are refused at RCPT; the service's own mail
//! goes through submission with STARTTLS and AUTH and arrives DKIM-signed.

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use common::service::{mta_export, poller};
use lettre::address::Envelope;
use lettre::{AsyncSmtpTransport, AsyncTransport, Tokio1Executor};
use serde_json::{Value, json};
use support::smtp::{SmtpSink, dkim_verify, free_port};
use support::webhooks::Receiver;
use support::{ALLOWED_DOMAIN, Auth, Backend, SYNC_TOKEN, TestApp};

const RELAY_USER: &str = "relay";

struct MailHost {
    dir: PathBuf,
    smtp_port: u16,
    imap_port: u16,
}

impl MailHost {
    fn script(args: &[&str]) -> std::process::Output {
        let out = Command::new(Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/mail-host"))
            .args(args)
            .env("MAILHOST_BIN", env!("CARGO_BIN_EXE_mailhost"))
            .output()
            .expect("scripts/mail-host runs");
        assert!(
            out.status.success(),
            "scripts/mail-host {args:?}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        out
    }

    fn sync(&self) {
        Self::script(&["sync", self.dir.to_str().unwrap()]);
    }
}

impl Drop for MailHost {
    fn drop(&mut self) {
        let _ = Command::new(Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/mail-host"))
            .args(["stop", self.dir.to_str().unwrap()])
            .output();
        if std::thread::panicking() {
            eprintln!("the mail host's logs are kept in {}", self.dir.display());
        } else {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// Sends one message over plain SMTP to the mail host's port 25 stand-in.
async fn smtp(port: u16, from: &str, to: &str, subject: &str, message_id: &str) -> Result<(), String> {
    let transport = AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous("127.0.0.1")
        .port(port)
        .build();
    let raw = format!(
        "From: {from}\r\nTo: {to}\r\nSubject: {subject}\r\nMessage-ID: {message_id}\r\nDate: Mon, 23 Nov 2026 10:00:00 +0000\r\n\r\nHello from the mail host test.\r\n"
    );
    let envelope = Envelope::new(Some(from.parse().unwrap()), vec![to.parse().unwrap()]).unwrap();
    transport
        .send_raw(&envelope, raw.as_bytes())
        .await
        .map(|_| ())
        .map_err(|e| e.to_string())
}

/// Files what the mail host's pipe dropped until the inbox lists `subject`.
async fn wait_listed(app: &TestApp, key: &str, subject: &str) -> Value {
    let started = Instant::now();
    loop {
        poller::run_once(&app.ctx).await.unwrap();
        let listed = app.get("/inbox?limit=50", Auth::Bearer(key)).await.body;
        if let Some(row) = listed["messages"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["subject"] == subject)
        {
            return row.clone();
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "{subject} never reached the inbox"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Logs in over IMAP with Python's imaplib and gives the subjects in INBOX, or
/// the login error.
/// What `check` finds once Dovecot has read the synced passwd-file: it looks
/// at the file at most once a second, so a login in the same second as the
/// one before the sync still sees the old file.
fn within_dovecots_recheck<T>(what: &str, mut check: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        if let Some(found) = check() {
            return found;
        }
        assert!(Instant::now() < deadline, "{what}: not within 5 s of the sync");
        std::thread::sleep(Duration::from_millis(250));
    }
}

fn imap_subjects(port: u16, user: &str, password: &str) -> Result<Vec<String>, String> {
    let script = r#"
import imaplib, sys
c = imaplib.IMAP4("127.0.0.1", int(sys.argv[1]))
try:
    c.login(sys.argv[2], sys.argv[3])
except imaplib.IMAP4.error as e:
    print("LOGIN FAILED", e); sys.exit(3)
c.select("INBOX")
_, ids = c.search(None, "ALL")
for i in ids[0].split():
    _, data = c.fetch(i, "(BODY.PEEK[HEADER.FIELDS (SUBJECT)])")
    print(data[0][1].decode().strip())
c.logout()
"#;
    let out = Command::new("python3")
        .args(["-c", script, &port.to_string(), user, password])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    if out.status.success() {
        Ok(text
            .lines()
            .map(|l| l.trim_start_matches("Subject: ").to_string())
            .collect())
    } else {
        Err(text)
    }
}

/// A certificate for the host's STARTTLS, issued by a throwaway CA and made
/// before the service starts, so the service can trust the CA
/// (`--smtp-ca-file`).
fn make_certificate(dir: &Path) {
    support::smtp::make_certificates(dir);
    std::fs::copy(dir.join("server.pem"), dir.join("tls.pem")).unwrap();
    std::fs::copy(dir.join("server.key"), dir.join("tls.key")).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mail_flows_through_postfix_and_dovecot_to_the_inbox_imap_and_the_webhook() {
    for program in ["postfix", "dovecot", "doveadm", "postsrsd", "openssl", "python3"] {
        if common::testing::standin_command(program).is_none() {
            return;
        }
    }
    let Some(sink) = SmtpSink::start_open().await else {
        return;
    };
    let dir = std::env::temp_dir().join(format!("mailhost-mail-host-{:016x}", rand::random::<u64>()));
    std::fs::create_dir_all(&dir).unwrap();
    make_certificate(&dir);
    let (smtp_port, submission_port, imap_port) = (free_port(), free_port(), free_port());
    let relay_password = format!("relay-{:016x}", rand::random::<u64>());
    let (hook_port, hook_dir) = Receiver::prepare();
    let ca = Receiver::ca_file(&hook_dir);
    let smtp_url = format!("smtp://{RELAY_USER}:{relay_password}@127.0.0.1:{submission_port}?tls=required");
    let tls_ca = dir.join("ca.pem");
    let Some(app) = TestApp::spawn_with(Backend::Embedded, move |config| {
        config.smtp_url = Some(smtp_url);
        // Access codes to the outbox, where the harness reads them.
        config.system_mail = common::config::SystemMailKind::Outbox;
        config.smtp_ca_file = Some(tls_ca);
        config.webhook_allow_hosts = vec!["localhost".into()];
        config.webhook_ca_file = Some(ca);
    })
    .await
    else {
        return;
    };
    // The pipe runs as nobody: it must reach the server's spool.
    for sub in ["blobs/inbound/pending", "blobs/.staging"] {
        std::fs::create_dir_all(app.data_dir.join(sub)).unwrap();
    }
    Command::new("chmod")
        .args(["-R", "a+rwX"])
        .arg(&app.data_dir)
        .status()
        .unwrap();
    Command::new("chmod").arg("a+x").arg(&app.data_dir).status().unwrap();

    // 1. A verified domain with a hosted, a forward and a both mailbox, and an
    // app password; the first sync applies them.
    let key = app.sender(&format!("tom@{ALLOWED_DOMAIN}"), "tom.example", "me").await;
    for (local, mode, to) in [
        ("fwd", "forward", json!(["out@elsewhere.test"])),
        ("both", "both", json!(["out@elsewhere.test"])),
    ] {
        let added = app.add_mailbox(&key, "tom.example", local, mode, to).await;
        assert_eq!(added.status, 200, "{}", added.body);
    }
    let issued = app
        .post(
            "/issueMailboxCredential",
            Auth::Bearer(&key),
            json!({"address": "me@tom.example"}),
        )
        .await;
    let password = issued.body["password"].as_str().unwrap().to_string();
    let hook = app
        .post(
            "/webhooks",
            Auth::Bearer(&key),
            json!({"url": format!("https://localhost:{hook_port}/mail")}),
        )
        .await;
    let secret = hook.body["webhook"]["secret"].as_str().unwrap().to_string();
    let Some(receiver) = Receiver::start(hook_port, hook_dir, &secret, "200") else {
        return;
    };
    mta_export::run_once(&app.ctx).await.unwrap();
    let host = MailHost {
        dir: dir.clone(),
        smtp_port,
        imap_port,
    };
    MailHost::script(&[
        "start",
        dir.to_str().unwrap(),
        "--url",
        &format!("{}/api", app.base),
        "--sync-token",
        SYNC_TOKEN,
        "--mailhost",
        env!("CARGO_BIN_EXE_mailhost"),
        "--data-dir",
        app.data_dir.to_str().unwrap(),
        "--smtp-port",
        &smtp_port.to_string(),
        "--submission-port",
        &submission_port.to_string(),
        "--imap-port",
        &imap_port.to_string(),
        "--relay-user",
        RELAY_USER,
        "--relay-password",
        &relay_password,
        "--route",
        &format!("elsewhere.test=127.0.0.1:{}", sink.port),
    ]);
    let domains = app.get("/listDomains", Auth::Bearer(&key)).await.body;
    let mailboxes = domains["domains"][0]["mailboxes"].as_array().unwrap();
    assert!(mailboxes.iter().all(|m| m["mtaApplied"] == true), "{domains}");

    // 2. Mail to the hosted address: in the maildir (IMAP), in the inbox, and
    // announced to the webhook.
    smtp(
        host.smtp_port,
        "ann@example.org",
        "me@tom.example",
        "Over SMTP",
        "<host-1@example.org>",
    )
    .await
    .unwrap();
    let row = wait_listed(&app, &key, "Over SMTP").await;
    assert_eq!(row["mailbox"], "me@tom.example");
    let got = receiver.wait_for(1).await;
    assert_eq!(got.len(), 1);
    assert_eq!(got[0]["svcOk"], true);
    let subjects = imap_subjects(host.imap_port, "me@tom.example", &password).unwrap();
    assert!(subjects.iter().any(|s| s == "Over SMTP"), "{subjects:?}");
    assert!(imap_subjects(host.imap_port, "me@tom.example", "wrong password").is_err());

    // 3. Forward: to the target with an SRS sender; both: forwarded and kept;
    // unknown: refused at RCPT.
    smtp(
        host.smtp_port,
        "ann@example.org",
        "fwd@tom.example",
        "Forward me",
        "<host-2@example.org>",
    )
    .await
    .unwrap();
    smtp(
        host.smtp_port,
        "ann@example.org",
        "both@tom.example",
        "Both ways",
        "<host-3@example.org>",
    )
    .await
    .unwrap();
    let forwarded = sink.wait_for(2).await;
    assert_eq!(forwarded.len(), 2, "{forwarded:?}");
    for m in &forwarded {
        assert_eq!(m.rcpt_tos, ["out@elsewhere.test"]);
        assert!(m.mail_from.starts_with("SRS0="), "an SRS sender: {}", m.mail_from);
    }
    wait_listed(&app, &key, "Both ways").await;
    let refused = smtp(
        host.smtp_port,
        "ann@example.org",
        "nobody@tom.example",
        "Lost",
        "<host-4@example.org>",
    )
    .await;
    let error = refused.expect_err("an unknown recipient is refused");
    assert!(
        error.contains("550") || error.to_lowercase().contains("permanent"),
        "{error}"
    );

    // 4. The service's own send goes through submission (STARTTLS, AUTH) and
    // lands, DKIM-signed, in another hosted mailbox on the host.
    let sent = app
        .send_mail(
            Auth::Bearer(&key),
            json!({"from": "me@tom.example", "to": "both@tom.example", "subject": "Through submission", "text": "Signed."}),
        )
        .await;
    assert_eq!(sent.status, 200, "{}", sent.body);
    let row = wait_listed(&app, &key, "Through submission").await;
    assert_eq!(row["mailbox"], "both@tom.example");
    let done = app.ctx.blobs.list("inbound/done/").await.unwrap();
    let mut signed = false;
    for name in done {
        let raw = app.ctx.blobs.get(&name).await.unwrap().unwrap();
        if String::from_utf8_lossy(&raw).contains("Subject: Through submission") {
            signed = dkim_verify(&raw, app.dns.addr);
        }
    }
    assert!(signed, "the copy on the host carries a DKIM signature that verifies");

    // 5. Forward-only: no IMAP login; hosted again: it works. Deleted: refused,
    // the maildir stays.
    let mode = |mode: &str| json!({"domainId": "tom.example", "localPart": "me", "mode": mode, "forwardTo": if mode == "hosted" { json!([]) } else { json!(["out@elsewhere.test"]) }});
    assert_eq!(
        app.post("/setMailboxMode", Auth::Bearer(&key), mode("forward"))
            .await
            .status,
        200
    );
    mta_export::run_once(&app.ctx).await.unwrap();
    host.sync();
    within_dovecots_recheck("forward-only: no login", || {
        imap_subjects(host.imap_port, "me@tom.example", &password).err()
    });
    assert_eq!(
        app.post("/setMailboxMode", Auth::Bearer(&key), mode("hosted"))
            .await
            .status,
        200
    );
    mta_export::run_once(&app.ctx).await.unwrap();
    host.sync();
    let subjects = within_dovecots_recheck("hosted again: login works", || {
        imap_subjects(host.imap_port, "me@tom.example", &password).ok()
    });
    assert!(subjects.iter().any(|s| s == "Over SMTP"));
    let deleted = app
        .post(
            "/deleteMailbox",
            Auth::Bearer(&key),
            json!({"address": "both@tom.example"}),
        )
        .await;
    assert_eq!(deleted.status, 200, "{}", deleted.body);
    mta_export::run_once(&app.ctx).await.unwrap();
    host.sync();
    let gone = smtp(
        host.smtp_port,
        "ann@example.org",
        "both@tom.example",
        "Too late",
        "<host-5@example.org>",
    )
    .await;
    assert!(gone.is_err(), "a deleted mailbox is refused");
    assert!(dir.join("mail/tom.example/both/Maildir").exists(), "its maildir stays");

    // 6. The service away during a sync: nothing acknowledged, nothing
    // changed; back, the next sync applies the newest export.
    let maps = dir.join("maps/virtual_mailbox_maps");
    let before = std::fs::read_to_string(&maps).unwrap();
    assert_eq!(
        app.add_mailbox(&key, "tom.example", "late", "hosted", json!([]))
            .await
            .status,
        200
    );
    mta_export::run_once(&app.ctx).await.unwrap();
    let away = Command::new(env!("CARGO_BIN_EXE_mailhost"))
        .args(["mta-sync", "--once", "--url", "http://127.0.0.1:9", "--reload", ""])
        .arg("--postfix-maps-dir")
        .arg(dir.join("maps"))
        .arg("--dovecot-passwd")
        .arg(dir.join("dovecot.passwd"))
        .env("MAILHOST_SYNC_TOKEN", SYNC_TOKEN)
        .output()
        .unwrap();
    assert!(!away.status.success(), "{away:?}");
    assert_eq!(std::fs::read_to_string(&maps).unwrap(), before);
    let late = |body: &Value| {
        body["domains"][0]["mailboxes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["localPart"] == "late")
            .unwrap()["mtaApplied"]
            .clone()
    };
    assert_eq!(
        late(&app.get("/listDomains", Auth::Bearer(&key)).await.body),
        json!(false)
    );
    host.sync();
    assert_eq!(
        late(&app.get("/listDomains", Auth::Bearer(&key)).await.body),
        json!(true)
    );
    smtp(
        host.smtp_port,
        "ann@example.org",
        "late@tom.example",
        "Just in time",
        "<host-6@example.org>",
    )
    .await
    .unwrap();
    wait_listed(&app, &key, "Just in time").await;
}
