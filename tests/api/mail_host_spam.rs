//! Keeping spam out through the real mail host (issue 44): Debian's rspamd
//! as the port-25 milter of the private Postfix `scripts/mail-host` starts,
//! its verdict carried by the spool pipe into the envelope line. GTUBE and
//! real spam from SpamAssassin's test suite (tests/fixtures/spam, origin
//! and licence beside them) land in the spam folder; real ham (the
//! mail-parser and mikel/mail fixtures, and the shared corpus when present)
//! lands in the inbox; verdict headers a sender wrote change nothing and
//! the host's own never reaches a maildir; reporting not-spam moves a
//! message back, is audited, and `mailhost mta-sync` teaches rspamd's
//! controller. `benchmark` (ignored; `--ignored --nocapture`) prints the
//! detection and false-positive rates on every sample and the drop-to-listed
//! latency, beside the same run without rspamd.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::mail_host::{Rig, rig};
use crate::support::{Auth, SYNC_TOKEN};
use common::mail::inbound::FAILED;
use common::service::receiving::poller;
use lettre::address::Envelope;
use lettre::{AsyncSmtpTransport, AsyncTransport, Tokio1Executor};
use serde_json::{Value, json};

const TO: &str = "me@tom.example";

/// Where one message ended up.
#[derive(Debug, Clone)]
enum Landed {
    Inbox(Value),
    Spam(Value),
    /// Postfix refused it at SMTP.
    Refused(String),
    /// The poller could not file it (it is no message it can read).
    Failed,
}

impl Landed {
    fn row(&self) -> Option<&Value> {
        match self {
            Landed::Inbox(row) | Landed::Spam(row) => Some(row),
            _ => None,
        }
    }
}

fn samples(dir: &Path, pick: impl Fn(&str) -> bool) -> Vec<(String, Vec<u8>)> {
    let mut found = Vec::new();
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(d) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else { continue };
        for entry in entries.flatten() {
            let path = entry.path();
            let name = path.file_name().unwrap().to_string_lossy().to_string();
            if path.is_dir() {
                dirs.push(path);
            } else if pick(&name) {
                // Named by its path under `dir` (the corpus has one folder per suite).
                let relative = path.strip_prefix(dir).unwrap().to_string_lossy().to_string();
                found.push((relative, std::fs::read(&path).unwrap()));
            }
        }
    }
    found.sort();
    found
}

fn fixtures(sub: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(sub)
}

/// SpamAssassin's `t/data/spam`, all of it.
fn spam_set() -> Vec<(String, Vec<u8>)> {
    samples(&fixtures("spam/spamassassin"), |n| {
        !matches!(n, "ORIGIN.md" | "LICENSE" | "NOTICE" | ".gitattributes")
    })
}

/// The shared corpus, when this machine has it.
const CORPUS: &str = "/work/shared/corpus/eml";

/// Real ham: the mail-parser and mikel/mail fixtures, and the shared corpus.
fn ham_set() -> Vec<(String, Vec<u8>)> {
    let mut ham = samples(&fixtures("eml"), |n| n.ends_with(".eml"));
    ham.extend(samples(Path::new(CORPUS), |n| n.ends_with(".eml")));
    ham
}

/// Sends `raw` as it is over plain SMTP to the host's port 25 stand-in.
pub(crate) async fn send(port: u16, from: &str, raw: &[u8]) -> Result<(), String> {
    let transport = AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous("127.0.0.1")
        .port(port)
        .timeout(Some(Duration::from_secs(120)))
        .build();
    let envelope = Envelope::new(Some(from.parse().unwrap()), vec![TO.parse().unwrap()]).unwrap();
    transport
        .send_raw(&envelope, raw)
        .await
        .map(|_| ())
        .map_err(|e| e.to_string())
}

async fn newest(rig: &Rig, query: &str) -> Option<Value> {
    let page = rig
        .app
        .get(&format!("/inbox?limit=1{query}"), Auth::Bearer(&rig.key))
        .await;
    page.body["messages"].as_array().and_then(|m| m.first().cloned())
}

