//! Dovecot's log, as `mail_log` writes it for IMAP sessions: what a client
//! did to which message. Only IMAP loads the plugin, so the agent's own
//! `doveadm` changes and Dovecot's deliveries write nothing here: no echo.
//!
//! ```text
//! Nov 28 02:32:30 imap(me@example.com)<2830><Wgj//Exh>: Info: flag_change: box=INBOX, uid=1, msgid=<a@b>, flags=(\Seen)
//! Nov 28 02:32:30 imap(me@example.com)<2830><Wgj//Exh>: Info: copy from INBOX: box=Archive, uid=1, msgid=<a@b>, flags=()
//! ```
//!
//! (syslog's lines carry the same text after `dovecot: `, without `Info: `.)
//! The reading position (the file's inode and a byte offset) is kept in the
//! agent's state, saved only once the service took what was read.

use std::io::{Read as _, Seek, SeekFrom};
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use anyhow::Context as _;

/// What a client did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    FlagChange,
    /// APPEND (or a save by another IMAP command).
    Save,
    /// COPY, or the first half of MOVE.
    Copy,
    Expunge,
}

/// One change of one message, as logged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Logged {
    /// The IMAP login: the mailbox's address.
    pub user: String,
    pub kind: Kind,
    /// The folder it happened in (a copy's destination).
    pub folder: String,
    pub uid: u32,
    /// As logged: Dovecot ends one cut past 80 characters with `...`.
    pub message_id: String,
    pub seen: bool,
}

/// Reads one line; `None` for every line that is no message change.
pub fn parse(line: &str) -> Option<Logged> {
    let at = line.find("imap(")?;
    let rest = &line[at + "imap(".len()..];
    let close = rest.find(')')?;
    let user = rest[..close].trim().to_ascii_lowercase();
    let rest = &rest[close..];
    // `)<pid><session>: ` then, in Dovecot's own log, `Info: `.
    let rest = &rest[rest.find(": ")? + 2..];
    let rest = rest.strip_prefix("Info: ").unwrap_or(rest);
    let (event, fields) = rest.split_once(": box=")?;
    let kind = match event {
        "flag_change" => Kind::FlagChange,
        "save" => Kind::Save,
        "expunge" => Kind::Expunge,
        e if e.starts_with("copy from ") => Kind::Copy,
        _ => return None,
    };
    // From the right: a folder's name may hold anything.
    let flags_at = fields.rfind(", flags=(")?;
    let flags = fields[flags_at + ", flags=(".len()..].trim_end().trim_end_matches(')');
    let fields = &fields[..flags_at];
    let msgid_at = fields.rfind(", msgid=")?;
    let message_id = fields[msgid_at + ", msgid=".len()..].trim().to_string();
    let fields = &fields[..msgid_at];
    let uid_at = fields.rfind(", uid=")?;
    let uid = fields[uid_at + ", uid=".len()..].trim().parse().ok()?;
    let folder = fields[..uid_at].to_string();
    if user.is_empty() || message_id.is_empty() {
        return None;
    }
    Some(Logged {
        user,
        kind,
        folder,
        uid,
        message_id,
        seen: flags.split_whitespace().any(|f| f.eq_ignore_ascii_case("\\Seen")),
    })
}

/// Where reading stands.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Position {
    pub inode: u64,
    pub offset: u64,
}

/// What one read found: the changes, where it stopped, and whether more is
/// there to read.
pub struct Read {
    pub changes: Vec<Logged>,
    pub position: Position,
    pub more: bool,
}

