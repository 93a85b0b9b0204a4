//! A real HTTPS webhook receiver for tests (tests/api/support/webhook_receiver.py in
//! the stand-in venv): a throwaway CA and a certificate for localhost, each POST
//! recorded with whether its signatures verified (the Standard Webhooks one with
//! the PyPI `standardwebhooks` library). Killed when dropped.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::smtp::{free_port, make_certificates};

pub struct Receiver {
    dir: PathBuf,
    child: Child,
    _stdin: ChildStdin,
}

impl Receiver {
    /// A port and a CA for a receiver not started yet: register the URL first,
    /// then start it with the secret the registration returned.
    pub fn prepare() -> (u16, PathBuf) {
        let dir = std::env::temp_dir().join(format!("mailhost-hook-{:016x}", rand::random::<u64>()));
        std::fs::create_dir_all(&dir).unwrap();
        make_certificates(&dir);
        (free_port(), dir)
    }

    /// `None` when the stand-in venv is not there. `statuses`: the answers,
    /// in order, the last repeated.
    pub fn start(port: u16, dir: PathBuf, secret: &str, statuses: &str) -> Option<Receiver> {
        let venv = super::standin("MAILHOST_TEST_VENV")?;
        let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/api/support/webhook_receiver.py");
        let mut child = Command::new(format!("{venv}/bin/python"))
            .arg(script)
            .args(["--port", &port.to_string(), "--secret", secret, "--statuses", statuses])
            .arg("--cert")
            .arg(dir.join("server.pem"))
            .arg("--key")
            .arg(dir.join("server.key"))
            .arg("--out")
            .arg(dir.join("deliveries.jsonl"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("the webhook receiver starts");
        let mut ready = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut ready)
            .unwrap();
        assert_eq!(ready.trim(), "ready", "the webhook receiver did not start");
        let stdin = child.stdin.take().unwrap();
        Some(Receiver {
            dir,
            child,
            _stdin: stdin,
        })
    }

    pub fn ca_file(dir: &std::path::Path) -> PathBuf {
        dir.join("ca.pem")
    }

    /// Every POST received so far.
    pub fn deliveries(&self) -> Vec<Value> {
        std::fs::read_to_string(self.dir.join("deliveries.jsonl"))
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    /// Waits until `n` POSTs arrived (or 10 s), then gives them all.
    pub async fn wait_for(&self, n: usize) -> Vec<Value> {
        let started = Instant::now();
        while self.deliveries().len() < n && started.elapsed() < Duration::from_secs(10) {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        self.deliveries()
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
