//! Domains end to end over HTTP with a real DNS server (spec 2.8, 3.1, 4.9, 4.10).

use crate::support::{self, ALLOWED_DOMAIN, Auth, TestApp};
use serde_json::{Value, json};

on_both_backends!(
    a_key_takes_a_domain_from_added_to_verified,
    add_domain_normalizes_refuses_and_repeats_without_change,
    one_domain_per_account_and_one_account_per_hostname,
    concurrent_adds_of_one_hostname_have_one_winner,
    verify_names_the_row_that_missed,
    a_lookup_that_does_not_finish_changes_nothing,
    operators_remove_a_domain_and_its_stored_mail,
    a_signed_in_person_manages_the_domain_of_their_ready_account,
    a_domain_whose_mx_moves_away_for_three_days_leaves_the_mail_host,
);

async fn a_signed_in_person_manages_the_domain_of_their_ready_account(app: TestApp) {
    let email = format!("pia@{ALLOWED_DOMAIN}");
    let key = app.onboard(&email).await;
    let token = app.token(&email).await;
    let added = app
        .post("/addDomain", Auth::Bearer(&token), json!({"domain": "pia.example"}))
        .await;
    assert_eq!(added.status, 200, "{}", added.body);
    let by_key = app.get("/listDomains", Auth::Bearer(&key)).await;
    assert_eq!(
        by_key.body["domains"][0]["name"], "pia.example",
        "the key and the token share one account"
    );
    let waiting = app.token("someone@people.test").await;
    let refused = app
        .post("/addDomain", Auth::Bearer(&waiting), json!({"domain": "x.example"}))
        .await;
    assert_eq!(
        (refused.status, refused.error()),
        (403, "Account setup is not complete yet")
    );
    let pending = app.request_and_verify("slow@elsewhere.test").await;
    assert_eq!(pending.body["status"], "setting_up");
    let slow = app.token("slow@elsewhere.test").await;
    let refused = app
        .post("/addDomain", Auth::Bearer(&slow), json!({"domain": "slow.example"}))
        .await;
    assert_eq!(
        (refused.status, refused.error()),
        (403, "Account setup is not complete yet")
    );
    let agent = app
        .post(
            "/addDomain",
            Auth::Bearer(&app.agent_key),
            json!({"domain": "a.example"}),
        )
        .await;
    assert_eq!((agent.status, agent.error()), (401, "Firebase sign-in required"));
    let agent = app
        .post(
            "/addDomain",
            Auth::ApiKey(&app.agent_key),
            json!({"domain": "a.example"}),
        )
        .await;
    assert_eq!((agent.status, agent.error()), (401, "Invalid API key"));
}

fn records(view: &Value) -> Vec<Value> {
    view["dnsInstructions"]["records"].as_array().unwrap().clone()
}

