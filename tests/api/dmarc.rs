//! DMARC aggregate reports (issue 29): real reports of mail-auth's public
//! suite (tests/fixtures/dmarc, see README.md there), mailed to the address
//! the DNS instructions name and dropped as the mail host hands them over,
//! then read through GET /dmarcReports and the MCP tools; bombs refused with
//! their reason, reports about strangers dropped and counted, and no report
//! ever in an inbox.

use std::time::Instant;

use crate::support::{Auth, TestApp};
use common::mail::inbound::{Envelope, FAILED};
use common::service::receiving::poller;
use common::store::{Query, StoreExt};
use serde_json::{Value, json};

on_both_backends!(
    real_reports_of_a_public_suite_are_kept_for_their_domain_and_read_back,
    a_zip_or_gzip_bomb_is_refused_with_its_reason_and_nothing_is_kept,
    a_report_about_a_domain_not_here_is_dropped_and_counted,
    a_report_is_never_inbox_mail_even_where_a_mailbox_holds_the_address,
    a_report_whose_mail_proves_no_reporter_is_kept_apart_from_the_summary,
);

const REPORT_ADDRESS: &str = "dmarc@svc.test";
const DOMAIN: &str = "stalw.art";

fn fixture(name: &str) -> Vec<u8> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/dmarc")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// The suite's stated outcome of a fixture (its `.json` beside it).
fn stated(name: &str) -> Value {
    serde_json::from_slice(&fixture(name)).unwrap()
}

/// A report mailed as uncompressed XML (RFC 7489 allows it; mail-auth's
/// suite keeps these as bare XML files).
fn xml_message(xml: &[u8], name: &str) -> Vec<u8> {
    xml_message_from(xml, name, "reports@fastmaildmarc.com")
}

fn xml_message_from(xml: &[u8], name: &str, from: &str) -> Vec<u8> {
    let mut raw = format!(
        "From: {from}\r\nTo: {REPORT_ADDRESS}\r\nSubject: Report Domain: {DOMAIN}\r\n\
         Message-ID: <{name}@reports.test>\r\nMIME-Version: 1.0\r\n\
         Content-Type: text/xml; name=\"{name}\"\r\nContent-Disposition: attachment; filename=\"{name}\"\r\n\r\n"
    )
    .into_bytes();
    raw.extend_from_slice(xml);
    raw
}

/// Hands a report over as the mail host does (its envelope names the report
/// address) and runs the poller once.
async fn mail_report(app: &TestApp, raw: &[u8]) -> poller::Outcome {
    mail_report_to(app, raw, REPORT_ADDRESS).await
}

/// Mails a report from its reporter's own servers: its From domain's SPF
/// names the client, and the domain publishes DMARC, so the mail proves its
/// reporter (issue 40, finding 15).
async fn mail_report_to(app: &TestApp, raw: &[u8], recipient: &str) -> poller::Outcome {
    let from = author_of(raw);
    vouch_for(app, from.rsplit_once('@').unwrap().1, "192.0.2.0/24");
    send_report(app, raw, recipient, &from, "192.0.2.25").await
}

/// `domain` publishes SPF naming `network` and DMARC p=reject.
fn vouch_for(app: &TestApp, domain: &str, network: &str) {
    app.dns.set_txt(domain, &[&format!("v=spf1 ip4:{network} -all")]);
    app.dns.set_txt(&format!("_dmarc.{domain}"), &["v=DMARC1; p=reject"]);
}

/// The first address the message's From names.
fn author_of(raw: &[u8]) -> String {
    let message = mail_parser::MessageParser::default().parse(raw).unwrap();
    message
        .from()
        .unwrap()
        .first()
        .unwrap()
        .address()
        .unwrap()
        .to_ascii_lowercase()
}

/// Hands a report over as the mail host does, from `client` with envelope
/// sender `sender`, and runs the poller once.
async fn send_report(app: &TestApp, raw: &[u8], recipient: &str, sender: &str, client: &str) -> poller::Outcome {
    let envelope = Envelope {
        recipient: Some(recipient.into()),
        sender: Some(sender.into()),
        client_address: Some(client.into()),
        helo: Some("reporter.test".into()),
    };
    mailhost::deliver(&app.data_dir, envelope.prepend(raw)).await.unwrap();
    poller::run_once(&app.ctx).await.unwrap()
}

