//! Delivery status end to end through the real mail host (issue 22): the
//! service sends through a private Postfix (`scripts/mail-host`, the bounce
//! domain `bounce.svc.test`, retries within a second) to a remote site's MX on
//! loopback (`support/remote_mx.py`: 550 5.1.1 for bounce-me@, 450 then 250
//! for defer-me@, 250 for deliver-me@). Postfix's own DSN for the refusal
//! comes back to the signed return path and is read by the poller; its
//! delivery log, read by `mailhost mta-sync`, gives the deferral and both
//! deliveries. Everything is observed as a client would: GET /outbox,
//! /suppressions, the next send's 400, the signed webhook events. A forged
//! DSN mailed to the bounce domain changes nothing.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{Duration, Instant};

use crate::delivery::urlencode;
use crate::mail_host::rig;
use crate::support::smtp::free_port;
use crate::support::webhooks::Receiver;
use crate::support::{Auth, TestApp};
use common::service::receiving::poller;
use lettre::address::Envelope;
use lettre::{AsyncSmtpTransport, AsyncTransport, Tokio1Executor};
use serde_json::{Value, json};

const BOUNCE_DOMAIN: &str = "bounce.svc.test";

/// `support/remote_mx.py` on a free port, killed when dropped.
struct RemoteMx {
    port: u16,
    out: PathBuf,
    child: Child,
    _stdin: ChildStdin,
}

impl RemoteMx {
    fn start() -> Option<RemoteMx> {
        let venv = crate::support::standin("MAILHOST_TEST_VENV")?;
        let out = std::env::temp_dir().join(format!("mailhost-remote-mx-{:016x}", rand::random::<u64>()));
        let port = free_port();
        let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/api/support/remote_mx.py");
        let mut child = Command::new(format!("{venv}/bin/python"))
            .arg(script)
            .args(["--port", &port.to_string()])
            .arg("--out")
            .arg(&out)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("remote_mx.py starts");
        let mut ready = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut ready)
            .unwrap();
        assert_eq!(ready.trim(), "READY", "remote_mx.py did not start");
        let stdin = child.stdin.take().unwrap();
        Some(RemoteMx {
            port,
            out,
            child,
            _stdin: stdin,
        })
    }

    /// Every RCPT answer so far: `{mail_from, rcpt, code, reply}`.
    fn answers(&self) -> Vec<Value> {
        std::fs::read_to_string(self.out.join("rcpts.jsonl"))
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }
}

impl Drop for RemoteMx {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.out);
    }
}

async fn outbox(app: &TestApp, key: &str, message_id: &str) -> Value {
    let res = app
        .get(
            &format!("/outbox?messageId={}", urlencode(message_id)),
            Auth::Bearer(key),
        )
        .await;
    assert_eq!(res.status, 200, "{}", res.body);
    res.body["message"].clone()
}

fn status_of(message: &Value, address: &str) -> String {
    recipient(message, address)["status"].as_str().unwrap().to_string()
}

fn recipient<'a>(message: &'a Value, address: &str) -> &'a Value {
    message["recipients"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["address"] == address)
        .unwrap_or_else(|| panic!("{address} in {message}"))
}

fn history(recipient: &Value) -> Vec<String> {
    recipient["history"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["status"].as_str().unwrap().to_string())
        .collect()
}

