//! Mailboxes, app passwords and the mail-server export end to end (spec 2.7, 3.2,
//! 4.8), with Postfix's postmap and Dovecot's doveadm reading what the export writes.

use crate::support::{self, ALLOWED_DOMAIN, Auth, TestApp};
use common::service::operators::mta_export;
use serde_json::{Value, json};

on_both_backends!(
    mailboxes_in_each_mode_carry_their_delivery_plan,
    forwarding_rules_refuse_every_bad_target,
    a_mailbox_exists_once_even_under_concurrent_adds,
    mode_changes_and_deletes_follow_the_rules,
    the_last_active_mailbox_of_a_verified_domain_stays,
    app_passwords_are_shown_once_and_follow_the_mode,
    the_export_turns_mta_applied_true_on_exactly_the_changes_it_carried,
    the_sync_token_reads_and_acknowledges_the_export,
    operators_add_hosted_mailboxes_on_the_service_domain,
    only_recent_export_versions_can_be_acknowledged,
    a_slow_export_run_never_hides_a_newer_export,
    concurrent_forwarding_changes_never_close_a_loop,
);

async fn concurrent_forwarding_changes_never_close_a_loop(app: TestApp) {
    let key = app
        .verified_domain(&format!("lou@{ALLOWED_DOMAIN}"), "lou.example")
        .await;
    for local in ["keep", "a", "b", "c"] {
        app.add_mailbox(&key, "lou.example", local, "hosted", json!([])).await;
    }
    for round in 0..5 {
        // a -> b, b -> c and c -> a at once: any two may land, never all three.
        let set = |from: &str, to: &str| {
            let body = json!({"domainId": "lou.example", "localPart": from, "mode": "both", "forwardTo": [format!("{to}@lou.example")]});
            app.post("/setMailboxMode", Auth::Bearer(&key), body)
        };
        let results = futures::future::join3(set("a", "b"), set("b", "c"), set("c", "a")).await;
        let results = [results.0, results.1, results.2];
        let landed = results.iter().filter(|r| r.status == 200).count();
        let loops = results
            .iter()
            .filter(|r| r.status == 400 && r.error().contains("loop"))
            .count();
        assert_eq!(
            (landed, loops),
            (2, 1),
            "round {round}: {:?}",
            results.iter().map(|r| &r.body).collect::<Vec<_>>()
        );
        for local in ["a", "b", "c"] {
            let body = json!({"domainId": "lou.example", "localPart": local, "mode": "hosted", "forwardTo": []});
            assert_eq!(app.post("/setMailboxMode", Auth::Bearer(&key), body).await.status, 200);
        }
    }
}

async fn only_recent_export_versions_can_be_acknowledged(app: TestApp) {
    let first = mta_export::run_once(&app.ctx).await.unwrap().version;
    let mut last = first;
    for _ in 0..101 {
        last = mta_export::run_once(&app.ctx).await.unwrap().version;
    }
    let pending = app.ctx.blobs.list("mta/pending/").await.unwrap();
    assert!(
        pending.len() <= 101,
        "old pending records are removed: {}",
        pending.len()
    );
    assert_eq!(mta_export::acknowledge(&app.ctx, first).await.unwrap_err().status, 404);
    assert!(mta_export::acknowledge(&app.ctx, last).await.is_ok());
}

/// Two runs overlap (the schedule and a cold start, or the local jobs and a
/// test): the one that took the older version finishes last. The mail host
/// still reads the newest version, never the stale one.
async fn a_slow_export_run_never_hides_a_newer_export(app: TestApp) {
    let sync = support::SYNC_TOKEN;
    let key = app
        .verified_domain(&format!("sid@{ALLOWED_DOMAIN}"), "sid.example")
        .await;
    app.add_mailbox(&key, "sid.example", "s", "hosted", json!([])).await;
    let older = mta_export::run_once(&app.ctx).await.unwrap().version;
    let body =
        json!({"domainId": "sid.example", "localPart": "s", "mode": "forward", "forwardTo": ["out@elsewhere.test"]});
    assert_eq!(app.post("/setMailboxMode", Auth::Bearer(&key), body).await.status, 200);
    let newer = mta_export::run_once(&app.ctx).await.unwrap().version;
    // The older run's export lands after the newer one.
    let name = format!("mta/export/{older:012}.json");
    let stale = app.ctx.blobs.get(&name).await.unwrap().expect("the older export");
    app.ctx.blobs.put(&name, stale, "application/json").await.unwrap();
    let got = app.get("/mtaMailboxExport", Auth::Bearer(sync)).await;
    assert_eq!(got.status, 200, "{}", got.body);
    assert_eq!(got.body["export"]["version"], newer);
    let plan = &got.body["export"]["mailboxes"];
    assert!(plan.to_string().contains("\"forward\""), "the newer plan: {plan}");

    for _ in 0..15 {
        mta_export::run_once(&app.ctx).await.unwrap();
    }
    let kept = app.ctx.blobs.list("mta/export/").await.unwrap();
    assert!(kept.len() <= 11, "old exports are removed: {}", kept.len());
}

