//! The mail host end to end, with the real servers from Debian's packages:
//! a private Postfix instance, Dovecot and postsrsd started by
//! `scripts/mail-host` from `mail-host/`, fed by `mailhost mta-sync` from the
//! service under test. Mail sent over SMTP reaches the Dovecot maildir (read
//! back with Python's imaplib), the inbox API (through the pipe, the spool and
//! the poller) and the account's webhook; forwarded mail leaves with an SRS
//! sender; unknown recipients are refused at RCPT; the service's own mail
//! goes through submission with STARTTLS and AUTH and arrives DKIM-signed.
//! Each copy is filed for its envelope recipient alone (Bcc, list mail, a
//! `To:` naming someone else, 150 recipients), and a mailbox's app password
//! sends through the service's send path (the milter): only as itself,
//! charged, paused and limited like an API send, and signed.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::support::smtp::{SmtpSink, dkim_verify, free_port};
use crate::support::webhooks::Receiver;
use crate::support::{self, ALLOWED_DOMAIN, Auth, Backend, SYNC_TOKEN, TestApp};
use common::service::{operators::mta_export, receiving::poller};
use lettre::address::Envelope;
use lettre::{AsyncSmtpTransport, AsyncTransport, Tokio1Executor};
use serde_json::{Value, json};

const RELAY_USER: &str = "relay";

pub(crate) struct MailHost {
    pub(crate) dir: PathBuf,
    pub(crate) smtp_port: u16,
    pub(crate) imap_port: u16,
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

