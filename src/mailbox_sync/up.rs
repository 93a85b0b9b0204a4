//! IMAP to the store: what IMAP clients did, read from Dovecot's log from
//! where the agent stopped, turned into the states they left and reported
//! (`POST /mtaImapChanges`); an expunge with no copy left waits out its
//! grace, and a message the agent set is looked at again later.

use super::*;

impl Agent {
    pub(super) async fn imap_to_store(&self, round: &mut Round) -> anyhow::Result<()> {
        let path = &self.settings.state;
        let mut state = State::load(path)?;
        // A part of the log sent without an answer (the service may have
        // taken it): its lines again, with the numbers they had, before
        // anything numbered after them could make the service skip them.
        if let Some(sent) = state.sent {
            let from = if state.position.inode == sent.to.inode {
                state.position.offset
            } else {
                0
            };
            let read = log::read_new(
                &self.settings.dovecot_log,
                state.position,
                sent.to.offset.saturating_sub(from),
            )?;
            self.report_part(&mut state, read, Vec::new(), &[], round).await?;
        }
        // Changes still waiting for their message, numbered anew: all of
        // them, those given up on too, so a report sent again (the agent
        // killed before it saved) numbers each as before.
        if !state.waiting.is_empty() {
            let now = now_ms();
            let mut waiting = std::mem::take(&mut state.waiting);
            for w in &mut waiting {
                state.seq += 1;
                w.change.seq = state.seq;
            }
            waiting.retain(|w| now - w.since_ms < RETRY_FOR_MS);
            let changes: Vec<Change> = waiting.iter().map(|w| w.change.clone()).collect();
            let unknown = self.report(&changes, round).await?;
            state.waiting = waiting
                .into_iter()
                .filter(|w| unknown.contains(&w.change.seq))
                .collect();
            self.save(&mut state)?;
        }
        // A person's change a second look found exists nowhere else: its
        // look stays (in memory and saved) until the service took it (a 503,
        // a restart, Dovecot away, the agent killed: looked at again).
        let mut looked = Vec::new();
        let mut extra = self.rechecked(&mut looked)?;
        let (mut deletions, mut due) = self.deletions_due(&state.expunged)?;
        extra.append(&mut deletions);
        loop {
            let read = log::read_new(&self.settings.dovecot_log, state.position, READ_BUDGET)?;
            let more = read.more;
            self.report_part(&mut state, read, std::mem::take(&mut extra), &looked, round)
                .await?;
            if !due.is_empty() {
                state.expunged.retain(|e| !due.contains(e));
                self.save(&mut state)?;
                due.clear();
            }
            looked.clear();
            if !more {
                break;
            }
        }
        round.waiting = state.waiting.len();
        Ok(())
    }

    /// Reports what a part of the log says (then `extra`: second looks and
    /// deletions due) and saves where reading stands once the service took
    /// it, with the looks whose changes `extra` carries (`looked`) taken. Exactly once rests on a number naming one change: the service
    /// skips a mailbox's changes at or below the last it applied. So before
    /// the report the numbers are saved as given, with the part read
    /// (`State::sent`): sent again, its lines carry the same numbers, and
    /// anything else (these extras, later lines) a number above every one
    /// given before. (Numbering from the last saved number instead, a part
    /// the service took but whose answer never came, read again with a new
    /// line after it, gave that line the number an extra had had: skipped,
    /// the appended mail in IMAP alone. Found by the soak's IMAP lane.)
    async fn report_part(
        &self,
        state: &mut State,
        read: log::Read,
        mut extra: Vec<Change>,
        looked: &[((String, String), i64)],
        round: &mut Round,
    ) -> anyhow::Result<()> {
        // The part sent before, read again whole: its numbers; else new ones.
        let base = match state.sent.take() {
            Some(sent) if sent.to == read.position => sent.base,
            _ => state.seq,
        };
        let (mut changes, expunged) = self.changes_of(&read.changes)?;
        let mut seq = base;
        for change in &mut changes {
            seq += 1;
            change.seq = seq;
        }
        seq = seq.max(state.seq);
        for change in &mut extra {
            seq += 1;
            change.seq = seq;
        }
        changes.append(&mut extra);
        state.seq = seq;
        state.sent = Some(Sent {
            to: read.position,
            base,
        });
        self.save(state)?;
        let unknown = self.report(&changes, round).await?;
        {
            // Taken: unless the agent set the message again meanwhile.
            let mut rechecks = self.rechecks.lock().unwrap_or_else(|e| e.into_inner());
            for (key, set_ms) in looked {
                if rechecks.get(key).is_some_and(|r| r.set_ms == *set_ms) {
                    rechecks.remove(key);
                }
            }
        }
        let now = now_ms();
        // A change kept for later is not settled then: the agent may set the
        // message meanwhile (its row filed, then read through the API).
        state.waiting.extend(
            changes
                .into_iter()
                .filter(|c| unknown.contains(&c.seq))
                .map(|change| Waiting {
                    change: Change {
                        settled: false,
                        ..change
                    },
                    since_ms: now,
                }),
        );
        state.expunged.extend(expunged);
        state.position = read.position;
        state.sent = None;
        self.save(state)
    }