async fn mailboxes_in_each_mode_carry_their_delivery_plan(app: TestApp) {
    let key = app
        .verified_domain(&format!("amy@{ALLOWED_DOMAIN}"), "amy.example")
        .await;
    let hosted = app.add_mailbox(&key, "amy.example", "Hello", "hosted", json!([])).await;
    assert_eq!(hosted.status, 200, "{}", hosted.body);
    let m = &hosted.body["mailbox"];
    assert_eq!(
        (m["domainId"].as_str(), m["localPart"].as_str(), m["mode"].as_str()),
        (Some("amy.example"), Some("hello"), Some("hosted"))
    );
    assert_eq!(m["forwardTo"], json!([]));
    assert_eq!(m["delivery"], json!({"vmailbox": true, "virtualAlias": null}));
    assert_eq!(
        (m["mtaApplied"].clone(), m["mtaAppliedAt"].clone()),
        (json!(false), Value::Null)
    );

    let fwd = app
        .add_mailbox(&key, "amy.example", "fwd", "forward", json!("Out@Elsewhere.Example"))
        .await;
    assert_eq!(fwd.status, 200, "{}", fwd.body);
    assert_eq!(
        fwd.body["mailbox"]["forwardTo"],
        json!(["out@elsewhere.example"]),
        "a single string is accepted, lowercased"
    );
    assert_eq!(
        fwd.body["mailbox"]["delivery"],
        json!({"vmailbox": false, "virtualAlias": {"address": "fwd@amy.example", "targets": ["out@elsewhere.example"]}})
    );
    let both = app
        .add_mailbox(
            &key,
            "amy.example",
            "both",
            "both",
            json!(["a@elsewhere.example", "A@elsewhere.example", "hello@amy.example"]),
        )
        .await;
    assert_eq!(both.status, 200, "{}", both.body);
    assert_eq!(
        both.body["mailbox"]["forwardTo"],
        json!(["a@elsewhere.example", "hello@amy.example"]),
        "de-duplicated"
    );
    assert_eq!(
        both.body["mailbox"]["delivery"]["virtualAlias"]["targets"],
        json!(["both@amy.example", "a@elsewhere.example", "hello@amy.example"])
    );
    assert_eq!(both.body["mailbox"]["delivery"]["vmailbox"], true);

    let listed = app.get("/listDomains", Auth::Bearer(&key)).await;
    let rows = listed.body["domains"][0]["mailboxes"].as_array().unwrap().clone();
    let modes: Vec<&str> = rows.iter().map(|r| r["mode"].as_str().unwrap()).collect();
    assert_eq!(modes, ["both", "forward", "hosted"]);
    assert!(
        rows.iter()
            .all(|r| r["forwardTo"].is_array() && r["delivery"].is_object())
    );

    let status = app.post("/getAccountStatus", Auth::Bearer(&key), json!({})).await;
    assert_eq!(status.body["canSend"], true);
    assert!(status.body.get("reason").is_none());
    assert_eq!(status.body["mailboxes"].as_array().unwrap().len(), 3);
}

