//! Inbound filing against mail-parser's parse-only rate, per core, on the
//! shared corpus (`../shared/corpus/eml`, about 100 real messages; `CORPUS=dir`
//! names another), both measured in the same run, in turns.
//!
//! Filing is the poller's whole work per message (`poller::run_once` over a
//! spool holding every corpus file once): reading the spool file, parsing it,
//! the mailbox lookup, SPF, DKIM, DMARC and ARC through the service's caching
//! resolver against a real DNS server on loopback (every domain's records
//! published, the caches warmed by a first pass), the receive lists, the blobs,
//! the store transaction(s) on the embedded store on disk (redb, durable), and
//! moving the file to `inbound/done/`. Each pass files into a mailbox of its
//! own, so every message is new to it. The baseline is
//! `MessageParser::default().parse` of the same bytes.
//!
//! "Per core" is messages per second of CPU time (all the process's threads:
//! `CLOCK_PROCESS_CPUTIME_ID`); the wall-clock rate of one poller is printed
//! beside it, since a commit's fsync waits without using a core. Two parts of
//! filing are also timed alone on the same messages, to show where its CPU
//! goes: the service's parse (`mail::inbound::parse`: mail-parser, the
//! digest, attachments and text) and the authentication checks.
//!
//! The process allocates with mimalloc, as the local server does. The store
//! and blobs go under `TMPDIR` (a tmpfs there leaves the disk and the file
//! system out).
//!
//! Run: `cargo bench --bench filing` (`ROUNDS=n`, default 5).

#[path = "../tests/api/support/dns.rs"]
#[allow(dead_code)]
mod dns;
#[path = "support/process.rs"]
mod process;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::config::Config;
use common::mail::inbound::{Envelope, drop_raw};
use common::service::receiving::poller;
use serde_json::json;

use process::{cpu_time, loadavg};

const CLIENT_IP: &str = "192.0.2.25";

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let rounds: usize = std::env::var("ROUNDS").ok().and_then(|s| s.parse().ok()).unwrap_or(5);
    let corpus = corpus();
    let bytes: usize = corpus.iter().map(|(_, m)| m.len()).sum();
    assert!(!corpus.is_empty(), "no corpus found");

    let dns = dns::TestDns::start().await;
    let domains = publish(&dns, &corpus);
    let bench = Bench::start(&dns).await;

    // A first pass warms the resolver's cache (and the store's pages).
    bench.add_mailbox(0).await;
    bench.file_pass(0, &corpus).await;

    let mut parse = Vec::new();
    let mut filing = Vec::new();
    let mut ours = Vec::new();
    let mut checks = Vec::new();
    for round in 1..=rounds {
        parse.push(parse_pass(&corpus));
        bench.add_mailbox(round).await;
        filing.push(bench.file_pass(round, &corpus).await);
        ours.push(service_parse_pass(&corpus));
        checks.push(bench.authentication_pass(&corpus).await);
    }

    let n = corpus.len() as f64;
    let per_cpu = |p: &Pass| n / p.cpu.as_secs_f64();
    let per_wall = |p: &Pass| n / p.wall.as_secs_f64();
    let median = |mut v: Vec<f64>| {
        v.sort_by(|a, b| a.total_cmp(b));
        v[v.len() / 2]
    };
    let parse_cpu = median(parse.iter().map(per_cpu).collect());
    let filing_cpu = median(filing.iter().map(per_cpu).collect());
    let parse_wall = median(parse.iter().map(per_wall).collect());
    let filing_wall = median(filing.iter().map(per_wall).collect());
    let ratios: Vec<f64> = parse
        .iter()
        .zip(&filing)
        .map(|(p, f)| per_cpu(f) / per_cpu(p))
        .collect();
    let last = filing.last().unwrap();
    println!(
        "corpus: {} messages, {} bytes, {} sender domains published; {rounds} rounds; load average {}",
        corpus.len(),
        bytes,
        domains,
        loadavg()
    );
    println!(
        "each filing pass: {} filed, {} failed (with a reason), {} left pending",
        last.outcome.filed, last.outcome.failed, last.outcome.pending
    );
    println!("{:46} {:>12} {:>12}", "", "msgs/CPU-s", "msgs/s wall");
    println!(
        "{:46} {parse_cpu:>12.0} {parse_wall:>12.0}",
        "mail-parser MessageParser::parse (baseline)"
    );
    println!(
        "{:46} {filing_cpu:>12.0} {filing_wall:>12.0}",
        "filing: poller::run_once, embedded store"
    );
    println!(
        "filing per core / parse per core: {:.3}x (median of the rounds; rounds {})",
        median(ratios.clone()),
        ratios.iter().map(|r| format!("{r:.3}")).collect::<Vec<_>>().join(", ")
    );
    let part = |passes: &[Pass]| 1e6 / median(passes.iter().map(per_cpu).collect());
    let (ours, checks) = (part(&ours), part(&checks));
    println!(
        "CPU per message: parse {:.1} µs; filing {:.1} µs, of which the service's parse {ours:.1} µs, \
         the authentication checks {checks:.1} µs, the rest (store, blobs, spool) {:.1} µs; \
         wall per message filing {:.1} µs",
        1e6 / parse_cpu,
        1e6 / filing_cpu,
        1e6 / filing_cpu - ours - checks,
        1e6 / filing_wall
    );
}

