//! Sending through the local spool: the order of checks, credits, rate windows,
//! the sender rules, attachments and threading (spec 2.1, 2.2, 3.5, 4.1, 7, 8).
//! tests/api/send_smtp.rs sends the same way to a real SMTP server.

use crate::support::{self, ALLOWED_DOMAIN, Auth, TestApp};
use base64::Engine;
use mail_parser::MimeHeaders;
use serde_json::{Value, json};

on_both_backends!(
    the_agent_key_sends_as_noreply_and_pays_one_credit,
    checks_run_in_the_spec_order_and_spend_nothing_before_the_credit,
    credits_never_go_below_zero_even_in_parallel,
    parallel_sends_never_pass_the_minute_window,
    the_day_window_caps_at_fifty,
    a_standard_key_sends_from_its_hosted_mailbox,
    people_send_free_and_only_operators_may,
    attachments_are_checked_and_attached,
    a_reply_is_filed_on_its_thread,
    bad_input_gets_a_precise_400_and_changes_nothing,
    a_send_that_goes_now_waits_for_few_store_round_trips,
    a_send_started_on_its_key_as_last_read_answers_as_the_key_is_now,
);

const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01";

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

fn mail(to: &str) -> Value {
    json!({"to": to, "subject": "Hello", "text": "Hi there"})
}

async fn the_agent_key_sends_as_noreply_and_pays_one_credit(app: TestApp) {
    let res = app
        .send_mail(Auth::Bearer(&app.agent_key), mail("Someone@Example.org"))
        .await;
    assert_eq!(res.status, 200, "{}", res.body);
    assert_eq!(res.body["ok"], true);
    let id = res.body["messageId"].as_str().unwrap();
    assert!(id.starts_with('<') && id.ends_with("@svc.test>"), "{id}");
    assert_eq!(res.body["creditsRemaining"], 99);
    assert_eq!(res.body["attachmentCount"], 0);
    assert_eq!(res.body["attachmentsStored"], 0);
    assert!(res.body.get("threadId").is_none());
    assert_eq!(app.agent_credits().await, 99);
    let sent = app.outbox();
    assert_eq!(sent.len(), 1);
    let raw = &sent[0];
    assert!(raw.contains("From: noreply@svc.test"));
    assert!(raw.contains("To: someone@example.org"));
    assert!(raw.contains(&format!("Message-ID: {id}")));
    assert!(
        raw.contains("d=svc.test") && raw.contains("s=mail"),
        "signed with the service domain's key"
    );
    let by_header = app.send_mail(Auth::ApiKey(&app.agent_key), mail("a@example.org")).await;
    assert_eq!(by_header.body["creditsRemaining"], 98);
}

