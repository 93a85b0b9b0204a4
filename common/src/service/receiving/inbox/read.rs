//! Reading stored mail: GET /inbox (the flat list, a read, threads, search)
//! and the reading tools.

use serde_json::value::RawValue;

use super::fields::*;
use super::scope::*;
use super::shapes::*;
use super::wait::*;
use crate::error::{self, ApiError};
use crate::keys;
use crate::service::caller::Call;
use crate::service::delivery::boundary::Boundary;
use crate::service::mail_store::{self, Folder, Row, Thread};
use crate::values::Page;
use crate::values::{Chars, Cursor, EmailAddress, Needle, RowId, StoredMessageId, ThreadId};

// ------------------------------------------------------------ GET /inbox

crate::input! {
    pub struct InboxQuery {
        /// 1 to 50, default 25.
        pub limit: Option<Limit>,
        /// Agent key and operators only: an address at the service domain
        /// (default inbox@ the service domain).
        pub mailbox: Option<EmailAddress> = error::INBOX_MAILBOX_INVALID,
        /// Reads that message (with its text) and marks it read.
        pub id: Option<RowId> = error::INBOX_ID_INVALID,
        /// Reads the message with this Message-ID (id wins).
        pub message_id: Option<StoredMessageId> = error::INBOX_MESSAGE_ID_INVALID,
        /// `threads` lists conversation threads; `quarantine` the received
        /// mail kept out of the inbox (spoofed, or refused by a sender list),
        /// `spam` the mail whose content is spam, newest first.
        pub view: Option<View> = error::INBOX_VIEW_INVALID,
        /// A thread's messages, oldest first; marks its inbound rows read.
        pub thread: Option<ThreadId> = error::INBOX_THREAD_INVALID,
        /// Search subject, sender and body of the newest 200 inbound and 200
        /// outbound rows; 2 to 200 characters.
        pub q: Option<Chars<2, 200>> = error::INBOX_QUERY_INVALID,
        /// inbox, archive or trash. Threads: default inbox; list and search:
        /// every folder.
        pub folder: Option<Folder> = error::INBOX_FOLDER_INVALID,
        /// The nextCursor of the previous page.
        pub cursor: Option<Cursor> = error::CURSOR_INVALID,
        /// Wait up to this many seconds (1 to 25) for a matching message.
        pub wait: Option<WaitSeconds> = error::INBOX_WAIT_INVALID,
        /// With wait: only messages after this message id; without it, unread ones.
        pub after: Option<Cursor> = error::CURSOR_INVALID,
        /// With wait: the sender contains this (case-insensitive).
        pub from: Option<Needle> = error::INBOX_FILTER_INVALID,
        /// With wait: the subject contains this (case-insensitive).
        pub subject: Option<Needle> = error::INBOX_FILTER_INVALID,
        /// For agents, with id, messageId or thread: wrap what the sender
        /// wrote in a random per-response delimiter, provenance outside.
        pub envelope: Option<bool> = error::INBOX_ENVELOPE_INVALID,
    }
}

pub async fn inbox(call: &Call<'_>, q: InboxQuery) -> Result<InboxOutput, ApiError> {
    let limit = Limit::rows(q.limit, DEFAULT_LIMIT);
    let boundary = q.envelope.unwrap_or(false).then(Boundary::new);
    match target(q.id, q.message_id, q.thread) {
        Some(Target::Thread(thread)) => {
            let scope = scope(call, q.mailbox.as_deref())?;
            return Ok(InboxOutput::Thread(Box::new(
                read_thread(call, &scope, &thread, q.cursor.as_deref(), boundary.as_ref()).await?,
            )));
        }
        Some(target) => {
            let scope = scope(call, q.mailbox.as_deref())?;
            let read = read_message(call, &scope, &target, None, boundary.as_ref()).await?;
            return Ok(InboxOutput::Message(Box::new(read)));
        }
        None => {}
    }
    let scope = scope(call, q.mailbox.as_deref())?;
    if let Some(text) = q.q {
        return Ok(InboxOutput::List(
            search_scope(call, &scope, &text, q.folder, q.cursor.as_deref(), limit).await?,
        ));
    }
    if q.view == Some(View::Quarantine) {
        return Ok(InboxOutput::List(
            quarantine_page(call, &scope, q.cursor.as_deref(), limit).await?,
        ));
    }
    if q.view == Some(View::Spam) {
        return Ok(InboxOutput::List(
            spam_page(call, &scope, q.cursor.as_deref(), limit).await?,
        ));
    }
    if q.view.is_some() {
        let folder = q.folder.unwrap_or(Folder::Inbox);
        return Ok(InboxOutput::Threads(
            threads_page(call, &scope, folder, q.cursor.as_deref(), limit).await?,
        ));
    }
    if let Some(seconds) = q.wait {
        let filter = WaitFilter {
            after: q.after,
            from: q.from,
            subject: q.subject,
        };
        let Page { items, next_cursor } = wait_rows(call, &scope, &filter, seconds.get(), limit).await?;
        return Ok(InboxOutput::List(InboxList::of(&items, next_cursor)?));
    }
    Ok(InboxOutput::List(
        flat_page(call, &scope, q.folder, q.cursor.as_deref(), limit).await?,
    ))
}

