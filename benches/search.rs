//! Search benchmark: `GET /search` over one mailbox of 100 000 real-shaped
//! messages (`MESSAGES=n`), through the local server, beside GET /inbox (a
//! list page) measured in the same run; then the same on DynamoDB Local
//! (with `MAILHOST_TEST_DYNAMODB_ENDPOINT`), beside DynamoDB Local's own
//! floor (one GetItem, one Query) in that run; and what indexing costs per
//! filed message.
//!
//! The messages are the shared corpus (`../shared/corpus/eml`) and the
//! public fixtures (`tests/fixtures/eml`), each filed many times with varied
//! words: a subject, a sender (500 people), sometimes a Cc and an
//! attachment, and a body of the corpus message's own text followed by 30 to
//! 600 words drawn by Zipf's law from a vocabulary of the corpus's words and
//! 40 000 made-up ones; filed over three years, a quarter unread, some
//! archived, trashed or sent. They are written as the filing writes them
//! (rows, and each message's search item), 64 at a time, each batch then
//! compacted as the poller would; a sample of 300 more is filed through the
//! filing itself to count what indexing adds to it.
//!
//! Each query runs `ROUNDS` times (default 200) after a warm-up; p50 and p99
//! are wall-clock milliseconds of the HTTP request. "Cold" empties the
//! process's cache of index blobs before each run (a new Lambda container's
//! first query).
//!
//! Run: `cargo bench --bench search` (`MESSAGES=n`, `ROUNDS=n`).

#[path = "support/process.rs"]
#[allow(dead_code)]
mod process;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use common::blob::{BlobResult, BlobStore};
use common::config::{Config, StoreKind};
use common::context::Context;
use common::mail::inbound::{self, Inbound, Limits};
use common::search::{self, doc, items};
use common::service::mail_store::{self, AttachmentInfo, Direction, Folder, NewMessage, Row};
use common::store::{Key, Write};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const MAILBOX: &str = "inbox@svc.test";
const SCOPE: &str = "mailbox:inbox@svc.test";
const YEARS: i64 = 3;
const DAY_MS: i64 = 86_400_000;

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let n: usize = env("MESSAGES", 100_000);
    let rounds: usize = env("ROUNDS", 200);
    let corpus = corpus();
    assert!(!corpus.is_empty(), "no corpus found");
    let vocabulary = Vocabulary::new(&corpus);
    println!(
        "corpus: {} messages parsed; vocabulary {} words; {n} messages per mailbox; {rounds} runs per query; load average {}",
        corpus.len(),
        vocabulary.words.len(),
        process::loadavg()
    );

    let embedded = Bench::start(None).await;
    let built = embedded.fill(&corpus, &vocabulary, n).await;
    let queries = queries(&vocabulary, embedded.ctx.clock.now().timestamp_millis());
    println!("\n== embedded store (redb), local server\n{built}");
    embedded.measure(&queries, rounds, true).await;
    embedded.filing_cost(&corpus).await;

    match std::env::var("MAILHOST_TEST_DYNAMODB_ENDPOINT") {
        Ok(endpoint) => {
            let dynamo = Bench::start(Some(&endpoint)).await;
            let dn: usize = env("DYNAMODB_MESSAGES", n);
            let built = dynamo.fill(&corpus, &vocabulary, dn).await;
            println!("\n== DynamoDB Local ({endpoint}), local server\n{built}");
            dynamo.floor(rounds).await;
            dynamo.measure(&queries, rounds.min(100), false).await;
        }
        Err(_) => println!("\nDynamoDB Local: skipped (set MAILHOST_TEST_DYNAMODB_ENDPOINT; scripts/test starts one)"),
    }
}

fn env(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|s| s.parse().ok()).unwrap_or(default)
}

// ------------------------------------------------------------------ corpus

fn corpus() -> Vec<Inbound> {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    // The shared corpus sits beside the main checkout (`../shared`), and
    // two levels up from a worktree under `/work/wt/`.
    let shared = ["../shared/corpus/eml", "../../shared/corpus/eml"]
        .iter()
        .map(|p| manifest.join(p))
        .find(|p| p.is_dir());
    let roots: Vec<PathBuf> = shared
        .into_iter()
        .chain([manifest.join("tests/fixtures/eml")])
        .collect();
    let mut files: Vec<PathBuf> = Vec::new();
    let mut stack: Vec<PathBuf> = roots.to_vec();
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
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
        .iter()
        .filter_map(|p| inbound::parse(&std::fs::read(p).ok()?, &Limits::default()).ok())
        .collect()
}

