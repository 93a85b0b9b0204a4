//! Sending to a real SMTP server: STARTTLS and AUTH on submission, what arrives
//! (headers, body, attachments, threading headers), a DKIM signature that
//! dkimpy accepts, and the failure paths (spec 4.1, 7, 8).

use crate::support::smtp::{SmtpSink, dkim_verify};
use crate::support::{self, ALLOWED_DOMAIN, Auth, Backend, TestApp};
use base64::Engine;
use mail_parser::MimeHeaders;
use serde_json::json;

async fn app_with(sink: &SmtpSink) -> TestApp {
    app_sending_to(sink.url(), sink.ca_file()).await
}

/// A service whose outbound relay is `url`, trusting the CA in `ca`.
async fn app_sending_to(url: String, ca: std::path::PathBuf) -> TestApp {
    TestApp::spawn_with(Backend::Embedded, |c| {
        c.smtp_url = Some(url);
        c.smtp_ca_file = Some(ca);
    })
    .await
    .unwrap()
}

/// Publishes the service domain's DKIM key, as its operators would.
async fn publish_service_dkim(app: &TestApp) {
    let domain = common::service::domains::get(&app.ctx, "ops", "svc.test")
        .await
        .unwrap()
        .unwrap();
    let value = common::service::domains::dkim::record_value(&domain.dkim_public);
    app.dns.set_txt("mail._domainkey.svc.test", &[&value]);
}