pub(super) async fn flat_page(
    call: &Call<'_>,
    scope: &str,
    folder: Option<Folder>,
    cursor: Option<&str>,
    limit: usize,
) -> Result<InboxList, ApiError> {
    // Either way the page is of rows from their home partition.
    let pk = keys::mail_partition(scope, false);
    let Page { items, next_cursor } = match folder {
        Some(f) => mail_store::folder_page_raw(call.ctx, scope, f, cursor, limit, visible(call)).await?,
        None => mail_store::page_raw_where(call.ctx, pk.clone(), true, cursor, limit, visible(call)).await?,
    };
    let (messages, unread_in_page) = call.ctx.summaries.page(&pk, items, encode_stored)?;
    Ok(InboxList {
        ok: true,
        messages,
        unread_in_page,
        next_cursor,
        envelope: None,
    })
}

/// A page of the quarantine, newest first. Reading it marks nothing (its
/// rows are never unread).
pub(super) async fn quarantine_page(
    call: &Call<'_>,
    scope: &str,
    cursor: Option<&str>,
    limit: usize,
) -> Result<InboxList, ApiError> {
    let Page {
        items: rows,
        next_cursor,
    } = mail_store::quarantined(call.ctx, scope, cursor, limit, visible(call)).await?;
    InboxList::of(&rows, next_cursor)
}

/// A page of the spam folder, newest first; as the quarantine's, its rows
/// are never unread.
pub(super) async fn spam_page(
    call: &Call<'_>,
    scope: &str,
    cursor: Option<&str>,
    limit: usize,
) -> Result<InboxList, ApiError> {
    let Page {
        items: rows,
        next_cursor,
    } = mail_store::in_spam(call.ctx, scope, cursor, limit, visible(call)).await?;
    InboxList::of(&rows, next_cursor)
}

/// A stored row's summary and unread flag, from its text: the values are
/// copied as they are, not decoded (see [`StoredSummary`]).
fn encode_stored(text: &[u8]) -> Result<(Box<RawValue>, bool), ApiError> {
    let text = std::str::from_utf8(text).map_err(ApiError::internal)?;
    let summary: StoredSummary<'_> = serde_json::from_str(text).map_err(ApiError::internal)?;
    Ok((summary.encode(), summary.unread))
}

pub(super) async fn threads_page(
    call: &Call<'_>,
    scope: &str,
    folder: Folder,
    cursor: Option<&str>,
    limit: usize,
) -> Result<ThreadList, ApiError> {
    let pk = keys::threads_partition(scope, folder.as_str());
    let Page { items, next_cursor } =
        mail_store::page_raw_where(call.ctx, pk, true, cursor, limit, visible(call)).await?;
    let listed = items.iter().map(|i| i.record()).collect::<Result<Vec<Thread>, _>>()?;
    let threads = mail_store::summaries_of(call.ctx, scope, listed).await?;
    Ok(ThreadList {
        ok: true,
        threads,
        next_cursor,
        envelope: None,
    })
}