/// Words drawn by Zipf's law: the corpus's own words first (most frequent
/// first), then made-up ones.
struct Vocabulary {
    words: Vec<String>,
    cumulative: Vec<f64>,
}

impl Vocabulary {
    fn new(corpus: &[Inbound]) -> Vocabulary {
        let mut counts: std::collections::HashMap<String, usize> = Default::default();
        for m in corpus {
            for w in search::text::kept_words(&format!("{} {}", m.subject, m.text)) {
                if w.len() > 2 && w.chars().all(char::is_alphabetic) {
                    *counts.entry(w).or_default() += 1;
                }
            }
        }
        let mut words: Vec<(String, usize)> = counts.into_iter().collect();
        words.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        let mut words: Vec<String> = words.into_iter().map(|(w, _)| w).collect();
        let syllables = [
            "ka", "lo", "mi", "ne", "ru", "sa", "to", "vi", "be", "da", "fo", "gi", "ha", "je", "ku", "ma", "po", "ri",
            "se", "tu", "wa", "xo", "ya", "zu", "an", "el", "or", "in", "us", "et",
        ];
        let mut rng = StdRng::seed_from_u64(7);
        let mut seen: std::collections::HashSet<String> = words.iter().cloned().collect();
        while words.len() < 40_000 {
            let len = rng.random_range(2..=4);
            let w: String = (0..len)
                .map(|_| syllables[rng.random_range(0..syllables.len())])
                .collect();
            if seen.insert(w.clone()) {
                words.push(w);
            }
        }
        let mut total = 0.0;
        let cumulative = (1..=words.len())
            .map(|r| {
                total += 1.0 / r as f64;
                total
            })
            .collect();
        Vocabulary { words, cumulative }
    }

    fn draw(&self, rng: &mut StdRng) -> &str {
        let total = *self.cumulative.last().unwrap_or(&1.0);
        let x = rng.random::<f64>() * total;
        let i = self.cumulative.partition_point(|c| *c < x).min(self.words.len() - 1);
        &self.words[i]
    }

    fn sentence(&self, rng: &mut StdRng, words: usize) -> String {
        let mut out = String::new();
        for i in 0..words {
            if i > 0 {
                out.push(if i % 12 == 0 { '.' } else { ' ' });
                if i % 12 == 0 {
                    out.push(' ');
                }
            }
            out.push_str(self.draw(rng));
        }
        out
    }
}

/// One made-up message from a corpus message.
struct Made {
    subject: String,
    from: String,
    from_name: String,
    cc: Vec<String>,
    body: String,
    filenames: Vec<String>,
    unread: bool,
    folder: Folder,
    outbound: bool,
}

fn person(i: usize) -> (String, String) {
    const FIRST: [&str; 25] = [
        "Alice", "Bruno", "Chloé", "Dmitri", "Elena", "Farid", "Greta", "Hiro", "Inès", "Jonas", "Keiko", "Luis",
        "Maya", "Nils", "Olga", "Pablo", "Quinn", "Rosa", "Sven", "Tariq", "Ursula", "Vera", "Wen", "Xavier", "Yara",
    ];
    const LAST: [&str; 20] = [
        "Smith", "Müller", "García", "Rossi", "Novak", "Kim", "Dubois", "Silva", "Jensen", "Kowalski", "Tanaka",
        "Ortiz", "Berg", "Haddad", "Moreau", "Ivanova", "Santos", "Larsen", "Costa", "Weber",
    ];
    let (f, l) = (FIRST[i % FIRST.len()], LAST[(i / FIRST.len()) % LAST.len()]);
    let address = format!(
        "{}.{}@{}.example",
        search::text::kept_words(f).join(""),
        search::text::kept_words(l).join(""),
        ["acme", "globex", "initech", "umbrella", "hooli"][i % 5]
    );
    (format!("{f} {l}"), address)
}

