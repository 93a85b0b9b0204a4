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
//!
//! Then, with `MAILHOST_TEST_DYNAMODB_ENDPOINT` (DynamoDB Local; scripts/test
//! starts one and prints its port), the same server on DynamoDB Local behind a
//! proxy that times every call (benches/support/timed_proxy.rs): a standard
//! key's account onboarded, its domain verified through the local zone and a
//! mailbox added as the README does, then its plain sends from that mailbox
//! (`DYNAMODB_SENDS=n`, default 200), one at a time. It prints their p50/p99
//! beside the floor of the same run: DynamoDB Local's GetItem, a
//! TransactWriteItems of the send's own size and the SMTP submission alone,
//! each through the same proxy; and the round trips one send waited for one
//! after another, counted at the proxy from when each call began and ended.
//! `SMTP_DELAY_MS=x` puts the relay x ms away each way (a forwarder holding
//! each chunk), for the send and its floor alike.

#[path = "support/far.rs"]
mod far;
#[path = "../tests/api/support/smtp.rs"]
#[allow(dead_code)]
mod smtp;
#[path = "support/timed_proxy.rs"]
mod timed_proxy;
// What smtp.rs calls as `super::standin` (in the tests, support's, which also
// records the skip).
use common::testing::standin;

use std::time::{Duration, Instant};

use common::config::Config;
use serde_json::json;

const ROUND: usize = 5;

fn main() {
    // The proxy starts before the runtime: the server's DynamoDB client reads
    // its address from the environment, which is set while no other thread
    // reads it (the proxy's own threads never do).
    let proxy = std::env::var("MAILHOST_TEST_DYNAMODB_ENDPOINT")
        .ok()
        .map(|endpoint| timed_proxy::TimedProxy::start(&endpoint));
    if let Some(proxy) = &proxy {
        // SAFETY: the only other threads are the proxy's, which read no
        // environment variable.
        unsafe {
            std::env::set_var("AWS_ENDPOINT_URL_DYNAMODB", &proxy.url);
            // DynamoDB Local takes any credentials (as scripts/test sets them).
            for (name, value) in [
                ("AWS_ACCESS_KEY_ID", "test"),
                ("AWS_SECRET_ACCESS_KEY", "test"),
                ("AWS_REGION", "us-east-1"),
                ("AWS_EC2_METADATA_DISABLED", "true"),
            ] {
                if std::env::var_os(name).is_none() {
                    std::env::set_var(name, value);
                }
            }
        };
    }
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
        .block_on(run(proxy));
}

async fn run(proxy: Option<timed_proxy::TimedProxy>) {
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
    match &proxy {
        Some(proxy) if !spool => on_dynamodb(proxy, &sink).await,
        Some(_) => println!("\nDynamoDB Local: skipped with TRANSPORT=spool (its floor counts the SMTP submission)"),
        None => println!("\nDynamoDB Local: skipped (set MAILHOST_TEST_DYNAMODB_ENDPOINT; scripts/test starts one)"),
    }
}

