//! `mailhost mailbox-sync`: one mailbox through every door. The agent on the
//! mail host, beside `mta-sync`, that keeps Dovecot (IMAP) and the service's
//! store (REST, MCP, the web app) one state, with the sync token. Each round:
//!
//! 1. IMAP to the store: reads what IMAP clients did from Dovecot's log
//!    (`mail_log`: flags, copies and moves, expunges, appends; [`log`]) from
//!    where it stopped, turns each into the state it left (a moved or
//!    expunged message is looked up: in another folder, or gone), numbers
//!    them, and reports them (`POST /mtaImapChanges`). The log position and
//!    the numbers are saved only once the service took them; sent again, the
//!    service skips what it applied (the numbers only grow).
//! 2. The store to IMAP: reads the store's changes (`GET
//!    /mtaMailboxChanges`: threads whose flags or folders changed, mail
//!    deleted for good, sent copies), applies each message's state with
//!    `doveadm` ([`dovecot`]), and acknowledges what it applied. A change
//!    made meanwhile keeps its mark and comes again; applying a state twice
//!    changes nothing.
//!
//! IMAP first, so a person's change reaches the store before the store's
//! state is written back over it. Nothing is rescanned on a timer: the log
//! and the marks say what changed.

pub mod dovecot;
mod down;
pub mod log;
mod up;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use base64::Engine;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use dovecot::{ARCHIVE, Copy, DRAFTS, Doveadm, INBOX, JUNK, SENT, TRASH};
use log::{Kind, Logged, Position};

/// `mailhost mailbox-sync`'s settings, as flags with `MAILHOST_*` twins.
#[derive(Debug, Clone, clap::Args)]
pub struct Settings {
    /// The service's base URL (its routes at the root or under /api).
    #[arg(long, env = "MAILHOST_URL")]
    pub url: String,
    /// The mail host's sync token.
    #[arg(long, env = "MAILHOST_SYNC_TOKEN", hide_env_values = true)]
    pub sync_token: String,
    /// Dovecot's log, where `mail_log` writes IMAP sessions' changes (its
    /// `log_path`, or syslog's mail log).
    #[arg(long, env = "MAILHOST_DOVECOT_LOG", default_value = "/var/log/dovecot.log")]
    pub dovecot_log: PathBuf,
    /// The doveadm command, split on spaces (`doveadm -c <conf>` for a
    /// private instance).
    #[arg(long, env = "MAILHOST_DOVEADM", default_value = "doveadm")]
    pub doveadm: String,
    /// Where the agent keeps its place between runs (the log position, the
    /// last change number, changes waiting for their message).
    #[arg(
        long,
        env = "MAILHOST_MAILBOX_SYNC_STATE",
        default_value = "/var/lib/mailhost/mailbox-sync.json"
    )]
    pub state: PathBuf,
    /// Milliseconds between rounds.
    #[arg(long, env = "MAILHOST_MAILBOX_SYNC_INTERVAL_MS", default_value_t = 250)]
    pub interval_ms: u64,
    /// One round, then exit (non-zero when it failed): for cron and tests.
    #[arg(long)]
    pub once: bool,
}

/// Changes one request reports at most (the service's limit).
const CHANGES_PER_REQUEST: usize = 500;
/// Log bytes read, reported and saved as done at a time: a round cut short
/// (the service or Dovecot down, the agent killed) reports again at most
/// this much (under a thousand changes), not the whole backlog.
const READ_BUDGET: u64 = 128 << 10;
/// Appended bytes (base64) one request carries beside other changes; a
/// larger message goes alone.
const RAW_PER_REQUEST: usize = 1 << 20;
/// The largest appended message sent to the service (its submission
/// limit); a larger one stays in IMAP alone.
const APPENDED_LIMIT: usize = 4 * 1024 * 1024;
/// How long a change about a message the store does not hold yet is tried
/// again (the pipe's copy is filed within seconds).
const RETRY_FOR_MS: i64 = 10 * 60 * 1000;
/// How long a mark about one received message waits for its copy in
/// Dovecot before it is cleared without one.
const COPY_AWAITED_MS: i64 = 120_000;
/// Store changes read per round at most: a backlog's marks cost one look
/// at where the mailbox's copies are per round, so rounds take many.
const MARKS_PER_ROUND: usize = 5000;

