//! Dovecot through `doveadm`: where a mailbox's messages are and with which
//! flags, and the changes the store asks for (flags, moves, expunges, Sent
//! copies). Changes made this way go through no IMAP session, so Dovecot's
//! `mail_log` (IMAP only) does not log them back to the agent.

use std::io::Write;
use std::process::{Command, Stdio};

use anyhow::{Context as _, anyhow, bail};

/// The folders the store's folders are, and the app's own.
pub const INBOX: &str = "INBOX";
pub const ARCHIVE: &str = "Archive";
pub const TRASH: &str = "Trash";
pub const SENT: &str = "Sent";
pub const DRAFTS: &str = "Drafts";
pub const JUNK: &str = "Junk";

/// Message-IDs one search names at most (`doveadm`'s argument list).
const IDS_PER_SEARCH: usize = 50;
/// Past this many Message-IDs of one mailbox, one pass over all its mail
/// costs less than searches.
const IDS_FOR_A_PASS: usize = 100;

/// One copy of a message in a folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Copy {
    pub folder: String,
    pub uid: u32,
    pub seen: bool,
    /// `\Deleted`: the person's app is deleting it (its expunge to come).
    pub deleted: bool,
    pub message_id: String,
}

/// Whether a Message-ID as logged names this one: whole, or cut by
/// Dovecot's log past 80 characters and ended with `...`.
pub fn same_message_id(logged: &str, whole: &str) -> bool {
    match logged.strip_suffix("...") {
        Some(head) => whole.starts_with(head),
        None => logged == whole,
    }
}

/// `doveadm`, as a program and its first arguments (`doveadm -c <conf>`).
#[derive(Debug, Clone)]
pub struct Doveadm {
    words: Vec<String>,
}

impl Doveadm {
    pub fn new(command: &str) -> Doveadm {
        Doveadm {
            words: command.split_whitespace().map(str::to_string).collect(),
        }
    }

