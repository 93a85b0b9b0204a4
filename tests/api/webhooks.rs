//! Webhooks end to end (spec 2.6, 3.6, 4.7, 6): registration and its URL
//! rules, the signed inbound.received event to a real HTTPS receiver on
//! loopback (its signatures checked with the PyPI `standardwebhooks` library
//! and Python's hmac), the retry, the delivery log and replay.

use std::net::IpAddr;

use crate::support::webhooks::Receiver;
use crate::support::{self, Auth, Backend, TestApp};
use common::service::receiving::poller;
use serde_json::{Value, json};

on_both_stores!(
    a_new_message_is_announced_once_signed_two_ways,
    a_failed_attempt_is_retried_logged_and_replayed,
    registration_refuses_urls_that_reach_inside,
    the_agent_key_and_accounts_each_have_their_own,
    a_replay_answers_within_the_gateways_limit_however_slow_the_receiver,
    spoofed_mail_is_never_announced_and_the_event_carries_the_verdicts,
    changes_at_once_all_land_and_a_range_replays_what_is_asked_for,
);

async fn app_with_receiver_ca(backend: Backend, ca: &std::path::Path) -> Option<TestApp> {
    let ca = ca.to_path_buf();
    TestApp::spawn_with(backend, move |config| {
        config.webhook_allow_hosts = vec!["localhost".into()];
        config.webhook_ca_file = Some(ca);
    })
    .await
}

fn mail(to: &str, message_id: &str) -> Vec<u8> {
    format!(
        "Delivered-To: {to}\r\nFrom: Ann <ann@example.org>\r\nTo: {to}\r\nSubject: Quarterly numbers\r\n\
         Message-ID: {message_id}\r\n\r\nThe secret body text that must not leave.\r\n"
    )
    .into_bytes()
}

async fn deliver(app: &TestApp, to: &str, message_id: &str) -> poller::Outcome {
    mailhost::deliver(&app.data_dir, mail(to, message_id)).await.unwrap();
    poller::run_once(&app.ctx).await.unwrap()
}

async fn register(app: &TestApp, key: &str, url: &str) -> Value {
    let res = app.post("/webhooks", Auth::Bearer(key), json!({ "url": url })).await;
    assert_eq!(res.status, 200, "{}", res.body);
    res.body
}

/// Runs the body only when the receiver's stand-in (the venv) is there.
macro_rules! receiver {
    ($port:expr, $dir:expr, $secret:expr, $statuses:expr) => {
        match Receiver::start($port, $dir, $secret, $statuses) {
            Some(r) => r,
            None => return,
        }
    };
}