/// Runs `step` and reads the outbox until `done` holds of the message, or
/// fails after `limit`; gives the message and how long it took.
async fn until(
    app: &TestApp,
    key: &str,
    message_id: &str,
    limit: Duration,
    what: &str,
    mut step: impl FnMut(),
    done: impl Fn(&Value) -> bool,
) -> (Value, Duration) {
    let started = Instant::now();
    loop {
        step();
        poller::run_once(&app.ctx).await.unwrap();
        let message = outbox(app, key, message_id).await;
        if done(&message) {
            return (message, started.elapsed());
        }
        assert!(started.elapsed() < limit, "{what}: not within {limit:?}: {message}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Mails `raw` with the null reverse-path (as a DSN comes) to port 25.
async fn mail_report(port: u16, to: &[String], raw: &[u8]) {
    let transport = AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous("127.0.0.1")
        .port(port)
        .build();
    let to = to.iter().map(|t| t.parse().unwrap()).collect();
    let envelope = Envelope::new(None, to).unwrap();
    transport.send_raw(&envelope, raw).await.unwrap();
}

async fn credits(app: &TestApp, key: &str) -> i64 {
    app.get("/credits", Auth::Bearer(key)).await.body["credits"]["remaining"]
        .as_i64()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bounced_deferred_and_delivered_through_postfix_reach_the_outbox_suppressions_and_webhook() {
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
    let Some(remote) = RemoteMx::start() else {
        return;
    };
    let (app, key) = (&rig.app, rig.key.as_str());
    let events = json!([
        "outbound.delivered",
        "outbound.deferred",
        "outbound.bounced",
        "outbound.complained",
        "suppression.added"
    ]);
    let hook = app
        .post(
            "/webhooks",
            Auth::Bearer(key),
            json!({"url": format!("https://localhost:{hook_port}/mail"), "events": events}),
        )
        .await;
    assert_eq!(hook.status, 200, "{}", hook.body);
    let secret = hook.body["webhook"]["secret"].as_str().unwrap().to_string();
    let Some(receiver) = Receiver::start(hook_port, hook_dir, &secret, "200") else {
        return;
    };
    let route = format!("remote.test=127.0.0.1:{}", remote.port);
    rig.start_with(&[
        "--route",
        &route,
        "--bounce-domain",
        BOUNCE_DOMAIN,
        "--retry-seconds",
        "1",
    ])
    .await;

    let (bounce, defer, deliver) = (
        "bounce-me@remote.test",
        "defer-me@remote.test",
        "deliver-me@remote.test",
    );
    let before = credits(app, key).await;
    let sent = app
        .send_mail(
            Auth::Bearer(key),
            json!({"from": "me@tom.example", "to": [bounce, defer, deliver], "subject": "Status through Postfix", "text": "Hi."}),
        )
        .await;
    assert_eq!(sent.status, 200, "{}", sent.body);
    let message_id = sent.body["messageId"].as_str().unwrap().to_string();
    let sent_at = Instant::now();
    assert_eq!(credits(app, key).await, before - 1);

    // 1. The refusal: Postfix's DSN to the signed return path, read by the
    // poller alone (the log is not read yet, so nothing else moves).
    let (message, took) = until(
        app,
        key,
        &message_id,
        Duration::from_secs(30),
        "the DSN for bounce-me",
        || {},
        |m| status_of(m, bounce) == "bounced",
    )
    .await;
    eprintln!("send to bounced (Postfix's DSN, read by the poller): {took:?}");
    let bounced = recipient(&message, bounce);
    assert_eq!(bounced["reply"]["enhancedStatus"], "5.1.1", "{message}");
    assert_eq!(bounced["reply"]["smtpCode"], 550, "{message}");
    assert_eq!(
        bounced["evidence"].as_array().map(Vec::len),
        Some(1),
        "the DSN is kept: {message}"
    );
    assert_eq!(history(bounced), ["sent", "bounced"]);
    assert_eq!(status_of(&message, deliver), "sent", "the log is not read yet");
    assert_eq!(
        app.get("/inbox", Auth::Bearer(key)).await.body["messages"],
        json!([]),
        "the DSN is no inbox mail"
    );

    // 2. The log (mta-sync): the deferral, the retry a second later, the delivery.
    let (message, took) = until(
        app,
        key,
        &message_id,
        Duration::from_secs(60),
        "delivered from the log",
        || rig.host.sync(),
        |m| status_of(m, defer) == "delivered" && status_of(m, deliver) == "delivered",
    )
    .await;
    eprintln!(
        "log read to delivered: {took:?} (send to delivered {:?})",
        sent_at.elapsed()
    );
    let deferred = recipient(&message, defer);
    assert_eq!(history(deferred), ["sent", "deferred", "delivered"], "{message}");
    assert!(deferred["attempts"].as_u64().unwrap() >= 2, "{message}");
    let delivered = recipient(&message, deliver);
    assert_eq!(history(delivered), ["sent", "delivered"], "{message}");
    assert_eq!(delivered["reply"]["smtpCode"], 250, "{message}");
    assert!(
        delivered["reply"]["remoteHost"]
            .as_str()
            .is_some_and(|h| h.contains("127.0.0.1")),
        "{message}"
    );
    assert_eq!(
        status_of(&message, bounce),
        "bounced",
        "the log's bounce changes nothing more"
    );
    assert_eq!(history(recipient(&message, bounce)), ["sent", "bounced"]);
    // The remote site saw each recipient in its own transaction, with its own
    // return path on the bounce domain, and defer-me twice with the same one.
    let answers = remote.answers();
    let return_path = |rcpt: &str| -> Vec<String> {
        answers
            .iter()
            .filter(|a| a["rcpt"] == rcpt)
            .map(|a| a["mail_from"].as_str().unwrap().to_string())
            .collect()
    };
    let defer_paths = return_path(defer);
    assert!(defer_paths.len() >= 2, "{answers:?}");
    assert!(defer_paths.iter().all(|p| p == &defer_paths[0]));
    let deliver_path = return_path(deliver).remove(0);
    assert!(deliver_path.ends_with(&format!("@{BOUNCE_DOMAIN}")), "{deliver_path}");
    assert_ne!(deliver_path, defer_paths[0]);

    // 3. Suppressed: listed with the remote's reply, and the next send to it
    // is refused whole, before any credit.
    let listed = app
        .get(
            &format!("/suppressions?address={}", urlencode(bounce)),
            Auth::Bearer(key),
        )
        .await;
    assert_eq!(listed.status, 200, "{}", listed.body);
    let entry = &listed.body["suppressions"][0];
    assert_eq!(entry["address"], bounce, "{}", listed.body);
    assert_eq!(entry["reason"], "hard_bounce");
    assert_eq!(entry["messageId"], message_id.as_str());
    let spent = credits(app, key).await;
    let refused = app
        .send_mail(
            Auth::Bearer(key),
            json!({"from": "me@tom.example", "to": [deliver, "Bounce-Me@Remote.test"], "subject": "Again", "text": "Hi."}),
        )
        .await;
    assert_eq!(refused.status, 400, "{}", refused.body);
    assert_eq!(refused.body["code"], "recipient_suppressed");
    assert_eq!(refused.body["addresses"], json!([bounce]));
    assert_eq!(credits(app, key).await, spent, "nothing spent");

    // 4. The webhook: each change once, signed both ways, queued by the
    // reports and delivered by the poller's run.
    poller::run_once(&app.ctx).await.unwrap();
    let got = receiver.wait_for(5).await;
    let mut kinds: Vec<(String, String)> = got
        .iter()
        .map(|post| {
            assert_eq!(post["svcOk"], true, "{post}");
            assert_eq!(post["standardOk"], true, "{post}");
            let body: Value = serde_json::from_str(post["body"].as_str().unwrap()).unwrap();
            let who = body["recipient"].as_str().or(body["address"].as_str()).unwrap();
            (body["type"].as_str().unwrap().to_string(), who.to_string())
        })
        .collect();
    kinds.sort();
    let expected = [
        ("outbound.bounced", bounce),
        ("outbound.deferred", defer),
        ("outbound.delivered", defer),
        ("outbound.delivered", deliver),
        ("suppression.added", bounce),
    ]
    .map(|(k, a)| (k.to_string(), a.to_string()));
    assert_eq!(kinds, expected);

    // 5. A forged DSN: a real Postfix bounce mailed to the bounce domain for
    // deliver-me's transaction, with a wrong MAC and with none. Postfix takes
    // it (the whole domain is ours), the poller refuses it, nothing changes.
    let (signed, _) = deliver_path.rsplit_once('-').unwrap();
    let forged = [
        format!("{signed}-{}@{BOUNCE_DOMAIN}", "0".repeat(20)),
        format!("{signed}@{BOUNCE_DOMAIN}"),
    ];
    let dsn = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/dsn/postfix-5.1.1-user-unknown.eml"
    ))
    .unwrap();
    let failed_before = app.ctx.blobs.list("inbound/failed/").await.unwrap().len();
    mail_report(rig.host.smtp_port, &forged, &dsn).await;
    let started = Instant::now();
    loop {
        poller::run_once(&app.ctx).await.unwrap();
        let failed = app.ctx.blobs.list("inbound/failed/").await.unwrap();
        // Each refused copy and its .reason.
        if failed.len() >= failed_before + 4 {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the forged reports never reached the spool: {failed:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    rig.host.sync();
    let after = outbox(app, key, &message_id).await;
    assert_eq!(after, message, "a forged report changes nothing");
    let listed = app
        .get(
            &format!("/suppressions?address={}", urlencode(deliver)),
            Auth::Bearer(key),
        )
        .await;
    assert_eq!(listed.body["suppressions"], json!([]), "{}", listed.body);
    assert_eq!(receiver.deliveries().len(), 5, "no event for a forged report");
}
