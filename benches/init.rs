//! Init-time benchmark: each Lambda function's cold start, from spawning its
//! binary to its first poll of the Lambda Runtime API (`GET
//! /2018-06-01/runtime/invocation/next`) on a stub served here on loopback,
//! side by side with a bare lambda_http binary (benches/bare) in the same run,
//! and the ratio. Run: `cargo bench --bench init` (`RUNS=n`, default 20;
//! `INIT_PROFILE=release` measures the shipping profile, default `bench`).
//!
//! The functions run as in the lambda_functions test: `Mode::Lambda` on the
//! embedded store in a data directory of their own (kept across runs, so
//! only the first `mta-export` start creates its DKIM key), secrets from the
//! environment, a JWKS URL that is never fetched at init.

use std::io::Read;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const FUNCTIONS: &[&str] = &[
    "onboarding",
    "credits",
    "admin",
    "domains",
    "mailboxes",
    "send",
    "mcp",
    "mta-export",
];
const BARE: &str = "bare-lambda";

fn main() {
    let runs: usize = std::env::var("RUNS").ok().and_then(|s| s.parse().ok()).unwrap_or(20);
    let profile = std::env::var("INIT_PROFILE").unwrap_or_else(|_| "bench".into());
    let workspace = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace.join("target"));
    let mut build = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    build
        .current_dir(&workspace)
        .args(["build", "--profile", &profile, "-p", "bare"]);
    for f in FUNCTIONS {
        build.args(["-p", f]);
    }
    assert!(build.status().expect("cargo build").success(), "cargo build failed");
    // Cargo's built-in profiles write to debug/ (dev, test) and release/ (release, bench).
    let dir = target.join(match profile.as_str() {
        "dev" | "test" => "debug",
        "release" | "bench" => "release",
        other => other,
    });

    let scratch = std::env::temp_dir().join(format!("mailhost-init-{:x}", std::process::id()));
    std::fs::create_dir_all(&scratch).unwrap();
    println!("init time: spawn to first poll of the Runtime API, median of {runs} runs ({profile} profile)");
    let bare = median(&dir.join(BARE), &scratch.join(BARE), runs);
    println!("{BARE:12} {:7.2} ms", ms(bare));
    for f in FUNCTIONS {
        let t = median(&dir.join(f), &scratch.join(f), runs);
        println!(
            "{f:12} {:7.2} ms  {:.2}x bare",
            ms(t),
            t.as_secs_f64() / bare.as_secs_f64()
        );
    }
    std::fs::remove_dir_all(scratch).ok();
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn median(binary: &Path, data_dir: &Path, runs: usize) -> Duration {
    // One untimed start first: the page cache, and mta-export's bootstrap.
    init_time(binary, data_dir);
    let mut times: Vec<Duration> = (0..runs).map(|_| init_time(binary, data_dir)).collect();
    times.sort();
    times[times.len() / 2]
}

/// Spawns the binary against a stub Runtime API and returns the time until
/// its first request arrives; then kills it.
fn init_time(binary: &Path, data_dir: &Path) -> Duration {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let api = listener.local_addr().unwrap().to_string();
    listener.set_nonblocking(true).unwrap();
    let started = Instant::now();
    let mut child = Command::new(binary)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("AWS_LAMBDA_RUNTIME_API", &api)
        .env("AWS_LAMBDA_FUNCTION_NAME", "bench")
        .env("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST")
        .env("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "256")
        .env("AWS_LAMBDA_LOG_STREAM_NAME", "bench")
        .env("AWS_LAMBDA_LOG_GROUP_NAME", "bench")
        .env("AWS_REGION", "us-east-1")
        .env("RUST_LOG", "warn")
        .env("MAILHOST_STORE", "embedded")
        .env("MAILHOST_DATA_DIR", data_dir)
        .env("MAILHOST_SECRETS", "dir")
        .env("MAILHOST_SECRET_HMAC_SECRET", "bench-hmac-secret")
        .env("MAILHOST_AGENT_KEY", "svc_bench_agent_key_000000000000000000000000")
        .env("MAILHOST_SYNC_TOKEN", "bench-sync-token")
        .env("MAILHOST_SYSTEM_MAIL", "transport")
        .env("MAILHOST_JWKS_URL", "http://127.0.0.1:9/never-fetched-at-init")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("{}: {e}", binary.display()));
    let deadline = started + Duration::from_secs(30);
    let elapsed = loop {
        match listener.accept() {
            Ok((mut stream, _)) => {
                stream.set_nonblocking(false).unwrap();
                let mut buf = [0u8; 64];
                let n = stream.read(&mut buf).unwrap_or(0);
                let elapsed = started.elapsed();
                assert!(
                    buf[..n].starts_with(b"GET /2018-06-01/runtime/invocation/next"),
                    "{}: {:?}",
                    binary.display(),
                    String::from_utf8_lossy(&buf[..n])
                );
                break elapsed;
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                if let Ok(Some(status)) = child.try_wait() {
                    panic!("{} exited during init: {status}", binary.display());
                }
                assert!(Instant::now() < deadline, "{} never polled", binary.display());
                std::thread::sleep(Duration::from_micros(50));
            }
            Err(e) => panic!("accept: {e}"),
        }
    };
    child.kill().ok();
    child.wait().ok();
    elapsed
}