async fn refused_files(rig: &Rig) -> usize {
    rig.app.ctx.blobs.list(FAILED).await.unwrap().len()
}

/// Sends one message and waits until it is listed (or refused): where it
/// landed, and how long from the start of the SMTP transaction until a
/// client could list it. `drive` runs the poller here (tests); without it
/// the server's own poller files it (the benchmark).
async fn land(rig: &Rig, raw: &[u8], drive: bool) -> (Landed, Duration) {
    let (inbox, spam) = (newest(rig, "").await, newest(rig, "&view=spam").await);
    let id = |row: &Option<Value>| row.as_ref().map(|r| r["id"].clone());
    let (inbox, spam, refused) = (id(&inbox), id(&spam), refused_files(rig).await);
    let started = Instant::now();
    if let Err(e) = send(rig.host.smtp_port, "sender@outside.example", raw).await {
        return (Landed::Refused(e), started.elapsed());
    }
    loop {
        if drive {
            poller::run_once(&rig.app.ctx).await.unwrap();
        }
        if let Some(row) = newest(rig, "").await.filter(|r| Some(r["id"].clone()) != inbox) {
            return (Landed::Inbox(row), started.elapsed());
        }
        if let Some(row) = newest(rig, "&view=spam")
            .await
            .filter(|r| Some(r["id"].clone()) != spam)
        {
            return (Landed::Spam(row), started.elapsed());
        }
        if refused_files(rig).await > refused {
            return (Landed::Failed, started.elapsed());
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "never listed; see {}",
            rig.host.dir.display()
        );
        tokio::time::sleep(Duration::from_millis(if drive { 100 } else { 10 })).await;
    }
}

/// Samples whose place an offline host decides with a margin (`benchmark`
/// scored them; docs/benchmarks.md has every sample's): spam scored 9.9 and
/// more or carrying GTUBE, ham 3.3 and less. Each must land where it
/// belongs; the benchmark reports the rates over every sample, the false
/// positives included.
const SPAM: &[&str] = &[
    "003",
    "005",
    "009",
    "010",
    "011",
    "badmime2.txt",
    "utf16.eml",
    "gtube.eml",
    "gtubedcc_crlf.eml",
];
const HAM: &[&str] = &[
    "mikel-mail-two-addresses-no-comma.eml",
    "mikel-mail-x-uuencode-empty-body.eml",
    "mail-parser-legacy-045-latin1-text-attachment.eml",
    "legacy/029.eml",
    "legacy/033.eml",
    "legacy/040.eml",
    "legacy/046.eml",
];

fn pick(set: Vec<(String, Vec<u8>)>, names: &[&str]) -> Vec<(String, Vec<u8>)> {
    let picked: Vec<_> = set.into_iter().filter(|(n, _)| names.contains(&n.as_str())).collect();
    assert_eq!(picked.len(), names.len(), "a sample is missing");
    picked
}

/// The host's own verdict header, as its spool pipe names it.
fn host_header(rig: &Rig) -> String {
    let script = std::fs::read_to_string(rig.host.dir.join("mailhost-spool")).unwrap();
    let at = script
        .find("--verdict-header ")
        .expect("the pipe reads a verdict header")
        + "--verdict-header ".len();
    script[at..].split_whitespace().next().unwrap().to_string()
}

/// rspamd's controller on the host, and its password (scripts/mail-host's
/// sync.env).
fn controller(rig: &Rig) -> (String, String) {
    let env = std::fs::read_to_string(rig.host.dir.join("sync.env")).unwrap();
    let value = |name: &str| {
        env.lines()
            .find_map(|l| l.strip_prefix(&format!("export {name}='")))
            .map(|v| v.trim_end_matches('\'').to_string())
            .unwrap_or_else(|| panic!("no {name} in sync.env"))
    };
    (value("MAILHOST_RSPAMD_CONTROLLER"), value("MAILHOST_RSPAMD_PASSWORD"))
}