/// One change as reported to the service.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Change {
    pub seq: i64,
    pub mailbox: String,
    pub message_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seen: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub place: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub direction: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub raw: Option<String>,
    /// A flag change every copy the store mirrors holds when the agent
    /// looked after reading it ([`settled`]): the store marks nothing back.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub settled: bool,
}

/// A change the service did not know the message of yet.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Waiting {
    change: Change,
    since_ms: i64,
}

/// The agent's place, saved after each step the service took.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct State {
    #[serde(default)]
    pub position: Position,
    /// The last number given to a change.
    #[serde(default)]
    pub seq: i64,
    #[serde(default)]
    waiting: Vec<Waiting>,
    /// Expunges waiting out [`EXPUNGE_GRACE_MS`].
    #[serde(default)]
    expunged: Vec<Expunged>,
    /// The part of the log being reported, until the service answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    sent: Option<Sent>,
    /// Second looks still to take (the agent's memory of them, saved with
    /// each state and before each change it sets: a kill loses none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    looks: Vec<Look>,
}

/// A second look as saved.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Look {
    user: String,
    message_id: String,
    #[serde(flatten)]
    recheck: Recheck,
}

/// A part of the log reported without an answer yet: up to `to`, its
/// changes numbered from `base` + 1.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Sent {
    to: Position,
    base: i64,
}

impl State {
    /// The saved state, or a new one whose numbers start above any an
    /// earlier state (lost) may have given: at the time in microseconds.
    pub fn load(path: &Path) -> anyhow::Result<State> {
        match std::fs::read_to_string(path) {
            Ok(text) => serde_json::from_str(&text).with_context(|| format!("reading {}", path.display())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(State {
                seq: now_ms() * 1000,
                ..State::default()
            }),
            Err(e) => Err(e).with_context(|| format!("reading {}", path.display())),
        }
    }

    pub fn save(&self, path: &Path) -> anyhow::Result<()> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        }
        let staged = path.with_extension("new");
        std::fs::write(&staged, serde_json::to_vec(self)?).with_context(|| format!("writing {}", staged.display()))?;
        std::fs::rename(&staged, path).with_context(|| format!("installing {}", path.display()))
    }
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// What one round did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Round {
    /// IMAP changes reported, applied by the service, waiting for their message.
    pub reported: usize,
    pub applied: u64,
    pub waiting: usize,
    /// Store changes applied to IMAP and acknowledged.
    pub pulled: usize,
    pub cleared: u64,
    /// Milliseconds each way took; the store's way as reading its changes,
    /// applying them to IMAP, acknowledging them.
    pub up_ms: u128,
    pub down_ms: u128,
    pub down_parts_ms: [u128; 3],
}

/// Runs until stopped (or once).
pub async fn run(settings: Settings) -> anyhow::Result<()> {
    let client = reqwest::Client::builder().timeout(Duration::from_secs(60)).build()?;
    let agent = Agent::new(client, settings.clone());
    println!("mailbox-sync: running, reading {}", settings.dovecot_log.display());
    loop {
        let started = Instant::now();
        let round = agent.round().await;
        match &round {
            Ok(r) if r.reported + r.waiting + r.pulled > 0 || r.applied + r.cleared > 0 => println!(
                "mailbox-sync: {} IMAP changes reported ({} applied, {} waiting for their message) in {} ms; {} store changes applied to IMAP ({} cleared) in {} ms (read {}, applied {}, acknowledged {}); the round {} ms",
                r.reported,
                r.applied,
                r.waiting,
                r.up_ms,
                r.pulled,
                r.cleared,
                r.down_ms,
                r.down_parts_ms[0],
                r.down_parts_ms[1],
                r.down_parts_ms[2],
                started.elapsed().as_millis()
            ),
            Ok(_) => {}
            Err(e) => eprintln!("mailbox-sync: round failed, nothing lost (tried again): {e:#}"),
        }
        if settings.once {
            return round.map(drop);
        }
        tokio::time::sleep(Duration::from_millis(settings.interval_ms.max(10))).await;
    }
}