fn make(i: usize, base: &Inbound, vocabulary: &Vocabulary, rng: &mut StdRng) -> Made {
    let (name, from) = person(rng.random_range(0..500));
    let cc = if rng.random_bool(0.2) {
        vec![person(rng.random_range(0..500)).1]
    } else {
        Vec::new()
    };
    let head: String = base.text.chars().take(1500).collect();
    let words = rng.random_range(30..600);
    let body = format!("{head}\n\n{}\n", vocabulary.sentence(rng, words));
    let subject_words = rng.random_range(1..4);
    let subject = format!("{} {}", base.subject, vocabulary.sentence(rng, subject_words));
    let mut filenames: Vec<String> = base.attachments.iter().map(|a| a.filename.clone()).collect();
    if rng.random_bool(0.12) {
        filenames.push(format!(
            "{}-{}.{}",
            ["invoice", "report", "contract", "photo", "notes"][i % 5],
            i % 97,
            ["pdf", "docx", "png", "xlsx"][i % 4]
        ));
    }
    let folder = match rng.random_range(0..100) {
        0..85 => Folder::Inbox,
        85..95 => Folder::Archive,
        _ => Folder::Trash,
    };
    Made {
        subject,
        from,
        from_name: name,
        cc,
        body,
        filenames,
        unread: rng.random_bool(0.25),
        folder,
        outbound: rng.random_bool(0.1),
    }
}

// ------------------------------------------------------------------ the bench

/// Counts blob requests (the index's S3 requests).
struct CountingBlobs {
    inner: Arc<dyn BlobStore>,
    puts: AtomicU64,
    gets: AtomicU64,
    deletes: AtomicU64,
    put_bytes: AtomicU64,
}

#[async_trait]
impl BlobStore for CountingBlobs {
    async fn put(&self, key: &str, bytes: Vec<u8>, content_type: &str) -> BlobResult<()> {
        if key.starts_with("search/") {
            self.puts.fetch_add(1, Ordering::Relaxed);
            self.put_bytes.fetch_add(bytes.len() as u64, Ordering::Relaxed);
        }
        self.inner.put(key, bytes, content_type).await
    }
    async fn get(&self, key: &str) -> BlobResult<Option<Vec<u8>>> {
        if key.starts_with("search/") {
            self.gets.fetch_add(1, Ordering::Relaxed);
        }
        self.inner.get(key).await
    }
    async fn delete(&self, key: &str) -> BlobResult<()> {
        if key.starts_with("search/") {
            self.deletes.fetch_add(1, Ordering::Relaxed);
        }
        self.inner.delete(key).await
    }
    async fn list(&self, prefix: &str) -> BlobResult<Vec<String>> {
        self.inner.list(prefix).await
    }
}