/// An account onboarded through the relay (with an SMTP relay configured
/// the access code travels through it too), its domain `ann.example`
/// verified and a hosted mailbox `<local>@ann.example` on it; its key.
async fn onboarded_with_mailbox(app: &TestApp, sink: &SmtpSink, local: &str) -> String {
    app.allowlist(ALLOWED_DOMAIN).await;
    let email = format!("ann@{ALLOWED_DOMAIN}");
    let id = app.request_access(&email).await.body["requestId"]
        .as_str()
        .unwrap()
        .to_string();
    let code_mail = sink.wait_for(1).await.remove(0);
    assert_eq!(code_mail.rcpt_tos, std::slice::from_ref(&email));
    let code = support::code_in(&code_mail.text());
    let verified = app
        .post(
            "/verifyAccessRequest",
            Auth::None,
            json!({"requestId": id, "code": code}),
        )
        .await;
    let key = verified.body["apiKey"].as_str().unwrap().to_string();
    app.add_verified_domain(&key, "ann.example").await;
    let added = app.add_mailbox(&key, "ann.example", local, "hosted", json!([])).await;
    assert_eq!(added.status, 200, "{}", added.body);
    key
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_customer_send_arrives_over_starttls_and_auth_signed_with_the_domains_key() {
    let Some(sink) = SmtpSink::start().await else { return };
    let app = app_with(&sink).await;
    let key = onboarded_with_mailbox(&app, &sink, "ann").await;
    let png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01".to_vec();
    let body = json!({
        "to": ["Bob@Partner.example", "carol@partner.example"],
        "subject": "Quarterly numbers ✓",
        "text": "Hello Bob,\n\nThe figures are attached.\n.\nA line with a dot above.",
        "inReplyTo": "<q1@partner.example>",
        "references": ["<q0@partner.example>", "<q1@partner.example>"],
        "attachments": [
            {"filename": "chart.png", "contentBase64": base64::engine::general_purpose::STANDARD.encode(&png)},
            {"filename": "rows.csv", "contentType": "text/csv", "contentBase64": base64::engine::general_purpose::STANDARD.encode(b"q,n\n1,2\n")},
        ],
    });
    let res = app.send_mail(Auth::Bearer(&key), body).await;
    assert_eq!(res.status, 200, "{}", res.body);
    assert_eq!(res.body["attachmentCount"], 2);
    assert_eq!(res.body["creditsRemaining"], 99);

    // One transaction per recipient, each with its own signed return path.
    let got = sink.wait_for(3).await;
    let copies = &got[1..];
    let mut rcpts: Vec<&str> = copies.iter().map(|c| c.rcpt_tos[0].as_str()).collect();
    rcpts.sort();
    assert_eq!(rcpts, ["bob@partner.example", "carol@partner.example"]);
    for c in copies {
        assert_eq!(c.rcpt_tos.len(), 1);
        assert!(
            c.mail_from.starts_with("b-") && c.mail_from.ends_with("@bounce.svc.test"),
            "{}",
            c.mail_from
        );
    }
    assert_ne!(copies[0].mail_from, copies[1].mail_from);
    assert_eq!(copies[0].raw, copies[1].raw, "the same signed bytes");
    let m = &copies[0];
    assert_eq!(m.auth_user.as_deref(), Some(sink.user.as_str()), "submitted with AUTH");
    assert!(m.tls, "after STARTTLS");

    let parsed = mail_parser::MessageParser::default().parse(&m.raw).unwrap();
    assert_eq!(parsed.subject(), Some("Quarterly numbers ✓"));
    assert_eq!(
        parsed.from().unwrap().first().unwrap().address(),
        Some("ann@ann.example")
    );
    assert_eq!(parsed.to().unwrap().iter().count(), 2);
    let id = res.body["messageId"].as_str().unwrap();
    assert_eq!(format!("<{}>", parsed.message_id().unwrap()), id);
    assert_eq!(parsed.in_reply_to().as_text(), Some("q1@partner.example"));
    let refs: Vec<&str> = parsed
        .references()
        .as_text_list()
        .unwrap_or_default()
        .iter()
        .map(|r| r.as_ref())
        .collect();
    assert_eq!(refs, ["q0@partner.example", "q1@partner.example"]);
    assert!(parsed.body_text(0).unwrap().contains("A line with a dot above."));
    assert!(
        parsed.body_text(0).unwrap().lines().any(|l| l.trim_end() == "."),
        "a lone dot survives SMTP dot-stuffing"
    );
    let files: Vec<(String, Vec<u8>)> = parsed
        .attachments()
        .map(|a| (a.attachment_name().unwrap().to_string(), a.contents().to_vec()))
        .collect();
    assert_eq!(
        files,
        [
            ("chart.png".to_string(), png),
            ("rows.csv".to_string(), b"q,n\n1,2\n".to_vec())
        ]
    );
    let raw = String::from_utf8_lossy(&m.raw);
    assert!(raw.contains("d=ann.example") && raw.contains("s=mail"));
    assert!(
        dkim_verify(&m.raw, app.dns.addr),
        "dkimpy accepts the signature against the published key"
    );

    // The signature covers the body: a changed copy fails.
    let tampered = raw.replace("The figures are attached.", "The figures are NOT attached.");
    assert!(!dkim_verify(tampered.as_bytes(), app.dns.addr));
}

/// A send signs its message as the caller's last sender while its reads are
/// out, and keeps it only when the reads find that same sender: once
/// another mailbox is added and the one it sent from deleted, the next send
/// goes from the new one, signed for it.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_message_signed_ahead_is_kept_only_when_its_sender_is_the_one_read() {
    let Some(sink) = SmtpSink::start().await else { return };
    let app = app_with(&sink).await;
    let key = onboarded_with_mailbox(&app, &sink, "ann").await;
    let send = |n: usize| json!({"to": "x@partner.example", "subject": format!("s{n}"), "text": "t"});
    for n in 0..2 {
        let res = app.send_mail(Auth::Bearer(&key), send(n)).await;
        assert_eq!(res.status, 200, "{}", res.body);
    }
    let added = app.add_mailbox(&key, "ann.example", "bob", "hosted", json!([])).await;
    assert_eq!(added.status, 200, "{}", added.body);
    let deleted = app
        .post(
            "/deleteMailbox",
            Auth::Bearer(&key),
            json!({"address": "ann@ann.example"}),
        )
        .await;
    assert_eq!(deleted.status, 200, "{}", deleted.body);
    let res = app.send_mail(Auth::Bearer(&key), send(2)).await;
    assert_eq!(res.status, 200, "{}", res.body);

    let mut seen = Vec::new();
    for _ in 0..50 {
        seen = sink
            .messages()
            .into_iter()
            .filter(|m| m.rcpt_tos == ["x@partner.example"])
            .collect();
        if seen.len() == 3 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(seen.len(), 3);
    for m in &seen {
        let parsed = mail_parser::MessageParser::default().parse(&m.raw).unwrap();
        let from = parsed.from().unwrap().first().unwrap().address().unwrap().to_string();
        let expected = if parsed.subject() == Some("s2") {
            "bob@ann.example"
        } else {
            "ann@ann.example"
        };
        assert_eq!(from, expected, "{:?}", parsed.subject());
        assert!(dkim_verify(&m.raw, app.dns.addr), "{:?} verifies", parsed.subject());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_agent_key_sends_as_noreply_signed_with_the_service_domain() {
    let Some(sink) = SmtpSink::start().await else { return };
    let app = app_with(&sink).await;
    publish_service_dkim(&app).await;
    let res = app
        .send_mail(
            Auth::Bearer(&app.agent_key),
            json!({"to": "x@partner.example", "subject": "s", "text": "t"}),
        )
        .await;
    assert_eq!(res.status, 200, "{}", res.body);
    let got = sink.wait_for(1).await;
    assert!(
        got[0].mail_from.ends_with("@bounce.svc.test"),
        "the return path: {}",
        got[0].mail_from
    );
    assert!(dkim_verify(&got[0].raw, app.dns.addr));
}

/// Cc and Bcc through a real SMTP server (issue 45): one transaction per
/// recipient, the Bcc in its envelope alone and in no header of any copy,
/// every copy the same signed bytes, the html a sanitised alternative that
/// dkimpy still verifies.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn cc_and_bcc_arrive_and_no_copy_names_the_bcc() {
    let Some(sink) = SmtpSink::start().await else { return };
    let app = app_with(&sink).await;
    publish_service_dkim(&app).await;
    let body = json!({
        "to": "x@partner.example", "cc": ["Y@partner.example"], "bcc": "hidden@else.example",
        "subject": "s", "text": "plain words", "html": "<p>rich <b>words</b><script>x()</script></p>",
    });
    let res = app.send_mail(Auth::Bearer(&app.agent_key), body).await;
    assert_eq!(res.status, 200, "{}", res.body);
    let got = sink.wait_for(3).await;
    let mut rcpts: Vec<&str> = got.iter().flat_map(|c| c.rcpt_tos.iter().map(String::as_str)).collect();
    rcpts.sort();
    assert_eq!(rcpts, ["hidden@else.example", "x@partner.example", "y@partner.example"]);
    for copy in &got {
        assert_eq!(copy.rcpt_tos.len(), 1, "one transaction each");
        assert_eq!(copy.raw, got[0].raw, "every copy the same bytes");
        let raw = String::from_utf8_lossy(&copy.raw).to_lowercase();
        assert!(!raw.contains("hidden@") && !raw.contains("\nbcc:"), "{raw}");
        let parsed = mail_parser::MessageParser::default().parse(&copy.raw).unwrap();
        assert_eq!(
            parsed.cc().unwrap().first().unwrap().address(),
            Some("y@partner.example")
        );
        assert_eq!(parsed.body_text(0).unwrap().trim(), "plain words");
        let html = parsed.body_html(0).unwrap();
        assert!(html.contains("<b>words</b>") && !html.contains("script"), "{html}");
        assert!(dkim_verify(&copy.raw, app.dns.addr));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_refused_delivery_is_500_send_failed_and_the_credit_stays_spent() {
    let Some(sink) = SmtpSink::start_rejecting().await else {
        return;
    };
    let app = app_with(&sink).await;
    let res = app
        .send_mail(
            Auth::Bearer(&app.agent_key),
            json!({"to": "x@partner.example", "subject": "s", "text": "t"}),
        )
        .await;
    assert_eq!((res.status, res.error()), (500, "Send failed"));
    assert_eq!(app.agent_credits().await, 99, "not refunded when SMTP fails");
    assert!(sink.messages().is_empty());
    // The send's transaction wrote its audit row as a success; the row
    // then says what the caller was answered (the credit is spent).
    let op = app.operator_token().await;
    let log = app.get("/audit?operation=sendMail", Auth::Bearer(&op)).await;
    let rows = log.body["changes"].as_array().cloned().unwrap_or_default();
    assert_eq!(rows.len(), 1, "{}", log.body);
    assert_eq!(
        (&rows[0]["status"], &rows[0]["error"], &rows[0]["actor"]["kind"]),
        (&json!(500), &json!("Send failed"), &json!("agent_key")),
        "{}",
        log.body
    );
}

/// A send from a hosted mailbox that the relay refuses whole went nowhere:
/// its Sent copy is withdrawn, whether its bytes rode in its mark (a short
/// message) or in a blob (a long one), so IMAP's Sent never shows it.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_send_refused_whole_leaves_no_sent_copy() {
    let Some(sink) = SmtpSink::start().await else { return };
    let app = app_with(&sink).await;
    let key = onboarded_with_mailbox(&app, &sink, "ann").await;
    let sent_marks = || async {
        let marks = common::service::mail_store::sync_marks::marks(&app.ctx, None, 100)
            .await
            .unwrap();
        marks.into_iter().filter(|(sk, _)| sk.starts_with("s#")).count()
    };
    let copies = || async { app.ctx.blobs.list("mail/ann@ann.example/sent-copies/").await.unwrap() };
    let kept = app
        .send_mail(
            Auth::Bearer(&key),
            json!({"from": "ann@ann.example", "to": "bob@partner.example", "subject": "s", "text": "t"}),
        )
        .await;
    assert_eq!(kept.status, 200, "{}", kept.body);
    assert_eq!(sent_marks().await, 1, "a send that went keeps its copy");
    for text in ["Short.".to_string(), "A longer letter.\n".repeat(300)] {
        let res = app
            .send_mail(
                Auth::Bearer(&key),
                json!({"from": "ann@ann.example", "to": "refuse@partner.example", "subject": "s", "text": text}),
            )
            .await;
        assert_eq!((res.status, res.error()), (500, "Send failed"), "{}", res.body);
        assert_eq!(
            sent_marks().await,
            1,
            "no mark for the refused send of {} bytes",
            text.len()
        );
        assert!(copies().await.is_empty(), "no bytes kept: {:?}", copies().await);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_wrong_smtp_password_is_500_send_failed() {
    let Some(sink) = SmtpSink::start().await else { return };
    let app = app_sending_to(sink.url_with_password("wrong"), sink.ca_file()).await;
    let res = app
        .send_mail(
            Auth::Bearer(&app.agent_key),
            json!({"to": "x@partner.example", "subject": "s", "text": "t"}),
        )
        .await;
    assert_eq!((res.status, res.error()), (500, "Send failed"));
    assert!(sink.messages().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_outbound_transport_is_500_outbound_host_not_configured() {
    let app = TestApp::spawn_with(Backend::Embedded, |c| {
        c.smtp_url = None;
        c.spool = false;
    })
    .await
    .unwrap();
    let credits = || app.get("/credits", Auth::Bearer(&app.agent_key));
    let before = credits().await.body["credits"]["remaining"].clone();
    let res = app
        .send_mail(
            Auth::Bearer(&app.agent_key),
            json!({"to": "x@partner.example", "subject": "s", "text": "t"}),
        )
        .await;
    assert_eq!((res.status, res.error()), (500, "outbound host not configured"));
    // Nothing was tried, so nothing is charged (docs/decisions/sending.md).
    assert_eq!(credits().await.body["credits"]["remaining"], before);
    let bad = app
        .send_mail(Auth::Bearer(&app.agent_key), json!({"to": "x@partner.example"}))
        .await;
    assert_eq!(bad.status, 400, "validation still comes first");
}

/// A send hands the relay its envelope while its transaction commits
/// (`Transport::start`): the relay has taken MAIL and RCPT but delivers
/// nothing before the data (`finish`); a message given up (`abandon`, its
/// transaction refused) is never delivered, and its connection, reset,
/// carries the next.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_started_message_is_delivered_at_finish_and_never_once_abandoned() {
    use common::mail::{Outgoing, Transport, smtp::SmtpTransport};
    let Some(sink) = SmtpSink::start().await else { return };
    let relay = SmtpTransport::from_url_with_ca(&sink.url(), Some(&sink.ca_file())).unwrap();
    let message = |to: &str, subject: &str| Outgoing {
        envelope_from: "b-1@bounce.svc.test".into(),
        recipients: vec![to.into()],
        raw: format!("From: a@ann.example\r\nTo: {to}\r\nSubject: {subject}\r\n\r\nHello.\r\n").into_bytes(),
    };

    let started = relay.start(message("first@partner.example", "first")).await;
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert!(sink.messages().is_empty(), "nothing before the data");
    started.finish().await.unwrap();
    assert_eq!(sink.wait_for(1).await[0].rcpt_tos, ["first@partner.example"]);

    let given_up = relay.start(message("never@partner.example", "never")).await;
    given_up.abandon().await;
    relay.send(&message("third@partner.example", "third")).await.unwrap();
    let got = sink.wait_for(2).await;
    assert_eq!(got.len(), 2, "{got:?}");
    assert_eq!(got[1].rcpt_tos, ["third@partner.example"]);
    assert!(got[1].text().contains("Subject: third"));
    assert_eq!(got[1].peer, got[0].peer, "one connection, reset and used again");
}
