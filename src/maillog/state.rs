//! What a run of the log reader leaves for the next ([`State`]: the file,
//! how far into it, the senders still in flight), and the reading of the
//! lines added since, rotation included.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use super::time::iso_ms;
use super::{
    ADDRESS_LIMIT, Event, HEAD_BYTES, MAX_SENDERS, REMOTE_HOST_LIMIT, Record, SENDER_TTL_SECS, dsn_code, on_domain,
    parse, reply,
};

/// A sender waiting for its deliveries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pending {
    pub sender: String,
    /// When its `from=` line was last read (seconds since the epoch).
    pub seen: i64,
}

/// Where the reading stands, kept between runs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct State {
    /// The inode of the file `offset` is in.
    pub inode: Option<u64>,
    /// Bytes read (complete lines only).
    pub offset: u64,
    /// Hex SHA-256 of the file's first min(256, offset) bytes: a file that
    /// took over the inode is not the one read.
    pub head: String,
    /// The bounce domain the service named last (for a run whose export
    /// fetch failed).
    pub bounce_domain: Option<String>,
    /// Queue id -> the sender on the bounce domain, for queue ids whose
    /// deliveries may still come.
    pub senders: BTreeMap<String, Pending>,
}

impl State {
    /// The saved state; a missing file is a fresh start.
    pub fn load(path: &Path) -> anyhow::Result<Self> {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Self::default()),
            Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
        };
        let v: Value = serde_json::from_str(&text).with_context(|| format!("reading {}", path.display()))?;
        let mut state = Self {
            inode: v["inode"].as_u64(),
            offset: v["offset"].as_u64().unwrap_or(0),
            head: v["head"].as_str().unwrap_or_default().to_string(),
            bounce_domain: v["bounceDomain"].as_str().map(str::to_string),
            senders: BTreeMap::new(),
        };
        if let Some(senders) = v["senders"].as_object() {
            for (queue_id, p) in senders {
                if let (Some(sender), Some(seen)) = (p["sender"].as_str(), p["seen"].as_i64()) {
                    state.senders.insert(
                        queue_id.clone(),
                        Pending {
                            sender: sender.to_string(),
                            seen,
                        },
                    );
                }
            }
        }
        Ok(state)
    }

    pub fn to_json(&self) -> Value {
        let senders: Map<String, Value> = self
            .senders
            .iter()
            .map(|(q, p)| (q.clone(), json!({"sender": p.sender, "seen": p.seen})))
            .collect();
        json!({
            "inode": self.inode,
            "offset": self.offset,
            "head": self.head,
            "bounceDomain": self.bounce_domain,
            "senders": senders,
        })
    }

    /// Writes the state beside its path and renames it in (owner-only: it
    /// holds addresses).
    pub fn save(&self, path: &Path) -> anyhow::Result<()> {
        use std::io::Write;
        use std::os::unix::fs::OpenOptionsExt;
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        }
        let mut staged = path.as_os_str().to_owned();
        staged.push(".new");
        let staged = PathBuf::from(staged);
        let _ = std::fs::remove_file(&staged);
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&staged)
            .with_context(|| format!("creating {}", staged.display()))?;
        file.write_all(self.to_json().to_string().as_bytes())
            .and_then(|()| file.sync_all())
            .with_context(|| format!("writing {}", staged.display()))?;
        std::fs::rename(&staged, path).with_context(|| format!("installing {}", path.display()))
    }

    /// Reads one log line: learns or forgets a sender, or gives the event of
    /// a delivery whose sender is on `bounce_domain`. `now_ms` is the time
    /// read.
    pub fn apply(&mut self, raw: &[u8], bounce_domain: &str, now_ms: i64) -> Option<Event> {
        let raw = raw.strip_suffix(b"\n").unwrap_or(raw);
        let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
        let text = String::from_utf8_lossy(raw);
        let line = parse(&text)?;
        match line.record {
            Record::Sender { queue_id, sender } => {
                if on_domain(sender, bounce_domain) {
                    let pending = Pending {
                        sender: sender.to_string(),
                        seen: now_ms.div_euclid(1000),
                    };
                    self.senders.insert(queue_id.to_string(), pending);
                } else {
                    // The queue id is another message's now.
                    self.senders.remove(queue_id);
                }
                None
            }
            Record::Removed { queue_id } => {
                self.senders.remove(queue_id);
                None
            }
            Record::Delivery(d) => {
                let pending = self.senders.get(d.queue_id)?;
                let recipient = d.orig_to.unwrap_or(d.to);
                if pending.sender.len() > ADDRESS_LIMIT || recipient.len() > ADDRESS_LIMIT {
                    return None;
                }
                let (smtp_code, reply) = reply(d.text);
                Some(Event {
                    id: hex::encode(Sha256::digest(raw)),
                    return_path: pending.sender.clone(),
                    recipient: recipient.to_string(),
                    status: d.status,
                    at: iso_ms(line.at_ms.unwrap_or(now_ms)),
                    smtp_code,
                    enhanced_status: d.dsn.filter(|d| dsn_code(d)).map(str::to_string),
                    reply,
                    remote_host: d
                        .relay
                        .filter(|r| *r != "none" && !r.is_empty())
                        .map(|r| r.chars().take(REMOTE_HOST_LIMIT).collect()),
                    queue_id: d.queue_id.to_string(),
                })
            }
        }
    }

    /// Forgets senders not seen for a day, and the oldest beyond
    /// [`MAX_SENDERS`].
    pub fn prune(&mut self, now_ms: i64) {
        let oldest = now_ms.div_euclid(1000) - SENDER_TTL_SECS;
        self.senders.retain(|_, p| p.seen >= oldest);
        if self.senders.len() > MAX_SENDERS {
            let mut by_age: Vec<(i64, String)> = self.senders.iter().map(|(q, p)| (p.seen, q.clone())).collect();
            by_age.sort_unstable();
            let excess = self.senders.len() - MAX_SENDERS;
            for (_, queue_id) in by_age.into_iter().take(excess) {
                self.senders.remove(&queue_id);
            }
        }
    }
}

