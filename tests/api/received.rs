//! Received mail that real senders wrote (outside finding 4): the vendored
//! messages of tests/fixtures/eml (mail-parser's and mikel/mail's test
//! suites, see ORIGIN.md there) filed through the poller and read back
//! through GET /inbox and GET /attachment, each against what its file shows.

use crate::support::{Auth, TestApp};
use common::service::receiving::poller;
use serde_json::Value;
use sha2::{Digest, Sha256};

on_both_backends!(
    uuencoded_files_are_served_decoded,
    a_text_file_is_served_as_sent_with_its_charset,
    every_forwarded_message_is_kept_and_no_container_is_a_file,
    address_fields_hold_the_addresses_a_reply_can_use,
    every_stored_file_is_served_and_nothing_past_the_last,
    only_harmless_types_are_shown_inline,
    utf8_addresses_read_back_as_their_sender_wrote_them,
    bidirectional_controls_never_turn_a_subject_or_a_file_name_around,
);

fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/eml")
            .join(name),
    )
    .unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// Files `raw` for me@tom.example (as the mail host hands it over) and gives
/// the stored message, read by its id.
async fn file(app: &TestApp, key: &str, raw: &[u8]) -> Value {
    let mut copy = b"Delivered-To: me@tom.example\r\n".to_vec();
    copy.extend_from_slice(raw);
    mailhost::deliver(&app.data_dir, copy).await.unwrap();
    let outcome = poller::run_once(&app.ctx).await.unwrap();
    assert_eq!(outcome.filed, 1, "{outcome:?}");
    let listed = app.get("/inbox?limit=1", Auth::Bearer(key)).await.body;
    let id = listed["messages"][0]["id"].as_str().unwrap().to_string();
    app.get(&format!("/inbox?id={id}"), Auth::Bearer(key)).await.body["message"].clone()
}

struct Download {
    status: u16,
    headers: reqwest::header::HeaderMap,
    bytes: Vec<u8>,
}

async fn download(app: &TestApp, key: &str, message: &Value, index: usize, inline: bool) -> Download {
    // What a client does: follow the file's downloadPath; a file the
    // message does not list is asked for where any index is served.
    let id = message["id"].as_str().unwrap();
    let listed = message["attachments"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["index"] == index);
    let mut url = match listed {
        Some(a) => format!("{}{}", app.base, a["downloadPath"].as_str().unwrap()),
        None => format!("{}/inbox/attachment?id={id}&index={index}", app.base),
    };
    if inline {
        url.push_str("&disposition=inline");
    }
    let res = app.client.get(url).bearer_auth(key).send().await.unwrap();
    Download {
        status: res.status().as_u16(),
        headers: res.headers().clone(),
        bytes: res.bytes().await.unwrap().to_vec(),
    }
}

fn listed(message: &Value) -> Vec<(String, String, u64)> {
    message["attachments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            (
                a["filename"].as_str().unwrap().to_string(),
                a["contentType"].as_str().unwrap().to_string(),
                a["size"].as_u64().unwrap(),
            )
        })
        .collect()
}

async fn uuencoded_files_are_served_decoded(app: TestApp) {
    let key = app.sender("tom@tom.example", "tom.example", "me").await;
    // Eudora, 2000: two PNGs in x-uuencode parts.
    let message = file(&app, &key, &fixture("mail-parser-legacy-017-x-uuencode-png.eml")).await;
    assert_eq!(
        listed(&message),
        [
            ("greenball.png".to_string(), "image/png".to_string(), 1298),
            ("blueball.png".to_string(), "image/png".to_string(), 1325),
        ]
    );
    let green = download(&app, &key, &message, 0, false).await;
    assert_eq!(green.status, 200);
    assert_eq!(green.headers["content-type"], "image/png");
    assert!(
        green.bytes.starts_with(b"\x89PNG\r\n\x1a\n"),
        "decoded, not the uuencoded text"
    );
    assert!(
        hex::encode(Sha256::digest(&green.bytes)).starts_with("258bcdd4"),
        "the file ORIGIN.md names"
    );
    let blue = download(&app, &key, &message, 1, false).await;
    assert!(hex::encode(Sha256::digest(&blue.bytes)).starts_with("68aa8430"));
    // Declared uuencoded, with nothing in it: an empty file, no failure.
    let message = file(&app, &key, &fixture("mikel-mail-x-uuencode-empty-body.eml")).await;
    assert_eq!(
        listed(&message),
        [(
            "PGP_Cmts_on_12-14-01_Pkg.doc".to_string(),
            "application/msword".to_string(),
            0
        )]
    );
}