struct Pass {
    wall: Duration,
    cpu: Duration,
    outcome: poller::Outcome,
}

/// The corpus files, sorted by name.
fn corpus() -> Vec<(PathBuf, Vec<u8>)> {
    let root = std::env::var_os("CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus/eml"));
    let mut files = Vec::new();
    let mut stack = vec![root];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "eml") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
        .into_iter()
        .map(|p| {
            let bytes = std::fs::read(&p).unwrap();
            (p, bytes)
        })
        .collect()
}

/// The sender domain of a message: its From's, as the envelope names it.
fn sender_domain(raw: &[u8]) -> String {
    let from = mail_parser::MessageParser::default()
        .parse(raw)
        .and_then(|m| {
            m.from()
                .and_then(|a| a.first())
                .and_then(|a| a.address())
                .map(str::to_string)
        })
        .unwrap_or_default();
    match from.rsplit_once('@') {
        Some((_, domain)) if domain.contains('.') && !domain.is_empty() => domain.to_ascii_lowercase(),
        _ => "bench-sender.example".into(),
    }
}

/// SPF (the envelope's client address passes) and a DMARC policy for every
/// sender domain: each message's checks do their real lookups.
fn publish(dns: &dns::TestDns, corpus: &[(PathBuf, Vec<u8>)]) -> usize {
    let domains: BTreeSet<String> = corpus.iter().map(|(_, m)| sender_domain(m)).collect();
    for domain in &domains {
        dns.set_txt(domain, &["v=spf1 ip4:192.0.2.0/24 -all"]);
        dns.set_txt(&format!("_dmarc.{domain}"), &["v=DMARC1; p=none"]);
        dns.set_ips(&format!("mail.{domain}"), &[CLIENT_IP.parse().unwrap()]);
    }
    domains.len()
}

/// Parses every corpus message once.
fn parse_pass(corpus: &[(PathBuf, Vec<u8>)]) -> Pass {
    let (started, cpu) = (Instant::now(), cpu_time());
    let mut parts = 0;
    for (_, raw) in corpus {
        if let Some(message) = mail_parser::MessageParser::default().parse(raw.as_slice()) {
            parts += message.parts.len();
        }
    }
    std::hint::black_box(parts);
    Pass {
        wall: started.elapsed(),
        cpu: cpu_time() - cpu,
        outcome: poller::Outcome::default(),
    }
}

/// The service's own parse of every message (what the poller runs first).
fn service_parse_pass(corpus: &[(PathBuf, Vec<u8>)]) -> Pass {
    let (started, cpu) = (Instant::now(), cpu_time());
    let limits = common::mail::inbound::Limits::default();
    for (_, raw) in corpus {
        std::hint::black_box(common::mail::inbound::parse(raw, &limits).ok());
    }
    Pass {
        wall: started.elapsed(),
        cpu: cpu_time() - cpu,
        outcome: poller::Outcome::default(),
    }
}

struct Bench {
    ctx: std::sync::Arc<common::context::Context>,
    base: String,
    operator: String,
    client: reqwest::Client,
    data_dir: PathBuf,
}

impl Drop for Bench {
    fn drop(&mut self) {
        std::fs::remove_dir_all(&self.data_dir).ok();
    }
}

