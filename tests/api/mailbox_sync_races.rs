//! The mailbox sync's races with its own faults (issue 42): a second look
//! owed when the agent is killed, a report about mail not filed yet whose
//! answer is lost, and an expunge in the trash racing the agent's move out
//! of it. Each ends with no change lost.

use std::time::Duration;

use serde_json::{Value, json};

use crate::mail_host::Rig;
use crate::mailbox_sync::{Imap, both_sides, eventually, listed, receive, within};
use crate::mailbox_sync_faults::{Agent, Switch, script, started};
use crate::support::{Auth, Backend, SYNC_TOKEN};

/// Waits until the agent applied and acknowledged every store change.
async fn marks_cleared(rig: &Rig) {
    eventually("the store's changes acknowledged", || async {
        let page = rig
            .app
            .get("/mtaMailboxChanges?limit=200", Auth::Bearer(SYNC_TOKEN))
            .await;
        (page.status == 200 && page.body["changes"].as_array().is_some_and(Vec::is_empty)).then_some(())
    })
    .await;
}

/// A look the agent owes when it is killed is taken by the next agent: a
/// person's store that Dovecot did not log (a session storing on a view
/// older than the agent's change), made while no agent ran, still reaches
/// the store. (Kept in memory alone, the looks died with the agent.)
async fn a_second_look_owed_when_the_agent_is_killed_is_taken(backend: Backend) {
    let Some(rig) = started(backend).await else {
        return;
    };
    let (app, key, dir) = (&rig.app, &rig.key, rig.host.dir.clone());
    let imap = Imap::of(&rig, "me@tom.example");
    let mid = "<killed-look@example.org>";
    let row = receive(&rig, &imap, "me@tom.example", "Killed look", mid).await;
    script(&dir, "mailbox-sync-stop");
    let url = format!("{}/api", app.base);
    let agent = Agent::start(&rig.host, &url);
    let go = dir.join("killed-look-go");
    let stale_session = imap.run(json!([
        {"op": "select", "box": "INBOX"},
        {"op": "uid_of", "messageId": mid},
        {"op": "wait_file", "path": go},
        {"op": "store_uid", "flags": "-FLAGS (\\Seen)"},
    ]));
    let kill_then_store = async {
        tokio::time::sleep(Duration::from_millis(800)).await;
        let read = app
            .post("/inbox", Auth::Bearer(key), json!({"id": row["id"], "unread": false}))
            .await;
        assert_eq!(read.status, 200, "{}", read.body);
        eventually("the API's read flag in IMAP", || async {
            let (_, in_imap) = both_sides(app, key, &imap, mid).await;
            in_imap?.0.then_some(())
        })
        .await;
        marks_cleared(&rig).await;
        // Killed with its looks still to take, then the app stores on its
        // old view while no agent runs.
        agent.kill();
        std::fs::write(&go, b"").unwrap();
    };
    let (answers, ()) = tokio::join!(stale_session, kill_then_store);
    assert!(answers.iter().all(|a| a.get("error").is_none()), "{answers:?}");
    let (api, in_imap) = both_sides(app, key, &imap, mid).await;
    assert_eq!(api.map(|(read, _)| read), Some(true));
    assert_eq!(in_imap.map(|(seen, _)| seen), Some(false), "the app's store, unlogged");
    let _agent = Agent::start(&rig.host, &url);
    within(40, "the app's later store on both sides", || async {
        let (api, in_imap) = both_sides(app, key, &imap, mid).await;
        (!api.as_ref()?.0 && api == in_imap).then_some(())
    })
    .await;
}