async fn a_text_file_is_served_as_sent_with_its_charset(app: TestApp) {
    let key = app.sender("tom@tom.example", "tom.example", "me").await;
    // PINE: a base64 text/plain attachment in ISO-8859-1, lines ending CR CR LF.
    let message = file(
        &app,
        &key,
        &fixture("mail-parser-legacy-045-latin1-text-attachment.eml"),
    )
    .await;
    let files = listed(&message);
    assert_eq!(files.len(), 1, "{files:?}");
    assert_eq!(files[0].1, "text/plain; charset=iso-8859-1");
    assert_eq!(files[0].2, 755);
    let text = download(&app, &key, &message, 0, false).await;
    assert_eq!(text.headers["content-type"], "text/plain; charset=iso-8859-1");
    assert_eq!(text.bytes.len(), 755);
    assert_eq!(text.bytes[20], 0xF6, "ö as ISO-8859-1 wrote it");
    assert!(std::str::from_utf8(&text.bytes).is_err(), "not transcoded to UTF-8");
    assert_eq!(text.bytes.windows(3).filter(|w| w == b"\r\r\n").count(), 8);
    assert!(hex::encode(Sha256::digest(&text.bytes)).starts_with("b2f89977"));
}

async fn every_forwarded_message_is_kept_and_no_container_is_a_file(app: TestApp) {
    let key = app.sender("tom@tom.example", "tom.example", "me").await;
    // Three forwarded messages whose own boundaries never appear.
    let message = file(&app, &key, &fixture("mail-parser-thirdparty-015.eml")).await;
    let files = listed(&message);
    let names: Vec<&str> = files.iter().map(|f| f.0.as_str()).collect();
    assert_eq!(
        names,
        ["training-mail.txt", "office-reply.txt", "shop-mail.txt"],
        "{files:?}"
    );
    assert!(files.iter().all(|f| f.1 == "message/rfc822" && f.2 > 0), "{files:?}");
    // Each ends where the next begins: none holds a later one's headers.
    for (index, later) in [(0, "office-reply.txt"), (1, "shop-mail.txt")] {
        let forwarded = download(&app, &key, &message, index, false).await;
        assert_eq!(forwarded.status, 200);
        let text = String::from_utf8_lossy(&forwarded.bytes);
        assert!(
            !text.contains(later),
            "forwarded message {index} swallowed {later}: {text}"
        );
    }
    // Empty multipart containers are no files.
    for name in [
        "mail-parser-malformed-002-multipart-no-parts.eml",
        "mikel-mail-empty-multipart-alternative.eml",
        "mikel-mail-empty-multipart-mixed.eml",
    ] {
        let message = file(&app, &key, &fixture(name)).await;
        assert_eq!(listed(&message), [], "{name}");
    }
}

async fn address_fields_hold_the_addresses_a_reply_can_use(app: TestApp) {
    let key = app.sender("tom@tom.example", "tom.example", "me").await;
    let cases: [(&str, &str, &[&str]); 5] = [
        (
            "mikel-mail-from-name-without-brackets.eml",
            "bb@bug.com",
            &["rubymail@ruby-lang.org"],
        ),
        (
            "mikel-mail-two-addresses-no-comma.eml",
            "tim@powerupdev.com",
            &["tim@powerupdev.com", "concierge@powerupdev.com"],
        ),
        (
            "mikel-mail-rfc2822-group-undisclosed.eml",
            "pete@silly.example",
            &["c@a.test", "joe@where.test", "jdoe@one.test"],
        ),
        (
            "mikel-mail-rfc2822-obsolete-route.eml",
            "john.q.public@example.com",
            &["mary@example.net", "jdoe@test.example"],
        ),
        ("mikel-mail-empty-multipart-mixed.eml", "redacted@attglobal.net", &[]),
    ];
    for (name, from, to) in cases {
        let message = file(&app, &key, &fixture(name)).await;
        assert_eq!(message["from"], from, "{name}");
        assert_eq!(message["to"], serde_json::json!(to), "{name}");
    }
}