async fn a_key_takes_a_domain_from_added_to_verified(app: TestApp) {
    let key = app.onboard(&format!("ann@{ALLOWED_DOMAIN}")).await;
    let added = app
        .post("/api/addDomain", Auth::Bearer(&key), json!({"domain": "ann.example"}))
        .await;
    assert_eq!(added.status, 200, "{}", added.body);
    assert_eq!(added.body["created"], true);
    assert_eq!(added.body["verified"], false, "nothing is published yet");
    let view = &added.body["domain"];
    assert_eq!(
        (view["id"].as_str(), view["name"].as_str(), view["status"].as_str()),
        (Some("ann.example"), Some("ann.example"), Some("failed"))
    );
    assert_eq!(
        view["checks"],
        json!({"mx": false, "spf": false, "dkim": false, "dmarc": false}),
        "checked at once"
    );
    assert!(view["failureReason"].as_str().unwrap().contains("MX"));
    let recs = records(view);
    let mx = recs.iter().find(|r| r["type"] == "MX").unwrap();
    assert_eq!(
        (mx["host"].as_str(), mx["value"].as_str(), mx["priority"].as_u64()),
        (Some("ann.example"), Some("mx.svc.test"), Some(10))
    );
    let spf: Vec<_> = recs
        .iter()
        .filter(|r| r["value"].as_str().unwrap().starts_with("v=spf1"))
        .collect();
    assert_eq!(spf.len(), 1);
    let dkim = recs
        .iter()
        .find(|r| r["host"] == "mail._domainkey.ann.example")
        .unwrap();
    assert!(dkim["value"].as_str().unwrap().starts_with("v=DKIM1; k=rsa; p=MII"));
    assert!(
        recs.iter()
            .any(|r| r["host"] == "_dmarc.ann.example" && r["optional"] == true)
    );

    let status = app.post("/getAccountStatus", Auth::Bearer(&key), json!({})).await;
    assert_eq!(
        status.body["domains"][0]["verification"],
        json!({"mx": "missing", "spf": "missing", "dkim": "missing", "dmarc": "missing"})
    );
    assert!(status.body["reason"].as_str().unwrap().contains("verifyDomain"));

    app.publish(view);
    let verified = app
        .post("/verifyDomain", Auth::Bearer(&key), json!({"domainId": "ann.example"}))
        .await;
    assert_eq!(verified.status, 200, "{}", verified.body);
    assert_eq!(verified.body["verified"], true);
    assert_eq!(verified.body["transient"], false);
    assert_eq!(verified.body["created"], false);
    assert_eq!(
        verified.body["domain"],
        json!({"id": "ann.example", "status": "verified"})
    );
    assert_eq!(verified.body["checks"]["mx"], true);
    assert_eq!(verified.body["checks"]["spf"], true);
    assert_eq!(verified.body["checks"]["dkim"], true);

    let by_name = app
        .post("/verifyDomain", Auth::Bearer(&key), json!({"domain": "ANN.example."}))
        .await;
    assert_eq!(
        by_name.body["verified"], true,
        "domain is accepted when domainId is omitted"
    );
    let instructions = app
        .get("/getDnsInstructions?domainId=ann.example", Auth::Bearer(&key))
        .await;
    assert_eq!(instructions.status, 200);
    assert_eq!(instructions.body["status"], "verified");
    assert_eq!(
        instructions.body["instructions"]["records"].as_array().unwrap().len(),
        4
    );
    let listed = app.get("/api/listDomains", Auth::Bearer(&key)).await;
    assert_eq!(listed.body["domains"][0]["name"], "ann.example");
    assert_eq!(listed.body["domains"][0]["mailboxes"], json!([]));
    let status = app.post("/getAccountStatus", Auth::Bearer(&key), json!({})).await;
    assert_eq!(status.body["domains"][0]["verification"]["dkim"], "verified");
    assert!(status.body["reason"].as_str().unwrap().contains("/addMailbox"));

    for (path, body) in [
        ("/verifyDomain", json!({})),
        ("/verifyDomain", json!({"domainId": "bad name"})),
    ] {
        assert_eq!(app.post(path, Auth::Bearer(&key), body).await.status, 400);
    }
    assert_eq!(app.get("/getDnsInstructions", Auth::Bearer(&key)).await.status, 400);
    let other = app.onboard(&format!("bob@{ALLOWED_DOMAIN}")).await;
    let not_theirs = app
        .post(
            "/verifyDomain",
            Auth::Bearer(&other),
            json!({"domainId": "ann.example"}),
        )
        .await;
    assert_eq!((not_theirs.status, not_theirs.error()), (404, "Message not found"));
    assert_eq!(
        app.get("/getDnsInstructions?domainId=ann.example", Auth::Bearer(&other))
            .await
            .status,
        404
    );
    let theirs = app.get("/listDomains", Auth::Bearer(&other)).await;
    assert_eq!(theirs.body["domains"], json!([]));
    let ignored_uid = app.get("/listDomains?uid=ops", Auth::Bearer(&other)).await;
    assert_eq!(
        ignored_uid.body["domains"],
        json!([]),
        "only operators read another account"
    );
}

