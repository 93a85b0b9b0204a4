//! Bounces from mail systems that never adopted RFC 3464 (older Exim,
//! qmail, Yahoo's and Gmail's plain-text notices), and auto-replies: the
//! human text read for the one fact a report would have carried.

use mail_parser::Message;

use super::{
    Action, Dsn, MAX_RECIPIENTS, RecipientStatus, Unreadable, address, bounded, enhanced_status, first_word,
    reply_code, sender, unfold,
};

/// A bounce by its sender or its subject, the two things every bounce
/// format has kept.
pub(super) fn looks_like_bounce(message: &Message<'_>) -> bool {
    const DAEMONS: [&str; 4] = ["mailer-daemon", "postmaster", "mail-daemon", "mailerdaemon"];
    const SUBJECTS: [&str; 12] = [
        "undeliver",
        "delivery status notification",
        "delivery failure",
        "delivery failed",
        "delivery has failed",
        "failure notice",
        "returned mail",
        "returned to sender",
        "could not be delivered",
        "non-delivery",
        "delivery problem",
        "bounce",
    ];
    let daemon = sender(message)
        .and_then(|from| from.split_once('@').map(|(local, _)| local.to_string()))
        .is_some_and(|local| DAEMONS.contains(&local.as_str()));
    let subject = message.subject().unwrap_or_default().to_lowercase();
    daemon || SUBJECTS.iter().any(|s| subject.contains(s))
}

/// A bounce in prose: the recipients it names (`<addr>:` lines, or the
/// addresses in X-Failed-Recipients), each with the first SMTP reply or
/// enhanced status written under it.
pub(super) fn plain_bounce(message: &Message<'_>) -> Result<Dsn, Unreadable> {
    const NO_CODE: Unreadable = Unreadable("a bounce without an SMTP reply or status code");
    let body = message.body_text(0).ok_or(NO_CODE)?;
    let lines = notice(&body);
    let failed: Vec<String> = message
        .headers_raw()
        .filter(|(name, _)| name.eq_ignore_ascii_case("X-Failed-Recipients"))
        .flat_map(|(_, value)| value.split(',').filter_map(address).collect::<Vec<_>>())
        .collect();
    let anchors: Vec<(usize, String)> = lines
        .iter()
        .enumerate()
        .filter_map(|(i, line)| recipient_line(line, &failed).map(|a| (i, a)))
        .collect();
    let sections: Vec<(Option<String>, &[&str])> = if anchors.is_empty() {
        vec![(failed.first().cloned(), &lines[..])]
    } else {
        let ends = anchors.iter().skip(1).map(|(i, _)| *i).chain([lines.len()]);
        anchors
            .iter()
            .zip(ends)
            .map(|((start, a), end)| (Some(a.clone()), &lines[*start..end]))
            .collect()
    };
    let text = format!("{}\n{}", message.subject().unwrap_or_default(), lines.join("\n")).to_lowercase();
    let action = if delay_wording(&text) {
        Action::Delayed
    } else {
        Action::Failed
    };
    let mut recipients = Vec::new();
    for (recipient, section) in sections {
        let Some((smtp_code, status, diagnostic)) = reply_in(section) else {
            continue;
        };
        if recipients.len() == MAX_RECIPIENTS {
            return Err(Unreadable("more than 100 recipients"));
        }
        recipients.push(RecipientStatus {
            final_recipient: recipient,
            original_recipient: None,
            action,
            status,
            smtp_code,
            diagnostic: Some(diagnostic),
            remote_mta: None,
        });
    }
    if recipients.is_empty() {
        return Err(NO_CODE);
    }
    Ok(Dsn {
        reporting_mta: None,
        recipients,
    })
}

/// The notice's own lines: up to the copy of the returned message, whose
/// headers and text would otherwise read as the bounce's.
fn notice(body: &str) -> Vec<&str> {
    body.lines()
        .take_while(|line| {
            let lower = line.trim().to_lowercase();
            let separator = lower.starts_with('-') && ["copy", "original", "message"].iter().any(|w| lower.contains(w));
            let header = ["received:", "return-path:"]
                .iter()
                .any(|h| line.to_lowercase().starts_with(h));
            !separator && !header
        })
        .collect()
}

