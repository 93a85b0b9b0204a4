//! The test-side mail pieces checked on their own, with lettre driven directly: the
//! SMTP sink (a real aiosmtpd submission server requiring STARTTLS and AUTH) and the
//! DKIM verifier (dkimpy asking the tests' DNS server). Skipped without the venv
//! stand-in (`MAILHOST_TEST_VENV`).

use crate::support::dns::TestDns;
use crate::support::smtp::{SmtpSink, dkim_verify};
use common::mail::message::Signer;
use common::service::domains::dkim;
use lettre::address::Envelope;
use lettre::message::header::ContentType;
use lettre::transport::smtp::AsyncSmtpTransportBuilder;
use lettre::transport::smtp::authentication::Mechanism;
use lettre::{AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};

/// The service's transport builder (common::mail::smtp::builder), trusting `ca_pem`.
fn builder(url: &str, ca_pem: Option<&[u8]>) -> AsyncSmtpTransportBuilder {
    common::mail::smtp::builder(url, ca_pem).unwrap()
}

fn transport(url: &str, ca_pem: Option<&[u8]>) -> AsyncSmtpTransport<Tokio1Executor> {
    builder(url, ca_pem).build()
}

fn trusting(sink: &SmtpSink) -> AsyncSmtpTransport<Tokio1Executor> {
    transport(&sink.url(), Some(&std::fs::read(sink.ca_file()).unwrap()))
}

/// An envelope; `from` "" is the null reverse-path.
fn envelope(from: &str, to: &[&str]) -> Envelope {
    let from = (!from.is_empty()).then(|| from.parse().unwrap());
    Envelope::new(from, to.iter().map(|a| a.parse().unwrap()).collect()).unwrap()
}

