//! Init-time benchmark: each Lambda function's cold start, from spawning its
//! binary to its first poll of the Lambda Runtime API (`GET
//! /2018-06-01/runtime/invocation/next`) on a stub served here on loopback,
//! side by side with a bare lambda_http binary (benches/bare) in the same run,
//! and the ratio. Run: `cargo bench --bench init` (`RUNS=n`, default 20;
//! `INIT_PROFILE=release` measures the shipping profile, default `bench`;
//! `FUNCTIONS=credits,inbox` builds and measures only those; the list is
//! `common::lambda::functions()`).
//!
//! The functions run as in the lambda_functions test: `Mode::Lambda` on the
//! embedded store in a data directory of their own, secrets from the
//! environment, a JWKS URL that is never fetched at init. No function opens
//! its store at init (the embedded store opens at its first use), so the
//! SIGKILL that ends each start leaves nothing to repair.
//!
//! Second figure, with `MAILHOST_TEST_DYNAMODB_ENDPOINT` (DynamoDB Local) and
//! `MAILHOST_TEST_MOTO_ENDPOINT` (moto) set: each function as it runs in AWS
//! (DynamoDB, Secrets Manager, S3), through a recording proxy in front of
//! each endpoint, and every network call it made before its first poll.

use std::io::Read;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[path = "../tests/api/support/aws_standins.rs"]
mod aws_standins;
use aws_standins::{Recorder, function_env, provision};

const BARE: &str = "bare-lambda";

fn main() {
    let runs: usize = std::env::var("RUNS").ok().and_then(|s| s.parse().ok()).unwrap_or(20);
    let profile = std::env::var("INIT_PROFILE").unwrap_or_else(|_| "bench".into());
    let workspace = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace.join("target"));
    let only = std::env::var("FUNCTIONS").ok();
    let functions: Vec<&str> = common::lambda::functions()
        .into_iter()
        .filter(|f| {
            only.as_deref()
                .is_none_or(|only| only.split(',').any(|o| o.trim() == *f))
        })
        .collect();
    let mut build = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    build
        .current_dir(&workspace)
        .args(["build", "--profile", &profile, "-p", "bare"]);
    for f in &functions {
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
    println!(
        "init time: spawn to first poll of the Runtime API, median of {runs} starts ({profile} profile); each function's starts take turns with the bare binary's, so a change in the machine's speed falls on both"
    );
    println!("{:12} {:>10} {:>10} {:>8}", "function", "init", "bare", "ratio");
    let embedded = |data_dir: &Path| Env::Embedded(data_dir.to_path_buf());
    let bare = (dir.join(BARE), embedded(&scratch.join(BARE)));
    for f in &functions {
        let pair = paired(&dir.join(f), &embedded(&scratch.join(f)), &bare, runs);
        println!(
            "{f:12} {:7.2} ms {:7.2} ms {:7.2}x",
            ms(pair.function),
            ms(pair.bare),
            pair.ratio
        );
    }
    std::fs::remove_dir_all(scratch).ok();
    aws_shaped(&dir, &functions, runs);
}