async fn forwarding_rules_refuse_every_bad_target(app: TestApp) {
    let key = app
        .verified_domain(&format!("ben@{ALLOWED_DOMAIN}"), "ben.example")
        .await;
    assert_eq!(
        app.add_mailbox(&key, "ben.example", "a", "hosted", json!([]))
            .await
            .status,
        200
    );
    let six: Vec<String> = (0..6).map(|i| format!("t{i}@elsewhere.example")).collect();
    let cases = [
        ("hosted", json!(["x@elsewhere.example"])),
        ("forward", json!([])),
        ("both", Value::Null),
        ("forward", json!(six)),
        ("forward", json!(["not an address"])),
        ("forward", json!([5])),
        ("forward", json!({"to": "x@y.example"})),
        ("forward", json!(["b@ben.example"])),
        ("forward", json!(["nobody@ben.example"])),
        ("forward", json!(["someone@svc.test"])),
        ("sideways", json!([])),
    ];
    for (mode, forward) in cases {
        let res = app.add_mailbox(&key, "ben.example", "b", mode, forward.clone()).await;
        assert_eq!(res.status, 400, "{mode} {forward}: {}", res.body);
        assert!(!res.error().is_empty());
    }
    assert_eq!(
        app.add_mailbox(&key, "ben.example", "bad local", "hosted", json!([]))
            .await
            .status,
        400
    );
    // A loop through a chain of this service's mailboxes.
    assert_eq!(
        app.add_mailbox(&key, "ben.example", "b", "forward", json!(["a@ben.example"]))
            .await
            .status,
        200
    );
    assert_eq!(
        app.add_mailbox(&key, "ben.example", "c", "forward", json!(["b@ben.example"]))
            .await
            .status,
        200
    );
    let res = app
        .post(
            "/setMailboxMode",
            Auth::Bearer(&key),
            json!({"domainId": "ben.example", "localPart": "a", "mode": "forward", "forwardTo": ["c@ben.example"]}),
        )
        .await;
    assert_eq!(res.status, 400, "{}", res.body);
    assert!(res.error().contains("loop"));
    let listed = app.get("/listDomains", Auth::Bearer(&key)).await;
    assert_eq!(
        listed.body["domains"][0]["mailboxes"].as_array().unwrap().len(),
        3,
        "the refusals changed nothing"
    );
}

async fn a_mailbox_exists_once_even_under_concurrent_adds(app: TestApp) {
    let key = app
        .verified_domain(&format!("cal@{ALLOWED_DOMAIN}"), "cal.example")
        .await;
    let adds = (0..6).map(|_| app.add_mailbox(&key, "cal.example", "same", "hosted", json!([])));
    let results = futures::future::join_all(adds).await;
    assert_eq!(results.iter().filter(|r| r.status == 200).count(), 1);
    let dupes: Vec<_> = results.iter().filter(|r| r.status == 409).collect();
    assert_eq!(dupes.len(), 5);
    assert!(
        dupes
            .iter()
            .all(|r| r.error() == "That mailbox already exists on this domain.")
    );
    let other = app.onboard(&format!("dee@{ALLOWED_DOMAIN}")).await;
    let foreign = app
        .add_mailbox(&other, "cal.example", "mine", "hosted", json!([]))
        .await;
    assert_eq!(foreign.status, 404, "another account's domain");
    let unverified_key = app.onboard(&format!("eli@{ALLOWED_DOMAIN}")).await;
    app.post(
        "/addDomain",
        Auth::Bearer(&unverified_key),
        json!({"domain": "eli.example"}),
    )
    .await;
    let early = app
        .add_mailbox(&unverified_key, "eli.example", "a", "hosted", json!([]))
        .await;
    assert_eq!(early.status, 409, "a domain must be verified first");
}