    fn run(&self, args: &[&str], stdin: Option<&[u8]>) -> anyhow::Result<Vec<u8>> {
        let (program, first) = self.words.split_first().ok_or_else(|| anyhow!("no doveadm command"))?;
        let mut command = Command::new(program);
        command
            .args(first)
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        command.stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() });
        let mut child = command.spawn().with_context(|| format!("running {program}"))?;
        if let Some(bytes) = stdin {
            let mut pipe = child.stdin.take().ok_or_else(|| anyhow!("no stdin"))?;
            pipe.write_all(bytes)?;
        }
        let out = child.wait_with_output()?;
        if !out.status.success() {
            bail!(
                "doveadm {} failed ({}): {}",
                args.iter().take(4).copied().collect::<Vec<_>>().join(" "),
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            );
        }
        Ok(out.stdout)
    }

    /// Every copy of these Message-IDs in the user's folders (exact
    /// matches: Dovecot's header search finds substrings).
    pub fn copies(&self, user: &str, message_ids: &[&str]) -> anyhow::Result<Vec<Copy>> {
        if message_ids.is_empty() {
            return Ok(Vec::new());
        }
        let mut found = Vec::new();
        if message_ids.len() > IDS_FOR_A_PASS {
            found = self.fetch(user, &["all"])?;
        } else {
            for chunk in message_ids.chunks(IDS_PER_SEARCH) {
                let mut query = vec!["("];
                for (i, id) in chunk.iter().enumerate() {
                    if i > 0 {
                        query.push("OR");
                    }
                    query.extend(["header", "message-id", id.strip_suffix("...").unwrap_or(id)]);
                }
                query.push(")");
                found.extend(self.fetch(user, &query)?);
            }
        }
        // A set, not a scan of the list per copy: a whole mailbox's pass
        // holds thousands of copies, the list thousands of Message-IDs.
        let whole: std::collections::HashSet<&str> = message_ids.iter().copied().collect();
        let cut: Vec<&str> = message_ids.iter().filter_map(|id| id.strip_suffix("...")).collect();
        found
            .retain(|c| whole.contains(c.message_id.as_str()) || cut.iter().any(|head| c.message_id.starts_with(head)));
        found.sort_by(|a, b| (&a.folder, a.uid).cmp(&(&b.folder, b.uid)));
        found.dedup();
        Ok(found)
    }

    /// The Message-ID of one message by folder and UID.
    pub fn message_id(&self, user: &str, folder: &str, uid: u32) -> anyhow::Result<Option<String>> {
        let uid = uid.to_string();
        Ok(self
            .fetch(user, &["mailbox", folder, "uid", &uid])?
            .into_iter()
            .next()
            .map(|c| c.message_id))
    }

    fn fetch(&self, user: &str, query: &[&str]) -> anyhow::Result<Vec<Copy>> {
        let mut args = vec!["-f", "tab", "fetch", "-u", user, "mailbox uid flags hdr.message-id"];
        args.extend_from_slice(query);
        let out = self.run(&args, None)?;
        let text = String::from_utf8_lossy(&out);
        Ok(text
            .lines()
            .skip(1)
            .filter_map(|line| {
                let mut fields = line.splitn(4, '\t');
                let folder = fields.next()?.to_string();
                let uid = fields.next()?.trim().parse().ok()?;
                let flags = fields.next()?;
                let message_id = fields.next().unwrap_or_default().trim().to_string();
                let flag = |name: &str| flags.split_whitespace().any(|f| f.eq_ignore_ascii_case(name));
                Some(Copy {
                    folder,
                    uid,
                    seen: flag("\\Seen"),
                    deleted: flag("\\Deleted"),
                    message_id,
                })
            })
            .collect())
    }

    /// The bytes of one message (for mail a client appended).
    pub fn text(&self, user: &str, folder: &str, uid: u32) -> anyhow::Result<Vec<u8>> {
        let uid = uid.to_string();
        let out = self.run(
            &[
                "-f", "pager", "fetch", "-u", user, "text", "mailbox", folder, "uid", &uid,
            ],
            None,
        )?;
        // The pager's form: `text:` then the message, then a form feed.
        let body = out.strip_prefix(b"text:\n").unwrap_or(&out);
        let body = body.strip_suffix(b"\x0c\n").unwrap_or(body);
        Ok(body.to_vec())
    }

    /// `\Seen` added to (or removed from) these UIDs of a folder.
    pub fn set_seen(&self, user: &str, folder: &str, uids: &[u32], seen: bool) -> anyhow::Result<()> {
        let verb = if seen { "add" } else { "remove" };
        for set in uid_sets(uids) {
            self.run(
                &["flags", verb, "-u", user, "\\Seen", "mailbox", folder, "uid", &set],
                None,
            )?;
        }
        Ok(())
    }

    pub fn move_to(&self, user: &str, from: &str, uids: &[u32], to: &str) -> anyhow::Result<()> {
        for set in uid_sets(uids) {
            self.run(&["move", "-u", user, to, "mailbox", from, "uid", &set], None)?;
        }
        Ok(())
    }

    pub fn expunge(&self, user: &str, folder: &str, uids: &[u32]) -> anyhow::Result<()> {
        for set in uid_sets(uids) {
            self.run(&["expunge", "-u", user, "mailbox", folder, "uid", &set], None)?;
        }
        Ok(())
    }

    /// Saves a message to a folder, then marks it seen (a sent copy is read).
    pub fn save(&self, user: &str, folder: &str, raw: &[u8], message_id: &str) -> anyhow::Result<()> {
        self.run(&["save", "-u", user, "-m", folder], Some(raw))?;
        self.run(
            &[
                "flags",
                "add",
                "-u",
                user,
                "\\Seen",
                "mailbox",
                folder,
                "header",
                "message-id",
                message_id,
            ],
            None,
        )?;
        Ok(())
    }
}

/// UIDs as IMAP sets (`1:3,7`), a few hundred numbers each.
fn uid_sets(uids: &[u32]) -> Vec<String> {
    let mut sorted = uids.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let mut ranges: Vec<(u32, u32)> = Vec::new();
    for uid in sorted {
        match ranges.last_mut() {
            Some((_, end)) if *end + 1 == uid => *end = uid,
            _ => ranges.push((uid, uid)),
        }
    }
    ranges
        .chunks(200)
        .map(|chunk| {
            chunk
                .iter()
                .map(|(a, b)| if a == b { a.to_string() } else { format!("{a}:{b}") })
                .collect::<Vec<_>>()
                .join(",")
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::uid_sets;

    #[test]
    fn uids_become_ranges() {
        assert_eq!(uid_sets(&[7, 1, 2, 3, 3, 9, 10]), ["1:3,7,9:10"]);
        assert_eq!(uid_sets(&[]), Vec::<String>::new());
    }

    #[test]
    fn many_scattered_uids_become_sets_that_name_each_once() {
        // Every other UID of 20 000 (10 000 ranges of one): sets of 200.
        let uids: Vec<u32> = (1..20_001u32).step_by(2).rev().collect();
        let sets = uid_sets(&uids);
        assert_eq!(sets.len(), 50);
        let mut named: Vec<u32> = sets
            .iter()
            .flat_map(|set| set.split(','))
            .flat_map(|range| match range.split_once(':') {
                Some((a, b)) => (a.parse::<u32>().unwrap()..=b.parse().unwrap()).collect::<Vec<_>>(),
                None => vec![range.parse().unwrap()],
            })
            .collect();
        named.sort_unstable();
        let mut want = uids.clone();
        want.sort_unstable();
        assert_eq!(named, want);
    }
}