async fn checks_run_in_the_spec_order_and_spend_nothing_before_the_credit(app: TestApp) {
    let agent = Auth::Bearer(&app.agent_key);
    let op = app.operator_token().await;
    let invalid = json!({"to": "", "subject": ""});
    let unauth = app.send_mail(Auth::Bearer("svc_wrong"), mail("a@example.org")).await;
    assert_eq!((unauth.status, unauth.error()), (401, "Invalid API key"));

    app.post("/credits", Auth::Bearer(&op), json!({"sendingEnabled": false}))
        .await;
    let paused = app.send_mail(agent, invalid.clone()).await;
    assert_eq!(
        (paused.status, paused.error()),
        (503, "Sending temporarily disabled"),
        "before validation"
    );
    assert_eq!(
        app.send_mail(Auth::Bearer(&op), mail("a@example.org")).await.status,
        503,
        "everyone is paused"
    );
    app.post("/credits", Auth::Bearer(&op), json!({"sendingEnabled": true}))
        .await;

    app.post("/credits", agent, json!({"disabled": true})).await;
    let frozen = app.send_mail(agent, invalid.clone()).await;
    assert_eq!((frozen.status, frozen.error()), (503, "Agent key disabled"));
    let person = app.send_mail(Auth::Bearer(&op), mail("a@example.org")).await;
    assert_eq!(person.status, 200, "people can still send: {}", person.body);
    app.post(
        "/credits",
        agent,
        json!({"disabled": false, "frozenUntil": common::clock::iso_epoch(app.ctx.clock.epoch() + 600)}),
    )
    .await;
    assert_eq!(
        app.send_mail(agent, mail("a@example.org")).await.error(),
        "Agent key disabled"
    );
    app.post("/credits", agent, json!({"frozenUntil": null})).await;
    assert_eq!(app.agent_credits().await, 100, "no 401, 503 spent a credit");

    let bad = app.send_mail(agent, invalid.clone()).await;
    assert_eq!((bad.status, bad.error()), (400, "to, subject, and text are required"));
    assert_eq!(app.agent_credits().await, 100, "a 400 spends no credit");
    for _ in 0..4 {
        assert_eq!(app.send_mail(agent, mail("a@example.org")).await.status, 200);
    }
    // Five counted this minute (the 400 included): the rate limit comes before validation.
    let limited = app.send_mail(agent, invalid).await;
    assert_eq!((limited.status, limited.error()), (429, "Rate limit exceeded"));
    assert!(limited.body["retryAfter"].as_u64().unwrap() <= 60);
    assert_eq!(app.agent_credits().await, 96);
    assert_eq!(app.outbox().len(), 5, "the operator's send and four agent sends");

    // A freeze ends at its time. The test clock is the real one moved on,
    // so each side of the end keeps seconds of margin.
    app.ctx.clock.advance(60);
    let until = common::clock::iso_epoch(app.ctx.clock.epoch() + 30);
    app.post("/credits", agent, json!({"frozenUntil": until})).await;
    app.ctx.clock.advance(20);
    assert_eq!(
        app.send_mail(agent, mail("a@example.org")).await.error(),
        "Agent key disabled"
    );
    app.ctx.clock.advance(12);
    let thawed = app.send_mail(agent, mail("a@example.org")).await;
    assert_eq!(thawed.status, 200, "{}", thawed.body);
    assert_eq!(app.agent_credits().await, 95);
}

async fn credits_never_go_below_zero_even_in_parallel(app: TestApp) {
    app.set_credits("agent:default", 3).await;
    let sends = (0..5).map(|i| app.send_mail(Auth::Bearer(&app.agent_key), mail(&format!("r{i}@example.org"))));
    let results = futures::future::join_all(sends).await;
    let sent = results.iter().filter(|r| r.status == 200).count();
    let broke: Vec<_> = results.iter().filter(|r| r.status == 429).collect();
    assert_eq!(sent, 3, "{:?}", results.iter().map(|r| &r.body).collect::<Vec<_>>());
    assert_eq!(broke.len(), 2);
    assert!(broke.iter().all(|r| r.error() == "Insufficient credits"));
    assert_eq!(app.agent_credits().await, 0);
    assert_eq!(app.outbox().len(), 3);
    let mut remaining: Vec<i64> = results
        .iter()
        .filter_map(|r| r.body["creditsRemaining"].as_i64())
        .collect();
    remaining.sort();
    assert_eq!(remaining, [0, 1, 2]);
}

async fn parallel_sends_never_pass_the_minute_window(app: TestApp) {
    let sends = (0..12).map(|i| app.send_mail(Auth::Bearer(&app.agent_key), mail(&format!("p{i}@example.org"))));
    let results = futures::future::join_all(sends).await;
    assert_eq!(results.iter().filter(|r| r.status == 200).count(), 5);
    let limited: Vec<_> = results.iter().filter(|r| r.status == 429).collect();
    assert_eq!(limited.len(), 7);
    assert!(
        limited
            .iter()
            .all(|r| r.error() == "Rate limit exceeded" && r.headers.contains_key("retry-after"))
    );
    assert_eq!(app.agent_credits().await, 95, "a rate-limited send spends no credit");
}

async fn the_day_window_caps_at_fifty(app: TestApp) {
    // Start at a UTC day boundary so ten minutes of five sends stay in one day.
    let now = app.ctx.clock.epoch();
    app.ctx.clock.advance(86_400 - now.rem_euclid(86_400) + 1);
    let agent = Auth::Bearer(&app.agent_key);
    for minute in 0..10 {
        for i in 0..5 {
            let res = app.send_mail(agent, mail(&format!("d{minute}x{i}@example.org"))).await;
            assert_eq!(res.status, 200, "minute {minute} send {i}: {}", res.body);
        }
        app.ctx.clock.advance(60);
    }
    let capped = app.send_mail(agent, mail("late@example.org")).await;
    assert_eq!((capped.status, capped.error()), (429, "Rate limit exceeded"));
    let retry = capped.body["retryAfter"].as_u64().unwrap();
    assert!(retry > 60 && retry <= 86_400, "waits for the next UTC day: {retry}");
    assert_eq!(app.agent_credits().await, 50);
}