async fn mode_changes_and_deletes_follow_the_rules(app: TestApp) {
    let key = app
        .verified_domain(&format!("fay@{ALLOWED_DOMAIN}"), "fay.example")
        .await;
    app.add_mailbox(&key, "fay.example", "keep", "hosted", json!([])).await;
    app.add_mailbox(&key, "fay.example", "box", "hosted", json!([])).await;
    let set = |body: Value| app.post("/setMailboxMode", Auth::Bearer(&key), body);
    let res = set(
        json!({"domainId": "fay.example", "localPart": "box", "mode": "both", "forwardTo": ["x@elsewhere.example"]}),
    )
    .await;
    assert_eq!(res.status, 200, "{}", res.body);
    assert_eq!(res.body["mailbox"]["mode"], "both");
    assert_eq!(res.body["mailbox"]["mtaApplied"], false);
    let res = set(json!({"mailboxId": "box@fay.example", "mode": "hosted", "forwardTo": []})).await;
    assert_eq!(
        res.body["mailbox"]["delivery"],
        json!({"vmailbox": true, "virtualAlias": null})
    );
    assert_eq!(
        set(json!({"domainId": "fay.example", "localPart": "nope", "mode": "hosted"}))
            .await
            .status,
        404
    );
    assert_eq!(
        set(json!({"domainId": "fay.example", "localPart": "box", "mode": "bogus"}))
            .await
            .status,
        400
    );
    // A mailboxId beside a localPart or domainId that names another mailbox
    // is refused, and changes neither.
    for body in [
        json!({"domainId": "fay.example", "localPart": "keep", "mailboxId": "box", "mode": "both", "forwardTo": ["x@elsewhere.example"]}),
        json!({"domainId": "other.example", "mailboxId": "box@fay.example", "mode": "both", "forwardTo": ["x@elsewhere.example"]}),
        json!({"localPart": "keep", "mailboxId": "box@fay.example", "mode": "both", "forwardTo": ["x@elsewhere.example"]}),
    ] {
        let res = set(body.clone()).await;
        assert_eq!(res.status, 400, "{body}: {}", res.body);
        assert_eq!(res.body["error"], "mailboxId does not match domainId and localPart");
    }
    let agreeing =
        set(json!({"domainId": "fay.example", "localPart": "box", "mailboxId": "box@fay.example", "mode": "hosted"}))
            .await;
    assert_eq!(agreeing.status, 200, "{}", agreeing.body);
    let modes = app.get("/listDomains", Auth::Bearer(&key)).await.body["domains"][0]["mailboxes"].clone();
    assert!(
        modes.as_array().unwrap().iter().all(|m| m["mode"] == "hosted"),
        "a refused change changed nothing: {modes}"
    );

    let del = |body: Value| app.post("/deleteMailbox", Auth::Bearer(&key), body);
    assert_eq!(del(json!({})).await.status, 400);
    assert_eq!(del(json!({"address": "nonsense"})).await.status, 400);
    // Every name given must say the same mailbox (spec 4.8: a mismatch is
    // 400), whichever of them are given together; none is deleted.
    let mailboxes = || async {
        let domains = app.get("/listDomains", Auth::Bearer(&key)).await.body;
        domains["domains"][0]["mailboxes"].as_array().map(Vec::len)
    };
    let before = mailboxes().await;
    for body in [
        json!({"address": "box@fay.example", "domain": "fay.example", "localPart": "keep"}),
        json!({"address": "box@fay.example", "domain": "other.example"}),
        json!({"address": "box@fay.example", "domainId": "other.example"}),
        json!({"address": "box@fay.example", "localPart": "keep"}),
        json!({"address": "box@fay.example", "mailboxId": "keep"}),
        json!({"address": "box@fay.example", "mailboxId": "keep@fay.example"}),
        json!({"mailboxId": "box@fay.example", "domain": "other.example"}),
        json!({"domain": "fay.example", "localPart": "box", "mailboxId": "keep"}),
        json!({"domain": "fay.example", "domainId": "other.example", "localPart": "box"}),
    ] {
        let res = del(body.clone()).await;
        assert_eq!(res.status, 400, "{body}: {}", res.body);
        assert_eq!(
            res.body["error"], "address does not match domain and localPart",
            "{body}"
        );
    }
    assert_eq!(mailboxes().await, before, "nothing deleted");
    assert_eq!(
        del(json!({"domain": "fay.example"})).await.status,
        400,
        "a domain alone names no mailbox"
    );
    assert_eq!(del(json!({"address": "ghost@fay.example"})).await.status, 404);
    let other = app.onboard(&format!("gus@{ALLOWED_DOMAIN}")).await;
    let foreign = app
        .post(
            "/deleteMailbox",
            Auth::Bearer(&other),
            json!({"address": "box@fay.example"}),
        )
        .await;
    assert_eq!(foreign.status, 404);
    let protected = app
        .post(
            "/deleteMailbox",
            Auth::Bearer(&key),
            json!({"address": "inbox@svc.test"}),
        )
        .await;
    assert_eq!(protected.status, 404, "the service domain is not the customer's");
    let gone = del(json!({"domain": "fay.example", "localPart": "box"})).await;
    assert_eq!(gone.status, 200, "{}", gone.body);
    assert_eq!(gone.body["maildir"], "leave");
    assert_eq!(
        gone.body["mailbox"]["delivery"],
        json!({"vmailbox": false, "virtualAlias": null})
    );
    assert_eq!(gone.body["mailbox"]["mtaApplied"], false);
    assert_eq!(
        del(json!({"address": "box@fay.example"})).await.status,
        404,
        "already removed"
    );
    let back = app.add_mailbox(&key, "fay.example", "box", "hosted", json!([])).await;
    assert_eq!(back.status, 200, "a removed address may be added again");
}

