//! Inbound latency benchmark: from `mailhost deliver` dropping a raw message
//! into the spool to the message appearing in GET /inbox, through the local
//! server (embedded store) and its quick poller. Beside it, in the same run,
//! the baseline: the filing work alone (the poller run and the list read,
//! with no tick to wait for), so the figure splits into waiting and working.
//! Run: `cargo bench --bench inbound`; `MESSAGES=n` sets the count,
//! `MAILHOST_INBOUND_POLL_MS` the quick poller's interval (default 250).

use std::time::{Duration, Instant};

use common::config::Config;

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let messages: usize = std::env::var("MESSAGES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(40);
    let (quick, quick_ctx) = server(None).await;
    let (direct, direct_ctx) = server(Some(0)).await;
    let interval = quick_ctx.config.inbound_poll_ms;

    let mut listed = Vec::with_capacity(messages);
    let mut filing = Vec::with_capacity(messages);
    for i in 0..messages {
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
        common::service::poller::run_once(&direct_ctx).await.unwrap();
        assert!(direct.listed(i).await);
        filing.push(started.elapsed());
    }
    let (l50, l95, lmax) = stats(&mut listed);
    let (f50, f95, fmax) = stats(&mut filing);
    println!("messages: {messages}, quick poller every {interval} ms");
    println!("drop to listed:        p50 {l50:>7.1} ms  p95 {l95:>7.1} ms  max {lmax:>7.1} ms");
    println!("filing alone (base):   p50 {f50:>7.1} ms  p95 {f95:>7.1} ms  max {fmax:>7.1} ms");
    println!("ratio p50 drop-to-listed / filing alone: {:.1}x", l50 / f50.max(0.001));
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