pub struct Agent {
    client: reqwest::Client,
    doveadm: Doveadm,
    settings: Settings,
    /// Messages whose IMAP state the agent set, looked at again a moment
    /// later (see [`RECHECKS_AFTER_MS`]).
    rechecks: std::sync::Mutex<BTreeMap<(String, String), Recheck>>,
}

/// An IMAP session that had not yet seen the agent's change and then
/// stores the flag it believes it lacks changes the message with no line in
/// Dovecot's log (its own view did not change). So a message the agent set
/// is looked at again at each of these times after: a flag or folder other
/// than the one set was a person's change, and is reported like a logged
/// one. Several looks, since a mail app looks again when it likes (one look
/// at 3 s missed an app that stored 5 s after the agent's change).
const RECHECKS_AFTER_MS: [i64; 3] = [3_000, 15_000, 60_000];

/// What the agent set on a message.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Recheck {
    set_ms: i64,
    /// Looks taken so far: the next is due at `RECHECKS_AFTER_MS[looks]`.
    looks: usize,
    seen: bool,
    folder: String,
}

impl Recheck {
    fn due_ms(&self) -> i64 {
        self.set_ms + RECHECKS_AFTER_MS[self.looks.min(RECHECKS_AFTER_MS.len() - 1)]
    }
}

/// How long a message expunged with no copy left in another folder waits
/// before it is reported deleted. A mail app that moves by APPEND and
/// expunge may expunge first: mbsync syncs one folder after another, so a
/// move from INBOX to Trash expunges in INBOX's pass and appends in Trash's,
/// seconds later. Reported at once, the deletion would delete the stored
/// message, and its gone state would then expunge the copy just appended:
/// the mail lost on both sides.
pub const EXPUNGE_GRACE_MS: i64 = 15_000;

/// A message expunged with no other copy yet, waiting out the grace.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Expunged {
    pub user: String,
    pub message_id: String,
    /// Expunged from Sent: a sent copy (only a copy left in Sent keeps it).
    pub sent: bool,
    pub since_ms: i64,
}

impl Agent {
    /// The second looks a killed agent still owed are taken from its state.
    pub fn new(client: reqwest::Client, settings: Settings) -> Agent {
        let looks = State::load(&settings.state).map(|s| s.looks).unwrap_or_default();
        let rechecks = looks.into_iter().map(|l| ((l.user, l.message_id), l.recheck)).collect();
        Agent {
            client,
            doveadm: Doveadm::new(&settings.doveadm),
            settings,
            rechecks: std::sync::Mutex::new(rechecks),
        }
    }

    /// Saves the state with the second looks still to take.
    fn save(&self, state: &mut State) -> anyhow::Result<()> {
        let rechecks = self.rechecks.lock().unwrap_or_else(|e| e.into_inner());
        state.looks = rechecks
            .iter()
            .map(|((user, message_id), recheck)| Look {
                user: user.clone(),
                message_id: message_id.clone(),
                recheck: recheck.clone(),
            })
            .collect();
        drop(rechecks);
        state.save(&self.settings.state)
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.settings.url.trim_end_matches('/'))
    }

    /// One call to the service with the sync token: its JSON answer, or
    /// what failed, said as `what`.
    async fn call(&self, request: reqwest::RequestBuilder, what: &'static str) -> anyhow::Result<Value> {
        request
            .bearer_auth(&self.settings.sync_token)
            .send()
            .await
            .context(what)?
            .error_for_status()
            .context(what)?
            .json()
            .await
            .context(what)
    }

    /// One round: IMAP to the store, then the store to IMAP. The second
    /// runs even when the first failed (the service away for one route).
    pub async fn round(&self) -> anyhow::Result<Round> {
        let mut round = Round::default();
        let started = Instant::now();
        let up = self.imap_to_store(&mut round).await;
        round.up_ms = started.elapsed().as_millis();
        let started = Instant::now();
        let down = self.store_to_imap(&mut round).await;
        round.down_ms = started.elapsed().as_millis();
        up?;
        down?;
        Ok(round)
    }
}

