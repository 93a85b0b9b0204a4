//! Conversation actions (issue 45) through the local spool, on both stores:
//! a reply and a reply-all by message id (recipients by name, `Re: ` once,
//! the References chain, the quote, filed on the thread), a forward (inline,
//! with its files), Cc and Bcc on sendMail (Bcc in no copy, kept on the
//! sender's own row), an HTML alternative, the names received mail carries,
//! and every guardrail of sendMail on the new routes, over REST and MCP.
//! tests/api/send_smtp.rs and tests/api/mail_host.rs send the same through
//! a real SMTP server and the real mail host.

use crate::support::{ALLOWED_DOMAIN, Auth, TestApp};
use base64::Engine;
use mail_parser::{MessageParser, MimeHeaders};
use serde_json::{Value, json};

on_both_backends!(
    a_reply_goes_to_the_sender_by_name_quotes_it_and_joins_its_thread,
    reply_all_answers_everyone_but_the_mailbox_each_once,
    cc_and_bcc_reach_everyone_and_bcc_is_in_no_copy,
    a_forward_carries_the_original_inline_with_its_files,
    replies_and_forwards_keep_every_guardrail_of_a_send,
    a_held_forward_is_released_and_filed_with_its_bcc,
    received_mail_carries_the_names_written_beside_its_addresses,
    the_tools_reply_and_forward_as_the_routes_do,
    concurrent_replies_and_forwards_send_once_file_all_and_never_overspend,
);

const PDF: &[u8] = b"%PDF-1.4 a tiny report";

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// The message a partner writes to tom@tom.example, with Ann and Bob, and
/// Tom himself on Cc too.
const PLANS: &str = "From: =?UTF-8?Q?Pal_Sm=C3=AFth?= <pal@partner.example>\r\n\
    To: Tom <tom@tom.example>, \"Lee, Ann\" <ann@partner.example>\r\n\
    Cc: tom@tom.example, Bob <bob@partner.example>, ANN@partner.example\r\n\
    Subject: Plans\r\nMessage-ID: <plans-1@partner.example>\r\n\
    References: <root-0@partner.example>\r\nIn-Reply-To: <root-0@partner.example>\r\n\
    Date: Mon, 23 Nov 2026 10:00:00 +0000\r\n\r\nShall we meet on Thursday?\r\nAt noon.\r\n";

/// Files `raw` for `to` as the mail host hands it over; the filed row.
async fn deliver(app: &TestApp, key: &str, to: &str, raw: &str) -> Value {
    let raw = format!("Delivered-To: {to}\r\n{raw}");
    common::mail::inbound::drop_raw(&*app.ctx.blobs, raw.into_bytes())
        .await
        .unwrap();
    let run = common::service::receiving::poller::run_once(&app.ctx).await.unwrap();
    assert_eq!(run.filed, 1, "{run:?}");
    let listed = app.get("/inbox", Auth::Bearer(key)).await;
    listed.body["messages"][0].clone()
}

/// The copies the spool holds for `recipient` (one SMTP transaction each),
/// as the recipient gets them: without the spool's own envelope lines.
fn copies_to(app: &TestApp, recipient: &str) -> Vec<String> {
    let line = format!("X-Original-To: {recipient}");
    app.outbox()
        .into_iter()
        .filter(|m| m.lines().nth(1) == Some(line.as_str()))
        .map(|m| m.splitn(3, "\r\n").nth(2).unwrap().to_string())
        .collect()
}

fn parsed(raw: &str) -> mail_parser::Message<'_> {
    MessageParser::default().parse(raw.as_bytes()).unwrap()
}

