//! A proxy in front of DynamoDB Local that times each call from the moment
//! its request arrives to the moment its answer has gone back: the send
//! benchmark counts from these the calls a request waited for one after
//! another, where the server's own meter cannot be believed by itself.
//!
//! HTTP/1.1 only, one request at a time per connection, answers with a
//! Content-Length (as DynamoDB Local's are).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// One call: its X-Amz-Target's operation, when it arrived, when its answer
/// had been written back.
#[derive(Debug, Clone)]
pub struct Call {
    pub operation: String,
    pub start: Instant,
    pub end: Instant,
}

pub struct TimedProxy {
    pub url: String,
    calls: Arc<Mutex<Vec<Call>>>,
}

impl TimedProxy {
    pub fn start(upstream: &str) -> TimedProxy {
        let upstream = upstream.trim_start_matches("http://").trim_end_matches('/').to_string();
        let listener = TcpListener::bind("127.0.0.1:0").expect("a port for the proxy");
        let url = format!("http://{}", listener.local_addr().unwrap());
        let calls = Arc::new(Mutex::new(Vec::new()));
        let log = calls.clone();
        std::thread::spawn(move || {
            for client in listener.incoming().flatten() {
                let (upstream, log) = (upstream.clone(), log.clone());
                std::thread::spawn(move || serve(client, &upstream, &log));
            }
        });
        TimedProxy { url, calls }
    }

    /// The calls that began in `[from, to]`.
    pub fn between(&self, from: Instant, to: Instant) -> Vec<Call> {
        let calls = self.calls.lock().unwrap();
        calls
            .iter()
            .filter(|c| c.start >= from && c.start <= to)
            .cloned()
            .collect()
    }
}

/// Of some calls, how many began while none of the others was under way:
/// the round trips their caller waited for one after another.
pub fn round_trips(calls: &[Call]) -> usize {
    let mut calls = calls.to_vec();
    calls.sort_by_key(|c| c.start);
    let mut busy_until: Option<Instant> = None;
    let mut trips = 0;
    for call in calls {
        if busy_until.is_none_or(|until| call.start >= until) {
            trips += 1;
        }
        busy_until = Some(busy_until.map_or(call.end, |until| until.max(call.end)));
    }
    trips
}

/// How long at least one of some calls was under way: the time their caller
/// spent waiting on the store, whatever else it did meanwhile.
pub fn busy(calls: &[Call]) -> std::time::Duration {
    let mut calls = calls.to_vec();
    calls.sort_by_key(|c| c.start);
    let mut total = std::time::Duration::ZERO;
    let mut span: Option<(Instant, Instant)> = None;
    for call in calls {
        span = match span {
            Some((from, until)) if call.start <= until => Some((from, until.max(call.end))),
            Some((from, until)) => {
                total += until - from;
                Some((call.start, call.end))
            }
            None => Some((call.start, call.end)),
        };
    }
    total + span.map_or(std::time::Duration::ZERO, |(from, until)| until - from)
}

/// The stretches of `[from, to]` in which none of some calls was under way,
/// in order: before the first, between each round trip and the next, after
/// the last. Where a caller's own time sits between its waits.
pub fn idle(calls: &[Call], from: Instant, to: Instant) -> Vec<std::time::Duration> {
    let mut calls = calls.to_vec();
    calls.sort_by_key(|c| c.start);
    let mut gaps = Vec::new();
    let mut free_from = from;
    for call in calls {
        if call.start >= free_from {
            gaps.push(call.start - free_from);
        }
        free_from = free_from.max(call.end);
    }
    gaps.push(to.saturating_duration_since(free_from));
    gaps
}

/// Reads one HTTP message's head (up to its blank line) and its body.
fn message(reader: &mut BufReader<TcpStream>) -> Option<(String, Vec<u8>)> {
    let mut head = String::new();
    let mut length = 0usize;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).ok()? == 0 {
            return None;
        }
        if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
            length = v.trim().parse().ok()?;
        }
        let end = line == "\r\n";
        head.push_str(&line);
        if end {
            break;
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    Some((head, body))
}

fn serve(client: TcpStream, upstream: &str, log: &Mutex<Vec<Call>>) {
    let Ok(server) = TcpStream::connect(upstream) else {
        return;
    };
    let _ = (client.set_nodelay(true), server.set_nodelay(true));
    let mut to_client = client.try_clone().unwrap();
    let mut to_server = server.try_clone().unwrap();
    let (mut from_client, mut from_server) = (BufReader::new(client), BufReader::new(server));
    while let Some((head, body)) = message(&mut from_client) {
        let start = Instant::now();
        let operation = head
            .lines()
            .find_map(|l| {
                l.to_ascii_lowercase()
                    .starts_with("x-amz-target:")
                    .then(|| l[13..].trim().to_string())
            })
            .and_then(|t| t.rsplit('.').next().map(str::to_string))
            .unwrap_or_default();
        if to_server.write_all(head.as_bytes()).is_err() || to_server.write_all(&body).is_err() {
            return;
        }
        let Some((answer_head, answer)) = message(&mut from_server) else {
            return;
        };
        if to_client.write_all(answer_head.as_bytes()).is_err() || to_client.write_all(&answer).is_err() {
            return;
        }
        log.lock().unwrap().push(Call {
            operation,
            start,
            end: Instant::now(),
        });
    }
}