/// The recipient a notice line introduces: `<addr>:` (qmail, Yahoo,
/// Postfix's own text) or a line that is one of `failed` (Exim, Gmail).
fn recipient_line(line: &str, failed: &[String]) -> Option<String> {
    let trimmed = line.trim();
    if let Some(rest) = trimmed.strip_prefix('<')
        && let Some((inside, after)) = rest.split_once('>')
        && after.starts_with(':')
        && inside.contains('@')
        && !inside.contains(char::is_whitespace)
    {
        return address(inside);
    }
    failed.iter().find(|f| trimmed.eq_ignore_ascii_case(f)).cloned()
}

/// The first SMTP reply in `lines` (with the lines folded under it), or
/// else the first bare enhanced status, as (code, status, diagnostic).
pub(super) fn reply_in(lines: &[&str]) -> Option<(Option<u16>, Option<String>, String)> {
    for (i, line) in lines.iter().enumerate() {
        let Some(start) = smtp_reply_at(line) else { continue };
        let indent = |l: &str| l.len() - l.trim_start().len();
        let mut text = line[start..].to_string();
        for next in &lines[i + 1..] {
            if next.trim().is_empty() || indent(next) == 0 || indent(next) < indent(line) {
                break;
            }
            text.push(' ');
            text.push_str(next.trim());
        }
        let text = bounded(&unfold(&text));
        // `550 5.1.1 ...` or `550-5.1.1 ...`; the status's class is the code's.
        let status = text
            .get(4..)
            .and_then(|rest| enhanced_status(first_word(rest)))
            .filter(|s| text.starts_with(&s[..1]));
        return Some((reply_code(&text), status, text));
    }
    // A failure notice has no use for a 2.x.x; one in its prose is a version.
    lines.iter().find_map(|line| {
        let status = line
            .split_whitespace()
            .filter_map(enhanced_status)
            .find(|s| !s.starts_with('2'))?;
        Some((None, Some(status), bounded(&unfold(line))))
    })
}

/// Where a 4xx or 5xx reply starts in `line`: three digits standing alone
/// (not part of an address, a date or a number), then a space, a dash or the
/// end of the line.
pub(super) fn smtp_reply_at(line: &str) -> Option<usize> {
    let bytes = line.as_bytes();
    (0..bytes.len().saturating_sub(2)).find(|&i| {
        let before = i.checked_sub(1).map(|j| bytes[j]);
        matches!(bytes[i], b'4' | b'5')
            && bytes[i + 1..i + 3].iter().all(u8::is_ascii_digit)
            && matches!(before, None | Some(b' ' | b'\t' | b':' | b'('))
            && matches!(bytes.get(i + 3), None | Some(b' ' | b'-'))
    })
}

/// Whether a notice says the system is still trying.
pub(super) fn delay_wording(lower: &str) -> bool {
    const DELAYED: [&str; 6] = [
        "delayed",
        "will keep trying",
        "will continue trying",
        "not yet been delivered",
        "still being retried",
        "will retry",
    ];
    const GIVEN_UP: [&str; 3] = ["permanent", "given up", "giving up"];
    DELAYED.iter().any(|w| lower.contains(w)) && !GIVEN_UP.iter().any(|w| lower.contains(w))
}

// ---------------------------------------------------------------------------
// RFC 3834

pub(super) fn is_auto_reply(message: &Message<'_>) -> bool {
    const SUBJECTS: [&str; 10] = [
        "auto:",
        "automatic reply",
        "auto reply",
        "auto-reply",
        "autoreply",
        "auto response",
        "autoresponse",
        "out of office",
        "out of the office",
        "away from",
    ];
    let header = |name: &str| {
        message
            .headers_raw()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.trim().to_ascii_lowercase())
    };
    let subject = message.subject().unwrap_or_default().trim().to_lowercase();
    header("Auto-Submitted").is_some_and(|v| v.starts_with("auto-replied"))
        || header("X-Autoreply").is_some()
        || header("X-Autorespond").is_some()
        || header("Precedence").is_some_and(|v| v == "auto_reply")
        || SUBJECTS.iter().any(|s| subject.starts_with(s))
        || ["out of office", "out of the office", "automatic reply"]
            .iter()
            .any(|s| subject.contains(s))
}