/// The deletion an expunge stands for, given where the message's copies
/// are now; `None` when a copy elsewhere keeps it (an inbound message in
/// any folder but Sent and Drafts; a sent one anywhere but Drafts: moved
/// out of Sent, to the Trash as a mail app deletes, it was moved, not
/// deleted, and the API, which has no trash for sent mail, keeps it sent).
fn deletion(e: &Expunged, copies: &[Copy]) -> Option<Change> {
    let mut copies = copies
        .iter()
        .filter(|c| dovecot::same_message_id(&e.message_id, &c.message_id));
    let kept = match e.sent {
        true => copies.any(|c| place_of(&c.folder) != "drafts"),
        false => copies.any(|c| !app_own(place_of(&c.folder))),
    };
    (!kept).then(|| Change {
        seq: 0,
        mailbox: e.user.clone(),
        message_id: e.message_id.clone(),
        seen: None,
        place: Some("gone".into()),
        direction: Some(if e.sent { "outbound" } else { "inbound" }.into()),
        raw: None,
        settled: false,
    })
}

/// Whether IMAP holds a logged flag change as it is: the message has one
/// copy the store mirrors (outside Sent and Drafts, not being deleted), with
/// that flag. Then the store, which takes it, owes IMAP nothing back; with
/// two copies, or the flag set otherwise since (by the person, or by the
/// agent writing the store's older state over it), the store marks it and
/// the agent sets every copy to what the store then holds.
/// (`copies`: the message's.) That copy, when it is.
fn settled<'a>(change: &Change, copies: &[&'a Copy]) -> Option<&'a Copy> {
    let (Some(seen), None, None) = (change.seen, &change.place, &change.raw) else {
        return None;
    };
    if change.message_id.ends_with("...") {
        return None;
    }
    let mut mirrored = copies.iter().filter(|c| !app_own(place_of(&c.folder)));
    match (mirrored.next(), mirrored.next()) {
        (Some(copy), None) if copy.seen == seen && !copy.deleted => Some(copy),
        _ => None,
    }
}

/// A query string's value, percent-encoded.
fn encoded(value: &str) -> String {
    value
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// The place the service knows a folder as.
fn place_of(folder: &str) -> &'static str {
    match folder {
        f if f.eq_ignore_ascii_case(INBOX) => "inbox",
        ARCHIVE => "archive",
        TRASH => "trash",
        SENT => "sent",
        DRAFTS => "drafts",
        JUNK => "junk",
        _ => "own",
    }
}

/// Sent and Drafts: the app's own folders, which move no stored row.
fn app_own(place: &str) -> bool {
    matches!(place, "sent" | "drafts")
}

/// The folder a message's state puts it in: its store folder's, or Junk
/// for spam.
fn folder_of(state: &Value) -> &'static str {
    if state["spam"] == true {
        return JUNK;
    }
    match state["folder"].as_str().unwrap_or("inbox") {
        "archive" => ARCHIVE,
        "trash" => TRASH,
        _ => INBOX,
    }
}

/// Copies by Message-ID: a backlog's thousands of states each find theirs
/// among a whole mailbox's copies without a scan each.
fn by_message_id(copies: &[Copy]) -> std::collections::HashMap<&str, Vec<&Copy>> {
    let mut by_id: std::collections::HashMap<&str, Vec<&Copy>> = std::collections::HashMap::new();
    for copy in copies {
        by_id.entry(copy.message_id.as_str()).or_default().push(copy);
    }
    by_id
}

/// What `doveadm` must do for one user.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Plan {
    /// (folder, seen) -> UIDs.
    pub flags: BTreeMap<(String, bool), Vec<u32>>,
    /// (from, to) -> UIDs.
    pub moves: BTreeMap<(String, String), Vec<u32>>,
    pub expunges: BTreeMap<String, Vec<u32>>,
}