async fn reports(app: &TestApp, key: &str, query: &str) -> crate::support::Response {
    app.get(&format!("/dmarcReports?domainId={DOMAIN}{query}"), Auth::Bearer(key))
        .await
}

async fn tool(app: &TestApp, key: &str, name: &str, arguments: Value) -> Value {
    let body =
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name, "arguments": arguments}});
    let res = app.post("/mcp", Auth::Bearer(key), body).await;
    assert_eq!(res.status, 200, "{}", res.body);
    assert_eq!(res.body["result"]["isError"], false, "{}", res.body);
    res.body["result"]["structuredContent"].clone()
}

/// The fixtures kept for stalw.art: (message, the suite's outcome), as
/// sent: zip (Google), gzip (backschues.net, Mail.Ru, Outlook, Amazon SES as
/// application/octet-stream) and raw XML (Fastmail).
fn suite() -> Vec<(Vec<u8>, Value)> {
    let mut all: Vec<(Vec<u8>, Value)> = ["100", "101", "102", "103", "104"]
        .iter()
        .map(|n| (fixture(&format!("{n}.eml")), stated(&format!("{n}.json"))))
        .collect();
    all.push((xml_message(&fixture("003.xml"), "fastmail.xml"), stated("003.json")));
    all
}

fn iso(secs: &Value) -> String {
    common::clock::iso_epoch(secs.as_i64().unwrap())
}

/// A listed report against the suite's parse of it, field by field.
fn assert_as_stated(listed: &Value, stated: &Value) {
    let meta = &stated["report_metadata"];
    let id = meta["report_id"].as_str().unwrap();
    assert_eq!(listed["reporter"]["orgName"], meta["org_name"], "{id}");
    assert_eq!(listed["reporter"]["email"], meta["email"], "{id}");
    assert_eq!(listed["reporter"]["reportId"], meta["report_id"]);
    assert_eq!(listed["period"]["begin"], iso(&meta["date_range"]["begin"]), "{id}");
    assert_eq!(listed["period"]["end"], iso(&meta["date_range"]["end"]), "{id}");
    assert_eq!(listed["domain"], DOMAIN);
    assert_eq!(listed["policyDomain"], stated["policy_published"]["domain"]);
    let mut want: Vec<Value> = stated["record"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let row = &r["row"];
            let lower = |v: &Value| v.as_str().unwrap().to_ascii_lowercase();
            json!({
                "sourceIp": row["source_ip"],
                "count": row["count"],
                "disposition": lower(&row["policy_evaluated"]["disposition"]),
                "dkim": lower(&row["policy_evaluated"]["dkim"]),
                "spf": lower(&row["policy_evaluated"]["spf"]),
                "headerFrom": r["identifiers"]["header_from"],
                "dkimResults": r["auth_results"]["dkim"].as_array().unwrap().iter().map(|d| json!({
                    "domain": d["domain"], "selector": d["selector"], "result": lower(&d["result"]),
                })).collect::<Vec<_>>(),
                "spfResults": r["auth_results"]["spf"].as_array().unwrap().iter().map(|s| json!({
                    "domain": s["domain"], "result": lower(&s["result"]),
                })).collect::<Vec<_>>(),
            })
        })
        .collect();
    // Kept busiest first (a stable sort: equal counts keep the report's order).
    want.sort_by_key(|s| std::cmp::Reverse(s["count"].as_u64().unwrap()));
    assert_eq!(listed["sources"], json!(want), "{id}");
    let messages: u64 = want.iter().map(|s| s["count"].as_u64().unwrap()).sum();
    assert_eq!(listed["messages"], messages, "{id}");
}

