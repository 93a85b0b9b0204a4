//! Send benchmark: POST /sendMail through the local server (embedded store) to a
//! local SMTP submission server (STARTTLS + AUTH, tests/api/support/smtp_sink.py),
//! printing sends per second, p50/p99 latency, the storage requests one send
//! makes, the store round trips it waits for one after another and its write units, and the SMTP submission alone (the transport without HTTP or
//! store). Run: `MAILHOST_TEST_VENV=~/.cache/mailhost/venv cargo bench --bench send`
//! (scripts/test installs the venv). `SENDS=n` sets the number of sends;
//! `TRANSPORT=spool` writes to the local outbox instead, to separate the
//! service's own cost from the SMTP round trips.
//!
//! The agent key sends; its rate windows (5 a minute, 50 a UTC day) would stop a
//! benchmark after five sends, so between rounds of five the server's clock moves
//! a day ahead. Every send still goes through both window checks and the credit.

#[path = "../tests/api/support/smtp.rs"]
#[allow(dead_code)]
mod smtp;
// What smtp.rs calls as `super::standin` (in the tests, support's, which also
// records the skip).
use common::testing::standin;

use std::time::{Duration, Instant};

use common::config::Config;
use serde_json::json;

const ROUND: usize = 5;

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let sends: usize = std::env::var("SENDS").ok().and_then(|s| s.parse().ok()).unwrap_or(500);
    let Some(sink) = smtp::SmtpSink::start().await else {
        eprintln!("set MAILHOST_TEST_VENV to a venv with aiosmtpd (scripts/test makes one)");
        return;
    };
    let data_dir = std::env::temp_dir().join(format!("mailhost-bench-{:x}", rand::random::<u64>()));
    let mut config = Config::from_env().expect("MAILHOST_* variables");
    config.addr = "127.0.0.1:0".parse().unwrap();
    config.data_dir = data_dir.clone();
    config.service_domain = "svc.test".parse().unwrap();
    let spool = std::env::var("TRANSPORT").as_deref() == Ok("spool");
    if !spool {
        config.smtp_url = Some(sink.url());
        config.smtp_ca_file = Some(sink.ca_file());
    }
    let transport = if spool {
        "local spool"
    } else {
        "SMTP (STARTTLS + AUTH) to 127.0.0.1"
    };
    println!("transport: {transport}");
    config.poll_interval = 3600;
    let key = common::auth::keys::new_key();
    config.agent_key = Some(key.clone());
    let app = mailhost::Application::build(config).await.unwrap();
    let ctx = app.context.clone();
    let base = format!("http://{}/sendMail", app.addr);
    let server = app.spawn();
    let credits = common::keys::credits(common::service::accounts::credits::AGENT_BUCKET);
    ctx.store
        .update(&credits, common::store::Update::new().set("remaining", 1_000_000), None)
        .await
        .unwrap();
    let client = reqwest::Client::new();
    let body = json!({"to": "bench@partner.example", "subject": "Benchmark", "text": "A short plain-text message.\n"});

    let send = || async {
        let started = Instant::now();
        let res = client.post(&base).bearer_auth(&key).json(&body).send().await.unwrap();
        assert_eq!(res.status(), 200, "{}", res.text().await.unwrap());
        started.elapsed()
    };
    // Warm up: the connection pool, the DKIM key, the page cache.
    send().await;
    ctx.clock.advance(86_400);

    // Sequential: one client.
    let before = ctx.store_meter.counts();
    let cost_before = ctx.store_meter.cost();
    let mut latencies = Vec::with_capacity(sends);
    let started = Instant::now();
    for i in 0..sends {
        if i % ROUND == 0 && i > 0 {
            ctx.clock.advance(86_400);
        }
        latencies.push(send().await);
    }
    let elapsed = started.elapsed();
    let per_send = ctx.store_meter.counts().since(&before);
    let cost = ctx.store_meter.cost().since(&cost_before);
    report("sequential, 1 client", &mut latencies, elapsed);

    // Concurrent: five clients at once (the agent key's minute window).
    let mut latencies = Vec::with_capacity(sends);
    let started = Instant::now();
    for _ in 0..sends / ROUND {
        ctx.clock.advance(86_400);
        let round = futures::future::join_all((0..ROUND).map(|_| send())).await;
        latencies.extend(round);
    }
    report("concurrent, 5 clients", &mut latencies, started.elapsed());

    let n = sends as f64;
    println!(
        "storage requests per send: {:.1} (gets {:.1}, batch gets {:.1}, puts {:.1}, updates {:.1}, queries {:.1}, transactions {:.1}, deletes {:.1})",
        per_send.total() as f64 / n,
        per_send.gets as f64 / n,
        per_send.batch_gets as f64 / n,
        per_send.puts as f64 / n,
        per_send.updates as f64 / n,
        per_send.queries as f64 / n,
        per_send.transactions as f64 / n,
        per_send.deletes as f64 / n,
    );
    // One client, one send at a time: a request begun while none is under
    // way is a round trip the send waits for (common::store::metered).
    println!(
        "store round trips one after another per send: {:.1}; write units per send: {:.1}",
        cost.round_trips as f64 / n,
        cost.write_units as f64 / n,
    );
    if !spool {
        // The SMTP submission alone (the same transport, no HTTP, no store):
        // what the relay's round trips cost a send.
        use common::mail::Transport;
        let transport =
            common::mail::smtp::SmtpTransport::from_url_with_ca(&sink.url(), Some(&sink.ca_file())).unwrap();
        let message = common::mail::plain_text(
            "bench@svc.test",
            "bench@partner.example",
            "Benchmark",
            "A short plain-text message.\n",
        )
        .unwrap();
        transport.send(&message).await.unwrap();
        let mut latencies = Vec::with_capacity(sends);
        let started = Instant::now();
        for _ in 0..sends {
            let at = Instant::now();
            transport.send(&message).await.unwrap();
            latencies.push(at.elapsed());
        }
        report("SMTP transport alone, 1 client", &mut latencies, started.elapsed());
        let arrived = sink.wait_for(3 * sends + 2).await.len();
        println!("messages received by the SMTP server: {arrived}");
    }
    server.abort();
    std::fs::remove_dir_all(data_dir).ok();
}

fn report(label: &str, latencies: &mut [Duration], elapsed: Duration) {
    latencies.sort();
    let pct = |p: f64| latencies[((latencies.len() as f64 * p).ceil() as usize).saturating_sub(1)];
    println!(
        "{label}: {} sends in {:.2?} = {:.0} sends/s; latency p50 {:.2?}, p99 {:.2?}, max {:.2?}",
        latencies.len(),
        elapsed,
        latencies.len() as f64 / elapsed.as_secs_f64(),
        pct(0.50),
        pct(0.99),
        latencies[latencies.len() - 1],
    );
}