    /// The messages due a second look whose IMAP state is not what the
    /// agent set: a person's change Dovecot did not log, as changes. Their
    /// looks stay until the service took them (`looked`: each one's key and
    /// the time it was set); a look that found the state set is moved on to
    /// the next. Dovecot away: every look due waits for the next round.
    fn rechecked(&self, looked: &mut Vec<((String, String), i64)>) -> anyhow::Result<Vec<Change>> {
        let now = now_ms();
        let due: Vec<((String, String), Recheck)> = {
            let rechecks = self.rechecks.lock().unwrap_or_else(|e| e.into_inner());
            rechecks
                .iter()
                .filter(|(_, r)| r.due_ms() <= now)
                .map(|(k, r)| (k.clone(), r.clone()))
                .collect()
        };
        let mut by_user: BTreeMap<&str, Vec<(&str, &Recheck)>> = BTreeMap::new();
        for ((user, message_id), recheck) in &due {
            by_user.entry(user).or_default().push((message_id, recheck));
        }
        let mut changes = Vec::new();
        // (key, the look as set, the next one or none).
        let mut moved_on = Vec::new();
        for (user, wanted) in by_user {
            let ids: Vec<&str> = wanted.iter().map(|(id, _)| *id).collect();
            let copies = self.doveadm.copies(user, &ids)?;
            let by_id = by_message_id(&copies);
            for (message_id, set) in wanted {
                let key = (user.to_string(), message_id.to_string());
                let Some(copy) = by_id
                    .get(message_id)
                    .into_iter()
                    .flatten()
                    .find(|c| !app_own(place_of(&c.folder)))
                else {
                    moved_on.push((key, set.set_ms, None));
                    continue;
                };
                let moved = copy.folder != set.folder
                    && !(set.folder == ARCHIVE && matches!(place_of(&copy.folder), "own" | "junk"));
                if copy.seen == set.seen && !moved {
                    let next = (set.looks + 1 < RECHECKS_AFTER_MS.len()).then(|| Recheck {
                        looks: set.looks + 1,
                        ..set.clone()
                    });
                    moved_on.push((key, set.set_ms, next));
                    continue;
                }
                looked.push((key, set.set_ms));
                changes.push(Change {
                    seq: 0,
                    mailbox: user.to_string(),
                    message_id: message_id.to_string(),
                    seen: Some(copy.seen),
                    place: moved.then(|| place_of(&copy.folder).to_string()),
                    direction: None,
                    raw: None,
                    settled: false,
                });
            }
        }
        // A newer change the agent set meanwhile keeps its own looks.
        let mut rechecks = self.rechecks.lock().unwrap_or_else(|e| e.into_inner());
        for (key, set_ms, next) in moved_on {
            if rechecks.get(&key).is_some_and(|r| r.set_ms == set_ms) {
                match next {
                    Some(next) => rechecks.insert(key, next),
                    None => rechecks.remove(&key),
                };
            }
        }
        Ok(changes)
    }