async fn a_standard_key_sends_from_its_hosted_mailbox(app: TestApp) {
    let key = app.onboard(&format!("sue@{ALLOWED_DOMAIN}")).await;
    let none = app.send_mail(Auth::Bearer(&key), mail("a@example.org")).await;
    assert_eq!(
        (none.status, none.error()),
        (403, "Add a fully hosted mailbox on a verified domain before sending.")
    );
    let added = app
        .post("/addDomain", Auth::Bearer(&key), json!({"domain": "sue.example"}))
        .await;
    app.publish(&added.body["domain"]);
    app.post("/verifyDomain", Auth::Bearer(&key), json!({"domainId": "sue.example"}))
        .await;
    app.add_mailbox(&key, "sue.example", "fwd", "forward", json!(["x@elsewhere.example"]))
        .await;
    let forward_only = app.send_mail(Auth::Bearer(&key), mail("a@example.org")).await;
    assert_eq!(forward_only.status, 403, "a forward-only mailbox does not count");
    app.add_mailbox(&key, "sue.example", "sue", "hosted", json!([])).await;

    let res = app.send_mail(Auth::Bearer(&key), mail("a@example.org")).await;
    assert_eq!(res.status, 200, "{}", res.body);
    assert_eq!(res.body["from"], "sue@sue.example", "the one sendable mailbox is used");
    assert_eq!(res.body["creditsRemaining"], 99, "the account's own balance");
    assert!(res.body["messageId"].as_str().unwrap().ends_with("@sue.example>"));
    assert_eq!(app.agent_credits().await, 100);
    let raw = app.outbox().pop().unwrap();
    assert!(raw.contains("From: sue@sue.example") && raw.contains("d=sue.example"));

    app.add_mailbox(&key, "sue.example", "both", "both", json!(["x@elsewhere.example"]))
        .await;
    app.ctx.clock.advance(61);
    let ambiguous = app.send_mail(Auth::Bearer(&key), mail("a@example.org")).await;
    assert_eq!(
        (ambiguous.status, ambiguous.error()),
        (400, "Choose the address to send from")
    );
    let chosen = app
        .send_mail(
            Auth::Bearer(&key),
            json!({"to": "a@example.org", "subject": "s", "text": "t", "from": "both@sue.example"}),
        )
        .await;
    assert_eq!(chosen.status, 200);
    let foreign = app
        .send_mail(
            Auth::Bearer(&key),
            json!({"to": "a@example.org", "subject": "s", "text": "t", "from": "fwd@sue.example"}),
        )
        .await;
    assert_eq!(foreign.status, 400, "a forward-only address cannot send");
    let credits = app.get("/credits", Auth::Bearer(&key)).await;
    assert_eq!(credits.body["credits"]["remaining"], 98);
}

async fn people_send_free_and_only_operators_may(app: TestApp) {
    let person = app.token("pat@people.test").await;
    let refused = app.send_mail(Auth::Bearer(&person), mail("a@example.org")).await;
    assert_eq!(
        (refused.status, refused.error()),
        (403, "This mailbox requires an operator account")
    );
    let op = app.operator_token().await;
    let res = app.send_mail(Auth::Bearer(&op), mail("a@example.org")).await;
    assert_eq!(res.status, 200, "{}", res.body);
    assert!(res.body.get("creditsRemaining").is_none(), "people are not charged");
    assert_eq!(app.agent_credits().await, 100);
}