/// A standard key's plain sends on DynamoDB Local against the floor of the
/// same run, and the round trips each waited for, counted at the proxy.
async fn on_dynamodb(proxy: &timed_proxy::TimedProxy, sink: &smtp::SmtpSink) {
    let sends: usize = std::env::var("DYNAMODB_SENDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(200);
    let data_dir = std::env::temp_dir().join(format!("mailhost-bench-ddb-{:x}", rand::random::<u64>()));
    let zone = mailhost::local_zone::LocalZone::start(std::net::Ipv4Addr::LOCALHOST.into())
        .await
        .unwrap();
    let mut config = Config::from_env().expect("MAILHOST_* variables");
    config.addr = "127.0.0.1:0".parse().unwrap();
    config.data_dir = data_dir.clone();
    config.service_domain = "svc.test".parse().unwrap();
    config.store = common::config::StoreKind::Dynamodb;
    config.table = format!("mailhost-send-bench-{:x}", rand::random::<u32>());
    // SMTP_DELAY_MS: the relay that far away each way, as the mail host is
    // from a Lambda function (the floor's submission goes the same way).
    let relay_url = match std::env::var("SMTP_DELAY_MS")
        .ok()
        .and_then(|ms| ms.parse::<f64>().ok())
    {
        Some(ms) => {
            let far = far::start(([127, 0, 0, 1], sink.port).into(), Duration::from_secs_f64(ms / 1000.0));
            println!("the relay {ms} ms away each way");
            sink.url()
                .replace(&format!(":{}?", sink.port), &format!(":{}?", far.port()))
        }
        None => sink.url(),
    };
    config.smtp_url = Some(relay_url.clone());
    config.smtp_ca_file = Some(sink.ca_file());
    config.system_mail = common::config::SystemMailKind::Outbox;
    config.dns_server = Some(zone.addr.to_string());
    config.poll_interval = 3600;
    let app = mailhost::Application::build(config).await.unwrap();
    let ctx = app.context.clone();
    zone.serve(ctx.clone());
    let base = format!("http://{}", app.addr);
    let server = app.spawn();
    let client = reqwest::Client::new();
    let key = onboard(&client, &base, &ctx, &data_dir).await;
    println!(
        "\n== DynamoDB Local, through a timing proxy ({}), a standard key",
        proxy.url
    );

    let body = json!({"from": "me@bench.test", "to": "bench@partner.example", "subject": "Benchmark",
        "text": "A short plain-text message.\n"});
    let send = || async {
        let started = Instant::now();
        let res = client
            .post(format!("{base}/sendMail"))
            .bearer_auth(&key)
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 200, "{}", res.text().await.unwrap());
        (started, Instant::now())
    };
    send().await;
    ctx.clock.advance(86_400);
    let mut latencies = Vec::with_capacity(sends);
    let mut trips = Vec::with_capacity(sends);
    let mut calls: std::collections::BTreeMap<String, Vec<Duration>> = Default::default();
    let mut waiting = Vec::with_capacity(sends);
    let mut outside = Vec::with_capacity(sends);
    // Where the server's own time sits, by the sends' number of round trips.
    let mut gaps: std::collections::BTreeMap<usize, Vec<Vec<Duration>>> = Default::default();
    let started = Instant::now();
    for i in 0..sends {
        if i % ROUND == 0 && i > 0 {
            ctx.clock.advance(86_400);
        }
        let (from, to) = send().await;
        latencies.push(to - from);
        let made = proxy.between(from, to);
        for call in &made {
            calls
                .entry(call.operation.clone())
                .or_default()
                .push(call.end - call.start);
        }
        trips.push(timed_proxy::round_trips(&made));
        let busy = timed_proxy::busy(&made);
        waiting.push(busy);
        outside.push((to - from).saturating_sub(busy));
        let idle = timed_proxy::idle(&made, from, to);
        let by_stretch = gaps
            .entry(idle.len() - 1)
            .or_insert_with(|| vec![Vec::new(); idle.len()]);
        for (n, gap) in idle.into_iter().enumerate() {
            by_stretch[n].push(gap);
        }
    }
    let elapsed = started.elapsed();
    report("sendMail, 1 client", &mut latencies, elapsed);
    trips.sort();
    let per_send: Vec<String> = calls
        .iter_mut()
        .map(|(operation, times)| {
            times.sort();
            format!(
                "{operation} {:.1} (p50 {:.2?})",
                times.len() as f64 / sends as f64,
                percentile(times, 0.5)
            )
        })
        .collect();
    println!(
        "at the proxy, per send: {}; round trips one after another: median {}, most {}",
        per_send.join(", "),
        trips[trips.len() / 2],
        trips[trips.len() - 1]
    );
    waiting.sort();
    outside.sort();
    println!(
        "of a send, p50: waiting on the store {:.2?}, the server's own time (the rest, the SMTP handoff in it) {:.2?}",
        percentile(&waiting, 0.5),
        percentile(&outside, 0.5)
    );
    // The commonest number of round trips: where its sends' own time sits.
    if let Some((trips, stretches)) = gaps.iter_mut().max_by_key(|(_, stretches)| stretches[0].len()) {
        let n = stretches[0].len();
        let last = stretches.len() - 1;
        let p50s: Vec<String> = stretches
            .iter_mut()
            .enumerate()
            .map(|(i, g)| {
                g.sort();
                let at = match i {
                    0 => "before the first".to_string(),
                    i if i == last => format!("after round trip {i} (the SMTP handoff in it)"),
                    i => format!("after round trip {i}"),
                };
                format!("{at} {:.2?}", percentile(g, 0.5))
            })
            .collect();
        println!(
            "the server's own time between its waits, p50 of the {n} sends of {trips} round trips: {}",
            p50s.join(", ")
        );
    }
    let sent_p50 = percentile(&latencies, 0.5);

    // The floor, the same run, through the same proxy.
    let store = &*ctx.store;
    let probe = common::store::Key::new("BENCH#floor", "S");
    store
        .put(common::store::item(&probe, &json!({"v": "x".repeat(200)})), None)
        .await
        .unwrap();
    let mut gets = Vec::with_capacity(sends);
    for _ in 0..sends {
        let t = Instant::now();
        store.get(&probe).await.unwrap();
        gets.push(t.elapsed());
    }
    floor_row("floor: one GetItem", &gets);
    // A transaction as large as a send's: 10 items of about its rows' size,
    // one of them holding a message's bytes as its Sent mark does.
    let mut transactions = Vec::with_capacity(sends);
    for i in 0..sends {
        let writes = (0..10)
            .map(|n| common::store::Write::Put {
                item: common::store::item(
                    &common::store::Key::new(format!("BENCH#tx{n}"), format!("{i}")),
                    &json!({"v": "x".repeat(if n == 0 { 1200 } else { 300 })}),
                ),
                cond: Some(common::store::Cond::NotExists),
            })
            .collect();
        let t = Instant::now();
        store.transact(writes).await.unwrap();
        transactions.push(t.elapsed());
    }
    floor_row("floor: one TransactWriteItems of 10 puts", &transactions);
    use common::mail::Transport;
    let transport = common::mail::smtp::SmtpTransport::from_url_with_ca(&relay_url, Some(&sink.ca_file())).unwrap();
    let message = common::mail::plain_text(
        "me@bench.test",
        "bench@partner.example",
        "Benchmark",
        "A short message.\n",
    )
    .unwrap();
    let mut smtp = Vec::with_capacity(sends);
    for _ in 0..sends {
        let t = Instant::now();
        transport.send(&message).await.unwrap();
        smtp.push(t.elapsed());
    }
    floor_row("floor: the SMTP submission alone", &smtp);
    let floor = 2 * percentile(&gets, 0.5) + percentile(&transactions, 0.5) + percentile(&smtp, 0.5);
    println!(
        "sendMail p50 {:.2?} against the floor's 2 GetItem + 1 TransactWriteItems + the SMTP submission at their p50s, {:.2?}: {:.2}x",
        sent_p50,
        floor,
        sent_p50.as_secs_f64() / floor.as_secs_f64()
    );
    server.abort();
    std::fs::remove_dir_all(data_dir).ok();
}