/// Issue 40, finding 19: RFC 6532 addresses (UTF-8 local parts,
/// internationalised domains) read back as written, not `from: ""` and
/// `to: []`.
async fn utf8_addresses_read_back_as_their_sender_wrote_them(app: TestApp) {
    let key = app.sender("tom@tom.example", "tom.example", "me").await;
    let message = file(&app, &key, &fixture("mikel-mail-rfc6532-utf8-headers.eml")).await;
    assert_eq!(message["from"], "jdöe@mächine.example", "{message}");
    assert_eq!(message["to"], serde_json::json!(["märy@exämple.net"]), "{message}");
    assert_eq!(message["subject"], "Säying Hello");
    // DMARC judged that same domain, in its ASCII form.
    let judged = message["authentication"]["dmarc"]["domain"]
        .as_str()
        .unwrap_or_default();
    assert!(
        judged.starts_with("xn--mchine-") && judged.ends_with(".example"),
        "{message}"
    );
    // A search by the sender finds it.
    let found = app.get("/inbox?q=jd%C3%B6e", Auth::Bearer(&key)).await.body;
    assert_eq!(found["messages"].as_array().unwrap().len(), 1, "{found}");
}

/// Issue 40, finding 18: a right-to-left override (U+202E) and the other
/// bidirectional controls never reach a stored subject, preview or file
/// name, nor the name GET /attachment saves a file under.
async fn bidirectional_controls_never_turn_a_subject_or_a_file_name_around(app: TestApp) {
    let key = app.sender("tom@tom.example", "tom.example", "me").await;
    let raw = "From: ann@example.org\r\nTo: me@tom.example\r\nSubject: =?UTF-8?Q?Invoice_=E2=80=AEfdp.exe?=\r\n\
               Message-ID: <rlo@example.org>\r\nMIME-Version: 1.0\r\n\
               Content-Type: multipart/mixed; boundary=\"b\"\r\n\r\n--b\r\n\
               Content-Type: text/plain; charset=utf-8\r\n\r\nPay \u{202E}\u{2066}now\u{2069}\u{200F} today.\r\n--b\r\n\
               Content-Type: application/octet-stream\r\n\
               Content-Disposition: attachment; filename*=UTF-8''receipt_%E2%80%AEfdp.exe\r\n\r\nMZ\r\n--b--\r\n";
    let message = file(&app, &key, raw.as_bytes()).await;
    assert_eq!(message["subject"], "Invoice fdp.exe", "{message}");
    assert_eq!(message["preview"], "Pay now today.", "{message}");
    assert_eq!(listed(&message)[0].0, "receipt_fdp.exe");
    let row = &app.get("/inbox", Auth::Bearer(&key)).await.body["messages"][0];
    assert_eq!(
        (&row["subject"], &row["preview"]),
        (&message["subject"], &message["preview"])
    );
    let thread = app
        .get(
            &format!("/inbox?thread={}", message["threadId"].as_str().unwrap()),
            Auth::Bearer(&key),
        )
        .await
        .body;
    assert_eq!(thread["thread"]["subject"], "Invoice fdp.exe");
    let got = download(&app, &key, &message, 0, false).await;
    assert_eq!(got.status, 200);
    assert_eq!(
        got.headers["content-disposition"].to_str().unwrap(),
        "attachment; filename=\"receipt_fdp.exe\""
    );
    // The body itself is kept as sent: right-to-left text may need its marks.
    assert!(message["text"].as_str().unwrap().contains('\u{202E}'));
}

/// A message with `n` small text files.
fn with_files(n: usize, message_id: &str) -> Vec<u8> {
    let mut raw = format!(
        "From: ann@example.org\r\nTo: me@tom.example\r\nSubject: Many files\r\nMessage-ID: {message_id}\r\n\
         MIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=\"b\"\r\n\r\n--b\r\n\
         Content-Type: text/plain\r\n\r\nSee the files.\r\n",
    );
    for i in 0..n {
        raw.push_str(&format!(
            "--b\r\nContent-Type: text/plain; charset=us-ascii\r\nContent-Disposition: attachment; filename=\"f{i}.txt\"\r\n\r\nfile {i}\r\n"
        ));
    }
    raw.push_str("--b--\r\n");
    raw.into_bytes()
}