async fn a_new_message_is_announced_once_signed_two_ways(backend: Backend) {
    let (port, dir) = Receiver::prepare();
    let Some(app) = app_with_receiver_ca(backend, &Receiver::ca_file(&dir)).await else {
        return;
    };
    let key = app.sender("tom@tom.example", "tom.example", "me").await;
    let none = app.get("/webhooks", Auth::Bearer(&key)).await;
    assert_eq!(none.body, json!({"ok": true, "webhook": null}));
    let url = format!("https://localhost:{port}/hook");
    let registered = register(&app, &key, &url).await;
    let hook = &registered["webhook"];
    assert_eq!(hook["url"], url.as_str());
    assert_eq!(hook["enabled"], true);
    let secret = hook["secret"].as_str().unwrap().to_string();
    assert!(secret.starts_with("whsec_") && secret.len() > 40, "{secret}");
    assert_eq!(app.get("/webhooks", Auth::Bearer(&key)).await.body, registered);
    let receiver = receiver!(port, dir, &secret, "200");

    assert_eq!(deliver(&app, "me@tom.example", "<q1@example.org>").await.filed, 1);
    let got = receiver.wait_for(1).await;
    assert_eq!(got.len(), 1, "{got:?}");
    let post = &got[0];
    assert_eq!(post["path"], "/hook");
    assert_eq!(post["svcOk"], true, "X-SVC-Signature verifies: {post}");
    assert_eq!(post["standardOk"], true, "Standard Webhooks verifies: {post}");
    assert!(post["headers"]["webhook-id"].as_str().unwrap().starts_with("evt_"));
    assert_eq!(post["headers"]["content-type"], "application/json");
    let body: Value = serde_json::from_str(post["body"].as_str().unwrap()).unwrap();
    let listed = app.get("/inbox", Auth::Bearer(&key)).await.body;
    let row = &listed["messages"][0];
    assert_eq!(body["type"], "inbound.received");
    assert_eq!(body["id"], row["id"]);
    assert_eq!(body["messageId"], "<q1@example.org>");
    assert_eq!(body["from"], "ann@example.org");
    assert_eq!(body["to"], json!(["me@tom.example"]));
    assert_eq!(body["subject"], "Quarterly numbers");
    assert_eq!(body["preview"], row["preview"]);
    assert_eq!(body["timestamp"], row["ingestedAt"]);
    assert_eq!(body["mailbox"], "me@tom.example");
    assert!(body.get("text").is_none(), "never the body text: {body}");

    // The same Message-ID again: nothing new stored, nothing sent.
    let again = deliver(&app, "me@tom.example", "<q1@example.org>").await;
    assert_eq!((again.filed, again.duplicates), (0, 1));
    // Disabled: stored, not sent.
    let off = app
        .post("/webhooks", Auth::Bearer(&key), json!({"enabled": false}))
        .await;
    assert_eq!(off.body["webhook"]["enabled"], false);
    assert_eq!(off.body["webhook"]["secret"], secret.as_str(), "the secret stays");
    assert_eq!(deliver(&app, "me@tom.example", "<q2@example.org>").await.filed, 1);
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert_eq!(receiver.deliveries().len(), 1);
    // A rotated secret signs the next event.
    let rotated = app
        .post(
            "/webhooks",
            Auth::Bearer(&key),
            json!({"enabled": true, "rotateSecret": true}),
        )
        .await;
    assert_ne!(rotated.body["webhook"]["secret"], secret.as_str());
    assert_eq!(deliver(&app, "me@tom.example", "<q3@example.org>").await.filed, 1);
    let got = receiver.wait_for(2).await;
    assert_eq!(got.len(), 2);
    assert_eq!(got[1]["svcOk"], false, "the receiver still holds the old secret");
    // Deleted: nothing more.
    let deleted = app.delete("/webhooks", Auth::Bearer(&key), json!({})).await;
    assert_eq!(deleted.body, json!({"ok": true, "webhook": null}));
    assert_eq!(deliver(&app, "me@tom.example", "<q4@example.org>").await.filed, 1);
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert_eq!(receiver.deliveries().len(), 2);
}