/// What one read gave: the events, the state to save once they are
/// accepted, and whether more is waiting (the budget ran out, or a rotated
/// file was finished and the new one is next).
#[derive(Debug, Clone)]
pub struct Chunk {
    pub events: Vec<Event>,
    pub state: State,
    pub more: bool,
    /// Bytes consumed.
    pub bytes: u64,
}

/// Reads at most `budget` bytes of complete lines after `state`'s position
/// in the log at `path`, and gives the events of deliveries whose sender is
/// on `bounce_domain`. Nothing is saved: the caller saves `Chunk::state` when
/// the events have been accepted.
pub fn read_new(path: &Path, state: &State, bounce_domain: &str, now_ms: i64, budget: u64) -> anyhow::Result<Chunk> {
    let budget = budget.max(1);
    let current = match std::fs::metadata(path) {
        Ok(meta) => Some(meta),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
    };
    let mut next = state.clone();
    // Still the same file, not shorter than what was read, and starting as
    // it did: go on where the last read stopped.
    if let Some(meta) = &current
        && Some(meta.ino()) == state.inode
        && meta.len() >= state.offset
        && head(path, state.offset)? == state.head
    {
        return read_region(path, next, bounce_domain, now_ms, budget, false);
    }
    // Rotated: finish the old file when it is still beside, under another name.
    if let (Some(inode), true) = (state.inode, state.offset > 0)
        && let Some(old) = rotated(path, inode, state)?
    {
        let mut read = read_region(&old, next, bounce_domain, now_ms, budget, true)?;
        if !read.more {
            // Done with it: the live file next, from its start.
            read.state.inode = current.as_ref().map(MetadataExt::ino);
            read.state.offset = 0;
            read.state.head = String::new();
            read.more = current.is_some();
        }
        return Ok(read);
    }
    let Some(meta) = current else {
        return Ok(Chunk {
            events: Vec::new(),
            state: next,
            more: false,
            bytes: 0,
        });
    };
    next.inode = Some(meta.ino());
    next.offset = 0;
    next.head = String::new();
    read_region(path, next, bounce_domain, now_ms, budget, false)
}

/// The file beside `live` with the inode last read, starting as it did.
fn rotated(live: &Path, inode: u64, state: &State) -> anyhow::Result<Option<PathBuf>> {
    let dir = match live.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(None);
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path == live {
            continue;
        }
        let Ok(meta) = entry.metadata() else { continue };
        if meta.is_file()
            && meta.ino() == inode
            && meta.len() >= state.offset
            && head(&path, state.offset)? == state.head
        {
            return Ok(Some(path));
        }
    }
    Ok(None)
}

/// Hex SHA-256 of a file's first min(256, `offset`) bytes ("" for none).
fn head(path: &Path, offset: u64) -> anyhow::Result<String> {
    let len = offset.min(HEAD_BYTES);
    if len == 0 {
        return Ok(String::new());
    }
    let mut bytes = Vec::with_capacity(len as usize);
    File::open(path)
        .and_then(|f| f.take(len).read_to_end(&mut bytes))
        .with_context(|| format!("reading {}", path.display()))?;
    Ok(hex::encode(Sha256::digest(&bytes)))
}

/// Reads complete lines from `state.offset` (a `last` file, which no longer
/// grows, to its very end).
fn read_region(
    path: &Path,
    mut state: State,
    bounce_domain: &str,
    now_ms: i64,
    budget: u64,
    last: bool,
) -> anyhow::Result<Chunk> {
    let mut file = File::open(path).with_context(|| format!("opening {}", path.display()))?;
    file.seek(SeekFrom::Start(state.offset))
        .with_context(|| format!("reading {}", path.display()))?;
    let mut chunk = Vec::new();
    file.take(budget)
        .read_to_end(&mut chunk)
        .with_context(|| format!("reading {}", path.display()))?;
    let full = chunk.len() as u64 == budget;
    let (complete, read) = match chunk.iter().rposition(|&b| b == b'\n') {
        // A finished file's last line is whole, newline or not.
        _ if last && !full => (chunk.len(), chunk.len()),
        Some(end) => (end + 1, end + 1),
        // A line longer than the budget is passed over, unread.
        None if full => (chunk.len(), 0),
        // A line still being written: next time.
        None => (0, 0),
    };
    let mut events = Vec::new();
    for line in chunk[..read].split(|&b| b == b'\n') {
        if let Some(event) = state.apply(line, bounce_domain, now_ms) {
            events.push(event);
        }
    }
    state.prune(now_ms);
    state.offset += complete as u64;
    state.head = head(path, state.offset)?;
    Ok(Chunk {
        events,
        state,
        more: full,
        bytes: complete as u64,
    })
}