/// The plan that makes IMAP's copies match the store's states: an inbound
/// message's copies (in any folder but Sent and Drafts) take its read flag
/// and move to its folder, except that a folder of the person's own (and
/// Junk) counts as archived and stays, and a copy flagged `\Deleted` stays;
/// a message gone goes from every folder
/// but the app's own (a sent one from Sent).
pub fn plan(states: &[&Value], copies: &[Copy]) -> Plan {
    let mut plan = Plan::default();
    let by_id = by_message_id(copies);
    for state in states {
        let Some(message_id) = state["messageId"].as_str() else {
            continue;
        };
        let outbound = state["direction"] == "outbound";
        let mine = by_id.get(message_id).into_iter().flatten().copied();
        if state["gone"] == true {
            for copy in mine.filter(|c| app_own(place_of(&c.folder)) == outbound && (!outbound || c.folder == SENT)) {
                plan.expunges.entry(copy.folder.clone()).or_default().push(copy.uid);
            }
            continue;
        }
        if outbound {
            continue;
        }
        let unread = state["unread"] == true;
        let target = folder_of(state);
        for copy in mine.filter(|c| !app_own(place_of(&c.folder))) {
            if copy.seen == unread {
                plan.flags
                    .entry((copy.folder.clone(), !unread))
                    .or_default()
                    .push(copy.uid);
            }
            let kept_as_archived = target == ARCHIVE && matches!(place_of(&copy.folder), "own" | "junk");
            // A copy the person's app flagged `\Deleted` is being deleted
            // there: moved, its expunge would find nothing and the message
            // live on. Left where it is, the expunge deletes it (deletion
            // wins); the second look reports it where it stayed if not.
            if copy.folder != target && !kept_as_archived && !copy.deleted {
                plan.moves
                    .entry((copy.folder.clone(), target.to_string()))
                    .or_default()
                    .push(copy.uid);
            }
        }
    }
    plan
}

#[cfg(test)]
mod tests {
    use super::*;

    fn copy(folder: &str, uid: u32, seen: bool, id: &str) -> Copy {
        Copy {
            folder: folder.into(),
            uid,
            seen,
            deleted: false,
            message_id: id.into(),
        }
    }

    #[test]
    fn the_store_state_becomes_flags_moves_and_expunges() {
        let states = [
            json!({"messageId": "<a@x>", "direction": "inbound", "folder": "archive", "unread": false, "gone": false}),
            json!({"messageId": "<b@x>", "direction": "inbound", "folder": "archive", "unread": true, "gone": false}),
            json!({"messageId": "<c@x>", "direction": "inbound", "folder": "inbox", "unread": false, "gone": true}),
            json!({"messageId": "<d@x>", "direction": "outbound", "unread": false, "gone": true}),
            json!({"messageId": "<e@x>", "direction": "inbound", "folder": "trash", "unread": false, "gone": false}),
        ];
        let copies = [
            copy("INBOX", 1, false, "<a@x>"),
            // A folder of the person's own counts as archived: it stays.
            copy("Receipts", 4, true, "<b@x>"),
            copy("Trash", 9, true, "<c@x>"),
            copy("Sent", 2, true, "<d@x>"),
            copy("Sent", 3, true, "<c@x>"),
            copy("Reçus", 5, true, "<e@x>"),
        ];
        let states: Vec<&Value> = states.iter().collect();
        let plan = plan(&states, &copies);
        assert_eq!(plan.flags[&("INBOX".to_string(), true)], [1]);
        assert_eq!(plan.flags[&("Receipts".to_string(), false)], [4]);
        assert_eq!(plan.moves[&("INBOX".to_string(), "Archive".to_string())], [1]);
        assert_eq!(plan.moves[&("Reçus".to_string(), "Trash".to_string())], [5]);
        assert_eq!(plan.moves.len(), 2);
        assert_eq!(plan.expunges["Trash"], [9]);
        assert_eq!(
            plan.expunges["Sent"],
            [2],
            "an inbound message's namesake in Sent stays"
        );
    }

