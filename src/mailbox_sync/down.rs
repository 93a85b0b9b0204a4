//! The store to IMAP: the store's changes (`GET /mtaMailboxChanges`)
//! applied to each message's copies with `doveadm`, then acknowledged.

use super::*;

impl Agent {
    pub(super) async fn store_to_imap(&self, round: &mut Round) -> anyhow::Result<()> {
        // The round's marks first, then each user's applied at once: one
        // look at where that user's copies are (a whole mailbox's pass past a
        // hundred Message-IDs) serves every page.
        let started = Instant::now();
        let mut after: Option<String> = None;
        let mut marks: Vec<Value> = Vec::new();
        loop {
            let mut url = self.url("/mtaMailboxChanges?limit=200");
            if let Some(after) = &after {
                url.push_str(&format!("&after={}", encoded(after)));
            }
            let page = self.call(self.client.get(url), "reading the store's changes").await?;
            marks.extend(page["changes"].as_array().cloned().unwrap_or_default());
            match page["next"].as_str() {
                Some(next) if marks.len() < MARKS_PER_ROUND => after = Some(next.to_string()),
                _ => break,
            }
        }
        round.down_parts_ms[0] = started.elapsed().as_millis();
        let started = Instant::now();
        let mut by_user: BTreeMap<String, Vec<Value>> = BTreeMap::new();
        for change in marks {
            let user = change["mailbox"].as_str().unwrap_or_default().to_ascii_lowercase();
            by_user.entry(user).or_default().push(change);
        }
        let mut applied = Vec::new();
        for (user, changes) in by_user {
            match self.apply(&user, &changes).await {
                Ok(early) => applied.extend(
                    changes
                        .iter()
                        .filter(|c| !early.contains(&c["mark"]))
                        .map(|c| json!({"mark": c["mark"], "stamp": c["stamp"]})),
                ),
                // That user's marks stay; the others go on.
                Err(e) => eprintln!("mailbox-sync: {user}: not applied, tried again: {e:#}"),
            }
        }
        round.pulled += applied.len();
        round.down_parts_ms[1] = started.elapsed().as_millis();
        let started = Instant::now();
        for chunk in applied.chunks(200) {
            let answer: Value = self
                .client
                .post(self.url("/mtaMailboxChanges"))
                .bearer_auth(&self.settings.sync_token)
                .json(&json!({ "applied": chunk }))
                .send()
                .await
                .context("acknowledging the store's changes")?
                .error_for_status()
                .context("acknowledging the store's changes")?
                .json()
                .await
                .unwrap_or_default();
            round.cleared += answer["cleared"].as_u64().unwrap_or(0);
        }
        round.down_parts_ms[2] = started.elapsed().as_millis();
        Ok(())
    }

    /// Makes one user's IMAP folders say what the store says. The marks
    /// that came too early, kept to be applied again next round, for
    /// [`COPY_AWAITED_MS`]: a message filed as spam whose copy Dovecot does
    /// not hold yet (the mail host delivers the two copies side by side),
    /// and a send whose bytes the service is still storing (it stores them
    /// beside the transaction that writes the mark).
    async fn apply(&self, user: &str, changes: &[Value]) -> anyhow::Result<Vec<Value>> {
        let states: Vec<&Value> = changes
            .iter()
            .filter(|c| c["kind"] != "sent")
            .flat_map(|c| c["messages"].as_array().into_iter().flatten())
            .collect();
        let sent: Vec<&Value> = changes.iter().filter(|c| c["kind"] == "sent").collect();
        let mut ids: Vec<&str> = states
            .iter()
            .copied()
            .chain(sent.iter().flat_map(|c| c["messages"].as_array().into_iter().flatten()))
            .filter_map(|m| m["messageId"].as_str())
            .collect();
        ids.sort_unstable();
        ids.dedup();
        let copies = self.doveadm.copies(user, &ids)?;
        let plan = plan(&states, &copies);
        let held: std::collections::HashSet<&str> = copies.iter().map(|c| c.message_id.as_str()).collect();
        let mut early: Vec<Value> = changes
            .iter()
            .filter(|c| c["kind"] == "message" && now_ms() - c["ms"].as_i64().unwrap_or(0) < COPY_AWAITED_MS)
            .filter(|c| {
                let mut ids = c["messages"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|m| m["messageId"].as_str());
                ids.any(|id| !held.contains(id))
            })
            .map(|c| c["mark"].clone())
            .collect();
        {
            let set_ms = now_ms();
            let mut rechecks = self.rechecks.lock().unwrap_or_else(|e| e.into_inner());
            for state in states.iter().filter(|s| s["direction"] == "inbound") {
                let Some(message_id) = state["messageId"].as_str() else {
                    continue;
                };
                let key = (user.to_string(), message_id.to_string());
                if state["gone"] == true {
                    rechecks.remove(&key);
                    continue;
                }
                let recheck = Recheck {
                    set_ms,
                    looks: 0,
                    seen: state["unread"] != true,
                    folder: folder_of(state).to_string(),
                };
                rechecks.insert(key, recheck);
            }
        }
        // The looks saved before IMAP is set: killed between the two, the
        // agent still looks again.
        self.save(&mut State::load(&self.settings.state)?)?;
        for ((folder, seen), uids) in &plan.flags {
            self.doveadm.set_seen(user, folder, uids, *seen)?;
        }
        for ((from, to), uids) in &plan.moves {
            self.doveadm.move_to(user, from, uids, to)?;
        }
        for (folder, uids) in &plan.expunges {
            self.doveadm.expunge(user, folder, uids)?;
        }
        for change in sent {
            let message_id = change["messages"][0]["messageId"].as_str().unwrap_or_default();
            if copies.iter().any(|c| c.folder == SENT && c.message_id == message_id) {
                continue;
            }
            let answer = self
                .client
                .get(self.url(&format!(
                    "/mtaSentCopy?mark={}",
                    encoded(change["mark"].as_str().unwrap_or_default())
                )))
                .bearer_auth(&self.settings.sync_token)
                .send()
                .await
                .context("fetching a sent copy")?;
            if answer.status() == reqwest::StatusCode::NOT_FOUND {
                if now_ms() - change["ms"].as_i64().unwrap_or(0) < COPY_AWAITED_MS {
                    early.push(change["mark"].clone());
                }
                continue;
            }
            let raw = answer
                .error_for_status()
                .context("fetching a sent copy")?
                .bytes()
                .await?;
            self.doveadm.save(user, SENT, &raw, message_id)?;
        }
        Ok(early)
    }
}