async fn a_failed_attempt_is_retried_logged_and_replayed(backend: Backend) {
    let (port, dir) = Receiver::prepare();
    let Some(app) = app_with_receiver_ca(backend, &Receiver::ca_file(&dir)).await else {
        return;
    };
    let key = app.sender("tom@tom.example", "tom.example", "me").await;
    let url = format!("https://localhost:{port}/hook");
    let secret = register(&app, &key, &url).await["webhook"]["secret"]
        .as_str()
        .unwrap()
        .to_string();
    // Down at first: no connection at all. Filing still succeeds.
    let started = std::time::Instant::now();
    assert_eq!(deliver(&app, "me@tom.example", "<r1@example.org>").await.filed, 1);
    assert!(
        started.elapsed() >= std::time::Duration::from_millis(700),
        "one retry after 750 ms"
    );
    let log = app.get("/webhooks/deliveries", Auth::Bearer(&key)).await;
    assert_eq!(log.status, 200, "{}", log.body);
    let attempts = log.body["deliveries"].as_array().unwrap().clone();
    assert_eq!(attempts.len(), 2, "{}", log.body);
    assert_eq!(attempts[0]["attempt"], 2, "newest first");
    assert_eq!(attempts[1]["attempt"], 1);
    // A coarse class, never the operating system's words (which would make
    // the log a port scanner).
    assert!(
        attempts
            .iter()
            .all(|a| a["status"].is_null() && a["error"] == "could not connect"),
        "{}",
        log.body
    );
    let event = attempts[0]["eventId"].as_str().unwrap().to_string();
    assert_eq!(attempts[1]["eventId"], event.as_str());

    // Up, answering 500 then 200: the second message's retry gets through.
    let receiver = receiver!(port, dir, &secret, "500,200");
    assert_eq!(deliver(&app, "me@tom.example", "<r2@example.org>").await.filed, 1);
    let got = receiver.wait_for(2).await;
    assert_eq!(got.len(), 2);
    assert_eq!(
        got[0]["headers"]["webhook-id"], got[1]["headers"]["webhook-id"],
        "the same event"
    );
    assert!(got.iter().all(|p| p["svcOk"] == true && p["standardOk"] == true));
    let log = app.get("/webhooks/deliveries?limit=2", Auth::Bearer(&key)).await;
    let statuses: Vec<Value> = log.body["deliveries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["status"].clone())
        .collect();
    assert_eq!(statuses, [json!(200), json!(500)]);
    let cursor = log.body["nextCursor"].as_str().unwrap();
    let older = app
        .get(&format!("/webhooks/deliveries?cursor={cursor}"), Auth::Bearer(&key))
        .await;
    assert_eq!(
        older.body["deliveries"].as_array().unwrap().len(),
        2,
        "the first message's two"
    );

    // The missed event, replayed: same id, fresh signature, logged as a replay.
    let replayed = app
        .post("/webhooks/replay", Auth::Bearer(&key), json!({"eventId": event}))
        .await;
    assert_eq!(replayed.status, 200, "{}", replayed.body);
    assert_eq!(replayed.body["replayed"], 1);
    assert_eq!(replayed.body["deliveries"][0]["status"], 200);
    assert_eq!(replayed.body["deliveries"][0]["replay"], true);
    let got = receiver.wait_for(3).await;
    assert_eq!(got[2]["headers"]["webhook-id"], event.as_str());
    assert_eq!(
        (got[2]["svcOk"].clone(), got[2]["standardOk"].clone()),
        (json!(true), json!(true))
    );
    let body: Value = serde_json::from_str(got[2]["body"].as_str().unwrap()).unwrap();
    assert_eq!(body["messageId"], "<r1@example.org>");
    // A time range, through the tool.
    let from = "2000-01-01T00:00:00Z";
    let res = app
        .post(
            "/mcp",
            Auth::Bearer(&key),
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "replay_webhook", "arguments": {"from": from, "to": "2000-01-01T12:00:00Z"}}}),
        )
        .await;
    assert_eq!(res.body["result"]["structuredContent"]["replayed"], 0, "{}", res.body);
    for (body, error) in [
        (
            json!({}),
            "eventId, or from and to (ISO 8601, at most 24 hours apart), is required",
        ),
        (
            json!({"eventId": "nope"}),
            "eventId must be an event id from the delivery log (evt_...)",
        ),
        (
            json!({"from": from, "to": "2000-01-03T00:00:00Z"}),
            "eventId, or from and to (ISO 8601, at most 24 hours apart), is required",
        ),
    ] {
        let res = app.post("/webhooks/replay", Auth::Bearer(&key), body.clone()).await;
        assert_eq!((res.status, res.error()), (400, error), "{body}");
    }
    let unknown = app
        .post(
            "/webhooks/replay",
            Auth::Bearer(&key),
            json!({"eventId": format!("evt_{}", "0".repeat(29))}),
        )
        .await;
    assert_eq!((unknown.status, unknown.error()), (404, "Message not found"));
    // Replays are rate limited: 10 a minute, these included.
    let mut last = 200;
    for _ in 0..10 {
        last = app
            .post("/webhooks/replay", Auth::Bearer(&key), json!({"eventId": event}))
            .await
            .status;
    }
    assert_eq!(last, 429);
}