async fn the_last_active_mailbox_of_a_verified_domain_stays(app: TestApp) {
    let key = app
        .verified_domain(&format!("hank@{ALLOWED_DOMAIN}"), "hank.example")
        .await;
    for local in ["a", "b", "c"] {
        app.add_mailbox(&key, "hank.example", local, "hosted", json!([])).await;
    }
    let deletes = ["a", "b", "c"].map(|l| {
        app.post(
            "/deleteMailbox",
            Auth::Bearer(&key),
            json!({"address": format!("{l}@hank.example")}),
        )
    });
    let results = futures::future::join_all(deletes).await;
    assert_eq!(
        results.iter().filter(|r| r.status == 200).count(),
        2,
        "{:?}",
        results.iter().map(|r| &r.body).collect::<Vec<_>>()
    );
    let last = results.iter().find(|r| r.status == 409).unwrap();
    assert_eq!(
        last.error(),
        "This is the last mailbox on hank.example. Add another mailbox first, or contact support to remove the domain."
    );
    let listed = app.get("/listDomains", Auth::Bearer(&key)).await;
    assert_eq!(listed.body["domains"][0]["mailboxes"].as_array().unwrap().len(), 1);
}

async fn app_passwords_are_shown_once_and_follow_the_mode(app: TestApp) {
    let key = app
        .verified_domain(&format!("ida@{ALLOWED_DOMAIN}"), "ida.example")
        .await;
    app.add_mailbox(&key, "ida.example", "me", "hosted", json!([])).await;
    app.add_mailbox(&key, "ida.example", "fw", "forward", json!(["x@elsewhere.example"]))
        .await;
    let issued = app
        .post(
            "/issueMailboxCredential",
            Auth::Bearer(&key),
            json!({"address": "me@ida.example"}),
        )
        .await;
    assert_eq!(issued.status, 200, "{}", issued.body);
    let password = issued.body["password"].as_str().unwrap().to_string();
    assert!(password.len() >= 20);
    assert_eq!(issued.body["username"], "me@ida.example");
    let refused = app
        .post(
            "/issueMailboxCredential",
            Auth::Bearer(&key),
            json!({"address": "fw@ida.example"}),
        )
        .await;
    assert_eq!(refused.status, 400, "forward-only mailboxes get no login");
    assert_eq!(
        app.post("/issueMailboxCredential", Auth::Bearer(&key), json!({}))
            .await
            .status,
        400
    );
    assert_eq!(
        app.post(
            "/issueMailboxCredential",
            Auth::Bearer(&key),
            json!({"address": "no@ida.example"})
        )
        .await
        .status,
        404
    );
    let listed = app.get("/listDomains", Auth::Bearer(&key)).await;
    assert!(
        !listed.body.to_string().contains(&password),
        "the password is never returned again"
    );
    let stored = common::service::mailboxes::by_address(&app.ctx, "me@ida.example")
        .await
        .unwrap()
        .unwrap();
    let hash = stored.password_hash.clone().unwrap();
    assert!(hash.starts_with("$6$") && !hash.contains(&password));

    let export = export_now(&app).await;
    let passwd = export["dovecot"]["passwdFile"].as_str().unwrap();
    assert_eq!(passwd, format!("me@ida.example:{{SHA512-CRYPT}}{hash}::::::\n"));
    check_with_doveadm(&hash, &password);

    let set = |mode: &str, forward: Value| {
        app.post(
            "/setMailboxMode",
            Auth::Bearer(&key),
            json!({"domainId": "ida.example", "localPart": "me", "mode": mode, "forwardTo": forward}),
        )
    };
    assert_eq!(set("forward", json!(["x@elsewhere.example"])).await.status, 200);
    assert_eq!(
        export_now(&app).await["dovecot"]["passwdFile"],
        "",
        "switching to forward withdraws the login"
    );
    assert_eq!(set("both", json!(["x@elsewhere.example"])).await.status, 200);
    assert!(
        export_now(&app).await["dovecot"]["passwdFile"]
            .as_str()
            .unwrap()
            .contains(&hash),
        "switching back restores it"
    );
    let reset = app
        .post(
            "/issueMailboxCredential",
            Auth::Bearer(&key),
            json!({"address": "me@ida.example"}),
        )
        .await;
    assert_ne!(
        reset.body["password"].as_str().unwrap(),
        password,
        "a reset issues a new password"
    );
}