async fn add_domain_normalizes_refuses_and_repeats_without_change(app: TestApp) {
    let key = app.onboard(&format!("cat@{ALLOWED_DOMAIN}")).await;
    for (body, error) in [
        (json!({}), "Enter a domain you own, such as example.com"),
        (json!({"domain": "  "}), "Enter a domain you own, such as example.com"),
        (json!({"domain": "not a domain"}), "That domain name is not valid"),
        (json!({"domain": "localhost"}), "That domain name is not valid"),
        (json!({"domain": "svc.test"}), "product domain cannot be added"),
        (json!({"domain": "Mail.SVC.test."}), "product domain cannot be added"),
    ] {
        let res = app.post("/addDomain", Auth::Bearer(&key), body.clone()).await;
        assert_eq!((res.status, res.error()), (400, error), "{body}");
    }
    assert_eq!(
        app.post("/addDomain", Auth::Bearer(&key), json!({"domain": 7}))
            .await
            .status,
        400
    );
    let first = app
        .post("/addDomain", Auth::Bearer(&key), json!({"domain": "  Cat.Example. "}))
        .await;
    assert_eq!(first.body["domain"]["id"], "cat.example");
    let again = app
        .post("/addDomain", Auth::Bearer(&key), json!({"domain": "cat.example"}))
        .await;
    assert_eq!(again.status, 200);
    assert_eq!(again.body["created"], false);
    assert_eq!(
        again.body["domain"]["dnsInstructions"], first.body["domain"]["dnsInstructions"],
        "the DKIM key is unchanged"
    );
}

async fn one_domain_per_account_and_one_account_per_hostname(app: TestApp) {
    let key = app.onboard(&format!("dan@{ALLOWED_DOMAIN}")).await;
    assert_eq!(
        app.post("/addDomain", Auth::Bearer(&key), json!({"domain": "dan.example"}))
            .await
            .status,
        200
    );
    for other in ["other.example", "sub.dan.example"] {
        let res = app
            .post("/addDomain", Auth::Bearer(&key), json!({"domain": other}))
            .await;
        assert_eq!(res.status, 409, "{other}");
        assert_eq!(res.body["code"], "one_domain_per_account");
    }
    let rival = app.onboard(&format!("eve@{ALLOWED_DOMAIN}")).await;
    let claimed = app
        .post("/addDomain", Auth::Bearer(&rival), json!({"domain": "DAN.example"}))
        .await;
    assert_eq!(claimed.status, 409);
    assert_eq!(claimed.body["code"], "domain_claimed");
    let list = app.get("/listDomains", Auth::Bearer(&rival)).await;
    assert_eq!(list.body["domains"], json!([]), "the refused add changed nothing");
    let fresh = app
        .post("/addDomain", Auth::Bearer(&rival), json!({"domain": "eve.example"}))
        .await;
    assert_eq!(fresh.body["created"], true);
}

async fn concurrent_adds_of_one_hostname_have_one_winner(app: TestApp) {
    let mut keys = Vec::new();
    for i in 0..4 {
        keys.push(app.onboard(&format!("racer{i}@{ALLOWED_DOMAIN}")).await);
    }
    let adds = keys
        .iter()
        .map(|k| app.post("/addDomain", Auth::Bearer(k), json!({"domain": "race.example"})));
    let results = futures::future::join_all(adds).await;
    let created = results
        .iter()
        .filter(|r| r.status == 200 && r.body["created"] == true)
        .count();
    let claimed = results
        .iter()
        .filter(|r| r.status == 409 && r.body["code"] == "domain_claimed")
        .count();
    assert_eq!(
        (created, claimed),
        (1, 3),
        "{:?}",
        results.iter().map(|r| &r.body).collect::<Vec<_>>()
    );

    // One account adding two names at once keeps one.
    let key = app.onboard(&format!("twice@{ALLOWED_DOMAIN}")).await;
    let adds = ["one.example", "two.example", "three.example"]
        .map(|d| app.post("/addDomain", Auth::Bearer(&key), json!({"domain": d})));
    let results = futures::future::join_all(adds).await;
    let created = results.iter().filter(|r| r.status == 200).count();
    let refused = results
        .iter()
        .filter(|r| r.body["code"] == "one_domain_per_account")
        .count();
    assert_eq!((created, refused), (1, 2));
    let listed = app.get("/listDomains", Auth::Bearer(&key)).await;
    assert_eq!(listed.body["domains"].as_array().unwrap().len(), 1);
}

