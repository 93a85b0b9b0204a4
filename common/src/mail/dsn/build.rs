//! Genuine reports built for the simulator: an RFC 3464 bounce and an
//! RFC 5965 complaint, written the way Postfix and a mailbox provider
//! write them, so the reader reads them back.

use chrono::{DateTime, Utc};

use super::{Action, reply_code};

/// One recipient's outcome, to build a bounce from.
#[derive(Debug, Clone)]
pub struct Bounce<'a> {
    /// The host that writes the report.
    pub reporting_mta: &'a str,
    /// Where the report goes: the message's return path.
    pub to: &'a str,
    pub recipient: &'a str,
    pub action: Action,
    /// `5.1.1`, `4.4.1`, `2.0.0`.
    pub status: &'a str,
    pub smtp_code: u16,
    /// The remote server's reply, with or without its code in front.
    pub diagnostic: &'a str,
    pub remote_mta: &'a str,
    /// The message the report is about; its header section is returned.
    pub original: &'a str,
    pub date: DateTime<Utc>,
}

/// A genuine RFC 3464 report: a human-readable part, the
/// message/delivery-status part and the original's header section as
/// text/rfc822-headers, the way Postfix writes one. `read` gives back the
/// bounce's facts, addresses in lower case and the diagnostic with the
/// reply code in front.
pub fn build_dsn(b: &Bounce<'_>) -> Vec<u8> {
    let (mta, recipient) = (b.reporting_mta, b.recipient);
    let subject = match b.action {
        Action::Failed => "Undelivered Mail Returned to Sender",
        Action::Delayed => "Delayed Mail (still being retried)",
        Action::Delivered | Action::Relayed | Action::Expanded => "Successful Mail Delivery Report",
    };
    let code = b.smtp_code.to_string();
    let diagnostic = match b.diagnostic.trim() {
        d if reply_code(d) == Some(b.smtp_code) => d.to_string(),
        "" => code,
        d => format!("{code} {d}"),
    };
    let outcome = match b.action {
        Action::Failed => "could not be delivered",
        Action::Delayed => "is not delivered yet; the mail system will keep trying",
        Action::Delivered => "was delivered",
        Action::Relayed => "was relayed to a system that sends no further report",
        Action::Expanded => "was delivered to a list or alias",
    };
    let status = format!(
        "Reporting-MTA: dns; {mta}\r\n\r\n\
         Final-Recipient: rfc822; {recipient}\r\n\
         Action: {action}\r\n\
         Status: {status}\r\n\
         Remote-MTA: dns; {remote}\r\n\
         {diagnostic_field}",
        action = b.action.as_str(),
        status = b.status,
        remote = b.remote_mta,
        diagnostic_field = folded(&format!("Diagnostic-Code: smtp; {diagnostic}")),
    );
    let human = format!(
        "This is the mail system at host {mta}.\r\n\r\n\
         Your message to <{recipient}> {outcome}.\r\n{said}",
        said = folded(&format!("{} said: {diagnostic}", b.remote_mta)),
    );
    let head = format!(
        "From: Mail Delivery System <MAILER-DAEMON@{mta}>\r\n\
         To: <{to}>\r\n\
         Subject: {subject}\r\n\
         Date: {date}\r\n\
         Message-ID: <{id}@{mta}>\r\n\
         Auto-Submitted: auto-replied\r\n",
        to = b.to,
        date = b.date.to_rfc2822(),
        id = message_id(&status, b.original, b.date),
    );
    multipart_report(&head, "delivery-status", &human, &status, b.original).into_bytes()
}

/// A spam complaint, to build a feedback report from.
#[derive(Debug, Clone)]
pub struct Abuse<'a> {
    /// The feedback loop's address, the report's From.
    pub reporter: &'a str,
    /// Where the report goes: the address the sender registered.
    pub to: &'a str,
    pub original_recipient: &'a str,
    pub original_mail_from: &'a str,
    /// The message complained about; its header section is returned.
    pub original: &'a str,
    pub date: DateTime<Utc>,
}