/// A thread's summary and a page of its messages, oldest first; every unread
/// inbound row of the thread is marked read.
pub(super) async fn read_thread(
    call: &Call<'_>,
    scope: &str,
    thread: &str,
    cursor: Option<&str>,
    boundary: Option<&Boundary>,
) -> Result<ThreadView, ApiError> {
    let view = read_thread_rows(call, scope, thread, cursor).await?;
    Ok(match boundary {
        None => view,
        Some(b) => b.thread_view(view),
    })
}

async fn read_thread_rows(
    call: &Call<'_>,
    scope: &str,
    thread: &str,
    cursor: Option<&str>,
) -> Result<ThreadView, ApiError> {
    let ctx = call.ctx;
    let (summary, page) = tokio::join!(
        find_thread(call, scope, thread),
        mail_store::thread_rows(ctx, scope, thread, false, cursor, THREAD_PAGE)
    );
    let mut summary = summary?;
    let Page {
        items: mut rows,
        next_cursor,
    } = page?;
    // Owner-only mail that joined a thread stays the owner's.
    rows.retain(|r| r.readable_by(call.caller));
    let unread_here = rows.iter().filter(|r| r.unread).count() as i64;
    if call.peek {
        return Ok(ThreadView {
            ok: true,
            messages: summaries(ctx, &rows).await?,
            thread: summary,
            next_cursor,
            envelope: None,
        });
    }
    let rows = if summary.unread_count > unread_here {
        // Unread rows beyond this page: read them all to mark them.
        let all = mail_store::all_thread_rows(ctx, scope, thread).await?;
        let unread: Vec<Row> = all.into_iter().filter(|r| r.unread).collect();
        mail_store::set_unread(ctx, scope, unread, false).await?;
        rows.into_iter().map(|r| Row { unread: false, ..r }).collect()
    } else {
        let (unread, read): (Vec<Row>, Vec<Row>) = rows.into_iter().partition(|r| r.unread);
        let mut rows = read;
        rows.extend(mail_store::set_unread(ctx, scope, unread, false).await?);
        rows.sort_by(|a, b| a.id.cmp(&b.id));
        rows
    };
    summary.unread_count = 0;
    Ok(ThreadView {
        ok: true,
        thread: summary,
        messages: summaries(ctx, &rows).await?,
        next_cursor,
        envelope: None,
    })
}

/// Rows of the newest 200 of each direction whose subject, sender or body
/// holds the text, newest first: a body longer than the row keeps is read
/// whole from its blob. Marks nothing read.
pub(super) async fn search_scope(
    call: &Call<'_>,
    scope: &str,
    text: &str,
    folder: Option<Folder>,
    cursor: Option<&str>,
    limit: usize,
) -> Result<InboxList, ApiError> {
    let (inbound, outbound) = tokio::join!(
        mail_store::newest(call.ctx, scope, false, SEARCH_DEPTH),
        mail_store::newest(call.ctx, scope, true, SEARCH_DEPTH)
    );
    let needle = text.to_lowercase();
    let (mut hits, long): (Vec<Row>, Vec<Row>) = inbound?
        .into_iter()
        .chain(outbound?)
        .filter(|r| folder.is_none_or(|f| r.folder() == f) && r.readable_by(call.caller))
        .filter(|r| r.matches(&needle) || r.text_in_blob)
        .partition(|r| r.matches(&needle));
    let needle = &needle;
    let mut whole = futures::StreamExt::buffer_unordered(
        futures::stream::iter(long.into_iter().map(|row| async move {
            let text = mail_store::whole_text(call.ctx, &row).await?;
            Ok::<_, ApiError>(text.to_lowercase().contains(needle).then_some(row))
        })),
        16,
    );
    while let Some(found) = futures::StreamExt::next(&mut whole).await {
        hits.extend(found?);
    }
    hits.sort_by(|a, b| b.id.cmp(&a.id));
    // Pages as a list's: newest first, after the cursor (the last id of
    // the page before), a cursor when more matched.
    hits.retain(|r| cursor.is_none_or(|c| r.id.as_str() < c));
    let page = Page::first(hits, limit, |r| r.id.clone());
    InboxList::of_summaries(&summaries(call.ctx, &page.items).await?, page.next_cursor)
}

