//! Bounce latency benchmark: from a report about a sent message reaching the
//! service to its new status in GET /outbox, through the local server
//! (embedded store) and its quick poller. Each sample is a real send
//! (POST /sendMail to the local spool, one fresh address each), then:
//!
//! - DSN: a real Postfix bounce (tests/fixtures/dsn/postfix-5.1.1-user-unknown.eml)
//!   dropped into the inbound spool for that send's signed return path, as the
//!   mail host's pipe drops it, at a random point of the poller's interval;
//!   timed until GET /outbox shows `bounced`;
//! - log: the same refusal as `mailhost mta-sync` reports it from Postfix's
//!   log (POST /mtaDeliveryEvents with the sync token), timed until GET /outbox
//!   shows `bounced` (mta-sync's own cadence on the mail host comes on top);
//! - baseline, in the same run, interleaved: an ordinary message dropped into
//!   the same spool until GET /inbox lists it (the path every received mail
//!   takes, what `benches/inbound.rs` measures).
//!
//! Run: `cargo bench --bench bounce`; `SENDS=n` sets the count (default 40),
//! `MAILHOST_INBOUND_POLL_MS` the quick poller's interval (default 100).
//! The agent key sends; its rate windows (5 a minute, 50 a day) are passed by
//! moving the server's clock a day ahead before each sample's two sends.

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::config::Config;
use common::context::Context;
use common::mail::inbound::{Envelope, drop_raw};
use common::service::delivery::return_path;
use serde_json::{Value, json};

const SYNC_TOKEN: &str = "bench-sync-token";

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let sends: usize = std::env::var("SENDS").ok().and_then(|s| s.parse().ok()).unwrap_or(40);
    let server = Server::start().await;
    let interval = server.ctx.config.inbound_poll_ms.max(1);
    let dsn = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/dsn/postfix-5.1.1-user-unknown.eml"
    ))
    .unwrap();
    let dsn = String::from_utf8_lossy(&dsn).into_owned();

    let (mut by_dsn, mut by_log, mut baseline) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..sends {
        // Two sends a sample: a day ahead each time, so no window refuses.
        server.ctx.clock.advance(86_400);
        // DSN: dropped at a random point of the poller's interval, as mail arrives.
        let message_id = server.send(&format!("gone-{i}@remote.example")).await;
        let path = server.return_path(&message_id).await;
        let report = dsn.replace(
            "<20100524100650.7FE851AC10D@mv-osn-hcb007.ocn.ad.jp>",
            &format!("<bench-dsn-{i}@mv-osn-hcb007.ocn.ad.jp>"),
        );
        let dropped = Envelope {
            recipient: Some(path),
            sender: Some(String::new()),
            ..Default::default()
        }
        .prepend(report.as_bytes());
        jitter(interval).await;
        let started = Instant::now();
        drop_raw(server.ctx.blobs.as_ref(), dropped).await.unwrap();
        server.until_bounced(&message_id).await;
        by_dsn.push(started.elapsed());

        // Baseline: an ordinary message, the same spool and poller.
        jitter(interval).await;
        let started = Instant::now();
        drop_raw(server.ctx.blobs.as_ref(), ordinary(i)).await.unwrap();
        server.until_listed(i).await;
        baseline.push(started.elapsed());

        // The log: what mta-sync posts for Postfix's `status=bounced` line.
        let message_id = server.send(&format!("gone-log-{i}@remote.example")).await;
        let path = server.return_path(&message_id).await;
        let started = Instant::now();
        server.report_bounce(i, &path).await;
        server.until_bounced(&message_id).await;
        by_log.push(started.elapsed());
    }
    println!("sends: {sends} per path, quick poller every {interval} ms");
    report("DSN dropped to bounced in GET /outbox", &mut by_dsn);
    report("log event posted to bounced in GET /outbox", &mut by_log);
    report("baseline: mail dropped to listed in GET /inbox", &mut baseline);
    println!(
        "ratio p50 DSN / baseline: {:.2}x",
        pct(&by_dsn, 0.5).as_secs_f64() / pct(&baseline, 0.5).as_secs_f64().max(1e-6)
    );
}

/// A random wait within the poller's interval.
async fn jitter(interval_ms: u64) {
    tokio::time::sleep(Duration::from_millis(rand::random::<u64>() % interval_ms)).await;
}

struct Server {
    base: String,
    key: String,
    ctx: Arc<Context>,
    client: reqwest::Client,
}