/// Reads complete lines from `position` on, at most `budget` bytes. A file
/// with another inode, or shorter than the offset, was rotated or replaced:
/// it is read from its start. A missing file reads as nothing.
pub fn read_new(path: &Path, position: Position, budget: u64) -> anyhow::Result<Read> {
    let mut file = match std::fs::File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Ok(Read {
                changes: Vec::new(),
                position,
                more: false,
            });
        }
        Err(e) => return Err(e).with_context(|| format!("opening {}", path.display())),
    };
    let meta = file.metadata()?;
    let mut from = position.offset;
    if meta.ino() != position.inode || meta.len() < from {
        from = 0;
    }
    file.seek(SeekFrom::Start(from))?;
    let mut bytes = Vec::new();
    file.take(budget).read_to_end(&mut bytes)?;
    // Only whole lines: a line being written is read next time.
    let whole = bytes.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
    let changes = bytes[..whole]
        .split(|b| *b == b'\n')
        .filter_map(|line| parse(&String::from_utf8_lossy(line)))
        .collect();
    let offset = from + whole as u64;
    Ok(Read {
        changes,
        position: Position {
            inode: meta.ino(),
            offset,
        },
        more: offset < meta.len() && whole > 0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flag_change_a_move_and_an_expunge_read_as_logged() {
        let flag = parse(
            "Nov 28 02:32:30 imap(Me@T.example)<2830><Wgj//Exhnst/AAAB>: Info: flag_change: box=INBOX, uid=1, msgid=<one@b.example>, flags=(\\Seen \\Recent)",
        )
        .unwrap();
        assert_eq!(flag.user, "me@t.example");
        assert_eq!((flag.kind, flag.uid, flag.seen), (Kind::FlagChange, 1, true));
        assert_eq!(
            (flag.folder.as_str(), flag.message_id.as_str()),
            ("INBOX", "<one@b.example>")
        );
        let copy = parse(
            "Nov 28 02:32:30 imap(me@t.example)<2830><Wgj>: Info: copy from INBOX: box=Archive, uid=7, msgid=<one@b.example>, flags=()",
        )
        .unwrap();
        assert_eq!(
            (copy.kind, copy.folder.as_str(), copy.seen),
            (Kind::Copy, "Archive", false)
        );
        // syslog's form, and a folder whose name looks like the fields.
        let odd = parse(
            "Nov 28 02:32:30 mx dovecot: imap(me@t.example)<1><s>: expunge: box=Reçus, uid=9, msgid=<x@y>, uid=3, msgid=<a@b>, flags=(\\Deleted)",
        )
        .unwrap();
        assert_eq!(
            (odd.kind, odd.folder.as_str(), odd.uid),
            (Kind::Expunge, "Reçus, uid=9, msgid=<x@y>", 3)
        );
        assert_eq!(odd.message_id, "<a@b>");
    }

    #[test]
    fn other_lines_are_not_changes() {
        for line in [
            "Nov 28 02:32:30 imap-login: Info: Login: user=<me@t.example>, method=PLAIN",
            "Nov 28 02:32:30 imap(me@t.example)<1><s>: Info: Disconnected: Logged out in=69 out=886",
            "Nov 28 02:32:29 lda(me@t.example)<2778><a28x>: Info: msgid=<one@b.example>: saved mail to INBOX",
            "Nov 28 02:32:30 imap(me@t.example)<1><s>: Info: Mailbox created: Archive",
            "Nov 28 02:32:30 imap(me@t.example)<1><s>: Info: save: box=INBOX, uid=2, msgid=, flags=()",
        ] {
            assert_eq!(parse(line), None, "{line}");
        }
    }

    #[test]
    fn reading_resumes_at_the_saved_byte_and_leaves_a_partial_line() {
        let dir = std::env::temp_dir().join(format!("mbsync-log-{:016x}", rand_u64()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("dovecot.log");
        let line = |uid: u32| {
            format!(
                "Nov 28 02:32:30 imap(me@t.example)<1><s>: Info: flag_change: box=INBOX, uid={uid}, msgid=<m{uid}@x>, flags=()\n"
            )
        };
        std::fs::write(&path, format!("{}{}partial", line(1), line(2))).unwrap();
        let first = read_new(&path, Position::default(), 1 << 20).unwrap();
        assert_eq!(first.changes.len(), 2);
        let mut more = std::fs::OpenOptions::new().append(true).open(&path).unwrap();
        std::io::Write::write_all(&mut more, b" line\n").unwrap();
        std::io::Write::write_all(&mut more, line(3).as_bytes()).unwrap();
        let second = read_new(&path, first.position, 1 << 20).unwrap();
        assert_eq!(second.changes.iter().map(|c| c.uid).collect::<Vec<_>>(), [3]);
        // Replaced (another inode): from its start.
        std::fs::remove_file(&path).unwrap();
        std::fs::write(&path, line(4)).unwrap();
        let third = read_new(&path, second.position, 1 << 20).unwrap();
        assert_eq!(third.changes.iter().map(|c| c.uid).collect::<Vec<_>>(), [4]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    fn rand_u64() -> u64 {
        use std::hash::{BuildHasher, RandomState};
        RandomState::new().hash_one(std::time::SystemTime::now())
    }
}