async fn real_reports_of_a_public_suite_are_kept_for_their_domain_and_read_back(app: TestApp) {
    let key = app.verified_domain("owner@stalw.art", DOMAIN).await;
    for (n, (raw, _)) in suite().into_iter().enumerate() {
        // The mail host's export aliases the address onto the bounce domain,
        // so Postfix hands some over as that.
        let to = if n % 2 == 0 {
            REPORT_ADDRESS
        } else {
            "dmarc@bounce.svc.test"
        };
        let outcome = mail_report_to(&app, &raw, to).await;
        assert_eq!(
            (outcome.filed, outcome.failed, outcome.pending),
            (0, 0, 0),
            "{outcome:?}"
        );
    }
    // The same report mailed twice is kept once.
    mail_report(&app, &fixture("100.eml")).await;

    let res = reports(&app, &key, "").await;
    assert_eq!(res.status, 200, "{}", res.body);
    let listed = res.body["reports"].as_array().unwrap().clone();
    // Newest period first.
    let order: Vec<&str> = listed
        .iter()
        .map(|r| r["reporter"]["orgName"].as_str().unwrap())
        .collect();
    assert_eq!(
        order,
        [
            "google.com",
            "\"backschues.NET",
            "Mail.Ru",
            "Fastmail Pty Ltd",
            "Outlook.com",
            "AMAZON-SES"
        ]
    );
    for (_, stated) in suite() {
        let id = stated["report_metadata"]["report_id"].as_str().unwrap();
        let report = listed.iter().find(|r| r["reporter"]["reportId"] == id).unwrap();
        assert_as_stated(report, &stated);
    }
    // Each mail proved its reporter, and says so.
    for report in &listed {
        assert_eq!(report["authenticated"], true, "{report}");
        assert_eq!(
            report["mail"]["authentication"],
            json!({"summary": "pass", "spoofed": false}),
            "{report}"
        );
        assert_eq!(report["mail"]["from"], report["reporter"]["email"], "{report}");
    }
    // Google's passes on both; the others fail alignment; Fastmail's last
    // row passes on DKIM.
    let summary = &res.body["summary"];
    assert_eq!(summary["unauthenticated"], 0);
    assert_eq!(
        (
            &summary["reports"],
            &summary["messages"],
            &summary["passing"],
            &summary["failing"]
        ),
        (&json!(6), &json!(14), &json!(2), &json!(12)),
        "{summary}"
    );
    assert_eq!(
        summary["topFailingSources"],
        json!([
            {"sourceIp": "173.228.157.66", "messages": 4},
            {"sourceIp": "50.223.129.194", "messages": 3},
            {"sourceIp": "64.147.108.117", "messages": 3},
            {"sourceIp": "207.171.188.200", "messages": 1},
            {"sourceIp": "64.147.108.173", "messages": 1},
        ])
    );
    assert_eq!(summary["period"]["begin"], "2022-09-19T00:00:00.000Z");
    assert_eq!(summary["period"]["end"], "2022-11-27T23:59:59.000Z");

    // Paged by cursor, newest first, the same six.
    let first = reports(&app, &key, "&limit=4").await.body;
    let cursor = first["nextCursor"].as_str().unwrap();
    let second = reports(&app, &key, &format!("&limit=4&cursor={cursor}")).await.body;
    assert!(second.get("nextCursor").is_none(), "{second}");
    let paged: Vec<Value> = [&first, &second]
        .iter()
        .flat_map(|p| p["reports"].as_array().unwrap().clone())
        .map(|r| r["id"].clone())
        .collect();
    assert_eq!(paged, listed.iter().map(|r| r["id"].clone()).collect::<Vec<_>>());
    assert_eq!(second["summary"]["reports"], 2);

    // The MCP tools: the summary alone, and the same list.
    let mcp = tool(&app, &key, "get_dmarc_summary", json!({"domainId": DOMAIN})).await;
    assert_eq!(mcp["summary"], *summary);
    assert!(mcp.get("reports").is_none());
    let mcp_list = tool(
        &app,
        &key,
        "list_dmarc_reports",
        json!({"domainId": DOMAIN, "limit": 1}),
    )
    .await;
    assert_eq!(mcp_list["reports"][0]["id"], listed[0]["id"]);

    // Kept 180 days.
    let uid = common::service::domains::claimant(&app.ctx, DOMAIN)
        .await
        .unwrap()
        .unwrap();
    let stored = app
        .ctx
        .store
        .all(Query::partition(common::keys::dmarc_reports(&uid, DOMAIN)))
        .await
        .unwrap();
    assert_eq!(stored.len(), 6);
    let now = app.ctx.clock.epoch();
    for item in stored {
        let ttl = item["ttl"].as_i64().unwrap();
        assert!((ttl - (now + 180 * 86_400)).abs() < 600, "{ttl} {now}");
    }
    scoped_keys_read_them_unless_held_to_mailboxes(&app, &key).await;
}