async fn registration_refuses_urls_that_reach_inside(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    let key = app.sender("tom@tom.example", "tom.example", "me").await;
    let inside: Vec<IpAddr> = ["10.1.2.3", "fd00::1"].iter().map(|s| s.parse().unwrap()).collect();
    app.dns.set_ips("internal.partner.example", &inside);
    app.dns
        .set_ips("metadata.partner.example", &["169.254.169.254".parse().unwrap()]);
    app.dns.set_ips(
        "mixed.partner.example",
        &["93.184.216.34".parse().unwrap(), "127.0.0.1".parse().unwrap()],
    );
    app.dns
        .set_ips("mapped.partner.example", &["::ffff:10.0.0.1".parse().unwrap()]);
    app.dns
        .set_ips("hooks.partner.example", &["93.184.216.34".parse().unwrap()]);
    let not_https = "url must be https";
    let inside_host = "url host is not allowed";
    let cases = [
        ("http://hooks.partner.example/x", not_https),
        ("ftp://hooks.partner.example/x", not_https),
        ("hooks.partner.example/x", not_https),
        ("https://", not_https),
        ("https://127.0.0.1/x", inside_host),
        ("https://127.1.2.3:8443/x", inside_host),
        ("https://0.0.0.0/x", inside_host),
        ("https://10.0.0.8/x", inside_host),
        ("https://172.16.5.4/x", inside_host),
        ("https://192.168.0.1/x", inside_host),
        ("https://169.254.169.254/latest/meta-data", inside_host),
        ("https://100.64.0.1/x", inside_host),
        ("https://100.100.100.200/x", inside_host),
        ("https://224.0.0.1/x", inside_host),
        ("https://255.255.255.255/x", inside_host),
        ("https://192.0.2.10/x", inside_host),
        ("https://198.51.100.10/x", inside_host),
        ("https://203.0.113.10/x", inside_host),
        ("https://[::1]/x", inside_host),
        ("https://[::]/x", inside_host),
        ("https://[::ffff:127.0.0.1]/x", inside_host),
        ("https://[::ffff:8.8.8.8]/x", inside_host),
        ("https://[::127.0.0.1]/x", inside_host),
        ("https://[fe80::1]/x", inside_host),
        ("https://[fc00::1]/x", inside_host),
        ("https://[fd00:ec2::254]/x", inside_host),
        ("https://[ff02::1]/x", inside_host),
        ("https://[2001:db8::1]/x", inside_host),
        ("https://[64:ff9b::a00:1]/x", inside_host),
        ("https://2130706433/x", inside_host),
        ("https://0x7f.1/x", inside_host),
        ("https://localhost/x", inside_host),
        ("https://internal.partner.example/x", inside_host),
        ("https://metadata.partner.example/x", inside_host),
        ("https://mixed.partner.example/x", inside_host),
        ("https://mapped.partner.example/x", inside_host),
        // A name with no address says so (nothing about it is private).
        (
            "https://nowhere.partner.example/x",
            "url host did not resolve to an address",
        ),
        ("https://app.localhost/x", inside_host),
        ("https://user:pass@hooks.partner.example/x", inside_host),
    ];
    assert!(cases.len() >= 30);
    for (url, error) in cases {
        let res = app.post("/webhooks", Auth::Bearer(&key), json!({ "url": url })).await;
        assert_eq!((res.status, res.error()), (400, error), "{url}: {}", res.body);
    }
    assert_eq!(
        app.get("/webhooks", Auth::Bearer(&key)).await.body["webhook"],
        Value::Null,
        "nothing stored"
    );
    let missing = app
        .post("/webhooks", Auth::Bearer(&key), json!({"enabled": true}))
        .await;
    assert_eq!(
        (missing.status, missing.error()),
        (400, "url is required to register a webhook")
    );
    let public = register(&app, &key, "https://hooks.partner.example/in").await;
    assert_eq!(public["webhook"]["url"], "https://hooks.partner.example/in");
    // A trailing dot names the same host: kept in the one form that was checked
    // and is connected to.
    let dotted = register(&app, &key, "https://Hooks.Partner.Example.:8443/in").await;
    assert_eq!(dotted["webhook"]["url"], "https://hooks.partner.example:8443/in");
    let public = register(&app, &key, "https://hooks.partner.example/in").await;
    assert_eq!(public["webhook"]["url"], "https://hooks.partner.example/in");

    // Checked again at delivery: the name now points inside, so nothing is sent.
    app.dns
        .set_ips("hooks.partner.example", &["127.0.0.1".parse().unwrap()]);
    assert_eq!(deliver(&app, "me@tom.example", "<rebound@example.org>").await.filed, 1);
    let log = app.get("/webhooks/deliveries", Auth::Bearer(&key)).await;
    let attempts = log.body["deliveries"].as_array().unwrap();
    assert_eq!(attempts.len(), 1, "no retry of a refused URL: {}", log.body);
    assert_eq!(attempts[0]["error"], inside_host);
    assert!(attempts[0]["status"].is_null());
}