async fn attachments_are_checked_and_attached(app: TestApp) {
    let agent = Auth::Bearer(&app.agent_key);
    let files = json!([
        {"filename": "pixel.png", "contentBase64": b64(PNG)},
        {"filename": "doc.pdf", "contentType": "application/pdf", "contentBase64": format!("data:application/pdf;base64,{}", b64(b"%PDF-1.4 tiny"))},
        {"filename": "rows.csv", "contentBase64": b64(b"a,b\n1,2\n")},
    ]);
    let res = app
        .send_mail(
            agent,
            json!({"to": "a@example.org", "subject": "files", "text": "see attached", "attachments": files}),
        )
        .await;
    assert_eq!(res.status, 200, "{}", res.body);
    assert_eq!(res.body["attachmentCount"], 3);
    assert_eq!(res.body["attachmentsStored"], 0, "not filed on a thread");
    let raw = app.outbox().pop().unwrap();
    let parsed = mail_parser::MessageParser::default().parse(raw.as_bytes()).unwrap();
    let names: Vec<_> = parsed
        .attachments()
        .map(|a| a.attachment_name().unwrap_or_default().to_string())
        .collect();
    assert_eq!(names, ["pixel.png", "doc.pdf", "rows.csv"]);
    assert_eq!(parsed.attachments().next().unwrap().contents(), PNG);
    assert_eq!(parsed.body_text(0).unwrap().trim(), "see attached");

    let big = b64(&vec![b'a'; 2 * 1024 * 1024 + 1]);
    let near = b64(&vec![b'a'; 2 * 1024 * 1024 - 100]);
    let cases = [
        (json!([{}, {}, {}, {}]), "Max 3 attachments per request"),
        (
            json!([{"filename": "a.txt", "contentBase64": big}]),
            "too large (max 2MB)",
        ),
        (
            json!([{"filename": "a.txt", "contentBase64": near}, {"filename": "b.txt", "contentBase64": near}, {"filename": "c.txt", "contentBase64": near}]),
            "max 4MB total",
        ),
        (
            json!([{"filename": "a.png", "contentBase64": "@@@not base64"}]),
            "not valid base64",
        ),
        (
            json!([{"filename": "a.pdf", "contentBase64": b64(PNG)}]),
            "does not match",
        ),
        (json!([{"filename": "a.exe", "contentBase64": b64(b"MZ\x90\0")}]), "not"),
        (
            json!([{"filename": "a.png", "contentType": "application/x-msdownload", "contentBase64": b64(PNG)}]),
            "not allowed",
        ),
        (json!("nope"), "attachments must be an array"),
    ];
    for (attachments, error) in cases {
        // A fresh minute for each, so the rate window never decides.
        app.ctx.clock.advance(61);
        let res = app
            .send_mail(
                agent,
                json!({"to": "a@example.org", "subject": "s", "text": "t", "attachments": attachments}),
            )
            .await;
        assert_eq!(res.status, 400, "{error}: {}", res.body);
        assert!(res.error().contains(error), "{error}: {}", res.error());
    }
    assert_eq!(app.agent_credits().await, 99, "no refused send spent a credit");
}

/// An inbound message filed into a mailbox by the poller, as the mail host
/// hands it over.
async fn deliver(app: &TestApp, to: &str, message_id: &str) {
    use common::service::receiving::poller;
    let raw = format!(
        "Delivered-To: {to}\r\nFrom: pal@partner.example\r\nTo: {to}\r\nSubject: Plans\r\nMessage-ID: {message_id}\r\n\r\nShall we?\r\n"
    );
    common::mail::inbound::drop_raw(&*app.ctx.blobs, raw.into_bytes())
        .await
        .unwrap();
    assert_eq!(poller::run_once(&app.ctx).await.unwrap().filed, 1);
}