/// A read key for the whole account reads the reports; one held to some
/// mailboxes does not (the reports cover the whole domain).
async fn scoped_keys_read_them_unless_held_to_mailboxes(app: &TestApp, key: &str) {
    let added = app.add_mailbox(key, DOMAIN, "domains", "hosted", json!([])).await;
    assert_eq!(added.status, 200, "{}", added.body);
    let new_key = |body: Value| async move {
        let res = app.post("/keys", Auth::Bearer(key), body).await;
        assert_eq!(res.status, 200, "{}", res.body);
        res.body["apiKey"].as_str().unwrap().to_string()
    };
    let reader = new_key(json!({"name": "reader", "permissions": ["read"]})).await;
    assert_eq!(reports(app, &reader, "").await.body["summary"]["reports"], 6);
    let narrow = new_key(json!({"name": "narrow", "permissions": ["read"], "mailboxes": ["domains@stalw.art"]})).await;
    let refused = reports(app, &narrow, "").await;
    assert_eq!(
        (refused.status, refused.error()),
        (
            403,
            "This API key is limited to some mailboxes; DMARC reports cover the whole domain"
        )
    );
    // Another account's domain is not found.
    let other = app.verified_domain("owner@other.example", "other.example").await;
    let res = reports(app, &other, "").await;
    assert_eq!((res.status, res.error()), (404, "Message not found"));
}

async fn a_zip_or_gzip_bomb_is_refused_with_its_reason_and_nothing_is_kept(app: TestApp) {
    let key = app.verified_domain("owner@stalw.art", DOMAIN).await;
    let unpacks = "the report unpacks to more than 20 MB (a zip or gzip bomb?); nothing was kept\n";
    let bombs = [
        // 32 MiB in one gzip (no size said ahead: cut off as it inflates).
        ("bomb-gzip.eml", unpacks),
        // 32 MiB in one zip entry (its directory says so).
        ("bomb-zip.eml", unpacks),
        // Eight entries of 19 MiB, each under the cap.
        (
            "bomb-zip-many.eml",
            "the report's zip holds 8 files; at most 4 are read (a zip bomb?); nothing was kept\n",
        ),
    ];
    for (bomb, reason) in bombs {
        let started = Instant::now();
        let outcome = mail_report(&app, &fixture(bomb)).await;
        eprintln!("{bomb}: refused in {:?}", started.elapsed());
        assert_eq!((outcome.filed, outcome.failed), (0, 1), "{bomb}: {outcome:?}");
        let failed = app.ctx.blobs.list(FAILED).await.unwrap();
        let mut reasons = Vec::new();
        for k in failed.iter().filter(|k| k.ends_with(".reason")) {
            reasons.push(String::from_utf8(app.ctx.blobs.get(k).await.unwrap().unwrap()).unwrap());
        }
        assert!(reasons.iter().any(|r| r == reason), "{bomb}: {reasons:?}");
    }
    let failed = app.ctx.blobs.list(FAILED).await.unwrap();
    assert_eq!(failed.iter().filter(|k| k.ends_with(".reason")).count(), 3);
    let res = reports(&app, &key, "").await;
    assert_eq!(res.body["reports"], json!([]), "{}", res.body);
    assert_eq!(res.body["summary"]["messages"], 0);
    assert!(
        app.ctx
            .store
            .get(&common::keys::dmarc_dropped())
            .await
            .unwrap()
            .is_none()
    );
}

async fn a_report_about_a_domain_not_here_is_dropped_and_counted(app: TestApp) {
    let key = app.verified_domain("owner@stalw.art", DOMAIN).await;
    // Google's report about example.org: no account holds that domain.
    let outcome = mail_report(&app, &xml_message(&fixture("002.xml"), "google.xml")).await;
    assert_eq!(
        (outcome.filed, outcome.failed, outcome.pending),
        (0, 0, 0),
        "{outcome:?}"
    );
    let counted = app
        .ctx
        .store
        .get(&common::keys::dmarc_dropped())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (&counted["count"], &counted["lastDomain"]),
        (&json!(1), &json!("example.org"))
    );
    // Nothing kept for anyone.
    for item in app.ctx.store.all(Query::partition("DMARC#dropped")).await.unwrap() {
        assert_eq!(item["sk"], "C");
    }
    assert_eq!(reports(&app, &key, "").await.body["reports"], json!([]));

    // A report about a subdomain is its domain's: Fastmail's report with its
    // policy domain made news.stalw.art.
    let sub = String::from_utf8(fixture("003.xml"))
        .unwrap()
        .replace("<domain>stalw.art</domain>", "<domain>news.stalw.art</domain>");
    assert!(sub.contains("news.stalw.art"));
    mail_report(&app, &xml_message(sub.as_bytes(), "sub.xml")).await;
    let listed = reports(&app, &key, "").await.body;
    assert_eq!(listed["reports"][0]["domain"], DOMAIN);
    assert_eq!(listed["reports"][0]["policyDomain"], "news.stalw.art");
    // An unreadable report is refused with its reason.
    let outcome = mail_report(&app, &xml_message(b"<feedback><nonsense", "broken.xml")).await;
    assert_eq!(outcome.failed, 1);
    let counted = app
        .ctx
        .store
        .get(&common::keys::dmarc_dropped())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(counted["count"], 1);
}