impl Bench {
    async fn start(dns: &dns::TestDns) -> Bench {
        let data_dir = std::env::temp_dir().join(format!("mailhost-filing-{:x}", rand::random::<u64>()));
        let mut config = Config::from_env().expect("MAILHOST_* variables");
        config.addr = "127.0.0.1:0".parse().unwrap();
        config.data_dir = data_dir.clone();
        config.service_domain = "svc.test".parse().unwrap();
        config.mail_host = "mx.svc.test".into();
        config.operator_emails = vec!["ops@operators.test".into()];
        config.dns_server = Some(dns.addr.to_string());
        // The benchmark runs the poller itself; no job runs meanwhile.
        config.poll_interval = 3600;
        config.inbound_poll_ms = 0;
        config.agent_key = Some(common::auth::keys::new_key());
        let app = mailhost::Application::build(config).await.unwrap();
        let ctx = app.context.clone();
        let base = format!("http://{}", app.addr);
        drop(app.spawn());
        let signer = common::auth::identity::LocalSigner::load_or_create(&common::secrets::DirSecrets::new(
            data_dir.join("secrets"),
        ))
        .await
        .unwrap();
        let operator = signer
            .mint("ops@operators.test", false, Duration::from_secs(3600))
            .unwrap();
        Bench {
            ctx,
            base,
            operator,
            client: reqwest::Client::new(),
            data_dir,
        }
    }

    /// The checks filing runs on every message, alone: SPF, DKIM, DMARC and
    /// ARC through the service's caching resolver (warm).
    async fn authentication_pass(&self, corpus: &[(PathBuf, Vec<u8>)]) -> Pass {
        let resolver = self.ctx.dns.authenticator().unwrap();
        let envelopes: Vec<Envelope> = corpus.iter().map(|(_, raw)| envelope(0, raw)).collect();
        // The addresses each message's From headers name, read as filing reads them.
        let authors: Vec<Vec<String>> = corpus
            .iter()
            .map(|(_, raw)| {
                common::mail::inbound::parse(raw, &Default::default())
                    .map(|m| m.judged_authors())
                    .unwrap_or_default()
            })
            .collect();
        let (started, cpu) = (Instant::now(), cpu_time());
        for (((_, raw), envelope), authors) in corpus.iter().zip(&envelopes).zip(&authors) {
            let auth = common::mail::authenticate::authenticate(
                resolver,
                raw,
                Some(envelope),
                authors,
                &self.ctx.config.mail_host,
                &self.ctx.config.trusted_arc_sealers,
            )
            .await;
            std::hint::black_box(auth);
        }
        Pass {
            wall: started.elapsed(),
            cpu: cpu_time() - cpu,
            outcome: poller::Outcome::default(),
        }
    }

    async fn add_mailbox(&self, pass: usize) {
        let res = self
            .client
            .post(format!("{}/addMailbox", self.base))
            .bearer_auth(&self.operator)
            .json(&json!({ "domainId": "svc.test", "localPart": format!("bench{pass}"), "mode": "hosted", "forwardTo": [] }))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 200, "{}", res.text().await.unwrap());
    }

    /// Drops every corpus message for this pass's mailbox (as the mail host
    /// would, not timed), then times one poller run over them.
    async fn file_pass(&self, pass: usize, corpus: &[(PathBuf, Vec<u8>)]) -> Pass {
        for (_, raw) in corpus {
            drop_raw(self.ctx.blobs.as_ref(), envelope(pass, raw).prepend(raw))
                .await
                .unwrap();
        }
        let (started, cpu) = (Instant::now(), cpu_time());
        let outcome = poller::run_once(&self.ctx).await.unwrap();
        let pass = Pass {
            wall: started.elapsed(),
            cpu: cpu_time() - cpu,
            outcome,
        };
        assert_eq!(
            outcome.filed + outcome.failed + outcome.duplicates,
            corpus.len(),
            "{outcome:?}"
        );
        pass
    }
}

/// The envelope the mail host writes for a message to this pass's mailbox,
/// from a client the sender's SPF record names.
fn envelope(pass: usize, raw: &[u8]) -> Envelope {
    let domain = sender_domain(raw);
    Envelope {
        recipient: Some(format!("bench{pass}@svc.test")),
        sender: Some(format!("bounces@{domain}")),
        client_address: Some(CLIENT_IP.into()),
        helo: Some(format!("mail.{domain}")),
    }
}