    pub(crate) fn sync(&self) {
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
pub(crate) async fn smtp(port: u16, from: &str, to: &str, subject: &str, message_id: &str) -> Result<(), String> {
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

fn imap_subjects(host: &MailHost, user: &str, password: &str) -> Result<Vec<String>, String> {
    let script = r#"
import imaplib, socket, ssl, sys
# From 127.0.0.2: Dovecot counts a connection whose two ends are one address
# as secured, which a client elsewhere never is.
class Client(imaplib.IMAP4):
    def _create_socket(self, timeout):
        return socket.create_connection((self.host, self.port), timeout, source_address=("127.0.0.2", 0))
c = Client("127.0.0.1", int(sys.argv[1]))
# Dovecot requires TLS: without it a login is refused before the password.
try:
    c.login(sys.argv[2], sys.argv[3])
    print("PLAINTEXT LOGIN ACCEPTED"); sys.exit(4)
except imaplib.IMAP4.error:
    pass
c.starttls(ssl_context=ssl.create_default_context(cafile=sys.argv[4]))
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
        .args(["-c", script, &host.imap_port.to_string(), user, password])
        // The CA that issued the host's certificate (make_certificate).
        .arg(host.dir.join("ca.pem"))
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

/// A service with a verified domain `tom.example` (hosted `me`, forward `fwd`
/// and both `both`, and an app password for `me`), and a mail host on
/// loopback in front of it, synced; mail for `elsewhere.test` goes to `sink`.
pub(crate) struct Rig {
    pub(crate) app: TestApp,
    pub(crate) host: MailHost,
    sink: SmtpSink,
    pub(crate) key: String,
    pub(crate) password: String,
    pub(crate) submission_port: u16,
    relay_password: String,
}

pub(crate) async fn rig(adjust: impl FnOnce(&mut common::config::Config) + Send + 'static) -> Option<Rig> {
    rig_on(Backend::Embedded, adjust).await
}

/// [`rig`] on either store.
pub(crate) async fn rig_on(
    backend: Backend,
    adjust: impl FnOnce(&mut common::config::Config) + Send + 'static,
) -> Option<Rig> {
    for program in [
        "postfix", "dovecot", "doveadm", "postsrsd", "openssl", "python3", "runuser", "setsid",
    ] {
        crate::support::standin_command(program)?;
    }
    let sink = SmtpSink::start_open().await?;
    let dir = std::env::temp_dir().join(format!("mailhost-mail-host-{:016x}", rand::random::<u64>()));
    std::fs::create_dir_all(&dir).unwrap();
    make_certificate(&dir);
    let (smtp_port, submission_port, imap_port) = (free_port(), free_port(), free_port());
    let relay_password = format!("relay-{:016x}", rand::random::<u64>());
    let smtp_url = format!("smtp://{RELAY_USER}:{relay_password}@127.0.0.1:{submission_port}?tls=required");
    let tls_ca = dir.join("ca.pem");
    let app = TestApp::spawn_with(backend, move |config| {
        config.smtp_url = Some(smtp_url);
        // Access codes to the outbox, where the harness reads them.
        config.system_mail = common::config::SystemMailKind::Outbox;
        config.smtp_ca_file = Some(tls_ca);
        adjust(config);
    })
    .await?;
    // The pipe runs as nobody: scripts/mail-host lets it reach the server's
    // spool (the README's steps, as written).

    // A verified domain with a hosted, a forward and a both mailbox, and an
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
    Some(Rig {
        host: MailHost {
            dir,
            smtp_port,
            imap_port,
        },
        app,
        sink,
        key,
        password,
        submission_port,
        relay_password,
    })
}

impl Rig {
    /// Writes the newest export and starts the mail host, which applies it.
    pub(crate) async fn start(&self) {
        self.start_with(&[]).await;
    }

    /// [`Rig::start`] with more of `scripts/mail-host start`'s options.
    pub(crate) async fn start_with(&self, more: &[&str]) {
        mta_export::run_once(&self.app.ctx).await.unwrap();
        let (url, smtp_port, submission_port, imap_port, route) = (
            format!("{}/api", self.app.base),
            self.host.smtp_port.to_string(),
            self.submission_port.to_string(),
            self.host.imap_port.to_string(),
            format!("elsewhere.test=127.0.0.1:{}", self.sink.port),
        );
        let mut args = vec![
            "start",
            self.host.dir.to_str().unwrap(),
            "--url",
            &url,
            "--sync-token",
            SYNC_TOKEN,
            "--mailhost",
            env!("CARGO_BIN_EXE_mailhost"),
            "--data-dir",
            self.app.data_dir.to_str().unwrap(),
            "--smtp-port",
            &smtp_port,
            "--submission-port",
            &submission_port,
            "--imap-port",
            &imap_port,
            "--relay-user",
            RELAY_USER,
            "--relay-password",
            &self.relay_password,
            "--route",
            &route,
        ];
        args.extend_from_slice(more);
        MailHost::script(&args);
        let domains = self.app.get("/listDomains", Auth::Bearer(&self.key)).await.body;
        let mailboxes = domains["domains"][0]["mailboxes"].as_array().unwrap();
        assert!(mailboxes.iter().all(|m| m["mtaApplied"] == true), "{domains}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mail_flows_through_postfix_and_dovecot_to_the_inbox_imap_and_the_webhook() {
    let (hook_port, hook_dir) = Receiver::prepare();
    let ca = Receiver::ca_file(&hook_dir);
    let Some(rig) = rig(move |config| {
        config.webhook_allow_hosts = vec!["localhost".into()];
        config.webhook_ca_file = Some(ca);
    })
    .await
    else {
        return;
    };
    let (app, key, password, sink) = (&rig.app, &rig.key, &rig.password, &rig.sink);
    let hook = app
        .post(
            "/webhooks",
            Auth::Bearer(key),
            json!({"url": format!("https://localhost:{hook_port}/mail")}),
        )
        .await;
    let secret = hook.body["webhook"]["secret"].as_str().unwrap().to_string();
    let Some(receiver) = Receiver::start(hook_port, hook_dir, &secret, "200") else {
        return;
    };
    rig.start().await;
    let (host, dir) = (&rig.host, &rig.host.dir);
    // Dovecot's sockets no wider than their users: delivery (the mail user)
    // and Dovecot's own group.
    use std::os::unix::fs::MetadataExt;
    let mode = |name: &str| {
        std::fs::metadata(dir.join("state/dovecot-run").join(name))
            .unwrap()
            .mode()
            & 0o777
    };
    assert_eq!(mode("stats-writer"), 0o660);
    assert_eq!(mode("auth-userdb"), 0o600);
    let key = key.clone();
    let password = password.clone();

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
    let row = wait_listed(app, &key, "Over SMTP").await;
    assert_eq!(row["mailbox"], "me@tom.example");
    let got = receiver.wait_for(1).await;
    assert_eq!(got.len(), 1);
    assert_eq!(got[0]["svcOk"], true);
    let subjects = imap_subjects(host, "me@tom.example", &password).unwrap();
    assert!(subjects.iter().any(|s| s == "Over SMTP"), "{subjects:?}");
    assert!(imap_subjects(host, "me@tom.example", "wrong password").is_err());

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
    wait_listed(app, &key, "Both ways").await;
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
    let row = wait_listed(app, &key, "Through submission").await;
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
        imap_subjects(host, "me@tom.example", &password).err()
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
        imap_subjects(host, "me@tom.example", &password).ok()
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
    wait_listed(app, &key, "Just in time").await;
}

/// Sends `raw` over plain SMTP to port 25 with this envelope.
pub(crate) async fn smtp_raw(port: u16, from: &str, to: &[String], raw: &[u8]) -> Result<(), String> {
    let transport = AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous("127.0.0.1")
        .port(port)
        .build();
    let to = to.iter().map(|t| t.parse().unwrap()).collect();
    let envelope = Envelope::new(Some(from.parse().unwrap()), to).unwrap();
    transport
        .send_raw(&envelope, raw)
        .await
        .map(|_| ())
        .map_err(|e| e.to_string())
}

/// Every row the account's inbox lists, all pages.
pub(crate) async fn all_rows(app: &TestApp, key: &str) -> Vec<Value> {
    let mut rows = Vec::new();
    let mut cursor = String::new();
    loop {
        let page = app
            .get(&format!("/inbox?limit=50{cursor}"), Auth::Bearer(key))
            .await
            .body;
        rows.extend(page["messages"].as_array().unwrap().iter().cloned());
        match page["nextCursor"].as_str() {
            Some(next) => cursor = format!("&cursor={next}"),
            None => return rows,
        }
    }
}

/// Runs the poller until `n` copies were filed since the start (or 60 s).
async fn file_copies(app: &TestApp, n: usize) -> usize {
    let started = Instant::now();
    let mut filed = 0;
    while filed < n && started.elapsed() < Duration::from_secs(60) {
        filed += poller::run_once(&app.ctx).await.unwrap().filed;
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    filed
}

/// Outside finding 2: Postfix hands each copy over with its envelope, and
/// the poller files it for that one recipient, whatever the headers say.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_copy_is_filed_for_its_envelope_recipient_alone() {
    let Some(rig) = rig(|_| {}).await else {
        return;
    };
    let (app, key) = (&rig.app, &rig.key);
    for local in ["other", "third"] {
        let added = app.add_mailbox(key, "tom.example", local, "hosted", json!([])).await;
        assert_eq!(added.status, 200, "{}", added.body);
    }
    let many: Vec<String> = (0..150).map(|i| format!("m{i:03}")).collect();
    for local in &many {
        let added = app.add_mailbox(key, "tom.example", local, "hosted", json!([])).await;
        assert_eq!(added.status, 200, "{}", added.body);
    }
    rig.start().await;
    let port = rig.host.smtp_port;
    let message = |to: &str, subject: &str| {
        format!(
            "From: ann@example.org\r\nTo: {to}\r\nSubject: {subject}\r\nMessage-ID: <{}@example.org>\r\n\r\nHello.\r\n",
            subject.replace(' ', "-")
        )
        .into_bytes()
    };
    // The envelope says me; the headers name someone else each time: a Bcc
    // (no header names the recipient), a list (an outside address), and
    // another hosted mailbox.
    for (to, subject) in [
        ("someone@elsewhere.test", "Blind copy"),
        ("list@lists.example", "List mail"),
        ("other@tom.example", "Not for other"),
    ] {
        smtp_raw(
            port,
            "ann@example.org",
            &["me@tom.example".into()],
            &message(to, subject),
        )
        .await
        .unwrap();
    }
    // One message, 150 recipients: one copy each.
    let everyone: Vec<String> = many.iter().map(|l| format!("{l}@tom.example")).collect();
    smtp_raw(
        port,
        "ann@example.org",
        &everyone,
        &message("undisclosed-recipients:;", "To many"),
    )
    .await
    .unwrap();
    assert_eq!(file_copies(app, 153).await, 153);
    let rows = all_rows(app, key).await;
    let mailboxes_of = |subject: &str| -> Vec<String> {
        let mut found: Vec<String> = rows
            .iter()
            .filter(|r| r["subject"] == subject)
            .map(|r| r["mailbox"].as_str().unwrap().to_string())
            .collect();
        found.sort();
        found
    };
    assert_eq!(mailboxes_of("Blind copy"), ["me@tom.example"]);
    assert_eq!(mailboxes_of("List mail"), ["me@tom.example"]);
    assert_eq!(
        mailboxes_of("Not for other"),
        ["me@tom.example"],
        "never in other's inbox"
    );
    assert_eq!(mailboxes_of("To many"), everyone);
    let failed = app.ctx.blobs.list("inbound/failed/").await.unwrap();
    assert!(failed.is_empty(), "nothing failed: {failed:?}");
    // The envelope came with each copy: the client's address and HELO too.
    let done = app.ctx.blobs.list("inbound/done/").await.unwrap();
    let raw = app.ctx.blobs.get(&done[0]).await.unwrap().unwrap();
    let (envelope, _) = common::mail::inbound::Envelope::split(&raw);
    let envelope = envelope.expect("an envelope line");
    assert_eq!(envelope.client_address.as_deref(), Some("127.0.0.1"));
    assert_eq!(envelope.sender.as_deref(), Some("ann@example.org"));
    assert!(envelope.helo.is_some(), "{envelope:?}");
    // Through the real Postfix, the client's address and HELO reach the SPF
    // check (issue 29).
    let id = rows[0]["id"].as_str().unwrap();
    let read = app.get(&format!("/inbox?id={id}"), Auth::Bearer(key)).await.body;
    let spf = &read["message"]["authentication"]["spf"];
    assert_eq!(spf["clientIp"], "127.0.0.1", "{read}");
    assert!(spf["helo"].is_string(), "{read}");

    // One size limit: Postfix refuses past the service's own, at SMTP time.
    let limit = common::mail::inbound::MESSAGE_SIZE_LIMIT;
    let mut big = message("me@tom.example", "Too big");
    big.truncate(big.len() - 2);
    big.extend(std::iter::repeat_n(b'x', 76).chain(*b"\r\n").cycle().take(limit + 1024));
    let refused = smtp_raw(port, "ann@example.org", &["me@tom.example".into()], &big).await;
    let error = refused.expect_err("a message past the limit is refused");
    assert!(
        error.contains("552") || error.to_lowercase().contains("size"),
        "{error}"
    );
}

/// Submits over the mail host's port 587: STARTTLS, AUTH as `login`.
pub(crate) async fn submit(
    port: u16,
    login: &str,
    password: &str,
    from: &str,
    to: &[&str],
    raw: &str,
) -> Result<(), String> {
    use lettre::transport::smtp::authentication::Credentials;
    use lettre::transport::smtp::client::{Tls, TlsParameters};
    let tls = TlsParameters::builder("localhost".into())
        .dangerous_accept_invalid_certs(true)
        .build()
        .unwrap();
    let transport = AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous("127.0.0.1")
        .port(port)
        .tls(Tls::Required(tls))
        .credentials(Credentials::new(login.into(), password.into()))
        .build();
    let to = to.iter().map(|t| t.parse().unwrap()).collect();
    let envelope = Envelope::new(Some(from.parse().unwrap()), to).unwrap();
    transport
        .send_raw(&envelope, raw.as_bytes())
        .await
        .map(|_| ())
        .map_err(|e| e.to_string())
}

/// Outside finding 1: a mailbox's app password sends through the service's
/// send path, not around it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mailbox_password_sends_only_as_itself_paid_paused_and_signed() {
    let Some(rig) = rig(|_| {}).await else {
        return;
    };
    rig.start().await;
    let (app, key, password, sink) = (&rig.app, &rig.key, &rig.password, &rig.sink);
    let port = rig.submission_port;
    // Logged in as me@tom.example, sending as itself.
    let as_me = |to: &[&str], raw: &str| {
        let (to, raw): (Vec<String>, String) = (to.iter().map(|t| t.to_string()).collect(), raw.to_string());
        async move {
            let to: Vec<&str> = to.iter().map(String::as_str).collect();
            submit(port, "me@tom.example", password, "me@tom.example", &to, &raw).await
        }
    };
    let credits = || async {
        app.get("/credits", Auth::Bearer(key)).await.body["credits"]["remaining"]
            .as_i64()
            .unwrap()
    };
    let message = |from: &str, subject: &str| {
        format!(
            "From: {from}\r\nTo: pal@elsewhere.test\r\nBcc: hidden@elsewhere.test\r\nSubject: {subject}\r\n\r\nFrom a mail client.\r\n"
        )
    };
    let before = credits().await;

    // A good submission: out once, signed for the domain, one credit.
    as_me(&["pal@elsewhere.test"], &message("Me <me@tom.example>", "Submitted"))
        .await
        .unwrap();
    let got = sink.wait_for(1).await;
    assert_eq!(got.len(), 1, "{got:?}");
    let out = &got[0];
    assert_eq!(out.rcpt_tos, ["pal@elsewhere.test"]);
    let text = out.text();
    assert!(text.contains("Subject: Submitted"), "{text}");
    assert!(!text.to_ascii_lowercase().contains("\nbcc:"), "Bcc is not sent: {text}");
    assert!(text.contains("d=tom.example"), "{text}");
    assert!(
        dkim_verify(&out.raw, app.dns.addr),
        "signed with the domain's key: {text}"
    );
    assert_eq!(credits().await, before - 1);

    // Another envelope sender, or another From:, is refused at SMTP time.
    for (envelope_from, header_from) in [
        ("ceo@bank.example", "me@tom.example"),
        ("me@tom.example", "ceo@bank.example"),
        ("me@tom.example", "me@tom.example, ceo@bank.example"),
        ("noreply@svc.test", "noreply@svc.test"),
    ] {
        let refused = submit(
            port,
            "me@tom.example",
            password,
            envelope_from,
            &["pal@elsewhere.test"],
            &message(header_from, "Forged"),
        )
        .await
        .expect_err("a forged sender is refused");
        assert!(refused.contains("sends only as its own address"), "{refused}");
        assert!(refused.contains("550") || refused.starts_with("permanent"), "{refused}");
    }
    // Five tries in this minute: the rate window is the API's, counted
    // before the message is judged (spec 4.1's order), and a temporary refusal.
    let six: Vec<String> = (0..6).map(|i| format!("p{i}@elsewhere.test")).collect();
    let six: Vec<&str> = six.iter().map(String::as_str).collect();
    let refused = as_me(&six, &message("me@tom.example", "Many"))
        .await
        .expect_err("the sixth try in a minute");
    assert!(refused.contains("Rate limit exceeded"), "{refused}");
    assert!(refused.contains("450") || refused.starts_with("transient"), "{refused}");
    app.ctx.clock.advance(61);
    // Past five recipients, as an API send.
    let refused = as_me(&six, &message("me@tom.example", "Many"))
        .await
        .expect_err("six recipients are refused");
    assert!(refused.contains("Max 5 recipients per request"), "{refused}");

    // Paused by an operator: a temporary refusal, nothing spent.
    let operator = app.operator_token().await;
    let pause = |on: bool| app.post("/credits", Auth::Bearer(&operator), json!({"sendingEnabled": on}));
    assert_eq!(pause(false).await.status, 200);
    let refused = as_me(&["pal@elsewhere.test"], &message("me@tom.example", "Paused"))
        .await
        .expect_err("paused");
    assert!(refused.contains("Sending temporarily disabled"), "{refused}");
    assert!(refused.contains("451") || refused.starts_with("transient"), "{refused}");
    assert_eq!(pause(true).await.status, 200);

    // Out of credits: refused, and nothing goes out.
    let uid = common::service::mailboxes::by_address(&app.ctx, "me@tom.example")
        .await
        .unwrap()
        .unwrap()
        .uid;
    app.set_credits(&format!("acct:{uid}"), 0).await;
    let refused = as_me(&["pal@elsewhere.test"], &message("me@tom.example", "Broke"))
        .await
        .expect_err("out of credits");
    assert!(refused.contains("Insufficient credits"), "{refused}");
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(sink.messages().len(), 1, "only the good submission went out");
    assert_eq!(credits().await, 0);

    // A wrong password never gets as far as the milter.
    let refused = submit(
        port,
        "me@tom.example",
        "wrong",
        "me@tom.example",
        &["pal@elsewhere.test"],
        &message("me@tom.example", "Wrong"),
    )
    .await
    .expect_err("a wrong password");
    assert!(
        refused.contains("535") || refused.to_lowercase().contains("auth"),
        "{refused}"
    );
}

/// Issue 40, finding 2, through Postfix and the milter: a password a scoped
/// key issued sends as that key (refused without its send permission, held
/// by its approval rule, stopped by its daily cap), and dies with it: a
/// submission the mail host still lets through is refused, and once the
/// next export is applied the login itself is.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scoped_keys_password_is_held_capped_refused_and_dies_with_the_key() {
    let Some(rig) = rig(|_| {}).await else {
        return;
    };
    rig.start().await;
    let (app, owner, sink) = (&rig.app, &rig.key, &rig.sink);
    let (port, me) = (rig.submission_port, "me@tom.example");
    let message = |subject: &str| {
        format!("From: {me}\r\nTo: pal@elsewhere.test\r\nSubject: {subject}\r\n\r\nFrom a mail client.\r\n")
    };
    let issue = |key: String| async move {
        let res = app
            .post("/issueMailboxCredential", Auth::Bearer(&key), json!({"address": me}))
            .await;
        assert_eq!(res.status, 200, "{}", res.body);
        res.body["password"].as_str().unwrap().to_string()
    };
    let apply = || async {
        mta_export::run_once(&app.ctx).await.unwrap();
        rig.host.sync();
    };
    // A submission once Dovecot has read the synced passwd-file (it looks
    // at most once a second): the login's answer, then the message's.
    let submit_as = |password: String, subject: String, login_refused: bool| async move {
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let sent = submit(port, me, &password, me, &["pal@elsewhere.test"], &message(&subject)).await;
            let refused_login = sent.as_ref().is_err_and(|e| e.contains("535"));
            if refused_login == login_refused || Instant::now() > deadline {
                return sent;
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    };

    // It may read, not send: its password logs in and sends nothing.
    let (reader, _) = crate::guardrails::mint(
        app,
        owner,
        json!({"name": "reader", "permissions": ["manage", "read"], "mailboxes": [me]}),
    )
    .await;
    let password = issue(reader).await;
    apply().await;
    let refused = submit_as(password, "Reader".into(), false)
        .await
        .expect_err("no send permission");
    assert!(refused.contains("lacks the send permission"), "{refused}");
    assert!(refused.contains("550") || refused.starts_with("permanent"), "{refused}");

    // Approval always and a cap of 1: the first waits for the owner (the
    // client reads 250), the second is past the cap (a temporary refusal).
    let (careful, view) = crate::guardrails::mint(
        app,
        owner,
        json!({"name": "careful", "permissions": ["manage", "read", "send"], "mailboxes": [me],
               "approval": "always", "dailySendCap": 1}),
    )
    .await;
    let password = issue(careful).await;
    apply().await;
    submit_as(password.clone(), "Held".into(), false)
        .await
        .expect("accepted to wait for the owner");
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(sink.messages().is_empty(), "held, not sent");
    let holds = app.get("/holds", Auth::Bearer(owner)).await.body;
    let hold = &holds["holds"][0];
    assert_eq!(
        (hold["status"].as_str(), hold["from"].as_str(), hold["subject"].as_str()),
        (Some("waiting"), Some(me), Some("Held")),
        "{holds}"
    );
    assert_eq!(hold["requestedBy"]["keyId"], view["id"]);
    let refused = submit_as(password.clone(), "Capped".into(), false)
        .await
        .expect_err("past the key's cap");
    assert!(refused.contains("daily send cap"), "{refused}");
    assert!(refused.contains("450") || refused.starts_with("transient"), "{refused}");
    let approved = app
        .post("/holds/approve", Auth::Bearer(owner), json!({"holdId": hold["id"]}))
        .await;
    assert_eq!(approved.body["hold"]["status"], "sent", "{}", approved.body);
    let got = sink.wait_for(1).await;
    assert!(got[0].text().contains("Subject: Held"), "{}", got[0].text());
    assert!(dkim_verify(&got[0].raw, app.dns.addr), "signed once approved");

    // Revoked: refused at once, while the mail host still knows the password...
    let id = view["id"].as_str().unwrap();
    let res = app
        .delete(&format!("/keys?id={id}"), Auth::Bearer(owner), json!({}))
        .await;
    assert_eq!(res.status, 200, "{}", res.body);
    let refused = submit_as(password.clone(), "Revoked".into(), false)
        .await
        .expect_err("its key is revoked");
    assert!(refused.contains("has since been revoked"), "{refused}");
    // ... and gone from the next export, after which its login fails.
    mta_export::run_once(&app.ctx).await.unwrap();
    let export = app.get("/mtaMailboxExport", Auth::Bearer(SYNC_TOKEN)).await.body;
    let logins = export["export"]["dovecot"]["passwdFile"].as_str().unwrap();
    assert!(!logins.contains(&format!("{me}:")), "{logins}");
    rig.host.sync();
    let refused = submit_as(password, "After the sync".into(), true)
        .await
        .expect_err("no such login");
    assert!(refused.contains("535"), "{refused}");
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(sink.messages().len(), 1, "only the approved message went out");
}

/// Issue 40, finding 1, through the real Postfix on port 25: with
/// `_dmarc.bank.test` at p=reject, each way of naming bank.test beside
/// another address (two addresses, two From headers, a group), or with the
/// obsolete spaces, is filed in the quarantine as spoofed, never the inbox.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spoofed_from_variants_from_outside_stay_out_of_the_inbox() {
    let Some(rig) = rig(|_| {}).await else {
        return;
    };
    let (app, key) = (&rig.app, &rig.key);
    app.dns.set_txt("_dmarc.bank.test", &["v=DMARC1; p=reject"]);
    app.dns.set_txt("bank.test", &["v=spf1 ip4:192.0.2.0/24 -all"]);
    rig.start().await;
    let variants = [
        "From: CEO <ceo@bank.test>, x@attacker.test\r\n",
        "From: x@attacker.test\r\nFrom: CEO <ceo@bank.test>\r\n",
        "From: Bank: ceo@bank.test, x@attacker.test;\r\n",
        "From: ceo @ bank.test\r\n",
    ];
    for (n, from_lines) in variants.iter().enumerate() {
        let raw = format!(
            "{from_lines}To: me@tom.example\r\nSubject: Wire {n}\r\nMessage-ID: <wire-{n}@attacker.test>\r\n\r\nPay now.\r\n"
        );
        smtp_raw(
            rig.host.smtp_port,
            "x@attacker.test",
            &["me@tom.example".into()],
            raw.as_bytes(),
        )
        .await
        .unwrap();
    }
    assert_eq!(file_copies(app, variants.len()).await, variants.len());
    assert_eq!(all_rows(app, key).await, Vec::<Value>::new(), "none in the inbox");
    let kept = app.get("/inbox?view=quarantine", Auth::Bearer(key)).await.body;
    let kept = kept["messages"].as_array().unwrap();
    assert_eq!(kept.len(), variants.len(), "{kept:?}");
    for row in kept {
        assert_eq!(
            row["authentication"],
            json!({"summary": "fail", "spoofed": true}),
            "{row}"
        );
        let id = row["id"].as_str().unwrap();
        let read = app.get(&format!("/inbox?id={id}"), Auth::Bearer(key)).await.body;
        let dmarc = &read["message"]["authentication"]["dmarc"];
        assert_eq!(
            (&dmarc["domain"], &dmarc["result"]),
            (&json!("bank.test"), &json!("fail")),
            "{read}"
        );
    }
}

/// Issue 40, finding 7, through the real Postfix's submission port and the
/// milter: `From: ceo@beta.test` above `From: me@tom.example` went out
/// signed for tom.example with both headers. More than one From or Sender
/// header, or a Sender naming several addresses, is refused at SMTP time and
/// nothing goes out; one From and one Sender naming the mailbox are sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mailbox_password_never_sends_a_second_from_or_sender() {
    let Some(rig) = rig(|_| {}).await else {
        return;
    };
    rig.start().await;
    let (password, sink) = (&rig.password, &rig.sink);
    let message = |headers: &str, subject: &str| {
        format!("{headers}To: pal@elsewhere.test\r\nSubject: {subject}\r\n\r\nFrom a mail client.\r\n")
    };
    for headers in [
        "From: ceo@beta.test\r\nFrom: me@tom.example\r\n",
        "From: me@tom.example\r\nFrom: me@tom.example\r\n",
        "From: me@tom.example\r\nSender: me@tom.example, ceo@beta.test\r\n",
        "From: me@tom.example\r\nSender: ceo@beta.test\r\nSender: me@tom.example\r\n",
    ] {
        let refused = submit(
            rig.submission_port,
            "me@tom.example",
            password,
            "me@tom.example",
            &["pal@elsewhere.test"],
            &message(headers, "Two authors"),
        )
        .await
        .expect_err("a second author is refused");
        assert!(
            refused.contains("sends only as its own address"),
            "{headers}: {refused}"
        );
        assert!(refused.contains("550") || refused.starts_with("permanent"), "{refused}");
    }
    submit(
        rig.submission_port,
        "me@tom.example",
        password,
        "me@tom.example",
        &["pal@elsewhere.test"],
        &message("From: Me <me@tom.example>\r\nSender: me@tom.example\r\n", "One author"),
    )
    .await
    .unwrap();
    let got = sink.wait_for(1).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(sink.messages().len(), 1, "only the one author went out");
    let text = got[0].text();
    assert!(text.contains("Subject: One author"), "{text}");
    assert_eq!(
        text.matches("\nFrom: ").count() + usize::from(text.starts_with("From: ")),
        1,
        "{text}"
    );
    assert!(dkim_verify(&got[0].raw, rig.app.dns.addr), "{text}");
}

/// The copies Dovecot delivered to a hosted mailbox's maildir (new and cur).
fn maildir_copies(host: &MailHost, local: &str) -> Vec<Vec<u8>> {
    let maildir = host.dir.join(format!("mail/tom.example/{local}/Maildir"));
    ["new", "cur"]
        .iter()
        .filter_map(|sub| std::fs::read_dir(maildir.join(sub)).ok())
        .flat_map(|dir| dir.filter_map(|e| e.ok()).map(|e| std::fs::read(e.path()).unwrap()))
        .collect()
}

/// A message's header lines, each unfolded.
fn header_lines(raw: &[u8]) -> Vec<String> {
    let text = String::from_utf8_lossy(raw).replace("\r\n", "\n");
    let head = text.split("\n\n").next().unwrap_or_default();
    let mut lines: Vec<String> = Vec::new();
    for line in head.lines() {
        match (line.starts_with([' ', '\t']), lines.last_mut()) {
            (true, Some(last)) => last.push_str(line),
            _ => lines.push(line.to_string()),
        }
    }
    lines
}

/// Issue 45: a send with To, Cc and Bcc through the real mail host (the
/// service's submission to Postfix, delivery by the pipe to the spool and
/// Dovecot, relay to another host) reaches every recipient, one copy each,
/// and no copy names a Bcc recipient: no Bcc header, and the address in no
/// header but the trace lines the receiving side adds to its own copy.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bcc_reaches_everyone_through_the_mail_host_and_no_copy_names_it() {
    let Some(rig) = rig(|_| {}).await else {
        return;
    };
    let (app, key, sink, host) = (&rig.app, &rig.key, &rig.sink, &rig.host);
    for local in ["ann", "bob", "boss"] {
        let added = app.add_mailbox(key, "tom.example", local, "hosted", json!([])).await;
        assert_eq!(added.status, 200, "{}", added.body);
    }
    rig.start().await;
    let sent = app
        .send_mail(
            Auth::Bearer(key),
            json!({
                "from": "me@tom.example", "to": "ann@tom.example",
                "cc": ["bob@tom.example", "carol@elsewhere.test"],
                "bcc": ["boss@tom.example", "hidden@elsewhere.test"],
                "subject": "Blind copies", "text": "For the team.", "html": "<p>For the <b>team</b>.</p>",
            }),
        )
        .await;
    assert_eq!(sent.status, 200, "{}", sent.body);
    let blind = ["boss@tom.example", "hidden@elsewhere.test"];

    // Relayed: one transaction each for the outside Cc and Bcc.
    let relayed = sink.wait_for(2).await;
    let mut outside: Vec<(String, Vec<u8>)> = relayed
        .iter()
        .map(|m| {
            assert_eq!(m.rcpt_tos.len(), 1, "one recipient a transaction: {:?}", m.rcpt_tos);
            (m.rcpt_tos[0].clone(), m.raw.clone())
        })
        .collect();
    outside.sort();
    assert_eq!(
        outside.iter().map(|(to, _)| to.as_str()).collect::<Vec<_>>(),
        ["carol@elsewhere.test", "hidden@elsewhere.test"]
    );
    // Delivered here: each hosted recipient's maildir and inbox.
    assert_eq!(file_copies(app, 3).await, 3, "ann, bob and boss each filed once");
    let rows = all_rows(app, key).await;
    let mut filed: Vec<&str> = rows
        .iter()
        .filter(|r| r["subject"] == "Blind copies")
        .map(|r| r["mailbox"].as_str().unwrap())
        .collect();
    filed.sort();
    assert_eq!(filed, ["ann@tom.example", "bob@tom.example", "boss@tom.example"]);
    for row in rows.iter().filter(|r| r["subject"] == "Blind copies") {
        assert_eq!(row["to"], json!(["ann@tom.example"]), "{row}");
        assert_eq!(row["cc"], json!(["bob@tom.example", "carol@elsewhere.test"]), "{row}");
        assert!(row.get("bcc").is_none(), "{row}");
    }
    let mut copies = outside;
    let started = Instant::now();
    for local in ["ann", "bob", "boss"] {
        let found = loop {
            let found = maildir_copies(host, local);
            if !found.is_empty() || started.elapsed() > Duration::from_secs(30) {
                break found;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        };
        assert_eq!(found.len(), 1, "{local}: one copy in the maildir");
        copies.push((format!("{local}@tom.example"), found[0].clone()));
    }

    // Every copy: To and Cc as written, no Bcc header, the blind addresses
    // nowhere but in a trace line of their own copy, the service's DKIM
    // signature intact, and the HTML alternative beside the text.
    const TRACE: [&str; 4] = ["received:", "delivered-to:", "x-original-to:", "return-path:"];
    for (recipient, raw) in &copies {
        let lines = header_lines(raw);
        assert!(
            !lines.iter().any(|l| l.to_ascii_lowercase().starts_with("bcc:")),
            "{recipient} got a Bcc header: {lines:?}"
        );
        for line in &lines {
            let lower = line.to_ascii_lowercase();
            for hidden in blind.iter().filter(|h| lower.contains(*h)) {
                assert!(
                    hidden == recipient && TRACE.iter().any(|t| lower.starts_with(t)),
                    "{recipient}'s copy names {hidden}: {line}"
                );
            }
        }
        let text = String::from_utf8_lossy(raw).to_ascii_lowercase();
        let head_len = text.replace("\r\n", "\n").find("\n\n").unwrap_or(text.len());
        for hidden in blind.iter().filter(|h| **h != recipient.as_str()) {
            assert!(
                !text.contains(hidden),
                "{recipient}'s copy names {hidden} ({head_len} header bytes)"
            );
        }
        let parsed = mail_parser::MessageParser::default().parse(raw).unwrap();
        let addresses = |list: Option<&mail_parser::Address<'_>>| -> Vec<String> {
            list.into_iter()
                .flat_map(|a| a.iter())
                .filter_map(|a| a.address().map(str::to_string))
                .collect()
        };
        assert_eq!(addresses(parsed.to()), ["ann@tom.example"], "{recipient}");
        assert_eq!(
            addresses(parsed.cc()),
            ["bob@tom.example", "carol@elsewhere.test"],
            "{recipient}"
        );
        assert_eq!(parsed.subject(), Some("Blind copies"));
        assert_eq!(parsed.body_text(0).unwrap().trim(), "For the team.");
        assert!(parsed.body_html(0).unwrap().contains("<b>team</b>"), "{recipient}");
        assert!(dkim_verify(raw, app.dns.addr), "{recipient}: the signature verifies");
    }
    // The sender's own record keeps whom it went to, Bcc too.
    let outbox = app.get("/outbox?limit=5", Auth::Bearer(key)).await;
    assert_eq!(outbox.status, 200, "{}", outbox.body);
    assert!(
        outbox.body.to_string().contains("hidden@elsewhere.test"),
        "{}",
        outbox.body
    );
}