/// Lines starting with a dot (stuffed on the wire) and a non-UTF-8 byte.
const RAW: &[u8] = b"From: a@sender.test\r\nTo: b@rcpt.test\r\nSubject: hello\r\n\r\nfirst line\r\n.\r\n..two dots\r\nlatin-1 \xe9\r\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn starttls_and_auth_deliver_to_the_sink() {
    let Some(sink) = SmtpSink::start().await else { return };
    let client = trusting(&sink);
    client
        .send_raw(&envelope("a@sender.test", &["b@rcpt.test", "c@rcpt.test"]), RAW)
        .await
        .unwrap();
    client
        .send_raw(&envelope("", &["d@rcpt.test"]), b"Subject: second\r\n\r\nbody\r\n")
        .await
        .unwrap_or_else(|e| panic!("a null sender is accepted: {e}"));
    let got = sink.wait_for(2).await;
    assert_eq!(got.len(), 2);
    assert_eq!(got[0].mail_from, "a@sender.test");
    assert_eq!(got[0].rcpt_tos, ["b@rcpt.test", "c@rcpt.test"]);
    assert_eq!(got[0].auth_user.as_deref(), Some(sink.user.as_str()));
    assert!(got[0].tls);
    // Byte for byte, dots unstuffed; lettre always ends DATA with CRLF "." CRLF, so a
    // message that already ends in CRLF arrives with one empty line more.
    assert_eq!(got[0].raw, [RAW, b"\r\n"].concat(), "{:?}", got[0].text());
    assert_eq!(got[1].mail_from, "");
    assert_eq!(got[1].rcpt_tos, ["d@rcpt.test"]);
    assert!(got[1].text().contains("Subject: second"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auth_login_works_as_well_as_plain() {
    let Some(sink) = SmtpSink::start().await else { return };
    let ca = std::fs::read(sink.ca_file()).unwrap();
    for (n, mechanism) in [Mechanism::Login, Mechanism::Plain].into_iter().enumerate() {
        builder(&sink.url(), Some(&ca))
            .authentication(vec![mechanism])
            .build::<Tokio1Executor>()
            .send_raw(&envelope("a@sender.test", &["b@rcpt.test"]), RAW)
            .await
            .unwrap_or_else(|e| panic!("AUTH {mechanism}: {e}"));
        let got = sink.wait_for(n + 1).await;
        assert_eq!(
            got[n].auth_user.as_deref(),
            Some(sink.user.as_str()),
            "AUTH {mechanism}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_password_is_refused() {
    let Some(sink) = SmtpSink::start().await else { return };
    let url = sink.url_with_password("wrong");
    let ca = std::fs::read(sink.ca_file()).unwrap();
    let err = transport(&url, Some(&ca))
        .send_raw(&envelope("a@sender.test", &["b@rcpt.test"]), RAW)
        .await
        .expect_err("a wrong password is refused");
    assert!(err.is_permanent(), "{err}");
    assert_eq!(err.status().map(|c| c.to_string()).as_deref(), Some("535"), "{err}");
    assert!(sink.messages().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_does_not_trust_the_test_ca_cannot_connect() {
    let Some(sink) = SmtpSink::start().await else { return };
    // lettre's own from_url: system roots only, as the service's SmtpTransport today.
    let err = transport(&sink.url(), None)
        .send_raw(&envelope("a@sender.test", &["b@rcpt.test"]), RAW)
        .await
        .expect_err("the sink's certificate is not trusted by default");
    assert!(format!("{err:?}").contains("UnknownIssuer"), "{err:?}");
    // Nor does the sink take mail without STARTTLS and AUTH.
    let plain_url = format!("smtp://127.0.0.1:{}", sink.port);
    let err = transport(&plain_url, None)
        .send_raw(&envelope("a@sender.test", &["b@rcpt.test"]), RAW)
        .await
        .expect_err("plain text is refused");
    assert!(err.is_permanent(), "{err}");
    assert_eq!(err.status().map(|c| c.to_string()).as_deref(), Some("530"), "{err}");
    assert!(sink.messages().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_rejecting_sink_fails_every_send() {
    let Some(sink) = SmtpSink::start_rejecting().await else {
        return;
    };
    let err = trusting(&sink)
        .send_raw(&envelope("a@sender.test", &["b@rcpt.test"]), RAW)
        .await
        .expect_err("every DATA is refused");
    assert!(err.is_permanent(), "{err}");
    assert_eq!(err.status().map(|c| c.to_string()).as_deref(), Some("554"), "{err}");
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    assert!(sink.messages().is_empty());
}

/// A message signed as the service signs (relaxed/relaxed, mail-auth) with
/// `key` for `domain`: its bytes.
fn signed(key: &dkim::DkimKey, domain: &str) -> Vec<u8> {
    let message = Message::builder()
        .from(format!("Sender <sender@{domain}>").parse().unwrap())
        .to("someone@rcpt.test".parse().unwrap())
        .subject("signed")
        .header(ContentType::TEXT_PLAIN)
        .body("Hello,\r\nthis body is signed.\r\n".to_string())
        .unwrap();
    let signer = Signer::from_pkcs8(dkim::SELECTOR, domain, &key.private_pem).unwrap();
    signer.sign(message.formatted()).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dkim_signatures_verify_and_tampering_is_caught() {
    if crate::support::standin("MAILHOST_TEST_VENV").is_none() {
        return;
    }
    let dns = TestDns::start().await;
    let domain = "signer.test";
    let key = dkim::generate().unwrap();
    let host = format!("{}._domainkey.{domain}", dkim::SELECTOR);
    let raw = signed(&key, domain);
    let text = String::from_utf8(raw.clone()).unwrap();
    assert!(text.contains("DKIM-Signature:"), "{text}");

    assert!(!dkim_verify(&raw, dns.addr), "no key published");
    dns.set_txt(&host, &["v=spf1 -all", &dkim::record_value(&key.public_b64)]);
    assert!(dkim_verify(&raw, dns.addr), "{text}");

    let body = text.replace("this body is signed", "this body is changed");
    assert!(!dkim_verify(body.as_bytes(), dns.addr), "a changed body fails");
    let subject = text.replace("Subject: signed", "Subject: changed");
    assert_ne!(subject, text);
    assert!(!dkim_verify(subject.as_bytes(), dns.addr), "a changed header fails");

    let other = dkim::generate().unwrap();
    dns.set_txt(&host, &[&dkim::record_value(&other.public_b64)]);
    assert!(!dkim_verify(&raw, dns.addr), "another key fails");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signed_message_still_verifies_after_passing_through_the_sink() {
    let Some(sink) = SmtpSink::start().await else { return };
    let dns = TestDns::start().await;
    let key = dkim::generate().unwrap();
    dns.set_txt("mail._domainkey.signer.test", &[&dkim::record_value(&key.public_b64)]);
    let raw = signed(&key, "signer.test");
    trusting(&sink)
        .send_raw(&envelope("sender@signer.test", &["someone@rcpt.test"]), &raw)
        .await
        .unwrap();
    let got = sink.wait_for(1).await;
    assert_eq!(got[0].mail_from, "sender@signer.test");
    assert!(dkim_verify(&got[0].raw, dns.addr), "{}", got[0].text());
}