async fn a_reply_is_filed_on_its_thread(app: TestApp) {
    use common::service::mail_store;
    let key = app.sender(&format!("tom@{ALLOWED_DOMAIN}"), "tom.example", "tom").await;
    let root = "<root-1@partner.example>";
    let thread = mail_store::thread_id("tom@tom.example", root);
    deliver(&app, "tom@tom.example", root).await;

    let reply = json!({
        "to": "pal@partner.example", "subject": "Re: Plans", "text": "Yes.", "inReplyTo": root,
        "attachments": [{"filename": "map.png", "contentBase64": b64(PNG)}],
    });
    let res = app.send_mail(Auth::Bearer(&key), reply).await;
    assert_eq!(res.status, 200, "{}", res.body);
    assert_eq!(res.body["threadId"], thread.as_str());
    assert_eq!(res.body["attachmentsStored"], 1);
    let id = res.body["messageId"].as_str().unwrap();
    // The reply sits on the thread, read, with its file kept.
    let view = app.get(&format!("/inbox?thread={thread}"), Auth::Bearer(&key)).await;
    assert_eq!(view.status, 200, "{}", view.body);
    let messages = view.body["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 2, "{}", view.body);
    let sent = &messages[1];
    assert_eq!(sent["messageId"], id);
    assert_eq!(sent["box"], "outbound");
    assert_eq!(sent["unread"], false);
    let path = sent["attachments"][0]["downloadPath"].as_str().unwrap();
    assert!(path.contains("box=outbound"), "{path}");
    let file = app
        .client
        .get(format!("{}{path}", app.base))
        .bearer_auth(&key)
        .send()
        .await
        .unwrap();
    assert_eq!(file.status(), 200);
    assert_eq!(file.bytes().await.unwrap().as_ref(), PNG);
    let raw = app.outbox().pop().unwrap();
    assert!(raw.contains(&format!("In-Reply-To: {root}")));

    let by_refs = app
        .send_mail(
            Auth::Bearer(&key),
            json!({"to": "pal@partner.example", "subject": "Re", "text": "x", "references": [root, id]}),
        )
        .await;
    assert_eq!(by_refs.body["threadId"], thread.as_str(), "references thread too");
    let stranger = app.send_mail(Auth::Bearer(&key), json!({"to": "pal@partner.example", "subject": "Re", "text": "x", "inReplyTo": "<unknown@nowhere.example>"})).await;
    assert!(stranger.body.get("threadId").is_none());
    assert_eq!(stranger.body["attachmentsStored"], 0);

    // A reply the mailbox submits over SMTP (the milter hands it over) joins
    // the thread too, its text and attachment read from its bytes.
    let raw = format!(
        "From: tom@tom.example\r\nTo: pal@partner.example\r\nSubject: Re: Plans\r\nIn-Reply-To: {root}\r\n\
         MIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=\"b\"\r\n\r\n\
         --b\r\nContent-Type: text/plain\r\n\r\nSent from my client.\r\n\
         --b\r\nContent-Type: image/png\r\nContent-Disposition: attachment; filename=\"map.png\"\r\n\
         Content-Transfer-Encoding: base64\r\n\r\n{}\r\n--b--\r\n",
        b64(PNG)
    );
    let body = json!({
        "login": "tom@tom.example",
        "sender": "tom@tom.example",
        "recipients": ["pal@partner.example"],
        "raw": b64(raw.as_bytes()),
    });
    let res = app
        .post("/mtaSubmission", Auth::Bearer(support::SYNC_TOKEN), body)
        .await;
    assert_eq!(res.status, 200, "{}", res.body);
    let view = app
        .get(&format!("/inbox?thread={thread}"), Auth::Bearer(&key))
        .await
        .body;
    let last = view["messages"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["messageId"], res.body["messageId"], "{view}");
    assert_eq!(
        (last["box"].as_str(), last["preview"].as_str()),
        (Some("outbound"), Some("Sent from my client."))
    );
    assert_eq!(last["attachments"][0]["filename"], "map.png");
    assert_eq!(last["attachments"][0]["contentType"], "image/png");
}

async fn bad_input_gets_a_precise_400_and_changes_nothing(app: TestApp) {
    let agent = Auth::Bearer(&app.agent_key);
    let six: Vec<String> = (0..6).map(|i| format!("r{i}@example.org")).collect();
    let cases = [
        (
            json!({"to": six, "subject": "s", "text": "t"}),
            "Max 5 recipients per request",
        ),
        (
            json!({"to": "a@example.org", "subject": "s", "text": "x".repeat(100 * 1024 + 1)}),
            "Body too large (max 100KB)",
        ),
        (
            json!({"to": "a@example.org", "subject": "s"}),
            "to, subject, and text are required",
        ),
        (
            json!({"to": "not-an-address", "subject": "s", "text": "t"}),
            "Invalid recipient address: not-an-address",
        ),
        (
            json!({"to": 5, "subject": "s", "text": "t"}),
            "to must be a string or an array of addresses",
        ),
        (
            json!({"to": "a@example.org", "subject": "s\r\nBcc: x@evil.example", "text": "t"}),
            "subject must be one line",
        ),
        (
            json!({"to": "a@example.org", "subject": ["s"], "text": "t"}),
            "subject must be a string",
        ),
        (
            json!({"to": "a@example.org", "subject": "s", "text": "t", "inReplyTo": "not an id"}),
            "inReplyTo is not a valid Message-ID",
        ),
    ];
    for (body, error) in cases {
        app.ctx.clock.advance(61);
        let res = app.send_mail(agent, body).await;
        assert_eq!(res.status, 400, "{}", res.body);
        assert!(res.error().starts_with(error), "{error}: {}", res.body);
    }
    app.ctx.clock.advance(61);
    let raw = app
        .client
        .post(format!("{}/sendMail", app.base))
        .bearer_auth(&app.agent_key)
        .body("{\"to\": ");
    let broken = app.send(raw).await;
    assert_eq!(broken.status, 400);
    let odd = app
        .send_mail(
            agent,
            json!({"to": "a@example.org", "subject": "Grüße \u{202e}", "text": "emoji 🎉 and \u{0} nul"}),
        )
        .await;
    assert_eq!(odd.status, 200, "odd but valid Unicode is sent: {}", odd.body);
    assert_eq!(app.agent_credits().await, 99);
    assert_eq!(app.outbox().len(), 1);
}

/// Once SMTP has accepted a send, the answer is 200 even if filing the reply
/// on its thread then fails: a client that retried on a 500 would send twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_send_that_went_out_is_200_even_when_filing_it_fails() {
    let app = TestApp::spawn(support::Backend::Embedded).await.unwrap();
    let key = app
        .sender(&format!("fail@{ALLOWED_DOMAIN}"), "fail.example", "fay")
        .await;
    let root = "<root-2@partner.example>";
    deliver(&app, "fay@fail.example", root).await;
    // The mailbox's blob folder becomes a file: the reply's blobs cannot be written.
    let folder = app.data_dir.join("blobs/mail/fay@fail.example");
    let _ = std::fs::remove_dir_all(&folder);
    std::fs::create_dir_all(folder.parent().unwrap()).unwrap();
    std::fs::write(&folder, b"in the way").unwrap();

    let before = app.outbox().len();
    let reply = json!({
        "to": "pal@partner.example", "subject": "Re: Plans", "text": "Yes.", "inReplyTo": root,
        "attachments": [{"filename": "map.png", "contentBase64": b64(PNG)}],
    });
    let res = app.send_mail(Auth::Bearer(&key), reply).await;
    assert_eq!(res.status, 200, "{}", res.body);
    assert!(res.body.get("threadId").is_none(), "not filed: {}", res.body);
    assert_eq!(res.body["attachmentsStored"], 0);
    assert_eq!(app.outbox().len(), before + 1, "sent once");
}