/// A genuine RFC 5965 `abuse` report: a human-readable part, the
/// message/feedback-report part and the original's header section as
/// text/rfc822-headers. `read` gives back its facts, addresses in lower
/// case, with the original's Message-ID.
pub fn build_arf(a: &Abuse<'_>) -> Vec<u8> {
    let host = a.reporter.rsplit_once('@').map_or(a.reporter, |(_, h)| h);
    // Version and User-Agent are required (RFC 5965 section 3.1).
    let report = format!(
        "Feedback-Type: abuse\r\n\
         User-Agent: mailhost-simulator/1.0\r\n\
         Version: 1\r\n\
         Original-Mail-From: <{from}>\r\n\
         Original-Rcpt-To: <{rcpt}>\r\n\
         Arrival-Date: {date}\r\n",
        from = a.original_mail_from,
        rcpt = a.original_recipient,
        date = a.date.to_rfc2822(),
    );
    let human = format!("This is an email abuse report for a message received by {host}.\r\n");
    let head = format!(
        "From: <{reporter}>\r\n\
         To: <{to}>\r\n\
         Subject: Email Feedback Report\r\n\
         Date: {date}\r\n\
         Message-ID: <{id}@{host}>\r\n",
        reporter = a.reporter,
        to = a.to,
        date = a.date.to_rfc2822(),
        id = message_id(&report, a.original, a.date),
    );
    multipart_report(&head, "feedback-report", &human, &report, a.original).into_bytes()
}

/// The three-part multipart/report both builders write under `head` (the
/// outer header fields but the MIME ones): the human text, the
/// machine-readable message/`kind` part and the returned header section.
fn multipart_report(head: &str, kind: &str, human: &str, machine: &str, original: &str) -> String {
    let headers = header_section(original);
    let boundary = boundary(&[head, machine, &headers].concat());
    format!(
        "{head}\
         MIME-Version: 1.0\r\n\
         Content-Type: multipart/report; report-type={kind};\r\n\tboundary=\"{boundary}\"\r\n\
         \r\n\
         This is a MIME-encapsulated message.\r\n\
         \r\n\
         --{boundary}\r\n\
         Content-Description: Notification\r\n\
         Content-Type: text/plain; charset=utf-8\r\n\
         \r\n\
         {human}\
         \r\n\
         --{boundary}\r\n\
         Content-Type: message/{kind}\r\n\
         \r\n\
         {machine}\
         \r\n\
         --{boundary}\r\n\
         Content-Description: Original Message Headers\r\n\
         Content-Type: text/rfc822-headers\r\n\
         \r\n\
         {headers}\
         \r\n\
         --{boundary}--\r\n"
    )
}

/// `original`'s header section with CRLF line ends, ending in one CRLF.
fn header_section(original: &str) -> String {
    let mut out = String::new();
    for line in original.lines().take_while(|line| !line.is_empty()) {
        out.push_str(line);
        out.push_str("\r\n");
    }
    out
}

/// `line` folded at spaces so that no line passes 78 characters where a
/// word break allows it (RFC 5322 section 2.1.1), with its CRLF.
fn folded(line: &str) -> String {
    let mut out = String::new();
    let mut width = 0;
    for word in line.split(' ') {
        if width > 0 && width + 1 + word.len() > 78 {
            out.push_str("\r\n ");
            width = 1;
        } else if width > 0 {
            out.push(' ');
            width += 1;
        }
        out.push_str(word);
        width += word.len();
    }
    out.push_str("\r\n");
    out
}

/// FNV-1a: boundaries and Message-IDs that are the same for the same report,
/// so a built report can be compared byte for byte.
fn fnv(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

fn boundary(seed: &str) -> String {
    // The returned headers are the one part not written here; a boundary
    // they happen to contain would cut them short, so another is taken.
    let mut salt = 0u64;
    loop {
        let b = format!("=_report_{:016x}", fnv(format!("{seed}{salt}").as_bytes()));
        if !seed.contains(&b) {
            return b;
        }
        salt += 1;
    }
}

fn message_id(machine: &str, original: &str, date: DateTime<Utc>) -> String {
    format!(
        "{}.{:016x}",
        date.timestamp(),
        fnv(format!("{machine}{original}").as_bytes())
    )
}