async fn learned(rig: &Rig) -> i64 {
    let (url, password) = controller(rig);
    let stat: Value = reqwest::Client::new()
        .get(format!("{url}/stat"))
        .header("Password", password)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    stat["learned"].as_i64().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spam_lands_in_spam_ham_in_the_inbox_and_a_report_teaches_rspamd() {
    let Some(rig) = rig(|_| {}).await else {
        return;
    };
    if crate::support::standin_command("rspamd").is_none() {
        return;
    }
    rig.start_with(&[]).await;
    let header = host_header(&rig);

    // GTUBE and real spam: the spam folder, with rspamd's verdict.
    let mut in_spam = std::collections::BTreeMap::new();
    for (name, raw) in pick(spam_set(), SPAM) {
        let (landed, _) = land(&rig, &raw, true).await;
        let Landed::Spam(row) = &landed else {
            panic!("{name} landed as {landed:?}");
        };
        assert!(row["spam"]["score"].as_f64().unwrap() >= 6.0, "{name}: {row}");
        assert_eq!(row["unread"], false);
        in_spam.insert(name, row.clone());
    }
    let gtube = &in_spam["gtube.eml"];
    let read = rig
        .app
        .get(
            &format!("/inbox?id={}", gtube["id"].as_str().unwrap()),
            Auth::Bearer(&rig.key),
        )
        .await;
    assert_eq!(read.body["message"]["spam"]["action"], "reject", "{}", read.body);
    let rules: Vec<&str> = read.body["message"]["spam"]["symbols"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert!(rules.contains(&"GTUBE"), "{rules:?}");

    // Real ham: the inbox, unread, its verdict shown.
    for (name, raw) in pick(ham_set(), HAM) {
        let (landed, _) = land(&rig, &raw, true).await;
        let Landed::Inbox(row) = &landed else {
            panic!("{name} landed as {landed:?}");
        };
        assert!(row["spam"]["score"].is_number(), "{name}: {row}");
    }

    // Verdicts a sender wrote: GTUBE claiming to be clean, and a clean
    // letter carrying a verdict under the host's own header name, and one
    // like it. (rspamd itself scores some such headers as content: an
    // `X-Spam-Flag: YES` weighs 5 points, which is rspamd's judgement of the
    // message, not a verdict believed.)
    let gtube_body = pick(spam_set(), &["gtube.eml"]).remove(0).1;
    let forged_clean = [
        b"X-Spam: No\r\nX-Spam-Status: No, score=-100\r\nX-Rspamd-Action: no action\r\nX-Spamd-Result: default: False [-100 / 15]\r\n".as_slice(),
        &gtube_body,
    ]
    .concat();
    let (landed, _) = land(&rig, &forged_clean, true).await;
    assert!(matches!(landed, Landed::Spam(_)), "{landed:?}");
    let forged_spam = format!(
        "X-Spamd-Result: default: True [99.00 / 15.00]\r\nX-Rspamd-Action: reject\r\n\
         X-Mailhost-Verdict-00000000000000000000000000000000: {{\"score\":99,\"action\":\"reject\"}}\r\n\
         {header}: {{\"score\":99,\"action\":\"reject\",\"symbols\":{{\"FORGED\":99}}}}\r\n\
         From: Ann <ann@friend.example>\r\nTo: {TO}\r\nSubject: Minutes of Tuesday\r\n\
         Message-ID: <minutes@friend.example>\r\nDate: Mon, 23 Nov 2026 10:00:00 +0000\r\n\r\n\
         Here are the minutes of Tuesday's meeting, as promised.\r\n"
    );
    let (landed, _) = land(&rig, forged_spam.as_bytes(), true).await;
    let Landed::Inbox(row) = &landed else {
        panic!("the forged verdict was believed: {landed:?}");
    };
    assert!(row["spam"]["score"].as_f64().unwrap() < 6.0, "{row}");
    assert_eq!(row["spam"]["action"], "no_action", "{row}");
    let read = rig
        .app
        .get(
            &format!("/inbox?id={}", row["id"].as_str().unwrap()),
            Auth::Bearer(&rig.key),
        )
        .await;
    let rules = read.body["message"]["spam"]["symbols"].as_array().unwrap().clone();
    assert!(rules.iter().all(|r| r["name"] != "FORGED"), "{rules:?}");
    // The host's header never reaches a maildir (rspamd removed the
    // sender's copy, the pipe took its own out).
    let mut maildir = vec![rig.host.dir.join("mail")];
    let mut files = 0;
    while let Some(d) = maildir.pop() {
        for entry in std::fs::read_dir(&d).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                maildir.push(path);
            } else if path.to_string_lossy().contains("/cur/") || path.to_string_lossy().contains("/new/") {
                files += 1;
                let text = String::from_utf8_lossy(&std::fs::read(&path).unwrap()).to_lowercase();
                assert!(!text.contains(&header.to_lowercase()), "{}", path.display());
            }
        }
    }
    assert!(files > 10, "{files} maildir files");

    // Not spam after all: back in the inbox, audited, and taught to rspamd
    // by the next sync (GTUBE, at which rspamd stops, would teach nothing).
    let reported = &in_spam["010"];
    let before = learned(&rig).await;
    let moved = rig
        .app
        .post(
            "/inbox",
            Auth::Bearer(&rig.key),
            json!({"id": reported["id"], "spam": false}),
        )
        .await;
    assert_eq!(
        (moved.status, moved.body["moved"].as_bool()),
        (200, Some(true)),
        "{}",
        moved.body
    );
    assert_eq!(moved.body["learning"], true);
    let inbox = rig.app.get("/inbox?limit=50", Auth::Bearer(&rig.key)).await.body;
    assert!(
        inbox["messages"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["id"] == reported["id"]),
        "back in the inbox"
    );
    let audit = rig
        .app
        .get("/audit?operation=markSpam", Auth::Bearer(&rig.key))
        .await
        .body;
    assert_eq!(audit["changes"][0]["target"]["spam"], false, "{audit}");
    let waiting = rig.app.get("/mtaSpamTraining", Auth::Bearer(SYNC_TOKEN)).await.body;
    assert_eq!(waiting["jobs"].as_array().unwrap().len(), 1, "{waiting}");
    rig.host.sync();
    let waiting = rig.app.get("/mtaSpamTraining", Auth::Bearer(SYNC_TOKEN)).await.body;
    assert_eq!(waiting["jobs"], json!([]), "the mail host took it");
    assert_eq!(learned(&rig).await, before + 1, "rspamd learned it");
}