async fn verify_names_the_row_that_missed(app: TestApp) {
    let key = app
        .verified_domain(&format!("fin@{ALLOWED_DOMAIN}"), "fin.example")
        .await;
    let verify = || app.post("/verifyDomain", Auth::Bearer(&key), json!({"domainId": "fin.example"}));

    app.dns
        .set_mx("fin.example", &[(20, "mx.svc.test"), (5, "mx.old-router.net")]);
    let res = verify().await;
    assert_eq!(res.body["verified"], false);
    assert_eq!(res.body["domain"]["status"], "failed");
    assert_eq!(res.body["checks"]["mx"], false);
    assert_eq!(res.body["checks"]["dkim"], true);
    assert!(
        res.body["failureReason"]
            .as_str()
            .unwrap()
            .contains("mx.old-router.net"),
        "{}",
        res.body
    );
    app.dns
        .set_mx("fin.example", &[(10, "MX.SVC.TEST."), (20, "backup.example.net")]);
    assert_eq!(verify().await.body["verified"], true, "the preferred MX decides");

    app.dns.set_txt(
        "fin.example",
        &["v=spf1 a:mx.svc.test ~all", "v=spf1 include:other.net -all"],
    );
    let res = verify().await;
    assert_eq!(res.body["checks"]["spf"], false);
    assert!(
        res.body["failureReason"]
            .as_str()
            .unwrap()
            .contains("Publish one SPF TXT")
    );
    app.dns.set_txt(
        "fin.example",
        &["v=spf1 include:other.net -all", "google-site-verification=x"],
    );
    let res = verify().await;
    assert_eq!(res.body["checks"]["spf"], false);
    app.dns.set_txt(
        "fin.example",
        &[
            "google-site-verification=x",
            "v=spf1 a:mx.svc.test include:other.net ~all",
        ],
    );
    assert_eq!(verify().await.body["checks"]["spf"], true);

    app.dns.remove("mail._domainkey.fin.example");
    let res = verify().await;
    assert_eq!(res.body["checks"]["dkim"], false);
    assert_eq!(res.body["verified"], false);
    assert!(
        res.body["failureReason"]
            .as_str()
            .unwrap()
            .contains("mail._domainkey.fin.example")
    );
    app.dns.set_txt(
        "mail._domainkey.fin.example",
        &["v=DKIM1; k=rsa; p=MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAwrong"],
    );
    assert_eq!(verify().await.body["checks"]["dkim"], false, "a key that is not ours");
}

async fn a_lookup_that_does_not_finish_changes_nothing(app: TestApp) {
    let key = app
        .verified_domain(&format!("gil@{ALLOWED_DOMAIN}"), "gil.example")
        .await;
    app.dns.fail("gil.example", true);
    let res = app
        .post("/verifyDomain", Auth::Bearer(&key), json!({"domainId": "gil.example"}))
        .await;
    assert_eq!(res.status, 200, "{}", res.body);
    assert_eq!(res.body["transient"], true);
    assert_eq!(res.body["verified"], true, "still verified");
    assert_eq!(res.body["domain"]["status"], "verified");
    app.dns.fail("gil.example", false);
    app.dns.remove("gil.example");
    let res = app
        .post("/verifyDomain", Auth::Bearer(&key), json!({"domainId": "gil.example"}))
        .await;
    assert_eq!(
        (res.body["transient"].clone(), res.body["verified"].clone()),
        (json!(false), json!(false))
    );
}