async fn the_agent_key_and_accounts_each_have_their_own(backend: Backend) {
    let (port, dir) = Receiver::prepare();
    let Some(app) = app_with_receiver_ca(backend, &Receiver::ca_file(&dir)).await else {
        return;
    };
    let tom = app.sender("tom@tom.example", "tom.example", "me").await;
    let agent = app.agent_key.clone();
    let url = format!("https://localhost:{port}/agent");
    let secret = register(&app, &agent, &url).await["webhook"]["secret"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(
        app.get("/webhooks", Auth::Bearer(&tom)).await.body["webhook"],
        Value::Null
    );
    let receiver = receiver!(port, dir, &secret, "200");
    // The account's mail goes to no one (it has no registration); the service
    // inbox's to the agent key's.
    assert_eq!(deliver(&app, "me@tom.example", "<a1@example.org>").await.filed, 1);
    assert_eq!(deliver(&app, "inbox@svc.test", "<a2@example.org>").await.filed, 1);
    let got = receiver.wait_for(1).await;
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert_eq!(receiver.deliveries().len(), 1, "{got:?}");
    let body: Value = serde_json::from_str(got[0]["body"].as_str().unwrap()).unwrap();
    assert_eq!(body["mailbox"], "inbox@svc.test");
    // People signed in have no webhooks; nor does the sync token.
    let operator = app.operator_token().await;
    for (method, path) in [
        ("GET", "/webhooks"),
        ("POST", "/webhooks"),
        ("DELETE", "/webhooks"),
        ("GET", "/webhooks/deliveries"),
        ("POST", "/webhooks/replay"),
    ] {
        let res = app
            .request(method.parse().unwrap(), path, Auth::Bearer(&operator), Some(&json!({})))
            .await;
        assert_eq!(
            (res.status, res.error()),
            (403, "Webhooks require an agent API key"),
            "{method} {path}"
        );
    }
    let sync = app.get("/webhooks", Auth::Bearer(support::SYNC_TOKEN)).await;
    assert_eq!(sync.status, 401);
    // The agent's log holds its delivery; the account's is empty.
    assert_eq!(
        app.get("/webhooks/deliveries", Auth::Bearer(&agent)).await.body["deliveries"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    assert!(
        app.get("/webhooks/deliveries", Auth::Bearer(&tom)).await.body["deliveries"]
            .as_array()
            .unwrap()
            .is_empty()
    );
}

/// The attempt's resolver answers the checked name alone: a URL whose host is
/// spelled otherwise than the name that was checked (`name.` against `name`
/// was the live case) is never resolved again by the system, so it never
/// reaches what the system's answer points at (here a listener on loopback).
#[tokio::test]
async fn an_attempt_connects_only_to_the_addresses_checked_for_its_name() {
    use common::webhook::{Target, post};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let reached = tokio::spawn(async move { listener.accept().await.is_ok() });
    let closed = support::smtp::free_port();
    for host in ["localhost", "localhost."] {
        let target = Target {
            url: format!("https://{host}:{port}/hook").parse().unwrap(),
            host: "checked.partner.example".into(),
            addrs: vec![std::net::SocketAddr::from(([127, 0, 0, 1], closed))],
        };
        let attempt = post(&target, &[], b"{}", &[]).await;
        assert_eq!(attempt.status, None);
        assert_eq!(attempt.error.as_deref(), Some("the host did not resolve"), "{host}");
    }
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    assert!(!reached.is_finished(), "the system resolver's address was connected to");
    reached.abort();

    // The checked name itself reaches its checked addresses, and only those.
    let target = Target {
        url: format!("https://checked.partner.example:{closed}/hook")
            .parse()
            .unwrap(),
        host: "checked.partner.example".into(),
        addrs: vec![std::net::SocketAddr::from(([127, 0, 0, 1], closed))],
    };
    assert_eq!(
        post(&target, &[], b"{}", &[]).await.error.as_deref(),
        Some("could not connect")
    );
}

/// Outside finding 6: a replay of many events to a receiver that never
/// answers holds its request for one event's worst case (two 5-second
/// attempts), not for each event's in turn (8 events took 86 s before).
async fn a_replay_answers_within_the_gateways_limit_however_slow_the_receiver(backend: Backend) {
    let (_, dir) = Receiver::prepare();
    let Some(app) = app_with_receiver_ca(backend, &Receiver::ca_file(&dir)).await else {
        return;
    };
    let key = app.sender("tom@tom.example", "tom.example", "me").await;
    // Events are logged while nothing listens (each fails at once).
    let closed = support::smtp::free_port();
    register(&app, &key, &format!("https://localhost:{closed}/hook")).await;
    for i in 0..8 {
        assert_eq!(
            deliver(&app, "me@tom.example", &format!("<slow-{i}@example.org>"))
                .await
                .filed,
            1
        );
    }
    // Now a receiver that takes the connection and never says a word.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let held = tokio::spawn(async move {
        let mut open = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            open.push(socket);
        }
    });
    register(&app, &key, &format!("https://localhost:{port}/hook")).await;
    let now = app.ctx.clock.epoch();
    let range = json!({
        "from": common::clock::iso_epoch(now - 3600),
        "to": common::clock::iso_epoch(now + 3600),
    });
    let started = std::time::Instant::now();
    let replayed = app.post("/webhooks/replay", Auth::Bearer(&key), range).await;
    let took = started.elapsed();
    held.abort();
    assert_eq!(replayed.status, 200, "{}", replayed.body);
    assert_eq!(replayed.body["replayed"], 8);
    let deliveries = replayed.body["deliveries"].as_array().unwrap();
    assert_eq!(deliveries.len(), 16, "two attempts each");
    assert!(
        deliveries.iter().all(|d| d["error"] == "timed out"),
        "{}",
        replayed.body
    );
    assert!(
        took < std::time::Duration::from_secs(25),
        "answered in {took:?}, past API Gateway's 29 s"
    );
}