/// A message with its body, marked read; the text cut at `max_chars` when
/// given (before it is wrapped), and what the sender wrote wrapped when a
/// boundary is given.
pub(super) async fn read_message(
    call: &Call<'_>,
    scope: &str,
    target: &Target,
    max_chars: Option<usize>,
    boundary: Option<&Boundary>,
) -> Result<MessageRead, ApiError> {
    let row = find(call, scope, target).await?;
    let row = if row.unread && !call.peek {
        mail_store::set_unread(call.ctx, scope, vec![row], false)
            .await?
            .into_iter()
            .next()
            .ok_or(error::NOT_FOUND)?
    } else {
        row
    };
    let (mut text, mut html) = mail_store::body(call.ctx, &row).await?;
    let mut truncated = None;
    if let Some(max) = max_chars {
        let cut_text = cut_chars(&mut text, max);
        let cut_html = html.as_mut().is_some_and(|h| cut_chars(h, max));
        truncated = Some(cut_text || cut_html);
    }
    let message = MessageView {
        // A read of one message carries every check, and every rule of the
        // content verdict.
        summary: Summary {
            authentication: row.authentication.clone(),
            spam: row.spam.clone(),
            ..summaries(call.ctx, std::slice::from_ref(&row)).await?.remove(0)
        },
        text,
        html,
    };
    let (message, envelope) = match boundary {
        None => (message, None),
        Some(b) => {
            let envelope = b.describe_read(&message.summary);
            (b.message(message), Some(envelope))
        }
    };
    Ok(MessageRead {
        ok: true,
        message,
        truncated,
        envelope,
    })
}