struct Bench {
    ctx: Arc<Context>,
    blobs: Arc<CountingBlobs>,
    base: String,
    key: String,
    client: reqwest::Client,
    _server: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl Bench {
    async fn start(dynamodb: Option<&str>) -> Bench {
        let data_dir = std::env::temp_dir().join(format!("mailhost-search-bench-{:x}", rand::random::<u64>()));
        let mut config = Config::from_env().expect("MAILHOST_* variables");
        config.addr = "127.0.0.1:0".parse().unwrap();
        config.data_dir = data_dir;
        config.service_domain = "svc.test".parse().unwrap();
        config.poll_interval = 3600;
        config.inbound_poll_ms = 0;
        if dynamodb.is_some() {
            config.store = StoreKind::Dynamodb;
            config.table = format!("mailhost-search-bench-{:x}", rand::random::<u32>());
        }
        let key = common::auth::keys::new_key();
        config.agent_key = Some(key.clone());
        let app = mailhost::Application::build(config).await.unwrap();
        let ctx = app.context.clone();
        let blobs = Arc::new(CountingBlobs {
            inner: ctx.blobs.clone(),
            puts: AtomicU64::new(0),
            gets: AtomicU64::new(0),
            deletes: AtomicU64::new(0),
            put_bytes: AtomicU64::new(0),
        });
        let base = format!("http://{}", app.addr);
        let server = app.spawn();
        Bench {
            ctx,
            blobs,
            base,
            key,
            client: reqwest::Client::new(),
            _server: server,
        }
    }

    /// Files `n` made-up messages as the filing writes them, 64 at a time,
    /// each batch compacted as the poller would.
    async fn fill(&self, corpus: &[Inbound], vocabulary: &Vocabulary, n: usize) -> String {
        let started = Instant::now();
        let mut rng = StdRng::seed_from_u64(42);
        let now = self.ctx.clock.now().timestamp_millis();
        let span = YEARS * 365 * DAY_MS;
        let store = &*self.ctx.store;
        let blobs: &dyn BlobStore = &*self.blobs;
        let mut batch_rows: Vec<Write> = Vec::new();
        let mut batch_docs: Vec<Write> = Vec::new();
        let mut packed = 0usize;
        let mut ids = Vec::with_capacity(n);
        for i in 0..n {
            let base = &corpus[i % corpus.len()];
            let made = make(i, base, vocabulary, &mut rng);
            let ms = now - span + (span / n as i64) * i as i64;
            let direction = if made.outbound {
                Direction::Outbound
            } else {
                Direction::Inbound
            };
            let id = mail_store::new_id(ms, direction);
            ids.push(id.clone());
            let (row, doc) = row_and_doc(&id, &made, base);
            if row.text_in_blob {
                let key = format!("{}/body.txt", row.blob_prefix);
                self.ctx
                    .blobs
                    .put(&key, made.body.clone().into_bytes(), "text/plain")
                    .await
                    .unwrap();
            }
            let key = Key::new(common::keys::mail_partition(SCOPE, made.outbound), &id);
            batch_rows.push(Write::Put {
                item: common::store::item(&key, &row),
                cond: None,
            });
            let write = items::filing_write(SCOPE, &doc);
            if let Write::Put { item, .. } = &write {
                packed += serde_json::to_vec(item).unwrap().len();
            }
            batch_docs.push(write);
            if batch_rows.len() == 50 {
                store.transact(std::mem::take(&mut batch_rows)).await.unwrap();
            }
            if batch_docs.len() == search::TAIL_LIMIT || i + 1 == n {
                if !batch_rows.is_empty() {
                    store.transact(std::mem::take(&mut batch_rows)).await.unwrap();
                }
                store.transact(std::mem::take(&mut batch_docs)).await.unwrap();
                let options = search::compact::Options {
                    force: false,
                    grace_ms: Some(0),
                };
                search::compact::compact(store, blobs, SCOPE, now, options)
                    .await
                    .unwrap();
            }
            if (i + 1) % 10_000 == 0 {
                eprintln!("  {} messages filed, {:.0} s", i + 1, started.elapsed().as_secs_f64());
            }
        }
        // Recent changes not yet folded, as a live mailbox has: 150 read flags
        // and moves.
        let mut changes = Vec::new();
        for i in 0..150usize {
            let id = &ids[(i * 7919) % ids.len()];
            changes.push(if i % 3 == 0 {
                items::folder_write(SCOPE, id, search::Folder::Archive)
            } else {
                items::unread_write(SCOPE, id, i % 2 == 0)
            });
            if changes.len() == 50 {
                store.transact(std::mem::take(&mut changes)).await.unwrap();
            }
        }
        let stored = items::read(store, SCOPE).await.unwrap();
        let index_bytes: u64 = stored.manifest.segments.iter().map(|s| s.bytes).sum();
        format!(
            "index: {} messages in {} segments ({:.1} MB of blobs, {} buckets), {} fresh and {} changes in the store; built in {:.0} s; \
             search items averaged {} bytes; compactions wrote {} blobs ({:.1} MB) and deleted {}, {:.3} blob writes per message",
            stored.manifest.segments.iter().map(|s| s.docs).sum::<usize>(),
            stored.manifest.segments.len(),
            index_bytes as f64 / 1e6,
            stored.manifest.segments.iter().map(|s| s.k.max(1)).sum::<u32>(),
            stored.docs.len(),
            stored.overrides.len(),
            started.elapsed().as_secs_f64(),
            packed / n.max(1),
            self.blobs.puts.load(Ordering::Relaxed),
            self.blobs.put_bytes.load(Ordering::Relaxed) as f64 / 1e6,
            self.blobs.deletes.load(Ordering::Relaxed),
            self.blobs.puts.load(Ordering::Relaxed) as f64 / n as f64,
        )
    }

    async fn get(&self, path: &str) -> (Duration, serde_json::Value) {
        let started = Instant::now();
        let res = self
            .client
            .get(format!("{}{path}", self.base))
            .bearer_auth(&self.key)
            .send()
            .await
            .unwrap();
        let status = res.status();
        let body: serde_json::Value = res.json().await.unwrap();
        let took = started.elapsed();
        assert_eq!(status, 200, "{path}: {body}");
        (took, body)
    }

    async fn measure(&self, queries: &[(String, String)], rounds: usize, cold: bool) {
        println!(
            "{:52} {:>9} {:>9} {:>8} {:>9}",
            "request", "p50 ms", "p99 ms", "matches", "requests"
        );
        let baseline = self.timed("/inbox?limit=25", rounds).await;
        print_row(
            "GET /inbox, a page of 25 (baseline)",
            &baseline,
            None,
            self.requests_of("/inbox?limit=25").await,
        );
        for (name, q) in queries {
            let path = format!("/search?q={}&limit=25", urlencode(q));
            let (_, body) = self.get(&path).await;
            let total = body["total"].as_u64().unwrap_or(0);
            let timings = self.timed(&path, rounds).await;
            print_row(
                &format!("{name}: {q}"),
                &timings,
                Some(total),
                self.requests_of(&path).await,
            );
        }
        if cold {
            for (name, q) in queries.iter().take(3) {
                let path = format!("/search?q={}&limit=25", urlencode(q));
                let mut timings = Vec::new();
                for _ in 0..rounds.min(30) {
                    search::cache::clear();
                    timings.push(self.get(&path).await.0);
                }
                print_row(&format!("cold cache, {name}"), &timings, None, 0);
                println!("{:52} {} blob reads", "", self.cold_reads(q).await);
            }
            println!("cache held: {:.1} MB", search::cache::held() as f64 / 1e6);
        }
    }

    /// The blob reads of one query with the cache emptied.
    async fn cold_reads(&self, q: &str) -> u64 {
        search::cache::clear();
        let before = self.blobs.gets.load(Ordering::Relaxed);
        let now = self.ctx.clock.now().timestamp_millis();
        let query = search::grammar::parse(q.split('&').next().unwrap_or(q), now).unwrap();
        let everyone = |_: &str| true;
        let request = search::Request {
            query: &query,
            reader: search::Reader {
                covers: &everyone,
                owner: true,
            },
            sort: search::Sort::Newest,
            cursor: None,
            limit: 25,
            now_ms: now,
        };
        search::search(&*self.ctx.store, &*self.blobs, SCOPE, &request)
            .await
            .unwrap();
        self.blobs.gets.load(Ordering::Relaxed) - before
    }

    async fn timed(&self, path: &str, rounds: usize) -> Vec<Duration> {
        for _ in 0..3 {
            self.get(path).await;
        }
        let mut out = Vec::with_capacity(rounds);
        for _ in 0..rounds {
            out.push(self.get(path).await.0);
        }
        out
    }

    async fn requests_of(&self, path: &str) -> u64 {
        let before = self.ctx.store_meter.counts();
        self.get(path).await;
        self.ctx.store_meter.counts().since(&before).total()
    }

    /// DynamoDB Local's own time for one GetItem and one Query, in this run.
    async fn floor(&self, rounds: usize) {
        let store = &*self.ctx.store;
        let key = items::manifest_key(SCOPE);
        let mut gets = Vec::new();
        for _ in 0..rounds {
            let t = Instant::now();
            store.get(&key).await.unwrap();
            gets.push(t.elapsed());
        }
        let query = common::store::Query::partition(common::keys::mail_partition(SCOPE, false))
            .limit(26)
            .backward();
        let mut queries = Vec::new();
        for _ in 0..rounds {
            let t = Instant::now();
            store.query(&query).await.unwrap();
            queries.push(t.elapsed());
        }
        let part = common::store::Query::partition(items::partition(SCOPE)).limit(1000);
        let mut index = Vec::new();
        for _ in 0..rounds {
            let t = Instant::now();
            common::store::StoreExt::all(store, part.clone()).await.unwrap();
            index.push(t.elapsed());
        }
        println!("DynamoDB Local's floor in this run:");
        print_row("  one GetItem (the manifest)", &gets, None, 1);
        print_row("  one Query of 26 rows (an inbox page)", &queries, None, 1);
        print_row("  the search index's items (its Query)", &index, None, 1);
    }

    /// What indexing adds to filing: 300 corpus messages filed through the
    /// filing itself, with and without their search item.
    async fn filing_cost(&self, corpus: &[Inbound]) {
        let mut sizes = Vec::new();
        let mut wcu = 0usize;
        for (i, m) in corpus.iter().cycle().take(300).enumerate() {
            let message_id = format!("<cost-{i}@bench.example>");
            let new = NewMessage {
                message_id: &message_id,
                ..mail_store_new(m)
            };
            let before = self.ctx.store_meter.counts();
            let row = mail_store::file(&self.ctx, &new).await.unwrap().expect("filed");
            let requests = self.ctx.store_meter.counts().since(&before);
            assert_eq!(requests.transactions, 1);
            let from_names: Vec<String> = m.from_name.iter().cloned().collect();
            let named = |addresses: &[String]| -> Vec<String> {
                addresses.iter().filter_map(|a| m.names.get(a).cloned()).collect()
            };
            let texts = doc::texts(&search::Message {
                subject: &m.subject,
                from: &m.from,
                from_names: &from_names,
                to: &m.to,
                to_names: &named(&m.to),
                cc: &m.cc,
                cc_names: &named(&m.cc),
                text: &m.text,
                html: m.html.as_deref(),
                filenames: m.attachments.iter().map(|a| a.filename.as_str()).collect(),
            });
            let mut d = search::Doc::new(&row.id, &row.mailbox, 0, search::State::default(), &texts);
            d.fit(items::MAX_PACKED);
            if let Write::Put { item, .. } = items::filing_write("mailbox:costs@svc.test", &d) {
                let size = dynamo_size(&item);
                wcu += 2 * size.div_ceil(1024);
                sizes.push(size);
            }
        }
        sizes.sort_unstable();
        println!(
            "\nindexing cost per filed message (300 corpus messages through mail_store::file): 1 more item in its \
             transaction, {} bytes at the median, {} at p95, {} at most; {:.2} write units on average (a \
             transaction's writes count twice); no S3 request at filing",
            sizes[sizes.len() / 2],
            sizes[sizes.len() * 95 / 100],
            sizes.last().unwrap(),
            wcu as f64 / sizes.len() as f64
        );
    }
}

/// What a NewMessage of a parsed message holds (as the poller files it).
fn mail_store_new(m: &Inbound) -> NewMessage<'_> {
    common::service::receiving::poller::as_new(m, "mailbox:costs@svc.test", "costs@svc.test")
}