/// (name, address) of each address of a header.
fn named(list: Option<&mail_parser::Address<'_>>) -> Vec<(String, String)> {
    list.into_iter()
        .flat_map(|a| a.iter())
        .map(|a| {
            (
                a.name().unwrap_or_default().to_string(),
                a.address().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

async fn thread(app: &TestApp, key: &str, thread: &Value) -> Value {
    let res = app
        .get(
            &format!("/inbox?thread={}", thread.as_str().unwrap()),
            Auth::Bearer(key),
        )
        .await;
    assert_eq!(res.status, 200, "{}", res.body);
    res.body
}

async fn tom(app: &TestApp) -> String {
    app.sender(&format!("tom@{ALLOWED_DOMAIN}"), "tom.example", "tom").await
}

async fn a_reply_goes_to_the_sender_by_name_quotes_it_and_joins_its_thread(app: TestApp) {
    let key = tom(&app).await;
    let row = deliver(&app, &key, "tom@tom.example", PLANS).await;
    let res = app
        .post(
            "/reply",
            Auth::Bearer(&key),
            json!({"id": row["id"], "text": "Thursday works."}),
        )
        .await;
    assert_eq!(res.status, 200, "{}", res.body);
    assert_eq!(res.body["to"], json!(["pal@partner.example"]), "{}", res.body);
    assert_eq!(res.body["subject"], "Re: Plans");
    assert_eq!(res.body["from"], "tom@tom.example", "from the mailbox it was sent to");
    assert_eq!(res.body["threadId"], row["threadId"], "{}", res.body);
    assert_eq!(res.body["creditsRemaining"], 99);
    let reply_id = res.body["messageId"].as_str().unwrap().to_string();

    let copies = copies_to(&app, "pal@partner.example");
    assert_eq!(copies.len(), 1, "one copy, to the sender alone: {:?}", app.outbox());
    let m = parsed(&copies[0]);
    assert_eq!(
        named(m.to()),
        [("Pal Smïth".to_string(), "pal@partner.example".to_string())]
    );
    assert!(m.cc().is_none());
    assert_eq!(m.subject(), Some("Re: Plans"));
    assert_eq!(named(m.from())[0].1, "tom@tom.example");
    assert!(
        copies[0].contains("In-Reply-To: <plans-1@partner.example>"),
        "{}",
        copies[0]
    );
    assert!(
        copies[0].contains("References: <root-0@partner.example> <plans-1@partner.example>"),
        "{}",
        copies[0]
    );
    let text = m.body_text(0).unwrap().replace("\r\n", "\n");
    assert!(text.starts_with("Thursday works.\n"), "{text}");
    assert!(
        text.contains("Pal Smïth <pal@partner.example> wrote:\n> Shall we meet on Thursday?\n> At noon."),
        "{text}"
    );

    // Read back through the thread: the reply sits under the message.
    let view = thread(&app, &key, &row["threadId"]).await;
    let messages = view["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 2, "{view}");
    assert_eq!(messages[1]["messageId"], reply_id.as_str());
    assert_eq!(messages[1]["box"], "outbound");
    assert_eq!(messages[1]["to"], json!(["pal@partner.example"]));
    assert_eq!(messages[1]["names"]["pal@partner.example"], "Pal Smïth", "{view}");
    assert!(messages[1]["delivery"].is_object(), "{view}");

    // A reply to one's own reply goes to its recipient again, `Re: ` once,
    // the chain carried on.
    let again = app
        .post(
            "/reply",
            Auth::Bearer(&key),
            json!({"id": messages[1]["id"], "text": "Or Friday.", "quote": false}),
        )
        .await;
    assert_eq!(again.status, 200, "{}", again.body);
    assert_eq!(again.body["to"], json!(["pal@partner.example"]));
    assert_eq!(again.body["subject"], "Re: Plans", "not Re: Re:");
    // Unfolded: a long References header goes on over several lines.
    let copy = copies_to(&app, "pal@partner.example").pop().unwrap();
    let copy = copy.replace("\r\n ", " ").replace("\r\n\t", " ");
    assert!(
        copy.contains(&format!(
            "References: <root-0@partner.example> <plans-1@partner.example> {reply_id}"
        )),
        "{copy}"
    );
    assert_eq!(parsed(&copy).body_text(0).unwrap().trim(), "Or Friday.", "quote=false");
    // By Message-ID as well.
    let by_mid = app
        .post(
            "/api/reply",
            Auth::Bearer(&key),
            json!({"messageId": "<plans-1@partner.example>", "text": "Noon it is."}),
        )
        .await;
    assert_eq!(by_mid.status, 200, "{}", by_mid.body);
    let view = thread(&app, &key, &row["threadId"]).await;
    assert_eq!(view["thread"]["messageCount"], 4, "{view}");
    assert_eq!(view["thread"]["outboundCount"], 3);
}

async fn reply_all_answers_everyone_but_the_mailbox_each_once(app: TestApp) {
    let key = tom(&app).await;
    let row = deliver(&app, &key, "tom@tom.example", PLANS).await;
    let before = app.outbox().len();
    let res = app
        .post(
            "/reply",
            Auth::Bearer(&key),
            json!({"id": row["id"], "text": "Thursday, all of us.", "all": true}),
        )
        .await;
    assert_eq!(res.status, 200, "{}", res.body);
    assert_eq!(
        res.body["to"],
        json!(["pal@partner.example", "ann@partner.example"]),
        "{}",
        res.body
    );
    assert_eq!(res.body["cc"], json!(["bob@partner.example"]), "{}", res.body);
    assert!(
        copies_to(&app, "tom@tom.example").is_empty(),
        "never the mailbox itself"
    );
    for who in ["pal@partner.example", "ann@partner.example", "bob@partner.example"] {
        let copies = copies_to(&app, who);
        assert_eq!(copies.len(), 1, "{who}");
        let m = parsed(&copies[0]);
        assert_eq!(
            named(m.to()),
            [
                ("Pal Smïth".to_string(), "pal@partner.example".to_string()),
                ("Lee, Ann".into(), "ann@partner.example".into())
            ],
            "{who}"
        );
        assert_eq!(named(m.cc()), [("Bob".to_string(), "bob@partner.example".to_string())]);
        assert!(!copies[0].to_lowercase().contains("tom@tom.example>,"), "{}", copies[0]);
    }
    assert_eq!(app.outbox().len() - before, 3, "one copy each");
    // The sent row keeps who was on To and who on Cc.
    let view = thread(&app, &key, &row["threadId"]).await;
    let sent = &view["messages"][1];
    assert_eq!(
        sent["to"],
        json!(["pal@partner.example", "ann@partner.example"]),
        "{view}"
    );
    assert_eq!(sent["cc"], json!(["bob@partner.example"]), "{view}");
    assert!(
        view["thread"]["participants"]
            .as_array()
            .unwrap()
            .contains(&json!("bob@partner.example")),
        "{view}"
    );
}

async fn cc_and_bcc_reach_everyone_and_bcc_is_in_no_copy(app: TestApp) {
    let key = tom(&app).await;
    let row = deliver(&app, &key, "tom@tom.example", PLANS).await;
    let body = json!({
        "to": "pal@partner.example", "cc": ["Bob@partner.example"], "bcc": "boss@tom-corp.example",
        "subject": "Re: Plans", "text": "Thursday.", "inReplyTo": row["messageId"],
        "html": "<p onclick=\"steal()\">Thursday.<script>alert(1)</script></p>",
    });
    let res = app.send_mail(Auth::Bearer(&key), body).await;
    assert_eq!(res.status, 200, "{}", res.body);
    assert!(res.body.get("to").is_none(), "sendMail answers as it did: {}", res.body);
    let mut seen = Vec::new();
    for who in ["pal@partner.example", "bob@partner.example", "boss@tom-corp.example"] {
        let copies = copies_to(&app, who);
        assert_eq!(copies.len(), 1, "{who}: {:?}", app.outbox());
        let copy = &copies[0];
        assert!(!copy.to_lowercase().contains("boss@"), "{who} sees the Bcc: {copy}");
        let m = parsed(copy);
        // No Bcc header. (Not a search for "bcc" in the text: a DKIM
        // signature or a MIME boundary is random and spells it now and then.)
        assert!(
            m.headers().iter().all(|h| !h.name().eq_ignore_ascii_case("bcc")),
            "{who}: {copy}"
        );
        assert_eq!(named(m.cc()), [(String::new(), "bob@partner.example".to_string())]);
        assert!(copy.contains("multipart/alternative"), "{copy}");
        assert_eq!(m.body_text(0).unwrap().trim(), "Thursday.");
        let html = m.body_html(0).unwrap();
        assert!(html.contains("<p>Thursday.</p>"), "{html}");
        assert!(!html.contains("script") && !html.contains("onclick"), "{html}");
        seen.push(copy.clone());
    }
    assert!(seen.iter().all(|c| *c == seen[0]), "every copy is the same message");
    // The sender's own row keeps the Bcc; no one else's does.
    let view = thread(&app, &key, &row["threadId"]).await;
    let sent = &view["messages"][1];
    assert_eq!(sent["bcc"], json!(["boss@tom-corp.example"]), "{view}");
    assert_eq!(sent["cc"], json!(["bob@partner.example"]), "{view}");
    let read = app
        .get(
            &format!("/inbox?id={}", sent["id"].as_str().unwrap()),
            Auth::Bearer(&key),
        )
        .await;
    assert_eq!(read.body["message"]["bcc"], json!(["boss@tom-corp.example"]));
    assert!(
        read.body["message"]["html"]
            .as_str()
            .unwrap()
            .contains("<p>Thursday.</p>")
    );

    // Five recipients across to, cc and bcc, no more; nothing spent.
    app.ctx.clock.advance(61);
    let six = json!({"to": ["a@x.example", "b@x.example"], "cc": "c@x.example, d@x.example",
                     "bcc": ["e@x.example", "f@x.example"], "subject": "s", "text": "t"});
    let res = app.send_mail(Auth::Bearer(&key), six).await;
    assert_eq!((res.status, res.error()), (400, "Max 5 recipients per request"));
    let five = json!({"to": ["a@x.example", "b@x.example"], "cc": "c@x.example, A@x.example",
                      "bcc": ["d@x.example", "e@x.example", "b@x.example"], "subject": "s", "text": "t"});
    let res = app.send_mail(Auth::Bearer(&key), five).await;
    assert_eq!(res.status, 200, "an address twice counts once: {}", res.body);
    for (body, error) in [
        (json!({"cc": 5}), "cc must be a string or an array of addresses"),
        (json!({"bcc": [7]}), "bcc must be addresses"),
        (
            json!({"cc": "not an address"}),
            "Invalid recipient address: not an address",
        ),
        (json!({"html": {"p": 1}}), "html must be a string"),
    ] {
        let mut send = json!({"to": "a@x.example", "subject": "s", "text": "t"});
        send.as_object_mut().unwrap().extend(body.as_object().unwrap().clone());
        app.ctx.clock.advance(61);
        let res = app.send_mail(Auth::Bearer(&key), send).await;
        assert_eq!((res.status, res.error()), (400, error));
    }
    let credits = app.get("/credits", Auth::Bearer(&key)).await.body;
    assert_eq!(credits["credits"]["remaining"], 98, "only the two sends: {credits}");
}

/// A message with an HTML body and two files.
fn report(message_id: &str, files: &[(&str, &str, &[u8])]) -> String {
    let mut raw = format!(
        "From: Pal <pal@partner.example>\r\nTo: tom@tom.example\r\nSubject: Report\r\nMessage-ID: {message_id}\r\n\
         Date: Mon, 23 Nov 2026 10:00:00 +0000\r\nMIME-Version: 1.0\r\n\
         Content-Type: multipart/mixed; boundary=\"m\"\r\n\r\n--m\r\n\
         Content-Type: multipart/alternative; boundary=\"a\"\r\n\r\n\
         --a\r\nContent-Type: text/plain\r\n\r\nThe numbers are in.\r\n\
         --a\r\nContent-Type: text/html\r\n\r\n<p>The <b>numbers</b> are in.<script>x()</script></p>\r\n--a--\r\n"
    );
    for (name, content_type, bytes) in files {
        raw.push_str(&format!(
            "--m\r\nContent-Type: {content_type}\r\nContent-Disposition: attachment; filename=\"{name}\"\r\n\
             Content-Transfer-Encoding: base64\r\n\r\n{}\r\n",
            b64(bytes)
        ));
    }
    raw.push_str("--m--\r\n");
    raw
}

async fn a_forward_carries_the_original_inline_with_its_files(app: TestApp) {
    let key = tom(&app).await;
    let files: &[(&str, &str, &[u8])] = &[
        ("report.pdf", "application/octet-stream", PDF),
        ("notes.txt", "text/plain", b"see page 2"),
    ];
    let row = deliver(&app, &key, "tom@tom.example", &report("<r-1@partner.example>", files)).await;
    let res = app
        .post(
            "/forward",
            Auth::Bearer(&key),
            json!({"id": row["id"], "to": "desk@else.example", "cc": "ann@else.example", "text": "FYI, see below."}),
        )
        .await;
    assert_eq!(res.status, 200, "{}", res.body);
    assert_eq!(res.body["subject"], "Fwd: Report");
    assert_eq!(res.body["to"], json!(["desk@else.example"]));
    assert_eq!(res.body["attachmentCount"], 2);
    let copy = copies_to(&app, "desk@else.example").remove(0);
    let m = parsed(&copy);
    assert_eq!(m.subject(), Some("Fwd: Report"));
    // (DKIM's h= names In-Reply-To, signed as absent.)
    assert!(!copy.contains("\nIn-Reply-To:"), "a forward answers nothing: {copy}");
    assert!(copy.contains("References: <r-1@partner.example>"), "{copy}");
    let text = m.body_text(0).unwrap().replace("\r\n", "\n");
    assert!(
        text.starts_with(
            "FYI, see below.\n\n---------- Forwarded message ---------\nFrom: Pal <pal@partner.example>\n"
        ),
        "{text}"
    );
    assert!(
        text.contains("Subject: Report\nTo: tom@tom.example\n\nThe numbers are in."),
        "{text}"
    );
    let html = m.body_html(0).unwrap();
    assert!(html.contains("<b>numbers</b>") && !html.contains("script"), "{html}");
    assert!(html.contains("FYI, see below."), "{html}");
    let carried: Vec<(String, String, Vec<u8>)> = m
        .attachments()
        .map(|a| {
            let ct = a.content_type().unwrap();
            (
                a.attachment_name().unwrap().to_string(),
                format!("{}/{}", ct.ctype(), ct.subtype().unwrap()),
                a.contents().to_vec(),
            )
        })
        .collect();
    assert_eq!(
        carried,
        [
            ("report.pdf".to_string(), "application/pdf".to_string(), PDF.to_vec()),
            ("notes.txt".into(), "text/plain".into(), b"see page 2".to_vec())
        ]
    );
    // Kept on the conversation it forwards, with its files.
    let view = thread(&app, &key, &row["threadId"]).await;
    assert_eq!(view["messages"][1]["subject"], "Fwd: Report", "{view}");
    assert_eq!(view["messages"][1]["attachments"].as_array().unwrap().len(), 2);

    // A file past the send limits: refused, saying why and how; without it, sent.
    let zipped: &[(&str, &str, &[u8])] = &[("all.zip", "application/zip", b"PK\x03\x04 zip")];
    let row = deliver(&app, &key, "tom@tom.example", &report("<r-2@partner.example>", zipped)).await;
    let forward = json!({"id": row["id"], "to": "desk@else.example"});
    let res = app.post("/forward", Auth::Bearer(&key), forward.clone()).await;
    assert_eq!(res.status, 400, "{}", res.body);
    assert_eq!(
        res.error(),
        "The original's files cannot be carried (Attachment 1 is not an allowed file type); forward it with \
         includeAttachments false to leave them out"
    );
    let mut without = forward;
    without["includeAttachments"] = json!(false);
    let res = app.post("/forward", Auth::Bearer(&key), without).await;
    assert_eq!(res.status, 200, "{}", res.body);
    assert_eq!(res.body["attachmentCount"], 0);
    let copy = copies_to(&app, "desk@else.example").pop().unwrap();
    assert_eq!(parsed(&copy).attachments().count(), 0);
    // Without a note, the forwarded message alone.
    assert!(
        parsed(&copy)
            .body_text(0)
            .unwrap()
            .starts_with("---------- Forwarded message ---------"),
        "{copy}"
    );
    let res = app.post("/forward", Auth::Bearer(&key), json!({"id": row["id"]})).await;
    assert_eq!(
        (res.status, res.error()),
        (400, "to is required: the addresses to forward the message to")
    );
}

async fn replies_and_forwards_keep_every_guardrail_of_a_send(app: TestApp) {
    use crate::guardrails::mint;
    let key = tom(&app).await;
    app.add_mailbox(&key, "tom.example", "sales", "hosted", json!([])).await;
    let row = deliver(&app, &key, "tom@tom.example", PLANS).await;
    let id = row["id"].as_str().unwrap().to_string();
    let reply = json!({"id": id, "text": "Yes."});
    let credits = || async {
        app.get("/credits", Auth::Bearer(&key)).await.body["credits"]["remaining"]
            .as_i64()
            .unwrap()
    };

    // The kill switch comes before validation, as sendMail's does.
    let op = app.operator_token().await;
    app.post("/credits", Auth::Bearer(&op), json!({"sendingEnabled": false}))
        .await;
    for path in ["/reply", "/forward"] {
        let res = app.post(path, Auth::Bearer(&key), json!({})).await;
        assert_eq!(
            (res.status, res.error()),
            (503, "Sending temporarily disabled"),
            "{path}"
        );
    }
    app.post("/credits", Auth::Bearer(&op), json!({"sendingEnabled": true}))
        .await;

    // Validation, then a message this caller cannot read: nothing spent.
    app.ctx.clock.advance(61);
    for (path, body, status, error) in [
        ("/reply", json!({"text": "x"}), 400, "id or messageId is required"),
        ("/reply", json!({"id": id}), 400, "text is required"),
        (
            "/reply",
            json!({"id": id, "text": "x", "all": "yes"}),
            400,
            "all must be a boolean",
        ),
        ("/reply", json!({"id": "nope", "text": "x"}), 404, "Message not found"),
        (
            "/forward",
            json!({"id": id, "to": "a@x.example", "includeAttachments": 1}),
            400,
            "includeAttachments must be a boolean",
        ),
    ] {
        let res = app.post(path, Auth::Bearer(&key), body).await;
        assert_eq!((res.status, res.error()), (status, error), "{path}: {}", res.body);
    }
    assert_eq!(credits().await, 100);
    // Five counted this minute: the rate window, before validation.
    let res = app.post("/reply", Auth::Bearer(&key), json!({})).await;
    assert_eq!((res.status, res.error()), (429, "Rate limit exceeded"));

    // A block list refuses a reply with sendMail's own sentence.
    app.ctx.clock.advance(61);
    let block = json!({"direction": "send", "kind": "block", "entry": "partner.example"});
    assert_eq!(app.post("/lists", Auth::Bearer(&key), block.clone()).await.status, 200);
    let by_send = app
        .send_mail(
            Auth::Bearer(&key),
            json!({"from": "tom@tom.example", "to": "pal@partner.example", "subject": "s", "text": "t"}),
        )
        .await;
    let by_reply = app.post("/reply", Auth::Bearer(&key), reply.clone()).await;
    assert_eq!(by_reply.status, 400, "{}", by_reply.body);
    assert_eq!(by_reply.body, by_send.body, "the same refusal");
    app.delete("/lists", Auth::Bearer(&key), block).await;
    assert_eq!(credits().await, 100);

    // Scoped keys: send and read both needed; only their own mailboxes.
    let (reader, _) = mint(&app, &key, json!({"name": "reader", "permissions": ["read"]})).await;
    let (sender, _) = mint(&app, &key, json!({"name": "sender", "permissions": ["send"]})).await;
    let (sales, _) = mint(
        &app,
        &key,
        json!({"name": "sales", "permissions": ["send", "read"], "mailboxes": ["sales@tom.example"]}),
    )
    .await;
    let res = app.post("/reply", Auth::Bearer(&reader), reply.clone()).await;
    assert_eq!(
        (res.status, res.error()),
        (403, "This API key lacks the send permission")
    );
    let res = app
        .post(
            "/forward",
            Auth::Bearer(&sender),
            json!({"id": id, "to": "x@else.example"}),
        )
        .await;
    assert_eq!(
        (res.status, res.error()),
        (
            403,
            "This API key lacks the read permission (inbox, attachments, outbox, threads)"
        )
    );
    let res = app.post("/reply", Auth::Bearer(&sales), reply.clone()).await;
    assert_eq!(
        (res.status, res.error()),
        (404, "Message not found"),
        "another mailbox's mail"
    );
    assert_eq!(credits().await, 100);

    // Idempotency: the same key and body answer once; another body is refused.
    app.ctx.clock.advance(61);
    let keyed = |body: &Value| {
        app.client
            .post(format!("{}/reply", app.base))
            .bearer_auth(&key)
            .header("Idempotency-Key", "reply-1")
            .json(body)
    };
    let first = app.send(keyed(&reply)).await;
    let second = app.send(keyed(&reply)).await;
    assert_eq!(first.status, 200, "{}", first.body);
    assert_eq!(first.body, second.body);
    let other = app.send(keyed(&json!({"id": id, "text": "No."}))).await;
    assert_eq!(other.status, 409);
    assert_eq!(other.body["code"], "idempotency_key_reused");
    assert_eq!(copies_to(&app, "pal@partner.example").len(), 1, "sent once");
    assert_eq!(credits().await, 99, "charged once");

    // Undo: accepted to wait (202), goes out when due, filed then.
    let res = app
        .post(
            "/reply",
            Auth::Bearer(&key),
            json!({"id": id, "text": "Later.", "undoSeconds": 30}),
        )
        .await;
    assert_eq!(
        (res.status, res.body["status"].as_str()),
        (202, Some("scheduled")),
        "{}",
        res.body
    );
    assert_eq!(credits().await, 98, "a scheduled send is charged when accepted");
    app.ctx.clock.advance(31);
    assert_eq!(
        common::service::sending::pending::run_due(&app.ctx).await.unwrap().sent,
        1
    );
    let view = thread(&app, &key, &row["threadId"]).await;
    assert_eq!(view["thread"]["outboundCount"], 2, "{view}");

    // No credits left: the spec's 429.
    let uid = app.uid_of_key(&key).await;
    app.set_credits(&common::service::accounts::credits::account_bucket(&uid), 0)
        .await;
    app.ctx.clock.advance(61);
    let res = app.post("/reply", Auth::Bearer(&key), reply).await;
    assert_eq!((res.status, res.error()), (429, "Insufficient credits"));

    // Each reply is in the audit log.
    let log = app.get("/audit?operation=reply", Auth::Bearer(&key)).await;
    assert_eq!(log.status, 200, "{}", log.body);
    assert!(!log.body["changes"].as_array().unwrap().is_empty(), "{}", log.body);
}

async fn a_held_forward_is_released_and_filed_with_its_bcc(app: TestApp) {
    use crate::guardrails::mint;
    let key = tom(&app).await;
    let row = deliver(&app, &key, "tom@tom.example", PLANS).await;
    let (careful, _) = mint(
        &app,
        &key,
        json!({"name": "careful", "permissions": ["send", "read"], "approval": "always", "mailboxes": ["tom@tom.example"]}),
    )
    .await;
    let res = app
        .post(
            "/reply",
            Auth::Bearer(&careful),
            json!({"id": row["id"], "text": "All of us.", "all": true}),
        )
        .await;
    assert_eq!(
        (res.status, res.body["status"].as_str()),
        (202, Some("held")),
        "{}",
        res.body
    );
    let reply_hold = res.body["holdId"].as_str().unwrap().to_string();
    let res = app
        .post(
            "/forward",
            Auth::Bearer(&careful),
            json!({"id": row["id"], "to": "desk@else.example", "bcc": "boss@tom-corp.example"}),
        )
        .await;
    assert_eq!(
        (res.status, res.body["status"].as_str()),
        (202, Some("held")),
        "{}",
        res.body
    );
    let forward_hold = res.body["holdId"].as_str().unwrap().to_string();
    assert!(copies_to(&app, "pal@partner.example").is_empty(), "held: nothing sent");
    for hold in [&reply_hold, &forward_hold] {
        let res = app
            .post("/holds/approve", Auth::Bearer(&key), json!({"holdId": hold}))
            .await;
        assert_eq!(res.body["hold"]["status"], "sent", "{}", res.body);
    }
    assert_eq!(copies_to(&app, "bob@partner.example").len(), 1);
    let boss = copies_to(&app, "boss@tom-corp.example");
    assert_eq!(boss.len(), 1);
    assert!(!boss[0].to_lowercase().contains("boss@"), "{}", boss[0]);
    // Filed from the bytes that went out: To and Cc as written, Bcc from the envelope.
    let view = thread(&app, &key, &row["threadId"]).await;
    let messages = view["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 3, "{view}");
    assert_eq!(
        messages[1]["to"],
        json!(["pal@partner.example", "ann@partner.example"]),
        "{view}"
    );
    assert_eq!(messages[1]["cc"], json!(["bob@partner.example"]), "{view}");
    assert_eq!(messages[1]["names"]["ann@partner.example"], "Lee, Ann", "{view}");
    assert_eq!(messages[2]["to"], json!(["desk@else.example"]), "{view}");
    assert_eq!(messages[2]["bcc"], json!(["boss@tom-corp.example"]), "{view}");
    assert!(messages[2].get("cc").is_none(), "{view}");
}

async fn received_mail_carries_the_names_written_beside_its_addresses(app: TestApp) {
    let key = tom(&app).await;
    let raw = "From: \"Mallory \u{202E}gnip\" <mal@partner.example>\r\nTo: =?ISO-8859-1?Q?Ren=E9e?= <tom@tom.example>\r\n\
               Cc: \"Jöhn Dœ\" <john@partner.example>\r\nReply-To: Desk <desk@partner.example>\r\n\
               Subject: Names\r\nMessage-ID: <names@partner.example>\r\n\r\nHi\r\n";
    let row = deliver(&app, &key, "tom@tom.example", raw).await;
    assert_eq!(row["from"], "mal@partner.example", "the spec's string stays: {row}");
    assert_eq!(row["fromName"], "Mallory gnip", "bidi controls removed: {row}");
    assert_eq!(row["cc"], json!(["john@partner.example"]));
    assert_eq!(row["replyTo"], json!(["desk@partner.example"]));
    assert_eq!(
        row["names"],
        json!({"tom@tom.example": "Renée", "john@partner.example": "Jöhn Dœ", "desk@partner.example": "Desk"})
    );
    let read = app
        .get(
            &format!("/inbox?id={}", row["id"].as_str().unwrap()),
            Auth::Bearer(&key),
        )
        .await;
    assert_eq!(read.body["message"]["fromName"], "Mallory gnip");
    // A reply goes to the Reply-To, by its name.
    let res = app
        .post("/reply", Auth::Bearer(&key), json!({"id": row["id"], "text": "Noted."}))
        .await;
    assert_eq!(res.body["to"], json!(["desk@partner.example"]), "{}", res.body);
    let copy = copies_to(&app, "desk@partner.example").remove(0);
    assert_eq!(
        named(parsed(&copy).to()),
        [("Desk".to_string(), "desk@partner.example".to_string())]
    );
    assert!(
        parsed(&copy)
            .body_text(0)
            .unwrap()
            .contains("Mallory gnip <mal@partner.example> wrote:")
    );
    // An agent reads the names inside the envelope: a stranger wrote them.
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                      "params": {"name": "get_message", "arguments": {"id": row["id"]}}});
    let res = app.post("/mcp", Auth::Bearer(&key), body).await;
    let got = &res.body["result"]["structuredContent"];
    let delimiter = got["envelope"]["delimiter"].as_str().unwrap();
    assert_eq!(
        got["message"]["fromName"],
        format!("<{delimiter}>Mallory gnip</{delimiter}>"),
        "{got}"
    );
    assert_eq!(
        got["message"]["names"]["desk@partner.example"],
        format!("<{delimiter}>Desk</{delimiter}>")
    );
}

/// A tool call's result, or its JSON-RPC error's data as the result.
async fn tool(app: &TestApp, key: &str, name: &str, arguments: Value) -> (bool, Value) {
    let body =
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name, "arguments": arguments}});
    let res = app.post("/mcp", Auth::Bearer(key), body).await;
    assert_eq!(res.status, 200, "{}", res.body);
    match res.body.get("error") {
        Some(error) => (true, error["data"].clone()),
        None => (
            res.body["result"]["isError"] == true,
            res.body["result"]["structuredContent"].clone(),
        ),
    }
}

async fn the_tools_reply_and_forward_as_the_routes_do(app: TestApp) {
    let key = tom(&app).await;
    let row = deliver(&app, &key, "tom@tom.example", PLANS).await;
    let list = app
        .post(
            "/mcp",
            Auth::Bearer(&key),
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
        )
        .await;
    let tools = list.body["result"]["tools"].as_array().unwrap();
    let schema = |name: &str| {
        tools
            .iter()
            .find(|t| t["name"] == name)
            .unwrap_or_else(|| panic!("{name} listed"))["inputSchema"]
            .clone()
    };
    assert!(schema("reply_to_message")["properties"].get("attachments").is_none());
    for field in ["cc", "bcc", "html"] {
        assert!(
            schema("send_mail")["properties"].get(field).is_some(),
            "send_mail takes {field}"
        );
    }
    let (failed, got) = tool(
        &app,
        &key,
        "reply_to_message",
        json!({"id": row["id"], "text": "Thursday, all.", "all": true}),
    )
    .await;
    assert!(!failed, "{got}");
    assert_eq!(
        got["to"],
        json!(["pal@partner.example", "ann@partner.example"]),
        "{got}"
    );
    assert_eq!(got["cc"], json!(["bob@partner.example"]));
    assert_eq!(got["threadId"], row["threadId"]);
    let (failed, got) = tool(
        &app,
        &key,
        "forward_message",
        json!({"id": row["id"], "to": "desk@else.example", "bcc": ["boss@tom-corp.example"]}),
    )
    .await;
    assert!(!failed, "{got}");
    // The subject carries the original sender's words: wrapped.
    let d = got["envelope"]["delimiter"].as_str().unwrap();
    assert_eq!(got["subject"], format!("<{d}>Fwd: Plans</{d}>"));
    assert_eq!(copies_to(&app, "boss@tom-corp.example").len(), 1);
    let (failed, got) = tool(
        &app,
        &key,
        "send_mail",
        json!({"to": "pal@partner.example", "cc": "ann@partner.example", "subject": "Hi", "text": "t", "html": "<b>t</b>"}),
    )
    .await;
    assert!(!failed, "{got}");
    let (failed, got) = tool(
        &app,
        &key,
        "reply_to_message",
        json!({"id": row["id"], "text": "x", "attachments": []}),
    )
    .await;
    assert!(failed);
    assert_eq!(
        (got["status"].as_i64(), got["error"].as_str()),
        (Some(400), Some("reply_to_message does not accept attachments"))
    );
    // Over MCP, 404 is a tool error as the spec's 4.12 says.
    let (failed, got) = tool(&app, &key, "reply_to_message", json!({"id": "nope", "text": "x"})).await;
    assert!(failed);
    assert_eq!(
        (got["status"].as_i64(), got["error"].as_str()),
        (Some(404), Some("Message not found"))
    );
    let view = thread(&app, &key, &row["threadId"]).await;
    assert_eq!(view["thread"]["outboundCount"], 2, "the reply and the forward: {view}");

    // The 5-recipient limit counts to, cc and bcc over MCP as well; a
    // refusal spends nothing.
    app.ctx.clock.advance(61);
    let remaining = || async {
        app.get("/credits", Auth::Bearer(&key)).await.body["credits"]["remaining"]
            .as_i64()
            .unwrap()
    };
    let before = remaining().await;
    for (name, arguments) in [
        (
            "send_mail",
            json!({"to": ["a@x.example", "b@x.example"], "cc": "c@x.example",
                   "bcc": ["d@x.example", "e@x.example", "f@x.example"], "subject": "s", "text": "t"}),
        ),
        (
            "forward_message",
            json!({"id": row["id"], "to": "a@x.example", "cc": ["b@x.example", "c@x.example"],
                   "bcc": "d@x.example, e@x.example, f@x.example"}),
        ),
    ] {
        let (failed, got) = tool(&app, &key, name, arguments).await;
        assert!(failed, "{name}: {got}");
        assert_eq!(
            (got["status"].as_i64(), got["error"].as_str()),
            (Some(400), Some("Max 5 recipients per request")),
            "{name}: {got}"
        );
    }
    assert_eq!(remaining().await, before, "nothing spent");
}

/// (status, error) of each answer, sorted, for a readable assertion.
fn outcomes(answers: &[crate::support::Response]) -> Vec<(u16, String)> {
    let mut got: Vec<(u16, String)> = answers.iter().map(|r| (r.status, r.error().to_string())).collect();
    got.sort();
    got
}

async fn concurrent_replies_and_forwards_send_once_file_all_and_never_overspend(app: TestApp) {
    let key = tom(&app).await;
    let row = deliver(&app, &key, "tom@tom.example", PLANS).await;
    let id = row["id"].as_str().unwrap().to_string();
    let credits = || async {
        app.get("/credits", Auth::Bearer(&key)).await.body["credits"]["remaining"]
            .as_i64()
            .unwrap()
    };
    let keyed = |path: &str, idem: &str, body: Value| {
        app.send(
            app.client
                .post(format!("{}{path}", app.base))
                .bearer_auth(&key)
                .header("Idempotency-Key", idem)
                .json(&body),
        )
    };

    // Eight at once under one Idempotency-Key, for a reply and for a forward:
    // one send each, one credit each, and every 200 is the first answer.
    let reply = json!({"id": id, "text": "Once."});
    let forward = json!({"id": id, "to": "desk@else.example"});
    let (replies, forwards) = tokio::join!(
        futures::future::join_all((0..8).map(|_| keyed("/reply", "race-reply", reply.clone()))),
        futures::future::join_all((0..8).map(|_| keyed("/forward", "race-forward", forward.clone()))),
    );
    for answers in [&replies, &forwards] {
        let ok: Vec<&Value> = answers.iter().filter(|r| r.status == 200).map(|r| &r.body).collect();
        assert!(!ok.is_empty(), "{:?}", outcomes(answers));
        assert!(ok.iter().all(|b| *b == ok[0]), "one answer: {ok:?}");
        for other in answers.iter().filter(|r| r.status != 200) {
            assert_eq!(
                (other.status, other.body["code"].as_str()),
                (409, Some("idempotency_in_progress")),
                "{}",
                other.body
            );
        }
    }
    assert_eq!(copies_to(&app, "pal@partner.example").len(), 1, "the reply went once");
    assert_eq!(copies_to(&app, "desk@else.example").len(), 1, "the forward went once");
    assert_eq!(credits().await, 98, "charged once each");

    // Five replies at once on one thread: each sent and each filed, the
    // thread's counts those of its rows.
    app.ctx.clock.advance(61);
    let answers = futures::future::join_all((0..5).map(|n| {
        app.post(
            "/reply",
            Auth::Bearer(&key),
            json!({"id": id, "text": format!("Reply {n}.")}),
        )
    }))
    .await;
    assert!(answers.iter().all(|r| r.status == 200), "{:?}", outcomes(&answers));
    let view = thread(&app, &key, &row["threadId"]).await;
    let messages = view["messages"].as_array().unwrap();
    assert_eq!(
        messages.len(),
        8,
        "the original, the first reply and forward, five more: {view}"
    );
    assert_eq!(view["thread"]["messageCount"], 8, "{view}");
    assert_eq!(view["thread"]["outboundCount"], 7, "{view}");
    for answer in &answers {
        assert!(
            messages.iter().any(|m| m["messageId"] == answer.body["messageId"]),
            "{} is on the thread",
            answer.body["messageId"]
        );
    }

    // Two credits left and five sends at once (replies and forwards, over
    // REST and MCP): two go, three are refused with sendMail's sentence.
    app.ctx.clock.advance(61);
    let uid = app.uid_of_key(&key).await;
    app.set_credits(&common::service::accounts::credits::account_bucket(&uid), 2)
        .await;
    let before = app.outbox().len();
    let tool_call = |name: &str, arguments: Value| {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name, "arguments": arguments}});
        app.post("/mcp", Auth::Bearer(&key), body)
    };
    let (rest, mcp) = tokio::join!(
        futures::future::join_all([
            app.post("/reply", Auth::Bearer(&key), json!({"id": id, "text": "A."})),
            app.post(
                "/reply",
                Auth::Bearer(&key),
                json!({"id": id, "text": "B.", "all": true})
            ),
            app.post(
                "/forward",
                Auth::Bearer(&key),
                json!({"id": id, "to": "c@else.example"})
            ),
        ]),
        futures::future::join_all([
            tool_call("reply_to_message", json!({"id": id, "text": "D."})),
            tool_call("forward_message", json!({"id": id, "to": "e@else.example"})),
        ]),
    );
    let mut sent = rest.iter().filter(|r| r.status == 200).count();
    for refused in rest.iter().filter(|r| r.status != 200) {
        assert_eq!((refused.status, refused.error()), (429, "Insufficient credits"));
    }
    for answer in &mcp {
        assert_eq!(answer.status, 200, "{}", answer.body);
        match answer.body["result"]["isError"] == true || answer.body.get("error").is_some() {
            false => sent += 1,
            true => {
                let data = match answer.body.get("error") {
                    Some(error) => &error["data"],
                    None => &answer.body["result"]["structuredContent"],
                };
                assert_eq!(
                    (data["status"].as_i64(), data["error"].as_str()),
                    (Some(429), Some("Insufficient credits")),
                    "{}",
                    answer.body
                );
            }
        }
    }
    let mcp_bodies: Vec<&Value> = mcp.iter().map(|r| &r.body).collect();
    assert_eq!(sent, 2, "{:?} {mcp_bodies:?}", outcomes(&rest));
    assert_eq!(credits().await, 0, "never below nothing");
    // The reply to all reaches three people, the others one each.
    let copies = app.outbox().len() - before;
    assert!((2..=4).contains(&copies), "only what was paid for went out: {copies}");

    // Replies racing the deletion of the message they answer: each is sent
    // and charged, or finds nothing (404) and spends nothing.
    app.ctx.clock.advance(61);
    app.set_credits(&common::service::accounts::credits::account_bucket(&uid), 10)
        .await;
    let trashed = app
        .post("/inbox", Auth::Bearer(&key), json!({"id": id, "folder": "trash"}))
        .await;
    assert_eq!(trashed.status, 200, "{}", trashed.body);
    let before = copies_to(&app, "pal@partner.example").len();
    let (replies, deleted) = tokio::join!(
        futures::future::join_all((0..4).map(|n| app.post(
            "/reply",
            Auth::Bearer(&key),
            json!({"id": id, "text": format!("Late {n}.")})
        ))),
        app.post("/inbox/delete", Auth::Bearer(&key), json!({"id": id})),
    );
    assert_eq!(deleted.status, 200, "{}", deleted.body);
    let sent = replies.iter().filter(|r| r.status == 200).count();
    for refused in replies.iter().filter(|r| r.status != 200) {
        assert_eq!((refused.status, refused.error()), (404, "Message not found"));
    }
    assert_eq!(credits().await, 10 - sent as i64, "{:?}", outcomes(&replies));
    assert_eq!(copies_to(&app, "pal@partner.example").len() - before, sent);
    let gone = app.get(&format!("/inbox?id={id}"), Auth::Bearer(&key)).await;
    assert_eq!(gone.status, 404, "{}", gone.body);
    // A reply that lost the race never answers the deleted message again.
    let res = app
        .post("/reply", Auth::Bearer(&key), json!({"id": id, "text": "Too late."}))
        .await;
    assert_eq!((res.status, res.error()), (404, "Message not found"));
}