/// A ready account on `bench.test` with its domain verified and the mailbox
/// me@ added, as the README's first hour makes one, and credits enough: its key.
async fn onboard(
    client: &reqwest::Client,
    base: &str,
    ctx: &common::context::Context,
    data_dir: &std::path::Path,
) -> String {
    let secrets = common::secrets::DirSecrets::new(data_dir.join("secrets"));
    let signer = common::auth::identity::LocalSigner::load_or_create(&secrets)
        .await
        .unwrap();
    let operator = signer.mint("ops@bench.test", true, Duration::from_secs(3600)).unwrap();
    let post = |path: &str, token: Option<&str>, body: serde_json::Value| {
        let mut req = client.post(format!("{base}{path}")).json(&body);
        if let Some(token) = token {
            req = req.bearer_auth(token);
        }
        let path = path.to_string();
        async move {
            let res = req.send().await.unwrap();
            let status = res.status();
            let body: serde_json::Value = res.json().await.unwrap();
            assert!(status.is_success(), "{path}: {status} {body}");
            body
        }
    };
    post(
        "/api/admin/domainAllowlist",
        Some(&operator),
        json!({"domain": "bench.test"}),
    )
    .await;
    let asked = post(
        "/requestAccess",
        None,
        json!({"contactEmail": "me@bench.test", "domain": "bench.test",
        "agentName": "bench", "intendedUse": "benchmark"}),
    )
    .await;
    let request = asked["requestId"].as_str().unwrap().to_string();
    let code = std::fs::read_dir(data_dir.join("outbox"))
        .unwrap()
        .filter_map(|e| std::fs::read_to_string(e.ok()?.path()).ok())
        .find_map(|mail| {
            let at = mail.find("access code is")?;
            let digits: String = mail[at..].chars().filter(char::is_ascii_digit).take(8).collect();
            (digits.len() == 8).then_some(digits)
        })
        .expect("the emailed code in the outbox");
    let verified = post(
        "/verifyAccessRequest",
        None,
        json!({"requestId": request, "code": code}),
    )
    .await;
    let key = verified["apiKey"].as_str().unwrap().to_string();
    post("/addDomain", Some(&key), json!({"domain": "bench.test"})).await;
    let domain = post("/verifyDomain", Some(&key), json!({"domainId": "bench.test"})).await;
    assert_eq!(domain["domain"]["status"], "verified", "{domain}");
    post(
        "/addMailbox",
        Some(&key),
        json!({"domainId": "bench.test", "localPart": "me", "mode": "hosted",
        "forwardTo": []}),
    )
    .await;
    let uid = common::service::accounts::onboarding::load(ctx, &request)
        .await
        .unwrap()
        .and_then(|r| r.uid)
        .expect("the request's account");
    let credits = common::keys::credits(&common::service::accounts::credits::account_bucket(&uid));
    ctx.store
        .update(&credits, common::store::Update::new().set("remaining", 1_000_000), None)
        .await
        .unwrap();
    key
}

fn floor_row(label: &str, latencies: &[Duration]) {
    println!(
        "{label}: p50 {:.2?}, p99 {:.2?}",
        percentile(latencies, 0.5),
        percentile(latencies, 0.99)
    );
}

fn percentile(latencies: &[Duration], p: f64) -> Duration {
    let mut sorted = latencies.to_vec();
    sorted.sort();
    sorted[((sorted.len() as f64 * p).ceil() as usize).saturating_sub(1)]
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