/// An item's size as DynamoDB counts it: attribute names and values.
fn dynamo_size(item: &common::store::Item) -> usize {
    item.iter()
        .map(|(k, v)| {
            k.len()
                + match v {
                    serde_json::Value::String(s) => s.len(),
                    serde_json::Value::Number(n) => n.to_string().len().div_ceil(2) + 1,
                    other => other.to_string().len(),
                }
        })
        .sum()
}

fn row_and_doc(id: &str, made: &Made, base: &Inbound) -> (Row, search::Doc) {
    let outbound = made.outbound;
    let to = vec![MAILBOX.to_string()];
    let attachments: Vec<AttachmentInfo> = made
        .filenames
        .iter()
        .enumerate()
        .map(|(index, f)| AttachmentInfo {
            index,
            filename: f.clone(),
            content_type: "application/octet-stream".into(),
            size: 1000,
            download_path: format!("/attachment?id={id}&index={index}"),
            content_id: None,
        })
        .collect();
    let text_in_blob = made.body.len() > mail_store::TEXT_ON_ROW;
    let mut cut = mail_store::TEXT_ON_ROW.min(made.body.len());
    while !made.body.is_char_boundary(cut) {
        cut -= 1;
    }
    let row = Row {
        id: id.to_string(),
        message_id: format!("<{id}@bench.example>"),
        mailbox: MAILBOX.into(),
        direction: if outbound {
            Direction::Outbound
        } else {
            Direction::Inbound
        },
        from: made.from.clone(),
        to: to.clone(),
        subject: made.subject.clone(),
        preview: mail_store::preview(&made.body),
        date: base.date.clone(),
        ingested_at: common::clock::iso(chrono::DateTime::from_timestamp_millis(doc::filed_ms(id)).unwrap_or_default()),
        unread: made.unread && !outbound,
        folder: Some(made.folder),
        source: "smtp".into(),
        thread_id: hex::encode(rand::random::<[u8; 32]>()),
        attachments,
        blob_prefix: format!("mail/{MAILBOX}/{}", &id[13..]),
        text: made.body[..cut].to_string(),
        text_in_blob,
        has_html: false,
        digest: String::new(),
        message_id_conflict: false,
        delivery: None,
        authentication: None,
        quarantine: None,
        ttl: None,
        owner_only: false,
        from_name: Some(made.from_name.clone()),
        cc: made.cc.clone(),
        bcc: Vec::new(),
        reply_to: Vec::new(),
        names: Default::default(),
        references: Vec::new(),
        spam: None,
        raw: None,
    };
    let names = vec![made.from_name.clone()];
    let texts = doc::texts(&search::Message {
        subject: &made.subject,
        from: &made.from,
        from_names: &names,
        to: &to,
        to_names: &[],
        cc: &made.cc,
        cc_names: &[],
        text: &made.body,
        html: None,
        filenames: made.filenames.iter().map(String::as_str).collect(),
    });
    let mut flags = 0;
    if outbound {
        flags |= doc::OUTBOUND;
    }
    if !made.filenames.is_empty() {
        flags |= doc::ATTACHMENT;
    }
    let folder = match made.folder {
        Folder::Inbox => search::Folder::Inbox,
        Folder::Archive => search::Folder::Archive,
        Folder::Trash => search::Folder::Trash,
    };
    let mut d = search::Doc::new(id, MAILBOX, flags, search::State::new(folder, row.unread), &texts);
    d.fit(items::MAX_PACKED);
    (row, d)
}