/// A send that goes now reads all it needs at once and writes it in one
/// transaction (its windows, the switches' conditions, its credit and its
/// delivery record), as docs/data-model.md counts it: the store round trips
/// one after another, counted by the store's meter (a request begun while
/// another is under way is not one).
async fn a_send_that_goes_now_waits_for_few_store_round_trips(app: TestApp) {
    let key = app.onboard(&format!("tia@{ALLOWED_DOMAIN}")).await;
    let added = app
        .post("/addDomain", Auth::Bearer(&key), json!({"domain": "tia.example"}))
        .await;
    app.publish(&added.body["domain"]);
    app.post("/verifyDomain", Auth::Bearer(&key), json!({"domainId": "tia.example"}))
        .await;
    app.add_mailbox(&key, "tia.example", "tia", "hosted", json!([])).await;
    let agent = app.agent_key.clone();
    let send = |key: &str, body: Value| metered_send(&app, key.to_string(), body);
    // The first send of a process reads its DKIM key (not the store).
    send(&key, mail("a@example.org")).await;
    send(&agent, mail("a@example.org")).await;

    // A key this process has not read yet: its read, then the send's.
    let digest = app.ctx.hasher.key_digest(&key);
    app.ctx.known_keys.forget(&digest);
    let named = json!({"to": "b@example.org", "subject": "s", "text": "t", "from": "tia@tia.example"});
    let (first, first_requests, _) = send(&key, named.clone()).await;
    assert_eq!(first.round_trips, 3, "{first_requests:?}");
    assert!(app.ctx.known_keys.get(&digest).is_some(), "kept for the next request");

    // Named: one round of reads (its key's record, beside the sender's
    // three items, the recipients' suppressions and the balance in one
    // batch and the send lists' Query: the send started on the key as this
    // process last read it), then the transaction, which holds the audit
    // row too.
    let (named, named_requests, named_res) = send(&key, named).await;
    // The agent key: no key to read, its sender one item of the reads.
    let (agent, agent_requests, agent_res) = send(&agent, mail("c@example.org")).await;
    // Not named: the mailboxes of the domain it sent from before are read
    // beside the account's domains and its key (and again after them had
    // it changed).
    let (default, default_requests, _) = send(&key, mail("d@example.org")).await;
    eprintln!("store round trips and write units of a send: named {named:?} {named_requests:?}");
    eprintln!("agent {agent:?} {agent_requests:?}; not named {default:?} {default_requests:?}");
    assert_eq!(
        (named.round_trips, agent.round_trips, default.round_trips),
        (2, 2, 2),
        "{named_requests:?} {agent_requests:?} {default_requests:?}"
    );
    // DynamoDB's units by the meter's rule: 9 items of 2 units (the
    // account's minute and day one item among them; the agent's send from
    // the service domain keeps no Sent copy, so 10 with its own switch's
    // check), and the named send's Sent mark holding its signed bytes (1 to
    // 2 KB) 4.
    assert_eq!(
        (named.write_units, agent.write_units, default.write_units),
        (22, 20, 22),
        "{named_requests:?} {agent_requests:?} {default_requests:?}"
    );
    // One batch of reads, one transaction, no separate credit update, no
    // audit row of its own.
    assert_eq!(
        (
            named_requests.batch_gets,
            named_requests.transactions,
            named_requests.updates,
            named_requests.puts
        ),
        (1, 1, 0, 0)
    );
    let log = app.get("/audit?operation=sendMail&limit=1", Auth::Bearer(&key)).await;
    let row = &log.body["changes"][0];
    assert_eq!(
        (&row["status"], &row["target"]["to"], &row["actor"]["kind"]),
        (&json!(200), &json!("d@example.org"), &json!("account_key")),
        "{}",
        log.body
    );
    assert_eq!(
        named_res.body["creditsRemaining"], 97,
        "the balance read, less this send"
    );
    assert_eq!(agent_res.body["creditsRemaining"], app.agent_credits().await);
    let credits = app.get("/credits", Auth::Bearer(&key)).await;
    assert_eq!(credits.body["credits"]["remaining"], 96);

    // An SMTP submission the same: the mailbox that logged in; at once its
    // domain, the lists, the suppressions and the balance; the transaction.
    let raw = "From: tia@tia.example\r\nTo: e@example.org\r\nSubject: From my app\r\n\r\nHello.\r\n";
    let body = json!({"login": "tia@tia.example", "sender": "tia@tia.example",
        "recipients": ["e@example.org"], "raw": b64(raw.as_bytes())});
    let meter = &app.ctx.store_meter;
    let (before, requests) = (meter.cost(), meter.counts());
    let res = app
        .post("/mtaSubmission", Auth::Bearer(support::SYNC_TOKEN), body)
        .await;
    assert_eq!(res.status, 200, "{}", res.body);
    let (submitted, submitted_requests) = (meter.cost().since(&before), meter.counts().since(&requests));
    eprintln!("a submission: {submitted:?} {submitted_requests:?}");
    assert_eq!(submitted.round_trips, 3, "{submitted_requests:?}");
    assert_eq!((submitted_requests.transactions, submitted_requests.updates), (1, 0));
    assert_eq!(res.body["creditsRemaining"], 95);
}