fn cut_chars(s: &mut String, max: usize) -> bool {
    match s.char_indices().nth(max) {
        Some((at, _)) => {
            s.truncate(at);
            true
        }
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::service::mail_store::{AttachmentInfo, Direction};
    use crate::store::{self, Key};

    fn row(date: Option<String>, folder: Option<Folder>, attachments: Vec<AttachmentInfo>, conflict: bool) -> Row {
        Row {
            id: "m1".into(),
            message_id: "<a\"b@example.org>".into(),
            mailbox: "inbox@example.org".into(),
            direction: Direction::Inbound,
            from: "Zoë \\ \u{1}<z@example.org>".into(),
            to: vec!["inbox@example.org".into(), "b@example.org".into()],
            subject: "Snow ☃ \"quoted\"\ttab".into(),
            preview: "line\nbreak".into(),
            date,
            ingested_at: "2026-11-23T10:00:00Z".into(),
            unread: true,
            folder,
            source: "smtp".into(),
            thread_id: "ab".repeat(32),
            attachments,
            blob_prefix: "mail/inbox@example.org/00".into(),
            text: "the body, which a list never shows".into(),
            text_in_blob: false,
            has_html: true,
            digest: "00ff".into(),
            message_id_conflict: conflict,
            delivery: None,
            authentication: None,
            spam: None,
            quarantine: None,
            ttl: None,
            owner_only: false,
            raw: None,
            from_name: Some("Zoë \"Z\" \u{1}".into()),
            cc: vec!["c@example.org".into()],
            bcc: Vec::new(),
            reply_to: vec!["r@example.org".into()],
            names: [("c@example.org".to_string(), "Cé".to_string())].into(),
            references: vec!["<root@example.org>".into()],
        }
    }

    /// A row with every check, kept out of the inbox.
    fn judged() -> Row {
        use crate::mail::authenticate::*;
        Row {
            authentication: Some(Authentication {
                summary: Summary::Fail,
                spoofed: true,
                spf: Some(SpfCheck {
                    result: Verdict::Fail,
                    domain: "example.org".into(),
                    client_ip: Some("192.0.2.9".into()),
                    helo: Some("mx \"x\"".into()),
                }),
                dkim: Some(vec![DkimCheck {
                    result: Verdict::Fail,
                    domain: "example.org".into(),
                    selector: "s1".into(),
                }]),
                dmarc: Some(DmarcCheck {
                    result: Verdict::Fail,
                    domain: "example.org".into(),
                    policy: Some(DmarcPolicy::Reject),
                    spf_aligned: false,
                    dkim_aligned: false,
                    by_arc: None,
                }),
                arc: None,
                authors: None,
            }),
            quarantine: Some(mail_store::Quarantined {
                reason: mail_store::Quarantine::Spoofed,
                at: "2026-11-23T10:00:00Z".into(),
            }),
            ttl: Some(1_800_000_000),
            spam: crate::mail::spam::SpamVerdict::from_header(
                r#"{"score":15.5,"action":"reject","symbols":{"GTUBE":15,"MIME_GOOD":-0.1}}"#,
            ),
            ..row(None, None, vec![], false)
        }
    }

    /// A page read from stored text answers what the rows themselves would.
    #[test]
    fn a_stored_rows_summary_is_its_summary() {
        let attachment = AttachmentInfo {
            index: 0,
            filename: "a.pdf".into(),
            content_type: "application/pdf".into(),
            size: 12,
            download_path: "/attachment?id=m1&index=0".into(),
            content_id: None,
        };
        let rows = [
            row(None, None, vec![], false),
            row(None, None, vec![], true),
            row(
                Some("Mon, 23 Nov 2026 10:00:00 +0000".into()),
                Some(Folder::Archive),
                vec![attachment],
                false,
            ),
            judged(),
            // A verdict in the inbox: the same bytes as its summary.
            Row {
                spam: judged().spam,
                ..row(None, None, vec![], false)
            },
            Row {
                owner_only: true,
                bcc: vec!["hidden@example.org".into()],
                from_name: None,
                names: Default::default(),
                direction: Direction::Outbound,
                quarantine: None,
                authentication: judged()
                    .authentication
                    .map(|a| crate::mail::authenticate::Authentication {
                        summary: crate::mail::authenticate::Summary::Pass,
                        spoofed: false,
                        ..a
                    }),
                ..row(None, Some(Folder::Trash), vec![], true)
            },
        ];
        for r in rows {
            let item = store::item(&Key::new("MAIL#S#in", &r.id), &r);
            let (from_text, unread) = encode_stored(&serde_json::to_vec(&item).unwrap()).unwrap();
            let from_row = serde_json::to_string(&Summary::from(&r)).unwrap();
            assert!(unread);
            assert_eq!(
                serde_json::from_str::<serde_json::Value>(from_text.get()).unwrap(),
                serde_json::from_str::<serde_json::Value>(&from_row).unwrap()
            );
            let text = from_text.get();
            assert!(!text.contains("body") && !text.contains("blobPrefix") && !text.contains("\"pk\""));
            assert!(!text.contains("digest") && !text.contains("ttl") && !text.contains("dmarc"));
            // A list row's verdict is its score and action, not its rules.
            assert!(!text.contains("GTUBE") && !text.contains("symbols"));
            assert!(!text.contains("references"), "a list row carries no References");
            // Same fields in the same order: without attachments or a
            // quarantine (whose stored keys are sorted) the two encodings are
            // the same bytes.
            if r.attachments.is_empty() && r.quarantine.is_none() {
                assert_eq!(text, from_row);
            }
        }
    }

    /// The names the summary writes by hand are the ones serde writes.
    #[test]
    fn the_names_written_by_hand_are_serdes() {
        use crate::mail::authenticate::Summary as AuthSummary;
        let quoted = |name: &str| format!("\"{name}\"");
        for f in Folder::ALL {
            assert_eq!(serde_json::to_string(&f).unwrap(), quoted(f.as_str()));
        }
        for d in [Direction::Inbound, Direction::Outbound] {
            assert_eq!(serde_json::to_string(&d).unwrap(), quoted(d.as_str()));
        }
        for s in [AuthSummary::Pass, AuthSummary::Fail, AuthSummary::None] {
            assert_eq!(serde_json::to_string(&s).unwrap(), quoted(s.as_str()));
        }
        use crate::mail::spam::SpamAction::*;
        for a in [NoAction, Greylist, AddHeader, RewriteSubject, SoftReject, Reject] {
            assert_eq!(serde_json::to_string(&a).unwrap(), quoted(a.as_str()));
        }
    }
}