/// The query set: one word (common, middling, rare), three words, a phrase,
/// and operators.
fn queries(v: &Vocabulary, now_ms: i64) -> Vec<(String, String)> {
    let w = |rank: usize| v.words[rank.min(v.words.len() - 1)].clone();
    let day = |ms: i64| {
        chrono::DateTime::from_timestamp_millis(ms)
            .unwrap_or_default()
            .format("%Y-%m-%d")
            .to_string()
    };
    let (alice, _) = person(0);
    vec![
        ("one word, common".into(), w(3)),
        ("one word, middling".into(), w(300)),
        ("one word, rare".into(), w(20_000)),
        ("three words".into(), format!("{} {} {}", w(40), w(120), w(400))),
        ("phrase".into(), format!("\"{} {}\"", w(1), w(2))),
        ("phrase, not found".into(), format!("\"{} {}\"", w(500), w(501))),
        (
            "from: and has:attachment".into(),
            format!("from:\"{alice}\" has:attachment"),
        ),
        (
            "is:unread in:inbox and a word".into(),
            format!("is:unread in:inbox {}", w(50)),
        ),
        (
            "after: before: and a word".into(),
            format!(
                "after:{} before:{} {}",
                day(now_ms - 400 * DAY_MS),
                day(now_ms - 300 * DAY_MS),
                w(10)
            ),
        ),
        (
            "subject: OR subject:, -word".into(),
            format!("subject:{} OR subject:{} -{}", w(5), w(6), w(7)),
        ),
        ("newer_than:30d".into(), "newer_than:30d".into()),
        ("in:anywhere filename:pdf".into(), "in:anywhere filename:pdf".into()),
        ("relevance, one word".into(), format!("{}&sort=relevance", w(300))),
    ]
}

fn urlencode(q: &str) -> String {
    // `&sort=` in a query name is the bench's own parameter.
    let (q, rest) = q.split_once('&').map_or((q, ""), |(a, b)| (a, b));
    let mut out = String::new();
    for b in q.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' => out.push(b as char),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    if !rest.is_empty() {
        out.push('&');
        out.push_str(rest);
    }
    out
}

fn print_row(name: &str, timings: &[Duration], matches: Option<u64>, requests: u64) {
    let mut ms: Vec<f64> = timings.iter().map(|d| d.as_secs_f64() * 1e3).collect();
    ms.sort_by(|a, b| a.total_cmp(b));
    let p = |q: f64| ms[((ms.len() as f64 * q) as usize).min(ms.len() - 1)];
    let name: String = name.chars().take(52).collect();
    println!(
        "{name:52} {:>9.2} {:>9.2} {:>8} {:>9}",
        p(0.5),
        p(0.99),
        matches.map_or(String::new(), |m| m.to_string()),
        if requests > 0 {
            requests.to_string()
        } else {
            String::new()
        }
    );
}