async fn operators_remove_a_domain_and_its_stored_mail(app: TestApp) {
    let owner = format!("hal@{ALLOWED_DOMAIN}");
    let key = app.verified_domain(&owner, "hal.example").await;
    assert_eq!(
        app.add_mailbox(&key, "hal.example", "info", "hosted", json!([]))
            .await
            .status,
        200
    );
    assert_eq!(
        app.add_mailbox(&key, "hal.example", "fwd", "forward", json!(["x@elsewhere.example"]))
            .await
            .status,
        200
    );
    // Stored mail of the mailbox, filed by the poller: rows, a thread, the
    // Message-ID copy, and blobs (a long text and an HTML body).
    let long = "words ".repeat(2000);
    let raw = format!(
        "Delivered-To: info@hal.example\r\nFrom: pal@partner.example\r\nTo: info@hal.example\r\n\
         Subject: hi\r\nMessage-ID: <m1@partner.example>\r\nMIME-Version: 1.0\r\n\
         Content-Type: multipart/alternative; boundary=\"b\"\r\n\r\n--b\r\n\
         Content-Type: text/plain\r\n\r\n{long}\r\n--b\r\nContent-Type: text/html\r\n\r\n<p>{long}</p>\r\n--b--\r\n"
    );
    common::mail::inbound::drop_raw(&*app.ctx.blobs, raw.into_bytes())
        .await
        .unwrap();
    assert_eq!(
        common::service::receiving::poller::run_once(&app.ctx)
            .await
            .unwrap()
            .filed,
        1
    );
    assert_eq!(app.ctx.blobs.list("mail/info@hal.example/").await.unwrap().len(), 2);

    let op = app.operator_token().await;
    let op = Auth::Bearer(&op);
    let remove = |body: Value| app.post("/operatorRemoveDomain", op, body);
    let uid = app
        .ctx
        .store
        .get(&common::store::Key::new(format!("EMAIL#{owner}"), "A"))
        .await
        .unwrap()
        .unwrap()["uid"]
        .as_str()
        .unwrap()
        .to_string();

    assert_eq!(
        remove(json!({"domainId": "hal.example"})).await.status,
        400,
        "uid or ownerEmail is required"
    );
    assert_eq!(
        remove(json!({"uid": uid, "ownerEmail": format!("zed@{ALLOWED_DOMAIN}"), "domainId": "hal.example"}))
            .await
            .status,
        404
    );
    let system = remove(json!({"uid": "ops", "domainId": "svc.test", "confirm": "svc.test"})).await;
    assert_eq!(
        (system.status, system.body["code"].clone()),
        (409, json!("system_domain"))
    );
    assert_eq!(
        remove(json!({"uid": uid, "domainId": "nope.example"})).await.status,
        404
    );
    let unconfirmed = remove(json!({"uid": uid, "domainId": "hal.example"})).await;
    assert_eq!(unconfirmed.status, 400, "confirm must name a domain that has mailboxes");
    let wrong = remove(json!({"uid": uid, "domainId": "hal.example", "confirm": "other.example"})).await;
    assert_eq!(wrong.status, 400);
    let refused = app
        .post(
            "/operatorRemoveDomain",
            Auth::Bearer(&key),
            json!({"uid": uid, "domainId": "hal.example"}),
        )
        .await;
    assert_eq!(refused.status, 403);

    let removed =
        remove(json!({"ownerEmail": owner, "uid": uid, "domainId": "hal.example", "confirm": "hal.example"})).await;
    assert_eq!(removed.status, 200, "{}", removed.body);
    assert_eq!(removed.body["maildir"], "leave");
    assert_eq!(removed.body["mailboxesRemoved"], 2);
    assert_eq!(removed.body["claimReleased"], true);
    // Every row, copy, thread and blob of its mail is gone.
    let scope = common::keys::inbox_account_scope(&uid);
    let thread = common::service::mail_store::thread_id("info@hal.example", "<m1@partner.example>");
    let mut partitions = vec![
        common::keys::mail_partition(&scope, false),
        common::keys::mail_partition(&scope, true),
        common::keys::message_ids_of(&scope),
        common::keys::thread_partition(&scope, &thread),
    ];
    for folder in ["inbox", "archive", "trash"] {
        partitions.push(common::keys::folder_partition(&scope, folder));
        partitions.push(common::keys::threads_partition(&scope, folder));
    }
    for pk in partitions {
        let left = app
            .ctx
            .store
            .query(&common::store::Query::partition(&pk))
            .await
            .unwrap();
        assert!(left.items.is_empty(), "{pk}: {:?}", left.items);
    }
    assert!(app.ctx.blobs.list("mail/info@hal.example/").await.unwrap().is_empty());
    let info = common::service::mailboxes::by_address(&app.ctx, "info@hal.example")
        .await
        .unwrap()
        .unwrap();
    assert!(!info.is_active());
    assert_eq!(
        app.get("/listDomains", Auth::Bearer(&key)).await.body["domains"],
        json!([])
    );

    // The hostname is free again, and the account may add one domain again.
    let again = app
        .post("/addDomain", Auth::Bearer(&key), json!({"domain": "hal2.example"}))
        .await;
    assert_eq!(again.body["created"], true, "{}", again.body);
    let other = app.onboard(&format!("ivy@{ALLOWED_DOMAIN}")).await;
    let claim = app
        .post("/addDomain", Auth::Bearer(&other), json!({"domain": "hal.example"}))
        .await;
    assert_eq!(claim.body["created"], true, "{}", claim.body);
    let gone = remove(json!({"uid": uid, "domainId": "hal.example", "confirm": "hal.example"})).await;
    assert_eq!(gone.status, 404, "the removed domain is not that account's any more");
}