async fn every_stored_file_is_served_and_nothing_past_the_last(app: TestApp) {
    let key = app.sender("tom@tom.example", "tom.example", "me").await;
    let message = file(&app, &key, &with_files(22, "<many@example.org>")).await;
    let files = listed(&message);
    assert_eq!(files.len(), 20, "the first 20 are kept");
    for index in [3, 10, 19] {
        let got = download(&app, &key, &message, index, false).await;
        assert_eq!(got.status, 200, "advertised index {index}");
        assert_eq!(got.bytes, format!("file {index}").into_bytes());
    }
    // GET /attachment serves the spec's 0 to 2; the later files are named
    // by a downloadPath of GET /inbox/attachment, which serves 0 to 19.
    let id = message["id"].as_str().unwrap();
    let paths: Vec<&str> = message["attachments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["downloadPath"].as_str().unwrap())
        .collect();
    assert_eq!(paths[2], format!("/attachment?id={id}&index=2"));
    assert_eq!(paths[3], format!("/inbox/attachment?id={id}&index=3"));
    let spec = app
        .get(&format!("/attachment?id={id}&index=3"), Auth::Bearer(&key))
        .await;
    assert_eq!(
        (spec.status, spec.error()),
        (400, "index is required and must be an integer from 0 to 2")
    );
    let first = app
        .get(&format!("/inbox/attachment?id={id}&index=0"), Auth::Bearer(&key))
        .await;
    assert_eq!(first.status, 200, "every index is served there");
    let past = app
        .get(&format!("/inbox/attachment?id={id}&index=20"), Auth::Bearer(&key))
        .await;
    assert_eq!(
        (past.status, past.error()),
        (400, "index is required and must be an integer from 0 to 19")
    );
    let few = file(&app, &key, &with_files(4, "<four@example.org>")).await;
    assert_eq!(download(&app, &key, &few, 3, false).await.status, 200);
    assert_eq!(download(&app, &key, &few, 4, false).await.status, 404);
}

async fn only_harmless_types_are_shown_inline(app: TestApp) {
    let key = app.sender("tom@tom.example", "tom.example", "me").await;
    // No public suite has an XML attachment: this one is written here, an
    // XHTML document with a script, as text/xml.
    let raw = "From: ann@example.org\r\nTo: me@tom.example\r\nSubject: Feed\r\nMessage-ID: <xml@example.org>\r\n\
               MIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=\"b\"\r\n\r\n--b\r\n\
               Content-Type: text/plain\r\n\r\nSee the feed.\r\n--b\r\nContent-Type: text/xml\r\n\
               Content-Disposition: attachment; filename=\"feed.xml\"\r\n\r\n\
               <html xmlns=\"http://www.w3.org/1999/xhtml\"><script>alert(document.cookie)</script></html>\r\n\
               --b\r\nContent-Type: image/svg+xml\r\nContent-Disposition: attachment; filename=\"a.svg\"\r\n\r\n\
               <svg xmlns=\"http://www.w3.org/2000/svg\"><script>alert(1)</script></svg>\r\n--b--\r\n";
    let message = file(&app, &key, raw.as_bytes()).await;
    for index in [0, 1] {
        let got = download(&app, &key, &message, index, true).await;
        assert_eq!(got.status, 200);
        let disposition = got.headers["content-disposition"].to_str().unwrap();
        assert!(disposition.starts_with("attachment;"), "{index}: {disposition}");
        assert_eq!(got.headers["content-security-policy"], "sandbox");
        assert_eq!(got.headers["x-content-type-options"], "nosniff");
    }
    // A PNG, asked inline, is shown inline, still sandboxed.
    let png = file(&app, &key, &fixture("mail-parser-legacy-017-x-uuencode-png.eml")).await;
    let got = download(&app, &key, &png, 0, true).await;
    assert!(
        got.headers["content-disposition"]
            .to_str()
            .unwrap()
            .starts_with("inline;")
    );
    assert_eq!(got.headers["content-security-policy"], "sandbox");
}