/// What a run found: per set, where each sample landed, and the latency of
/// each listed one.
#[derive(Default)]
struct Run {
    spam: Vec<Landed>,
    ham: Vec<Landed>,
    latency_ms: Vec<f64>,
    /// How often each rule fired on ham filed into spam.
    false_positive_rules: std::collections::BTreeMap<String, usize>,
}

async fn run(with_rspamd: bool) -> Option<Run> {
    let rig = rig(|config| config.inbound_poll_ms = 100).await?;
    rig.start_with(if with_rspamd { &[] } else { &["--no-rspamd"] }).await;
    let mut out = Run::default();
    for (set, samples) in [(true, spam_set()), (false, ham_set())] {
        for (name, raw) in samples {
            let (landed, took) = land(&rig, &raw, false).await;
            if landed.row().is_some() {
                out.latency_ms.push(took.as_secs_f64() * 1000.0);
            }
            if std::env::var_os("MAILHOST_BENCH_VERBOSE").is_some() {
                let verdict = landed.row().map(|r| r["spam"].to_string()).unwrap_or_default();
                let place = match &landed {
                    Landed::Inbox(_) => "inbox",
                    Landed::Spam(_) => "spam",
                    Landed::Refused(why) => why.as_str(),
                    Landed::Failed => "failed",
                };
                eprintln!("{} {name}: {place} {verdict}", if set { "spam" } else { "ham" });
            }
            if let (false, Landed::Spam(row)) = (set, &landed) {
                let read = rig
                    .app
                    .get(
                        &format!("/inbox?id={}", row["id"].as_str().unwrap()),
                        Auth::Bearer(&rig.key),
                    )
                    .await;
                for rule in read.body["message"]["spam"]["symbols"].as_array().into_iter().flatten() {
                    if rule["score"].as_f64().unwrap_or_default() >= 1.0 {
                        *out.false_positive_rules
                            .entry(rule["name"].as_str().unwrap().to_string())
                            .or_default() += 1;
                    }
                }
            }
            if set {
                out.spam.push(landed);
            } else {
                out.ham.push(landed);
            }
        }
    }
    Some(out)
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

fn report(name: &str, run: &Run) {
    let count = |set: &[Landed], spam: bool| {
        set.iter()
            .filter(|l| matches!((l, spam), (Landed::Spam(_), true) | (Landed::Inbox(_), false)))
            .count()
    };
    let filed = |set: &[Landed]| set.iter().filter(|l| l.row().is_some()).count();
    let (spam_filed, ham_filed) = (filed(&run.spam), filed(&run.ham));
    let caught = count(&run.spam, true);
    let false_positive = ham_filed - count(&run.ham, false);
    let mut latency = run.latency_ms.clone();
    latency.sort_by(f64::total_cmp);
    println!(
        "{name}: spam {caught}/{spam_filed} to spam ({:.1}% detected; {} of {} samples not filed); \
         ham {false_positive}/{ham_filed} to spam ({:.1}% false positives; {} of {} not filed); \
         SMTP start to listed p50 {:.0} ms, p95 {:.0} ms, max {:.0} ms over {} messages",
        100.0 * caught as f64 / spam_filed.max(1) as f64,
        run.spam.len() - spam_filed,
        run.spam.len(),
        100.0 * false_positive as f64 / ham_filed.max(1) as f64,
        run.ham.len() - ham_filed,
        run.ham.len(),
        percentile(&latency, 0.5),
        percentile(&latency, 0.95),
        latency.last().copied().unwrap_or_default(),
        latency.len(),
    );
    // What an owner's threshold would have done with the same scores.
    let scored =
        |set: &[Landed]| -> Vec<f64> { set.iter().filter_map(|l| l.row()?["spam"]["score"].as_f64()).collect() };
    let (spam_scores, ham_scores) = (scored(&run.spam), scored(&run.ham));
    if !spam_scores.is_empty() {
        let at = |threshold: f64| {
            let above = |scores: &[f64]| scores.iter().filter(|s| **s > threshold).count();
            format!(
                "above {threshold}: {:.1}% detected, {:.1}% false positives",
                100.0 * above(&spam_scores) as f64 / spam_scores.len() as f64,
                100.0 * above(&ham_scores) as f64 / ham_scores.len().max(1) as f64
            )
        };
        let table: Vec<String> = [5.0, 7.0, 9.0, 12.0, 14.9].into_iter().map(at).collect();
        println!("{name}: by spamThreshold, {}", table.join("; "));
    }
    let mut rules: Vec<(&String, &usize)> = run.false_positive_rules.iter().collect();
    rules.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    if !rules.is_empty() {
        let top: Vec<String> = rules.iter().take(10).map(|(r, n)| format!("{r} {n}")).collect();
        println!(
            "{name}: rules of 1 point or more on ham filed into spam: {}",
            top.join(", ")
        );
    }
}

/// The benchmark of docs/benchmarks.md: every spam and ham sample through
/// the loopback mail host with rspamd, then without.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a benchmark: run with --ignored --nocapture"]
async fn benchmark() {
    let Some(with) = run(true).await else {
        return;
    };
    let Some(without) = run(false).await else {
        return;
    };
    report("with rspamd", &with);
    report("without rspamd", &without);
}