/// Where a started function keeps its state.
enum Env {
    /// The embedded store in this data directory, secrets from the environment.
    Embedded(PathBuf),
    /// DynamoDB, Secrets Manager and S3 behind the stand-ins (`aws_standins::function_env`).
    Aws(Vec<(&'static str, String)>),
}

/// Every function as it runs in AWS, against DynamoDB Local and moto, each
/// behind a recording proxy: its init time and every request it made before
/// its first poll.
fn aws_shaped(dir: &Path, functions: &[&str], runs: usize) {
    let (Some(dynamodb), Some(moto)) = (
        std::env::var("MAILHOST_TEST_DYNAMODB_ENDPOINT").ok(),
        std::env::var("MAILHOST_TEST_MOTO_ENDPOINT").ok(),
    ) else {
        println!(
            "\nnetwork calls at init: skipped (set MAILHOST_TEST_DYNAMODB_ENDPOINT and MAILHOST_TEST_MOTO_ENDPOINT)"
        );
        return;
    };
    let run = format!("{:08x}", std::process::id());
    let (table, bucket, prefix) = (format!("init-{run}"), format!("init-{run}"), format!("init-{run}/"));
    tokio::runtime::Runtime::new()
        .unwrap()
        .block_on(provision(&dynamodb, &moto, &table, &bucket, &prefix));
    let dynamodb_proxy = Recorder::start(&dynamodb);
    let moto_proxy = Recorder::start(&moto);
    let env = Env::Aws(function_env(&dynamodb_proxy, &moto_proxy, &table, &bucket, &prefix));
    let runs = runs.clamp(1, 5);
    println!(
        "\nas in AWS (DynamoDB Local and moto on loopback, through a recording proxy): init, median of {runs} runs, and the requests made before the first poll"
    );
    for f in functions {
        let binary = dir.join(f);
        init_time(&binary, &env); // untimed: the page cache
        let mut times = Vec::new();
        let mut calls = Vec::new();
        for _ in 0..runs {
            dynamodb_proxy.clear();
            moto_proxy.clear();
            let started = Instant::now();
            times.push(init_time(&binary, &env));
            let polled = started + *times.last().unwrap();
            calls = dynamodb_proxy.before(polled);
            calls.extend(moto_proxy.before(polled));
        }
        println!(
            "{f:12} {:7.2} ms  {} requests: {}",
            ms(median_of(times)),
            calls.len(),
            calls.join(", ")
        );
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// Medians of a function's and the bare binary's init times, started in
/// turns, and the median of each turn's ratio.
struct Pair {
    function: Duration,
    bare: Duration,
    ratio: f64,
}

fn paired(binary: &Path, env: &Env, (bare, bare_env): &(PathBuf, Env), runs: usize) -> Pair {
    // One untimed start of each first: the page cache.
    init_time(binary, env);
    init_time(bare, bare_env);
    let mut times = Vec::new();
    let mut bares = Vec::new();
    let mut ratios = Vec::new();
    for _ in 0..runs {
        let b = init_time(bare, bare_env);
        let t = init_time(binary, env);
        ratios.push(t.as_secs_f64() / b.as_secs_f64());
        times.push(t);
        bares.push(b);
    }
    Pair {
        function: median_of(times),
        bare: median_of(bares),
        ratio: median_of(ratios),
    }
}

fn median_of<T: PartialOrd + Copy>(mut values: Vec<T>) -> T {
    values.sort_by(|a, b| a.partial_cmp(b).expect("no NaN"));
    values[values.len() / 2]
}

/// Spawns the binary against a stub Runtime API and returns the time until
/// its first request arrives; then kills it.
fn init_time(binary: &Path, env: &Env) -> Duration {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let api = listener.local_addr().unwrap().to_string();
    listener.set_nonblocking(true).unwrap();
    let mut command = Command::new(binary);
    command.env_clear();
    match env {
        Env::Embedded(data_dir) => {
            command
                .env("MAILHOST_STORE", "embedded")
                .env("MAILHOST_DATA_DIR", data_dir)
                .env("MAILHOST_SECRETS", "dir")
                .env("MAILHOST_SECRET_HMAC_SECRET", "bench-hmac-secret")
                .env("MAILHOST_AGENT_KEY", "svc_bench_agent_key_000000000000000000000000")
                .env("MAILHOST_SYNC_TOKEN", "bench-sync-token");
        }
        Env::Aws(vars) => {
            command.envs(vars.iter().map(|(name, value)| (name, value)));
        }
    }
    let started = Instant::now();
    let mut child = command
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("AWS_LAMBDA_RUNTIME_API", &api)
        .env("AWS_LAMBDA_FUNCTION_NAME", "bench")
        .env("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST")
        .env("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "256")
        .env("AWS_LAMBDA_LOG_STREAM_NAME", "bench")
        .env("AWS_LAMBDA_LOG_GROUP_NAME", "bench")
        .env("AWS_REGION", "us-east-1")
        .env("RUST_LOG", "warn")
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
