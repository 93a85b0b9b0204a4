//! Inbound latency benchmark: from `mailhost deliver` dropping a raw message
//! into the spool to the message appearing in GET /inbox, through the local
//! server (embedded store) and its quick poller. Beside it, in the same run,
//! the baseline: the filing work alone (the poller run and the list read,
//! with no tick to wait for), so the figure splits into waiting and working.
//! Then the same again while the server is busy: `wrk` (apt-get install wrk)
//! reads GET /inbox pages as fast as 8 connections can, while messages are
//! dropped and listed (each arrival changes the page, so most reads encode
//! rows afresh); skipped when wrk is missing.
//! Run: `cargo bench --bench inbound`; `MESSAGES=n` sets the count (per
//! phase), `MAILHOST_INBOUND_POLL_MS` the quick poller's interval.

#[path = "support/process.rs"]
mod process;

use std::time::{Duration, Instant};

use common::config::Config;
use process::{cpu_time, loadavg};

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let messages: usize = std::env::var("MESSAGES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(40);
    let (quick, quick_ctx) = server(None).await;
    let (direct, direct_ctx) = server(Some(0)).await;
    let interval = quick_ctx.config.inbound_poll_ms;

    println!("messages: {messages} per phase, quick poller every {interval} ms");
    let (listed, filing) = phase(&quick, &direct, &direct_ctx, interval, 0..messages).await;
    report("idle", listed, filing);
    let Some(mut wrk) = busy(&quick) else {
        println!("wrk missing (apt-get install wrk): no busy phase");
        return;
    };
    let (started, cpu) = (Instant::now(), cpu_time());
    let (listed, filing) = phase(&quick, &direct, &direct_ctx, interval, messages..2 * messages).await;
    let cores = (cpu_time() - cpu).as_secs_f64() / started.elapsed().as_secs_f64();
    wrk.kill().ok();
    let out = wrk.wait_with_output().unwrap();
    report(
        &format!("busy: wrk -c8 on GET /inbox, this process used {cores:.2} cores"),
        listed,
        filing,
    );
    if !out.status.success() && out.stdout.is_empty() {
        println!("wrk: {}", String::from_utf8_lossy(&out.stderr));
    }
    println!("load average {}", loadavg());
}

/// Drops messages `range` and times each until GET /inbox lists it, then the
/// baseline for the same message (filing alone, on the second server).
async fn phase(
    quick: &Server,
    direct: &Server,
    direct_ctx: &common::context::Context,
    interval: u64,
    range: std::ops::Range<usize>,
) -> (Vec<Duration>, Vec<Duration>) {
    let mut listed = Vec::with_capacity(range.len());
    let mut filing = Vec::with_capacity(range.len());
    for i in range {
        // Dropped at a random point of the poller's interval, as mail arrives.
        tokio::time::sleep(Duration::from_millis(rand::random::<u64>() % interval.max(1))).await;
        let started = Instant::now();
        mailhost::deliver(&quick.data_dir, raw(i)).await.unwrap();
        loop {
            if quick.listed(i).await {
                break;
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        listed.push(started.elapsed());

        let started = Instant::now();
        mailhost::deliver(&direct.data_dir, raw(i)).await.unwrap();
        common::service::receiving::poller::run_once(direct_ctx).await.unwrap();
        assert!(direct.listed(i).await);
        filing.push(started.elapsed());
    }
    (listed, filing)
}

fn report(what: &str, mut listed: Vec<Duration>, mut filing: Vec<Duration>) {
    let (l50, l95, lmax) = stats(&mut listed);
    let (f50, f95, fmax) = stats(&mut filing);
    println!("{what}");
    println!("  drop to listed:        p50 {l50:>7.1} ms  p95 {l95:>7.1} ms  max {lmax:>7.1} ms");
    println!("  filing alone (base):   p50 {f50:>7.1} ms  p95 {f95:>7.1} ms  max {fmax:>7.1} ms");
    println!(
        "  ratio p50 drop-to-listed / filing alone: {:.1}x",
        l50 / f50.max(0.001)
    );
}

/// wrk reading the quick server's inbox list until killed, or `None` when
/// wrk is not installed.
fn busy(quick: &Server) -> Option<std::process::Child> {
    std::process::Command::new("wrk")
        .args(["-t1", "-c8", "-d3600s", "-H"])
        .arg(format!("Authorization: Bearer {}", quick.key))
        .arg(quick.base.replace("limit=1", "limit=25"))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .ok()
}

struct Server {
    base: String,
    key: String,
    data_dir: std::path::PathBuf,
    client: reqwest::Client,
}

impl Server {
    async fn listed(&self, i: usize) -> bool {
        let res = self.client.get(&self.base).bearer_auth(&self.key).send().await.unwrap();
        let body: serde_json::Value = res.json().await.unwrap();
        body["messages"][0]["messageId"] == format!("<bench-{i}@partner.example>")
    }
}

async fn server(inbound_poll_ms: Option<u64>) -> (Server, std::sync::Arc<common::context::Context>) {
    let data_dir = std::env::temp_dir().join(format!("mailhost-bench-{:x}", rand::random::<u64>()));
    let mut config = Config::from_env().expect("MAILHOST_* variables");
    config.addr = "127.0.0.1:0".parse().unwrap();
    config.data_dir = data_dir.clone();
    config.service_domain = "svc.test".parse().unwrap();
    config.poll_interval = 3600;
    if let Some(ms) = inbound_poll_ms {
        config.inbound_poll_ms = ms;
    }
    let key = common::auth::keys::new_key();
    config.agent_key = Some(key.clone());
    let app = mailhost::Application::build(config).await.unwrap();
    let ctx = app.context.clone();
    let base = format!("http://{}/inbox?limit=1", app.addr);
    // Detached: it serves until the benchmark ends.
    drop(app.spawn());
    let server = Server {
        base,
        key,
        data_dir,
        client: reqwest::Client::new(),
    };
    (server, ctx)
}

fn raw(i: usize) -> Vec<u8> {
    format!(
        "Delivered-To: inbox@svc.test\r\nFrom: pal@partner.example\r\nTo: inbox@svc.test\r\nSubject: Bench {i}\r\n\
         Message-ID: <bench-{i}@partner.example>\r\n\r\nA short message.\r\n"
    )
    .into_bytes()
}

fn stats(samples: &mut [Duration]) -> (f64, f64, f64) {
    samples.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let at = |q: f64| ms(samples[((samples.len() as f64 * q) as usize).min(samples.len() - 1)]);
    (at(0.5), at(0.95), ms(samples[samples.len() - 1]))
}