impl Server {
    async fn start() -> Server {
        let data_dir = std::env::temp_dir().join(format!("mailhost-bench-{:x}", rand::random::<u64>()));
        let mut config = Config::from_env().expect("MAILHOST_* variables");
        config.addr = "127.0.0.1:0".parse().unwrap();
        config.data_dir = data_dir;
        config.service_domain = "svc.test".parse().unwrap();
        config.poll_interval = 3600;
        config.smtp_url = None;
        config.spool = true;
        config.sync_token = Some(SYNC_TOKEN.into());
        let key = common::auth::keys::new_key();
        config.agent_key = Some(key.clone());
        let app = mailhost::Application::build(config).await.unwrap();
        let ctx = app.context.clone();
        let base = format!("http://{}", app.addr);
        // Detached: it serves until the benchmark ends.
        drop(app.spawn());
        let credits = common::keys::credits(common::service::accounts::credits::AGENT_BUCKET);
        ctx.store
            .update(&credits, common::store::Update::new().set("remaining", 1_000_000), None)
            .await
            .unwrap();
        Server {
            base,
            key,
            ctx,
            client: reqwest::Client::new(),
        }
    }

    /// Sends one message to `to`; gives its Message-ID.
    async fn send(&self, to: &str) -> String {
        let res = self
            .client
            .post(format!("{}/sendMail", self.base))
            .bearer_auth(&self.key)
            .json(&json!({"to": to, "subject": "Bench", "text": "Hi."}))
            .send()
            .await
            .unwrap();
        let body: Value = res.json().await.unwrap();
        body["messageId"]
            .as_str()
            .unwrap_or_else(|| panic!("sent: {body}"))
            .to_string()
    }

    /// The signed return path the send's one recipient went out with.
    async fn return_path(&self, message_id: &str) -> String {
        let pointer: Value = common::store::StoreExt::read(
            self.ctx.store.as_ref(),
            &common::keys::outbox_message_id("agent", message_id),
        )
        .await
        .unwrap()
        .expect("the outbox pointer");
        return_path::for_recipient(&self.ctx, pointer["delivery"].as_str().unwrap(), 0)
    }

    async fn report_bounce(&self, i: usize, path: &str) {
        let event = json!({
            "id": format!("bench-{i}"),
            "returnPath": path,
            "status": "bounced",
            "at": common::clock::iso(self.ctx.clock.now()),
            "smtpCode": 550,
            "enhancedStatus": "5.1.1",
            "reply": "550 5.1.1 User unknown",
            "remoteHost": "mx.remote.example",
        });
        let res = self
            .client
            .post(format!("{}/mtaDeliveryEvents", self.base))
            .bearer_auth(SYNC_TOKEN)
            .json(&json!({"events": [event]}))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 200, "{}", res.text().await.unwrap());
    }

    async fn until_bounced(&self, message_id: &str) {
        let url = format!("{}/outbox?messageId={}", self.base, urlencode(message_id));
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let body: Value = self
                .client
                .get(&url)
                .bearer_auth(&self.key)
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            if body["message"]["recipients"][0]["status"] == "bounced" {
                return;
            }
            assert!(Instant::now() < deadline, "never bounced: {body}");
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    }

    async fn until_listed(&self, i: usize) {
        let url = format!("{}/inbox?limit=1", self.base);
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let body: Value = self
                .client
                .get(&url)
                .bearer_auth(&self.key)
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            if body["messages"][0]["messageId"] == format!("<bench-{i}@partner.example>") {
                return;
            }
            assert!(Instant::now() < deadline, "never listed: {body}");
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    }
}

fn ordinary(i: usize) -> Vec<u8> {
    format!(
        "Delivered-To: inbox@svc.test\r\nFrom: pal@partner.example\r\nTo: inbox@svc.test\r\nSubject: Bench {i}\r\n\
         Message-ID: <bench-{i}@partner.example>\r\n\r\nA short message.\r\n"
    )
    .into_bytes()
}

fn urlencode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'.' | b'-' | b'_' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

fn pct(samples: &[Duration], p: f64) -> Duration {
    let mut sorted = samples.to_vec();
    sorted.sort();
    sorted[((sorted.len() as f64 * p).ceil() as usize).saturating_sub(1)]
}

fn report(label: &str, samples: &mut [Duration]) {
    samples.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!(
        "{label:<48} p50 {:>7.1} ms  p99 {:>7.1} ms  max {:>7.1} ms",
        ms(pct(samples, 0.5)),
        ms(pct(samples, 0.99)),
        ms(samples[samples.len() - 1]),
    );
}