/// Issue 29: mail whose From domain publishes p=reject and that comes from
/// outside its SPF is kept out of the inbox and announced to no one; the next
/// genuine message is, with the verdicts' summary.
async fn spoofed_mail_is_never_announced_and_the_event_carries_the_verdicts(backend: Backend) {
    let (port, dir) = Receiver::prepare();
    let Some(app) = app_with_receiver_ca(backend, &Receiver::ca_file(&dir)).await else {
        return;
    };
    let key = app.sender("tom@tom.example", "tom.example", "me").await;
    let registered = register(&app, &key, &format!("https://localhost:{port}/hook")).await;
    let secret = registered["webhook"]["secret"].as_str().unwrap().to_string();
    let receiver = receiver!(port, dir, &secret, "200");
    app.dns.set_txt("_dmarc.bank.example", &["v=DMARC1; p=reject"]);
    app.dns.set_txt("bank.example", &["v=spf1 ip4:192.0.2.0/24 -all"]);
    let letter = |id: &str| {
        format!("From: ceo@bank.example\r\nTo: me@tom.example\r\nSubject: Wire\r\nMessage-ID: {id}\r\n\r\nWire it.\r\n")
            .into_bytes()
    };
    for (id, client) in [
        ("<spoof@bank.example>", "203.0.113.5"),
        ("<real@bank.example>", "192.0.2.7"),
    ] {
        let envelope = common::mail::inbound::Envelope {
            recipient: Some("me@tom.example".into()),
            sender: Some("ceo@bank.example".into()),
            client_address: Some(client.into()),
            helo: Some("mail.bank.example".into()),
        };
        mailhost::deliver(&app.data_dir, envelope.prepend(&letter(id)))
            .await
            .unwrap();
        assert_eq!(poller::run_once(&app.ctx).await.unwrap().filed, 1);
    }
    let got = receiver.wait_for(1).await;
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert_eq!(receiver.deliveries().len(), 1, "the spoofed one is never announced");
    let body: Value = serde_json::from_str(got[0]["body"].as_str().unwrap()).unwrap();
    assert_eq!(body["messageId"], "<real@bank.example>");
    assert_eq!(body["authentication"], json!({"summary": "pass", "spoofed": false}));

    // The owner opts the mailbox in: spoofed mail is then filed in the
    // inbox, marked, and announced with its verdict.
    let opted = app
        .post(
            "/setMailboxMode",
            Auth::Bearer(&key),
            json!({"domainId": "tom.example", "localPart": "me", "mode": "hosted", "forwardTo": [], "acceptSpoofed": true}),
        )
        .await;
    assert_eq!(opted.status, 200, "{}", opted.body);
    assert_eq!(opted.body["mailbox"]["acceptSpoofed"], true);
    let envelope = common::mail::inbound::Envelope {
        recipient: Some("me@tom.example".into()),
        sender: Some("ceo@bank.example".into()),
        client_address: Some("203.0.113.5".into()),
        helo: Some("mail.bank.example".into()),
    };
    mailhost::deliver(&app.data_dir, envelope.prepend(&letter("<spoof-2@bank.example>")))
        .await
        .unwrap();
    assert_eq!(poller::run_once(&app.ctx).await.unwrap().filed, 1);
    let got = receiver.wait_for(2).await;
    let body: Value = serde_json::from_str(got[1]["body"].as_str().unwrap()).unwrap();
    assert_eq!(body["messageId"], "<spoof-2@bank.example>");
    assert_eq!(body["authentication"], json!({"summary": "fail", "spoofed": true}));
    let inbox = app.get("/inbox", Auth::Bearer(&key)).await.body;
    let rows = inbox["messages"].as_array().unwrap();
    let row = rows
        .iter()
        .find(|r| r["messageId"] == "<spoof-2@bank.example>")
        .expect("in the inbox");
    assert_eq!(row["authentication"]["spoofed"], true);
    assert!(row.get("quarantine").is_none_or(Value::is_null), "{row}");
    // The first spoof stays where it was.
    let kept = app.get("/inbox?view=quarantine", Auth::Bearer(&key)).await.body;
    assert_eq!(kept["messages"].as_array().unwrap().len(), 1);
}

