//! `mailhost mta-sync` against the running service and the real `postmap`:
//! the maps and passwd-file written atomically, Postfix reloaded only on a
//! change, the applied version acknowledged (mtaApplied), and nothing
//! acknowledged when a step fails.

use std::path::Path;

use crate::support::{ALLOWED_DOMAIN, Auth, SYNC_TOKEN, TestApp};
use common::service::operators::mta_export;
use mailhost::mta_sync::{self, Settings};
use serde_json::{Value, json};

on_both_backends!(the_agent_applies_each_export_and_acknowledges_only_what_it_applied);

fn postmap_query(dir: &Path, map: &str, key: &str) -> Option<String> {
    let out = std::process::Command::new("postmap")
        .arg("-q")
        .arg(key)
        .arg(format!("hash:{}", dir.join(map).display()))
        .output()
        .unwrap();
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

async fn applied(app: &TestApp, key: &str) -> Vec<(String, Value)> {
    let domains = app.get("/listDomains", Auth::Bearer(key)).await.body;
    domains["domains"][0]["mailboxes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| (m["localPart"].as_str().unwrap().to_string(), m["mtaApplied"].clone()))
        .collect()
}

async fn the_agent_applies_each_export_and_acknowledges_only_what_it_applied(app: TestApp) {
    if crate::support::standin_command("postmap").is_none() {
        return;
    }
    let key = app
        .verified_domain(&format!("sam@{ALLOWED_DOMAIN}"), "sam.example")
        .await;
    assert_eq!(
        app.add_mailbox(&key, "sam.example", "me", "hosted", json!([]))
            .await
            .status,
        200
    );
    assert_eq!(
        app.add_mailbox(&key, "sam.example", "fwd", "forward", json!(["out@elsewhere.example"]))
            .await
            .status,
        200
    );
    let issued = app
        .post(
            "/issueMailboxCredential",
            Auth::Bearer(&key),
            json!({"address": "me@sam.example"}),
        )
        .await;
    assert_eq!(issued.status, 200, "{}", issued.body);
    mta_export::run_once(&app.ctx).await.unwrap();

    let dir = app.data_dir.join("mail-host");
    std::fs::create_dir_all(&dir).unwrap();
    let reloads = dir.join("reloads");
    let reload = dir.join("reload.sh");
    std::fs::write(&reload, format!("echo reload >> {}\n", reloads.display())).unwrap();
    let settings = Settings {
        url: format!("{}/api", app.base),
        sync_token: SYNC_TOKEN.into(),
        postfix_maps_dir: dir.join("maps"),
        dovecot_passwd: dir.join("dovecot/passwd"),
        postmap: "postmap".into(),
        postfix_config_dir: None,
        // Through sh, not executed itself: a file just written may still be
        // open in a child another test is forking (ETXTBSY).
        reload: format!("sh {}", reload.display()),
        interval: 60,
        once: true,
    };
    let reload_count = || std::fs::read_to_string(&reloads).unwrap_or_default().lines().count();
    let client = reqwest::Client::new();
    let maps = dir.join("maps");

    // First run: everything written, Postfix reloaded, the version acknowledged.
    let first = mta_sync::run_once(&client, &settings).await.unwrap();
    assert_eq!(first.maps_changed.len(), 3, "{first:?}");
    assert!(first.passwd_changed && first.reloaded);
    assert_eq!(reload_count(), 1);
    assert_eq!(
        postmap_query(&maps, "virtual_mailbox_domains", "sam.example").as_deref(),
        Some("OK")
    );
    assert_eq!(
        postmap_query(&maps, "virtual_mailbox_maps", "me@sam.example").as_deref(),
        Some("sam.example/me/")
    );
    assert_eq!(
        postmap_query(&maps, "virtual_alias_maps", "fwd@sam.example").as_deref(),
        Some("out@elsewhere.example")
    );
    assert_eq!(
        postmap_query(&maps, "virtual_mailbox_maps", "fwd@sam.example"),
        None,
        "forward-only stores nothing"
    );
    let passwd = std::fs::read_to_string(dir.join("dovecot/passwd")).unwrap();
    assert!(passwd.starts_with("me@sam.example:{SHA512-CRYPT}$6$"), "{passwd}");
    // Made with its final mode: never readable by others, not even briefly.
    use std::os::unix::fs::MetadataExt;
    assert_eq!(
        std::fs::metadata(dir.join("dovecot/passwd")).unwrap().mode() & 0o777,
        0o640
    );
    assert!(applied(&app, &key).await.iter().all(|(_, a)| a == true));
    assert!(!maps.join("virtual_mailbox_maps.new").exists(), "nothing left staged");

    // Nothing changed: no file rewritten, no reload, still acknowledged.
    mta_export::run_once(&app.ctx).await.unwrap();
    let same = mta_sync::run_once(&client, &settings).await.unwrap();
    assert!(
        same.maps_changed.is_empty() && !same.passwd_changed && !same.reloaded,
        "{same:?}"
    );
    assert_eq!(reload_count(), 1);

    // A change the agent cannot apply (postmap fails): nothing acknowledged,
    // the last good maps stay.
    let moved = app
        .post("/setMailboxMode", Auth::Bearer(&key), json!({"domainId": "sam.example", "localPart": "me", "mode": "forward", "forwardTo": ["me@elsewhere.example"]}))
        .await;
    assert_eq!(moved.status, 200, "{}", moved.body);
    mta_export::run_once(&app.ctx).await.unwrap();
    let broken = Settings {
        postmap: "false".into(),
        ..settings.clone()
    };
    assert!(mta_sync::run_once(&client, &broken).await.is_err());
    assert_eq!(
        postmap_query(&maps, "virtual_mailbox_maps", "me@sam.example").as_deref(),
        Some("sam.example/me/")
    );
    let states = applied(&app, &key).await;
    assert!(
        states.iter().any(|(local, a)| local == "me" && a == false),
        "{states:?}"
    );
    assert_eq!(reload_count(), 1);
    // The service away: nothing acknowledged, nothing changed.
    let away = Settings {
        url: "http://127.0.0.1:9".into(),
        ..settings.clone()
    };
    assert!(mta_sync::run_once(&client, &away).await.is_err());
    assert_eq!(
        postmap_query(&maps, "virtual_mailbox_maps", "me@sam.example").as_deref(),
        Some("sam.example/me/")
    );
    // Back: the next run applies the newest export.
    let back = mta_sync::run_once(&client, &settings).await.unwrap();
    assert!(
        back.maps_changed.contains(&"virtual_mailbox_maps") && back.reloaded,
        "{back:?}"
    );
    assert_eq!(postmap_query(&maps, "virtual_mailbox_maps", "me@sam.example"), None);
    assert_eq!(
        postmap_query(&maps, "virtual_alias_maps", "me@sam.example").as_deref(),
        Some("me@elsewhere.example")
    );
    assert_eq!(reload_count(), 2);
    assert!(applied(&app, &key).await.iter().all(|(_, a)| a == true));
    // A link planted where the staged file goes is replaced, never written
    // through; a live passwd-file that is a link is refused.
    let elsewhere = dir.join("elsewhere");
    std::fs::write(&elsewhere, "untouched").unwrap();
    std::os::unix::fs::symlink(&elsewhere, dir.join("dovecot/passwd.new")).unwrap();
    let issued = app
        .post(
            "/issueMailboxCredential",
            Auth::Bearer(&key),
            json!({"address": "late@sam.example"}),
        )
        .await;
    assert!(issued.status == 200 || issued.status == 404, "{}", issued.body);
    assert_eq!(
        app.add_mailbox(&key, "sam.example", "late", "hosted", json!([]))
            .await
            .status,
        200
    );
    // A new password for late@, and the export that carries it.
    let reissue = || async {
        app.post(
            "/issueMailboxCredential",
            Auth::Bearer(&key),
            json!({"address": "late@sam.example"}),
        )
        .await;
        mta_export::run_once(&app.ctx).await.unwrap();
    };
    reissue().await;
    let planted = mta_sync::run_once(&client, &settings).await.unwrap();
    assert!(planted.passwd_changed, "{planted:?}");
    assert_eq!(std::fs::read_to_string(&elsewhere).unwrap(), "untouched");
    assert!(
        std::fs::read_to_string(dir.join("dovecot/passwd"))
            .unwrap()
            .contains("late@sam.example")
    );
    let live = dir.join("dovecot/passwd");
    std::fs::remove_file(&live).unwrap();
    std::os::unix::fs::symlink(&elsewhere, &live).unwrap();
    reissue().await;
    let refused = mta_sync::run_once(&client, &settings).await.unwrap_err();
    assert!(refused.to_string().contains("symbolic link"), "{refused}");
    assert_eq!(std::fs::read_to_string(&elsewhere).unwrap(), "untouched");
    std::fs::remove_file(&live).unwrap();

    // The binary, once.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_mailhost"))
        .args(["mta-sync", "--once", "--url", &settings.url, "--reload", ""])
        .arg("--postfix-maps-dir")
        .arg(&maps)
        .arg("--dovecot-passwd")
        .arg(dir.join("dovecot/passwd"))
        .env("MAILHOST_SYNC_TOKEN", SYNC_TOKEN)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let line = String::from_utf8_lossy(&out.stdout);
    assert!(
        line.starts_with("mta-sync: version ") && line.lines().count() == 1,
        "{line}"
    );
    assert!(!line.contains(SYNC_TOKEN) && !String::from_utf8_lossy(&out.stderr).contains(SYNC_TOKEN));
}