/// One send, with the store round trips and requests it made.
async fn metered_send(
    app: &TestApp,
    key: String,
    body: Value,
) -> (
    common::store::metered::Cost,
    common::store::metered::Counts,
    support::Response,
) {
    let meter = &app.ctx.store_meter;
    let (before, requests) = (meter.cost(), meter.counts());
    let res = app.send_mail(Auth::Bearer(&key), body).await;
    assert_eq!(res.status, 200, "{}", res.body);
    (meter.cost().since(&before), meter.counts().since(&requests), res)
}

/// A send starts on its key's record as this process last read it, the
/// read of the record beside its own. When the record changed meanwhile
/// (a key revoked, its scope narrowed), nothing was written on the old
/// record, and the answer is the one the key as stored gives.
async fn a_send_started_on_its_key_as_last_read_answers_as_the_key_is_now(app: TestApp) {
    use common::auth::{Permission, StandardKey};
    let owner = app.acme().await;
    let mail = |to: &str| json!({"from": "agent@acme.example", "to": to, "subject": "Hi", "text": "Hi"});
    let mint = |body: Value| crate::guardrails::mint(&app, &owner, body);
    let credits = || async { app.get("/credits", Auth::Bearer(&owner)).await.body["credits"]["remaining"].clone() };
    let sends = || async {
        let log = app.get("/audit?operation=sendMail", Auth::Bearer(&owner)).await;
        log.body["changes"].as_array().unwrap().len()
    };

    // Revoked since its last send: refused as an unknown key, nothing spent.
    let (key, view) = mint(json!({"name": "sender", "permissions": ["send"]})).await;
    let res = app.send_mail(Auth::Bearer(&key), mail("one@partner.example")).await;
    assert_eq!(res.status, 200, "{}", res.body);
    let digest = app.ctx.hasher.key_digest(&key);
    assert!(app.ctx.known_keys.get(&digest).is_some());
    let id = view["id"].as_str().unwrap();
    let revoked = app
        .delete(&format!("/keys?id={id}"), Auth::Bearer(&owner), json!({}))
        .await;
    assert_eq!(revoked.status, 200, "{}", revoked.body);
    let (before, logged) = (credits().await, sends().await);
    let mut retried = mail("two@partner.example");
    retried["idempotencyKey"] = json!("retry-1");
    let writes = || {
        let c = app.ctx.store_meter.counts();
        c.puts + c.updates + c.deletes + c.transactions
    };
    let written = writes();
    let res = app.send_mail(Auth::Bearer(&key), retried).await;
    assert_eq!((res.status, res.error()), (401, "Invalid API key"), "{}", res.body);
    assert_eq!(writes(), written, "not even an Idempotency-Key's claim");
    assert!(app.outbox_for("two@partner.example").is_empty());
    assert_eq!((credits().await, sends().await), (before, logged));
    assert!(app.ctx.known_keys.get(&digest).is_none(), "the process forgets it");

    // Last read with the send permission, stored without it now: the send
    // started as the record said, and stopped before its first write.
    let (reader, _) = mint(json!({"name": "reader", "permissions": ["read"]})).await;
    let digest = app.ctx.hasher.key_digest(&reader);
    let res = app.get("/credits", Auth::Bearer(&reader)).await;
    assert_eq!(res.status, 200, "{}", res.body);
    let stored: StandardKey = app.ctx.known_keys.get(&digest).expect("read once");
    let mut stale = stored.clone();
    stale.scope.as_mut().unwrap().permissions.push(Permission::Send);
    app.ctx.known_keys.keep(&digest, stale);
    let (before, logged) = (credits().await, sends().await);
    let res = app
        .send_mail(Auth::Bearer(&reader), mail("three@partner.example"))
        .await;
    assert_eq!(
        (res.status, res.error()),
        (403, "This API key lacks the send permission"),
        "{}",
        res.body
    );
    assert!(app.outbox_for("three@partner.example").is_empty());
    assert_eq!(credits().await, before);
    assert_eq!(
        sends().await,
        logged + 1,
        "the refusal noted once, as the key is: {}",
        res.body
    );
    assert_eq!(app.ctx.known_keys.get(&digest), Some(stored.clone()));

    // Last read without it, stored with it: the refusal was the old
    // record's, so the send goes, once.
    let (sender, _) = mint(json!({"name": "sender2", "permissions": ["read", "send"]})).await;
    let digest = app.ctx.hasher.key_digest(&sender);
    assert_eq!(app.get("/credits", Auth::Bearer(&sender)).await.status, 200);
    let stored = app.ctx.known_keys.get(&digest).expect("read once");
    let mut stale = stored.clone();
    stale
        .scope
        .as_mut()
        .unwrap()
        .permissions
        .retain(|p| *p != Permission::Send);
    app.ctx.known_keys.keep(&digest, stale);
    let before = credits().await.as_i64().unwrap();
    let res = app.send_mail(Auth::Bearer(&sender), mail("four@partner.example")).await;
    assert_eq!(res.status, 200, "{}", res.body);
    assert_eq!(app.outbox_for("four@partner.example").len(), 1);
    assert_eq!(credits().await, before - 1);
}