    #[test]
    fn a_flag_change_is_settled_only_when_its_one_copy_holds_it() {
        let flag = |seen: bool| Change {
            seq: 1,
            mailbox: "me@t.example".into(),
            message_id: "<a@x>".into(),
            seen: Some(seen),
            place: None,
            direction: None,
            raw: None,
            settled: false,
        };
        let inbox = copy("INBOX", 1, true, "<a@x>");
        // Its namesake in Sent is not a copy the store mirrors.
        let sent = copy("Sent", 2, false, "<a@x>");
        assert_eq!(settled(&flag(true), &[&inbox, &sent]), Some(&inbox));
        // The flag set otherwise since (the agent wrote the store's older
        // state over it), or no copy left: the store marks it back.
        assert!(settled(&flag(false), &[&inbox]).is_none());
        assert!(settled(&flag(true), &[]).is_none());
        // A second copy elsewhere takes the flag from the store's mark.
        let own = copy("Receipts", 3, false, "<a@x>");
        assert!(settled(&flag(true), &[&inbox, &own]).is_none());
        // A copy being deleted, a move, a Message-ID cut short: never.
        let deleted = Copy {
            deleted: true,
            ..inbox.clone()
        };
        assert!(settled(&flag(true), &[&deleted]).is_none());
        let moved = Change {
            place: Some("archive".into()),
            ..flag(true)
        };
        assert!(settled(&moved, &[&inbox]).is_none());
        let cut = Change {
            message_id: "<a@x...".into(),
            ..flag(true)
        };
        assert!(settled(&cut, &[&inbox]).is_none());
    }

    #[test]
    fn an_expunge_is_a_deletion_only_with_no_copy_left_elsewhere() {
        let expunged = |id: &str, sent: bool| Expunged {
            user: "me@t.example".into(),
            message_id: id.into(),
            sent,
            since_ms: 0,
        };
        // Moved on: a copy in Trash, or in a folder of the person's own.
        assert_eq!(
            deletion(&expunged("<a@x>", false), &[copy("Trash", 3, true, "<a@x>")]),
            None
        );
        assert_eq!(
            deletion(&expunged("<a@x>", false), &[copy("Reçus", 3, true, "<a@x>")]),
            None
        );
        // Only its namesake in Sent left, or nothing: gone.
        let gone = deletion(&expunged("<a@x>", false), &[copy("Sent", 3, true, "<a@x>")]).unwrap();
        assert_eq!(
            (gone.place.as_deref(), gone.direction.as_deref()),
            (Some("gone"), Some("inbound"))
        );
        // A sent copy moved out of Sent (to the Trash, as an app deletes,
        // or anywhere else) is kept; only one left nowhere, or in the app's
        // own Drafts, is gone.
        for folder in ["Sent", "Trash", "Archive", "Reçus"] {
            assert_eq!(
                deletion(&expunged("<s@x>", true), &[copy(folder, 4, true, "<s@x>")]),
                None,
                "{folder}"
            );
        }
        let gone = deletion(&expunged("<s@x>", true), &[copy("Drafts", 4, true, "<s@x>")]).unwrap();
        assert_eq!(gone.direction.as_deref(), Some("outbound"));
        assert!(deletion(&expunged("<s@x>", true), &[]).is_some());
        // A Message-ID cut by the log finds its copy.
        let long = format!("<{}@x>", "l".repeat(90));
        let cut = format!("{}...", &long[..80]);
        assert_eq!(deletion(&expunged(&cut, false), &[copy("Trash", 5, true, &long)]), None);
    }

    #[test]
    fn a_set_message_is_looked_at_again_later_and_later() {
        let mut recheck = Recheck {
            set_ms: 1_000,
            looks: 0,
            seen: true,
            folder: INBOX.into(),
        };
        let mut due = Vec::new();
        for looks in 0..RECHECKS_AFTER_MS.len() {
            recheck.looks = looks;
            due.push(recheck.due_ms());
        }
        assert_eq!(due, [4_000, 16_000, 61_000]);
    }