/// A flag set in IMAP on mail the store has not filed yet is answered
/// unknown and waits for the message; the service takes that report but its
/// answer is lost, so the agent sends it again. The change must still wait
/// and reach the store once the mail is filed. (The service skipped it as
/// applied the second time: the agent dropped it, the flag in IMAP alone
/// until the store's state was written back over it.)
async fn a_change_waiting_for_its_message_survives_a_lost_answer(backend: Backend) {
    let Some(rig) = started(backend).await else {
        return;
    };
    let (app, key, dir) = (&rig.app, &rig.key, rig.host.dir.clone());
    let imap = Imap::of(&rig, "me@tom.example");
    let mid = "<lost-answer-waiting@example.org>";
    script(&dir, "mailbox-sync-stop");
    let switch = Switch::start(format!("{}/api", app.base)).await;
    let _agent = Agent::start(&rig.host, &switch.url);
    // Delivered to IMAP, not yet to the store: the maildir alone.
    let raw = format!(
        "From: ann@example.org\r\nTo: me@tom.example\r\nSubject: Not filed yet\r\nMessage-ID: {mid}\r\nDate: Mon, 23 Nov 2026 10:00:00 +0000\r\n\r\nSoon.\r\n"
    );
    let maildir = dir.join("mail/tom.example/me/Maildir/cur");
    std::fs::create_dir_all(&maildir).unwrap();
    std::fs::write(maildir.join("1795000001.M1Pwaiting.mx:2,"), &raw).unwrap();
    std::process::Command::new("chown")
        .args(["-R", "nobody:nogroup"])
        .arg(dir.join("mail"))
        .status()
        .unwrap();
    eventually("the message in IMAP", || imap.find("INBOX", mid)).await;
    switch.set_answers_lost(true);
    imap.one(json!({"op": "store", "box": "INBOX", "messageId": mid, "flags": "+FLAGS (\\Seen)"}))
        .await;
    // Taken (unknown), unanswered, sent again and again.
    tokio::time::sleep(Duration::from_secs(3)).await;
    switch.set_answers_lost(false);
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(listed(app, key, mid).await.is_none(), "not filed yet");
    let spool = common::blob::fs::FsBlobStore::new(app.data_dir.join("blobs"));
    let envelope = common::mail::inbound::Envelope {
        recipient: Some("me@tom.example".into()),
        sender: Some("ann@example.org".into()),
        ..Default::default()
    };
    common::mail::inbound::drop_raw(&spool, envelope.prepend(raw.as_bytes()))
        .await
        .unwrap();
    within(40, "filed, and read on both sides", || async {
        let (api, in_imap) = both_sides(app, key, &imap, mid).await;
        (api.as_ref()?.0 && api == in_imap).then_some(())
    })
    .await;
}

/// The app expunges a message in Trash while the agent moves it out,
/// because the API moved it: deletion wins over any other change, so it is
/// gone on both sides. (Moved with the app's `\Deleted` flag, the expunge in
/// Trash found nothing, and the message lived on in INBOX.)
async fn an_expunge_racing_the_agents_move_out_of_the_trash_deletes(backend: Backend) {
    let Some(rig) = started(backend).await else {
        return;
    };
    let (app, key, dir) = (&rig.app, &rig.key, rig.host.dir.clone());
    let imap = Imap::of(&rig, "me@tom.example");
    let mid = "<trash-race@example.org>";
    let row = receive(&rig, &imap, "me@tom.example", "Trash race", mid).await;
    let trashed = app
        .post("/inbox", Auth::Bearer(key), json!({"id": row["id"], "folder": "trash"}))
        .await;
    assert_eq!(trashed.status, 200, "{}", trashed.body);
    eventually("in the trash on both sides", || async {
        let (api, in_imap) = both_sides(app, key, &imap, mid).await;
        (api.as_ref()?.1 == "trash" && api == in_imap).then_some(())
    })
    .await;
    marks_cleared(&rig).await;
    // The app flags it deleted, and expunges once the API's move out of the
    // trash has been applied by the agent.
    let go = dir.join("trash-race-go");
    let session = imap.run(json!([
        {"op": "select", "box": "Trash"},
        {"op": "uid_of", "messageId": mid},
        {"op": "store_uid", "flags": "+FLAGS (\\Deleted)"},
        {"op": "wait_file", "path": go},
        {"op": "expunge_uid"},
    ]));
    let api_move = async {
        eventually("flagged deleted in Trash", || async {
            let copy = imap.find("Trash", mid).await?;
            let flags = copy["flags"].as_array()?.clone();
            flags.contains(&Value::from("\\Deleted")).then_some(())
        })
        .await;
        let back = app
            .post("/inbox", Auth::Bearer(key), json!({"id": row["id"], "folder": "inbox"}))
            .await;
        assert_eq!(back.status, 200, "{}", back.body);
        marks_cleared(&rig).await;
        std::fs::write(&go, b"").unwrap();
    };
    let (answers, ()) = tokio::join!(session, api_move);
    assert!(answers[..4].iter().all(|a| a.get("error").is_none()), "{answers:?}");
    within(40, "the deletion wins on both sides", || async {
        let (api, in_imap) = both_sides(app, key, &imap, mid).await;
        (api.is_none() && in_imap.is_none()).then_some(())
    })
    .await;
}

on_both_stores!(
    a_second_look_owed_when_the_agent_is_killed_is_taken,
    a_change_waiting_for_its_message_survives_a_lost_answer,
    an_expunge_racing_the_agents_move_out_of_the_trash_deletes,
);