    /// The expunges whose grace is over, as deletions, for messages still
    /// in no other folder (a copy elsewhere made the expunge a move's first
    /// half: its own line reported where it went).
    /// (The expunges due come back too: they leave the state once the
    /// service took their deletions.)
    fn deletions_due(&self, expunged: &[Expunged]) -> anyhow::Result<(Vec<Change>, Vec<Expunged>)> {
        let now = now_ms();
        let due: Vec<Expunged> = expunged
            .iter()
            .filter(|e| now - e.since_ms >= EXPUNGE_GRACE_MS)
            .cloned()
            .collect();
        let mut ids: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
        for e in &due {
            ids.entry(&e.user).or_default().push(&e.message_id);
        }
        let mut copies: BTreeMap<&str, Vec<Copy>> = BTreeMap::new();
        for (user, ids) in ids {
            // Dovecot away: they wait for the next round.
            copies.insert(user, self.doveadm.copies(user, &ids)?);
        }
        let deletions = due
            .iter()
            .filter_map(|e| deletion(e, copies.get(e.user.as_str()).map_or(&[][..], Vec::as_slice)))
            .collect();
        Ok((deletions, due))
    }

    /// A message expunged with no copy left elsewhere is not a change yet:
    /// it waits out [`EXPUNGE_GRACE_MS`] (the second list).
    fn changes_of(&self, logged: &[Logged]) -> anyhow::Result<(Vec<Change>, Vec<Expunged>)> {
        // Where each expunged message is now: looked up once per user.
        let mut expunged: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
        // (Dovecot logs each expunge after the copy that moved it.)
        for l in logged.iter().filter(|l| l.kind == Kind::Expunge) {
            expunged.entry(&l.user).or_default().push(&l.message_id);
        }
        let mut now_in: BTreeMap<&str, Vec<Copy>> = BTreeMap::new();
        for (user, ids) in &expunged {
            now_in.insert(user, self.doveadm.copies(user, ids)?);
        }
        let mut changes = Vec::new();
        let mut pending = Vec::new();
        for l in logged {
            let place = place_of(&l.folder);
            let change = |seen: Option<bool>, place: Option<&str>, direction: Option<&str>| Change {
                seq: 0,
                mailbox: l.user.clone(),
                message_id: l.message_id.clone(),
                seen,
                place: place.map(str::to_string),
                direction: direction.map(str::to_string),
                raw: None,
                settled: false,
            };
            match l.kind {
                Kind::FlagChange if !app_own(place) => changes.push(change(Some(l.seen), None, None)),
                Kind::Copy if !app_own(place) => changes.push(change(None, Some(place), None)),
                Kind::Save if !app_own(place) => {
                    // Appended mail: its bytes, for a message the store
                    // does not hold (it files it as appended).
                    let raw = match self.appended_text(l)? {
                        Some(raw) if raw.len() <= APPENDED_LIMIT => {
                            Some(base64::engine::general_purpose::STANDARD.encode(raw))
                        }
                        Some(raw) => {
                            eprintln!(
                                "mailbox-sync: appended mail of {} bytes in {}'s {} stays in IMAP alone",
                                raw.len(),
                                l.user,
                                l.folder
                            );
                            None
                        }
                        // Expunged already: its later lines say so.
                        None => None,
                    };
                    changes.push(Change {
                        raw,
                        ..change(Some(l.seen), Some(place), None)
                    });
                }
                Kind::Expunge if place != "drafts" => {
                    let expunged = Expunged {
                        user: l.user.clone(),
                        message_id: l.message_id.clone(),
                        sent: place == "sent",
                        since_ms: now_ms(),
                    };
                    let copies = now_in.get(l.user.as_str()).map_or(&[][..], Vec::as_slice);
                    // Still in no other folder: it may be a move whose
                    // append is still to come.
                    if deletion(&expunged, copies).is_some() {
                        pending.push(expunged);
                    }
                }
                _ => {}
            }
        }
        self.settle(&mut changes);
        Ok((changes, pending))
    }