    #[test]
    fn spam_goes_to_junk_read_and_back_out_when_reported_not_spam() {
        let spam = json!({"messageId": "<f@x>", "direction": "inbound", "unread": false, "gone": false, "spam": true});
        let plan_in = plan(&[&spam], &[copy("INBOX", 7, false, "<f@x>")]);
        assert_eq!(plan_in.moves[&("INBOX".to_string(), "Junk".to_string())], [7]);
        assert_eq!(plan_in.flags[&("INBOX".to_string(), true)], [7], "spam is never unread");
        let back =
            json!({"messageId": "<f@x>", "direction": "inbound", "folder": "inbox", "unread": true, "gone": false});
        let plan_out = plan(&[&back], &[copy("Junk", 2, true, "<f@x>")]);
        assert_eq!(plan_out.moves[&("Junk".to_string(), "INBOX".to_string())], [2]);
        assert_eq!(plan_out.flags[&("Junk".to_string(), false)], [2]);
    }

    #[test]
    fn a_backlogs_plan_names_every_copy_once() {
        // 3000 states read; each message has a copy in INBOX, every third a
        // second one in a folder of the person's own, a fifth already read.
        let states: Vec<Value> = (0..3000)
            .map(|i| json!({"messageId": format!("<b{i}@x>"), "direction": "inbound", "folder": "inbox", "unread": false, "gone": false}))
            .collect();
        let mut copies: Vec<Copy> = (0..3000u32)
            .map(|i| copy("INBOX", i + 1, i % 5 == 0, &format!("<b{i}@x>")))
            .collect();
        copies.extend(
            (0..3000u32)
                .step_by(3)
                .map(|i| copy("Receipts", i + 1, false, &format!("<b{i}@x>"))),
        );
        // A namesake in Sent and a message no state names stay as they are.
        copies.push(copy("Sent", 1, false, "<b1@x>"));
        copies.push(copy("INBOX", 9001, false, "<other@x>"));
        let states: Vec<&Value> = states.iter().collect();
        let plan = plan(&states, &copies);
        let inbox = &plan.flags[&("INBOX".to_string(), true)];
        assert_eq!(inbox.len(), 2400, "every unread INBOX copy, none twice");
        let mut unique = inbox.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), inbox.len());
        assert!(!inbox.contains(&9001));
        // The person's own folder reads as archived: inbox moves it back.
        assert_eq!(plan.flags[&("Receipts".to_string(), true)].len(), 1000);
        assert_eq!(plan.moves[&("Receipts".to_string(), "INBOX".to_string())].len(), 1000);
        assert_eq!(plan.flags.len(), 2, "Sent untouched");
    }

    #[test]
    fn a_copy_being_deleted_is_not_moved_away_from_its_expunge() {
        let state =
            json!({"messageId": "<a@x>", "direction": "inbound", "folder": "inbox", "unread": false, "gone": false});
        let deleting = Copy {
            deleted: true,
            ..copy("Trash", 4, false, "<a@x>")
        };
        let plan = plan(&[&state], &[deleting]);
        assert!(plan.moves.is_empty(), "{plan:?}");
        assert_eq!(plan.flags[&("Trash".to_string(), true)], [4]);
    }

    #[test]
    fn second_looks_are_saved_with_the_state() {
        let state = State {
            looks: vec![Look {
                user: "me@t.example".into(),
                message_id: "<a@x>".into(),
                recheck: Recheck {
                    set_ms: 5,
                    looks: 1,
                    seen: true,
                    folder: TRASH.into(),
                },
            }],
            ..State::default()
        };
        let text = serde_json::to_string(&state).unwrap();
        let back: State = serde_json::from_str(&text).unwrap();
        assert_eq!(back.looks.len(), 1, "{text}");
        let look = &back.looks[0];
        assert_eq!(
            (
                look.message_id.as_str(),
                look.recheck.looks,
                look.recheck.folder.as_str()
            ),
            ("<a@x>", 1, TRASH)
        );
        assert!(serde_json::from_str::<State>(r#"{"seq": 3}"#).unwrap().looks.is_empty());
    }

    #[test]
    fn a_state_already_there_plans_nothing() {
        let state =
            json!({"messageId": "<a@x>", "direction": "inbound", "folder": "inbox", "unread": true, "gone": false});
        let plan = plan(&[&state], &[copy("INBOX", 1, false, "<a@x>")]);
        assert_eq!(plan, Plan::default());
    }
}