async fn a_report_is_never_inbox_mail_even_where_a_mailbox_holds_the_address(app: TestApp) {
    let key = app.verified_domain("owner@stalw.art", DOMAIN).await;
    // The reports' To: is domains@stalw.art; a mailbox of that name exists.
    let added = app.add_mailbox(&key, DOMAIN, "domains", "hosted", json!([])).await;
    assert_eq!(added.status, 200, "{}", added.body);
    // And the operators hold a mailbox at the report address itself.
    let operator = app.operator_token().await;
    let theirs = app
        .add_mailbox(&operator, "svc.test", "dmarc", "hosted", json!([]))
        .await;
    assert_eq!(theirs.status, 200, "{}", theirs.body);
    for (raw, _) in suite() {
        assert_eq!(mail_report(&app, &raw).await.filed, 0);
    }
    let inbox = app.get("/inbox", Auth::Bearer(&key)).await;
    assert_eq!(inbox.body["messages"], json!([]), "{}", inbox.body);
    let ops = app
        .get(&format!("/inbox?mailbox={REPORT_ADDRESS}"), Auth::Bearer(&operator))
        .await;
    assert_eq!(ops.status, 200, "{}", ops.body);
    assert_eq!(ops.body["messages"], json!([]), "{}", ops.body);
    assert_eq!(reports(&app, &key, "").await.body["summary"]["reports"], 6);
}