async fn export_now(app: &TestApp) -> Value {
    let outcome = mta_export::run_once(&app.ctx).await.unwrap();
    let export = app
        .get("/mtaMailboxExport", Auth::Bearer(support::SYNC_TOKEN))
        .await
        .body["export"]
        .clone();
    assert_eq!(export["version"], outcome.version);
    export
}

async fn the_export_turns_mta_applied_true_on_exactly_the_changes_it_carried(app: TestApp) {
    let key = app.verified_domain(&format!("jo@{ALLOWED_DOMAIN}"), "jo.example").await;
    app.add_mailbox(&key, "jo.example", "h", "hosted", json!([])).await;
    app.add_mailbox(
        &key,
        "jo.example",
        "f",
        "forward",
        json!(["x@elsewhere.example", "y@elsewhere.example"]),
    )
    .await;
    app.add_mailbox(&key, "jo.example", "b", "both", json!(["z@elsewhere.example"]))
        .await;
    let first = mta_export::run_once(&app.ctx).await.unwrap();
    let export = app
        .get("/mtaMailboxExport", Auth::Bearer(support::SYNC_TOKEN))
        .await
        .body["export"]
        .clone();
    let postfix = &export["postfix"];
    assert!(
        postfix["virtualMailboxDomains"]
            .as_str()
            .unwrap()
            .lines()
            .any(|l| l == "jo.example OK")
    );
    let vmailbox = postfix["virtualMailboxMaps"].as_str().unwrap();
    assert!(vmailbox.contains("h@jo.example jo.example/h/\n") && vmailbox.contains("b@jo.example jo.example/b/\n"));
    assert!(!vmailbox.contains("f@jo.example"));
    let valias = postfix["virtualAliasMaps"].as_str().unwrap();
    assert!(valias.contains("f@jo.example x@elsewhere.example,y@elsewhere.example\n"));
    assert!(valias.contains("b@jo.example b@jo.example,z@elsewhere.example\n"));
    let plans: Vec<&Value> = export["mailboxes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["address"].as_str().unwrap().ends_with("@jo.example"))
        .collect();
    assert_eq!(plans.len(), 3);
    check_with_postmap(postfix);

    // A change after the export is not covered by acknowledging it.
    app.post(
        "/setMailboxMode",
        Auth::Bearer(&key),
        json!({"domainId": "jo.example", "localPart": "h", "mode": "both", "forwardTo": ["q@elsewhere.example"]}),
    )
    .await;
    let ack = mta_export::acknowledge(&app.ctx, first.version).await.unwrap();
    assert!(ack.applied >= 2);
    let rows = app.get("/listDomains", Auth::Bearer(&key)).await.body["domains"][0]["mailboxes"]
        .as_array()
        .unwrap()
        .clone();
    let applied = |local: &str| rows.iter().find(|r| r["localPart"] == local).unwrap()["mtaApplied"].clone();
    assert_eq!(
        (applied("f"), applied("b"), applied("h")),
        (json!(true), json!(true), json!(false))
    );
    assert!(rows.iter().find(|r| r["localPart"] == "f").unwrap()["mtaAppliedAt"].is_string());
    let second = mta_export::run_once(&app.ctx).await.unwrap();
    mta_export::acknowledge(&app.ctx, second.version).await.unwrap();
    let rows = app.get("/listDomains", Auth::Bearer(&key)).await.body["domains"][0]["mailboxes"]
        .as_array()
        .unwrap()
        .clone();
    assert!(rows.iter().all(|r| r["mtaApplied"] == true));
    let status = app.post("/getAccountStatus", Auth::Bearer(&key), json!({})).await;
    assert!(
        status.body["mailboxes"]
            .as_array()
            .unwrap()
            .iter()
            .all(|m| m["ready"] == true)
    );

    // A deletion is a change too: its removal goes out and is acknowledged.
    let gone = app
        .post("/deleteMailbox", Auth::Bearer(&key), json!({"address": "f@jo.example"}))
        .await;
    assert_eq!(gone.body["mailbox"]["mtaApplied"], false);
    let third = mta_export::run_once(&app.ctx).await.unwrap();
    let export = app
        .get("/mtaMailboxExport", Auth::Bearer(support::SYNC_TOKEN))
        .await
        .body["export"]
        .clone();
    assert!(
        !export["postfix"]["virtualAliasMaps"]
            .as_str()
            .unwrap()
            .contains("f@jo.example")
    );
    mta_export::acknowledge(&app.ctx, third.version).await.unwrap();
    let f = common::service::mailboxes::by_address(&app.ctx, "f@jo.example")
        .await
        .unwrap()
        .unwrap();
    assert!(f.mta_applied);
}

async fn the_sync_token_reads_and_acknowledges_the_export(app: TestApp) {
    let sync = support::SYNC_TOKEN;
    let key = app
        .verified_domain(&format!("kay@{ALLOWED_DOMAIN}"), "kay.example")
        .await;
    app.add_mailbox(&key, "kay.example", "k", "hosted", json!([])).await;
    assert_eq!(
        app.get("/mtaMailboxExport", Auth::Bearer(sync)).await.status,
        404,
        "nothing exported yet"
    );
    let outcome = mta_export::run_once(&app.ctx).await.unwrap();
    // Never acknowledged: the export's age (a metric) counts from this first run.
    let counter = || async {
        app.ctx
            .store
            .get(&common::keys::export_versions())
            .await
            .unwrap()
            .expect("the version counter")
    };
    let before = counter().await;
    assert!(before["exportingSince"].is_string(), "{before:?}");
    assert!(before.get("ackedAt").is_none(), "{before:?}");
    let got = app.get("/api/mtaMailboxExport", Auth::Bearer(sync)).await;
    assert_eq!(got.status, 200);
    assert_eq!(got.body["export"]["version"], outcome.version);
    for auth in [Auth::Bearer(&key), Auth::Bearer(&app.agent_key)] {
        assert_eq!(app.get("/mtaMailboxExport", auth).await.status, 403);
    }
    assert_eq!(
        app.post("/mtaMailboxExport", Auth::Bearer(sync), json!({"version": "one"}))
            .await
            .status,
        400
    );
    assert_eq!(
        app.post("/mtaMailboxExport", Auth::Bearer(sync), json!({"version": 99999}))
            .await
            .status,
        404
    );
    let ack = app
        .post(
            "/mtaMailboxExport",
            Auth::Bearer(sync),
            json!({"version": outcome.version}),
        )
        .await;
    assert_eq!(ack.status, 200, "{}", ack.body);
    // The age counts from here now.
    assert_eq!(counter().await["ackedAt"], ack.body["appliedAt"]);
    let m = common::service::mailboxes::by_address(&app.ctx, "k@kay.example")
        .await
        .unwrap()
        .unwrap();
    assert!(m.mta_applied && m.mta_applied_at.is_some());
    let refused = app.get("/credits", Auth::Bearer(sync)).await;
    assert_eq!(refused.status, 401, "the sync token is refused elsewhere");
}

async fn operators_add_hosted_mailboxes_on_the_service_domain(app: TestApp) {
    let op = app.operator_token().await;
    let added = app.add_mailbox(&op, "svc.test", "support", "hosted", json!([])).await;
    assert_eq!(added.status, 200, "{}", added.body);
    let fwd = app
        .add_mailbox(&op, "svc.test", "fw", "forward", json!(["x@elsewhere.example"]))
        .await;
    assert_eq!(fwd.status, 400);
    let listed = app.get("/listDomains?uid=ops", Auth::Bearer(&op)).await;
    let boxes = listed.body["domains"][0]["mailboxes"].as_array().unwrap().clone();
    let inbox = boxes
        .iter()
        .find(|m| m["address"] == "inbox@svc.test")
        .expect("inbox@ exists from the start");
    assert_eq!(
        (inbox["mode"].clone(), inbox["protected"].clone()),
        (json!("hosted"), json!(true))
    );
    assert!(boxes.iter().any(|m| m["address"] == "noreply@svc.test"));
    let protected = app
        .post(
            "/deleteMailbox",
            Auth::Bearer(&op),
            json!({"address": "inbox@svc.test"}),
        )
        .await;
    assert_eq!(protected.status, 409);
    let key = app.onboard(&format!("lou@{ALLOWED_DOMAIN}")).await;
    let customer = app.add_mailbox(&key, "svc.test", "mine", "hosted", json!([])).await;
    assert_eq!(customer.status, 404, "customers cannot add on the service domain");
}

/// Postfix reads the maps: `postmap` builds them and `postmap -q` answers.
fn check_with_postmap(postfix: &Value) {
    let Some(_) = tool("postmap") else { return };
    let dir = std::env::temp_dir().join(format!("mh-postmap-{:x}", rand::random::<u64>()));
    std::fs::create_dir_all(&dir).unwrap();
    for (name, field) in [
        ("vdomains", "virtualMailboxDomains"),
        ("vmailbox", "virtualMailboxMaps"),
        ("valias", "virtualAliasMaps"),
    ] {
        let path = dir.join(name);
        std::fs::write(&path, postfix[field].as_str().unwrap()).unwrap();
        let built = std::process::Command::new("postmap")
            .arg(format!("hash:{}", path.display()))
            .output()
            .unwrap();
        assert!(
            built.status.success(),
            "postmap {name}: {}",
            String::from_utf8_lossy(&built.stderr)
        );
    }
    let query = |name: &str, key: &str| {
        let out = std::process::Command::new("postmap")
            .args(["-q", key, &format!("hash:{}", dir.join(name).display())])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    assert_eq!(query("vdomains", "jo.example"), "OK");
    assert_eq!(query("vmailbox", "h@jo.example"), "jo.example/h/");
    assert_eq!(
        query("valias", "f@jo.example"),
        "x@elsewhere.example,y@elsewhere.example"
    );
    assert_eq!(query("valias", "b@jo.example"), "b@jo.example,z@elsewhere.example");
    assert_eq!(query("vmailbox", "f@jo.example"), "");
    std::fs::remove_dir_all(dir).ok();
}

/// Dovecot accepts the hash: `doveadm pw -t` verifies the password against it.
fn check_with_doveadm(hash: &str, password: &str) {
    let Some(_) = tool("doveadm") else { return };
    let out = std::process::Command::new("doveadm")
        .args(["pw", "-t", &format!("{{SHA512-CRYPT}}{hash}"), "-p", password])
        .output()
        .unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success() && said.contains("verified"), "doveadm: {said}");
    let wrong = std::process::Command::new("doveadm")
        .args(["pw", "-t", &format!("{{SHA512-CRYPT}}{hash}"), "-p", "wrong"])
        .output()
        .unwrap();
    assert!(!wrong.status.success());
}

/// A Debian tool the test needs; required when every stand-in is.
fn tool(name: &str) -> Option<()> {
    crate::support::standin_command(name)
}

/// Local mode with no mail host attached applies each export itself, so
/// `mtaApplied` turns true within one interval.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn local_mode_applies_its_own_export_within_one_interval() {
    let app = TestApp::spawn_with(support::Backend::Embedded, |c| {
        c.poll_interval = 1;
        c.mta_self_apply = true;
    })
    .await
    .unwrap();
    let key = app
        .verified_domain(&format!("liv@{ALLOWED_DOMAIN}"), "liv.example")
        .await;
    let added = app.add_mailbox(&key, "liv.example", "me", "hosted", json!([])).await;
    assert_eq!(added.body["mailbox"]["mtaApplied"], false);
    let mut applied = false;
    for _ in 0..50 {
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        let rows = app.get("/listDomains", Auth::Bearer(&key)).await.body["domains"][0]["mailboxes"].clone();
        if rows[0]["mtaApplied"] == true {
            assert!(rows[0]["mtaAppliedAt"].is_string());
            applied = true;
            break;
        }
    }
    assert!(applied, "mtaApplied turned true within the interval");
}