    /// Marks the flag changes IMAP holds as they are ([`settled`]), with
    /// one look per user at where their messages are. Dovecot away: none
    /// is, and the store marks them all back, as it would without the look.
    /// A second look still to come for such a message now expects what the
    /// person set: it was made to find a change the log missed after the
    /// agent set the message, and what it found otherwise is this logged
    /// change, reported again after it and after anything the API did
    /// meanwhile (which it then undid). The store's mark back, when there
    /// was one, had the agent set it again and so renewed the look.
    fn settle(&self, changes: &mut [Change]) {
        let mut ids: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for c in changes.iter().filter(|c| c.seen.is_some() && c.place.is_none()) {
            ids.entry(c.mailbox.clone()).or_default().push(c.message_id.clone());
        }
        for (user, mut ids) in ids {
            ids.sort_unstable();
            ids.dedup();
            let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
            let Ok(copies) = self.doveadm.copies(&user, &ids) else {
                continue;
            };
            let by_id = by_message_id(&copies);
            let mut rechecks = self.rechecks.lock().unwrap_or_else(|e| e.into_inner());
            for c in changes.iter_mut().filter(|c| c.mailbox == user) {
                let theirs = by_id.get(c.message_id.as_str()).map_or(&[][..], Vec::as_slice);
                let Some(copy) = settled(c, theirs) else {
                    continue;
                };
                c.settled = true;
                if let Some(look) = rechecks.get_mut(&(user.clone(), c.message_id.clone())) {
                    look.seen = copy.seen;
                    look.folder = copy.folder.clone();
                }
            }
        }
    }

    /// The bytes of mail a client appended, wherever it is now: at its
    /// folder and UID, or, moved on already (the app appended, then moved it
    /// before this round), found by its Message-ID in the folders the store
    /// mirrors. `None` once it is gone. An error is Dovecot's (down,
    /// restarting): the round fails and reads these lines again, since
    /// reporting the append without its bytes would leave the message in
    /// IMAP alone.
    fn appended_text(&self, l: &Logged) -> anyhow::Result<Option<Vec<u8>>> {
        if let Ok(raw) = self.doveadm.text(&l.user, &l.folder, l.uid)
            && !raw.is_empty()
        {
            return Ok(Some(raw));
        }
        if l.message_id.is_empty() {
            return Ok(None);
        }
        for copy in self.doveadm.copies(&l.user, &[&l.message_id])? {
            if app_own(place_of(&copy.folder)) {
                continue;
            }
            let raw = self.doveadm.text(&l.user, &copy.folder, copy.uid)?;
            if !raw.is_empty() {
                return Ok(Some(raw));
            }
        }
        Ok(None)
    }

    /// Reports changes; the numbers of those about messages the store does
    /// not hold yet.
    async fn report(&self, changes: &[Change], round: &mut Round) -> anyhow::Result<Vec<i64>> {
        let mut unknown = Vec::new();
        let mut batch: Vec<&Change> = Vec::new();
        let mut batches = Vec::new();
        let mut raw_bytes = 0;
        for change in changes {
            // Appended bytes share a request up to RAW_PER_REQUEST (the
            // service files a request's messages side by side).
            let raw = change.raw.as_ref().map_or(0, String::len);
            if (batch.len() == CHANGES_PER_REQUEST || raw_bytes + raw > RAW_PER_REQUEST) && !batch.is_empty() {
                batches.push(std::mem::take(&mut batch));
                raw_bytes = 0;
            }
            batch.push(change);
            raw_bytes += raw;
        }
        if !batch.is_empty() {
            batches.push(batch);
        }
        for batch in batches {
            let request = self
                .client
                .post(self.url("/mtaImapChanges"))
                .json(&json!({ "changes": batch }));
            let answer = self.call(request, "reporting IMAP changes").await?;
            round.reported += batch.len();
            round.applied += answer["applied"].as_u64().unwrap_or(0);
            unknown.extend(
                answer["unknown"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_i64),
            );
        }
        Ok(unknown)
    }
}