/// Issue 40, finding 15: anyone can mail the report address, in anyone's
/// name. A stranger's "Google Inc." report claiming 1,983,969,000 failing
/// messages was stored and summed. Each report now keeps its mail's own
/// verdict; only one whose mail passed DMARC for the reporter's own domain
/// counts in the summary, the others are listed and counted apart.
async fn a_report_whose_mail_proves_no_reporter_is_kept_apart_from_the_summary(app: TestApp) {
    let key = app.verified_domain("owner@stalw.art", DOMAIN).await;
    // Google's own report, from Google's servers (google.com: p=reject).
    mail_report(&app, &fixture("100.eml")).await;
    let forged = |id: &str| {
        String::from_utf8(fixture("003.xml"))
            .unwrap()
            .replace("Fastmail Pty Ltd", "Google Inc.")
            .replace("reports@fastmaildmarc.com", "noreply-dmarc-support@google.com")
            .replace("758848224", id)
            .replace("<count>3</count>", "<count>1983969000</count>")
    };
    // In Google's name, from a stranger's server: google.com's DMARC fails.
    let raw = xml_message_from(
        forged("forged-1").as_bytes(),
        "a.xml",
        "noreply-dmarc-support@google.com",
    );
    let outcome = send_report(
        &app,
        &raw,
        REPORT_ADDRESS,
        "noreply-dmarc-support@google.com",
        "203.0.113.9",
    )
    .await;
    assert_eq!((outcome.filed, outcome.failed), (0, 0), "{outcome:?}");
    // From the stranger's own domain, proven, but naming Google as reporter.
    vouch_for(&app, "attacker.test", "203.0.113.0/24");
    let raw = xml_message_from(forged("forged-2").as_bytes(), "b.xml", "reports@attacker.test");
    send_report(&app, &raw, REPORT_ADDRESS, "reports@attacker.test", "203.0.113.9").await;

    let res = reports(&app, &key, "").await.body;
    let listed = res["reports"].as_array().unwrap();
    assert_eq!(listed.len(), 3, "{res}");
    let by_id = |id: &str| listed.iter().find(|r| r["reporter"]["reportId"] == id).unwrap().clone();
    let genuine = by_id(stated("100.json")["report_metadata"]["report_id"].as_str().unwrap());
    assert_eq!(genuine["authenticated"], true, "{genuine}");
    let spoofed = by_id("forged-1");
    assert_eq!(spoofed["authenticated"], false);
    assert_eq!(
        spoofed["mail"],
        json!({"from": "noreply-dmarc-support@google.com", "authentication": {"summary": "fail", "spoofed": true}})
    );
    let elsewhere = by_id("forged-2");
    assert_eq!(elsewhere["authenticated"], false);
    assert_eq!(
        elsewhere["mail"],
        json!({"from": "reports@attacker.test", "authentication": {"summary": "pass", "spoofed": false}})
    );
    assert_eq!(
        spoofed["failing"],
        1_983_969_000u64 + 4 + 1,
        "kept as claimed, {spoofed}"
    );
    let summary = &res["summary"];
    assert_eq!(
        (&summary["reports"], &summary["unauthenticated"]),
        (&json!(1), &json!(2))
    );
    assert_eq!(
        (&summary["messages"], &summary["failing"]),
        (&genuine["messages"], &genuine["failing"]),
        "{summary}"
    );
    assert!(
        !summary["topFailingSources"].to_string().contains("64.147.108.117"),
        "the forged sources are not summed: {summary}"
    );
    // The tools: the same summary; the reports' text inside the envelope.
    let mcp = tool(&app, &key, "get_dmarc_summary", json!({"domainId": DOMAIN})).await;
    assert_eq!(mcp["summary"], *summary);
    let mcp_list = tool(&app, &key, "list_dmarc_reports", json!({"domainId": DOMAIN})).await;
    let d = mcp_list["envelope"]["delimiter"].as_str().unwrap().to_string();
    let shown = mcp_list["reports"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["reporter"]["reportId"] == format!("<{d}>forged-1</{d}>"))
        .expect("the forged report, its id wrapped");
    assert_eq!(shown["reporter"]["orgName"], format!("<{d}>Google Inc.</{d}>"));
    assert_eq!(shown["sources"][0]["headerFrom"], format!("<{d}>stalw.art</{d}>"));
    assert_eq!(shown["authenticated"], false);
    // REST keeps the reports' own text.
    assert_eq!(spoofed["reporter"]["orgName"], "Google Inc.");
    assert!(res.get("envelope").is_none());
}

/// Through the real Postfix: a report mailed to `dmarc@<service domain>`
/// is taken by the export's alias to the bounce domain, handed to the spool
/// alone, and kept by the poller.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_report_mailed_through_postfix_reaches_the_reports() {
    let Some(rig) = crate::mail_host::rig(|_| {}).await else {
        return;
    };
    let app = &rig.app;
    let key = app.verified_domain("owner@stalw.art", DOMAIN).await;
    // Google's servers are, here, the loopback client Postfix sees.
    vouch_for(app, "google.com", "127.0.0.0/8");
    rig.start_with(&[]).await;
    let sent = crate::mail_host::smtp_raw(
        rig.host.smtp_port,
        "noreply-dmarc-support@google.com",
        &[REPORT_ADDRESS.to_string()],
        &fixture("100.eml"),
    )
    .await;
    assert_eq!(sent, Ok(()));
    let started = Instant::now();
    let mut kept = json!(null);
    while started.elapsed() < std::time::Duration::from_secs(60) {
        poller::run_once(&app.ctx).await.unwrap();
        kept = reports(app, &key, "").await.body;
        if kept["summary"]["reports"] == 1 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    assert_eq!(kept["reports"][0]["reporter"]["orgName"], "google.com", "{kept}");
    assert_eq!(kept["reports"][0]["authenticated"], true, "{kept}");
    let done = app.ctx.blobs.list(common::mail::inbound::DONE).await.unwrap();
    let handed: Vec<Vec<u8>> = futures::future::join_all(
        done.iter()
            .map(|k| async { app.ctx.blobs.get(k).await.unwrap().unwrap() }),
    )
    .await;
    let envelope = String::from_utf8_lossy(&handed[0]).lines().next().unwrap().to_string();
    assert!(
        envelope.contains("\"recipient\":\"dmarc@bounce.svc.test\""),
        "{envelope}"
    );
}