/// Registration changes sent at once each land (none overwrites another);
/// a blank URL is refused, a long one counted in characters; a range replay
/// sends only the types the registration asks for now; a receiver that reads
/// and hangs up is logged as a failed request, not a failed handshake.
async fn changes_at_once_all_land_and_a_range_replays_what_is_asked_for(backend: Backend) {
    let (port, dir) = Receiver::prepare();
    let Some(app) = app_with_receiver_ca(backend, &Receiver::ca_file(&dir)).await else {
        return;
    };
    let key = app.sender("una@una.example", "una.example", "me").await;
    let url = format!("https://localhost:{port}/hook");
    let first = app
        .post(
            "/webhooks",
            Auth::Bearer(&key),
            json!({"url": url, "events": ["inbound.received", "suppression.added"]}),
        )
        .await;
    assert_eq!(first.status, 200, "{}", first.body);
    let secret = first.body["webhook"]["secret"].as_str().unwrap().to_string();

    for blank in ["", "   "] {
        let res = app.post("/webhooks", Auth::Bearer(&key), json!({ "url": blank })).await;
        assert_eq!((res.status, res.error()), (400, "url must be https"), "{blank:?}");
    }
    // 1 100 characters of path, 2 200 bytes: under the 2 048 characters.
    let long = format!("https://localhost:{port}/{}", "é".repeat(1_100));
    let res = app.post("/webhooks", Auth::Bearer(&key), json!({ "url": long })).await;
    assert_eq!(res.status, 200, "{}", res.body);
    let res = app
        .post(
            "/webhooks",
            Auth::Bearer(&key),
            json!({ "url": format!("https://localhost/{}", "a".repeat(2_048)) }),
        )
        .await;
    assert_eq!((res.status, res.error()), (400, "url must be https"));

    // Eight changes at once: the URL back, off, and six new secrets.
    let mut changes = vec![json!({"url": url}), json!({"enabled": false})];
    changes.extend((0..6).map(|_| json!({"rotateSecret": true})));
    let answers = futures::future::join_all(
        changes
            .iter()
            .map(|body| app.post("/webhooks", Auth::Bearer(&key), body.clone())),
    )
    .await;
    let mut secrets = Vec::new();
    for answer in &answers {
        assert_eq!(answer.status, 200, "{}", answer.body);
        secrets.push(answer.body["webhook"]["secret"].as_str().unwrap().to_string());
    }
    let stored = app.get("/webhooks", Auth::Bearer(&key)).await.body["webhook"].clone();
    assert_eq!(stored["url"], url.as_str(), "the URL change landed");
    assert_eq!(stored["enabled"], false, "the switch landed too");
    let last = stored["secret"].as_str().unwrap();
    assert_ne!(last, secret, "a rotation landed");
    assert!(
        secrets.iter().any(|s| s == last),
        "the stored secret is one an answer gave"
    );

    // Back on, with the secret the receiver checks; one of each type.
    let on = app
        .post(
            "/webhooks",
            Auth::Bearer(&key),
            json!({"enabled": true, "rotateSecret": true}),
        )
        .await;
    let secret = on.body["webhook"]["secret"].as_str().unwrap().to_string();
    let receiver = receiver!(port, dir, &secret, "0,200");
    assert_eq!(deliver(&app, "me@una.example", "<u1@example.org>").await.filed, 1);
    let log = app.get("/webhooks/deliveries", Auth::Bearer(&key)).await;
    let attempts = log.body["deliveries"].as_array().unwrap();
    assert_eq!(attempts[1]["error"], "request failed", "{}", log.body);
    assert_eq!(attempts[0]["status"], 200, "{}", log.body);
    let added = app
        .post(
            "/suppressions",
            Auth::Bearer(&key),
            json!({"address": "gone@example.org"}),
        )
        .await;
    assert_eq!(added.status, 200, "{}", added.body);
    poller::run_once(&app.ctx).await.unwrap();
    assert_eq!(receiver.wait_for(3).await.len(), 3);

    // The registration now asks for inbound mail alone: a range replays that.
    let res = app
        .post("/webhooks", Auth::Bearer(&key), json!({"events": ["inbound.received"]}))
        .await;
    assert_eq!(res.status, 200, "{}", res.body);
    let replayed = app
        .post(
            "/webhooks/replay",
            Auth::Bearer(&key),
            json!({"from": "2000-01-01T00:00:00Z", "to": "2000-01-01T23:00:00Z"}),
        )
        .await;
    assert_eq!(replayed.body["replayed"], 0, "{}", replayed.body);
    let now = chrono::Utc::now();
    let range = json!({
        "from": (now - chrono::Duration::hours(1)).to_rfc3339(),
        "to": (now + chrono::Duration::hours(1)).to_rfc3339(),
    });
    let replayed = app.post("/webhooks/replay", Auth::Bearer(&key), range).await;
    assert_eq!(replayed.status, 200, "{}", replayed.body);
    assert_eq!(replayed.body["replayed"], 1, "{}", replayed.body);
    let got = receiver.wait_for(4).await;
    let body: Value = serde_json::from_str(got[3]["body"].as_str().unwrap()).unwrap();
    assert_eq!(body["type"], "inbound.received");
}