/// Outside finding 7: verified once is not routed forever. The daily look at
/// each verified domain's MX drops one that has named another host for three
/// days: failed, out of the mail host's export, its owner told once. Verified
/// again, it is back.
async fn a_domain_whose_mx_moves_away_for_three_days_leaves_the_mail_host(app: TestApp) {
    use common::service::domains::recheck;
    let owner = format!("mo@{ALLOWED_DOMAIN}");
    let key = app.verified_domain(&owner, "mo.example").await;
    assert_eq!(
        app.add_mailbox(&key, "mo.example", "me", "hosted", json!([]))
            .await
            .status,
        200
    );
    assert!(exported(&app, "mo.example").await);
    let day = 86_400;

    // Looked at once a day: the MX is right, nothing changes.
    let first = recheck::run_once(&app.ctx, &export(&app).await).await.unwrap();
    assert_eq!(first.looked, 1, "{first:?}");
    assert_eq!(
        recheck::run_once(&app.ctx, &export(&app).await).await.unwrap().looked,
        0,
        "not due again today"
    );

    // The MX moves elsewhere: still routed for three days.
    app.dns.set_mx("mo.example", &[(10, "mx.elsewhere.example")]);
    for _ in 0..3 {
        app.ctx.clock.advance(day);
        let run = recheck::run_once(&app.ctx, &export(&app).await).await.unwrap();
        assert_eq!((run.looked, run.dropped.len()), (1, 0), "{run:?}");
        assert!(exported(&app, "mo.example").await);
    }
    app.ctx.clock.advance(day);
    let dropped = recheck::run_once(&app.ctx, &export(&app).await).await.unwrap();
    assert_eq!(dropped.dropped, ["mo.example"]);
    assert!(!exported(&app, "mo.example").await, "it left the export");
    let listed = app.get("/listDomains", Auth::Bearer(&key)).await.body;
    assert_eq!(listed["domains"][0]["status"], "failed", "{listed}");
    assert!(
        listed["domains"][0]["failureReason"]
            .as_str()
            .unwrap()
            .contains("mx.elsewhere.example"),
        "{listed}"
    );
    let told = app.outbox_for(&owner);
    assert_eq!(
        told.iter().filter(|m| m.contains("mail is no longer received")).count(),
        1,
        "{told:?}"
    );
    app.ctx.clock.advance(day);
    assert!(
        recheck::run_once(&app.ctx, &export(&app).await)
            .await
            .unwrap()
            .dropped
            .is_empty()
    );
    assert_eq!(
        app.outbox_for(&owner)
            .iter()
            .filter(|m| m.contains("mail is no longer received"))
            .count(),
        1,
        "told once"
    );

    // Pointed back and verified: routed again.
    app.dns.set_mx("mo.example", &[(10, "mx.svc.test")]);
    let verified = app
        .post("/verifyDomain", Auth::Bearer(&key), json!({"domainId": "mo.example"}))
        .await;
    assert_eq!(verified.body["verified"], true, "{}", verified.body);
    assert!(exported(&app, "mo.example").await);
}

/// Writes a new export and gives the domains it read (what mta-export hands
/// the daily MX look).
async fn export(app: &TestApp) -> Vec<common::service::domains::Domain> {
    common::service::operators::mta_export::run_once(&app.ctx)
        .await
        .unwrap()
        .routed
}

/// Writes a new export and says whether it carries `domain`.
async fn exported(app: &TestApp, domain: &str) -> bool {
    common::service::operators::mta_export::run_once(&app.ctx)
        .await
        .unwrap();
    let res = app.get("/mtaMailboxExport", Auth::Bearer(support::SYNC_TOKEN)).await;
    assert_eq!(res.status, 200, "{}", res.body);
    res.body["export"]["domains"]
        .as_array()
        .unwrap()
        .iter()
        .any(|d| d == domain)
}
