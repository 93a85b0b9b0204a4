//! What the inbox hands an agent inside the envelope (see
//! `service::boundary`): list rows (subject, preview, attachment names), a
//! read message (its text and html too), a thread's subject, the display
//! names written beside addresses; the sender and
//! the service's verdicts outside it, as provenance.

use super::report::Reported;
use super::shapes::{InboxList, MessageView, Summary, ThreadList, ThreadView};
use crate::error::ApiError;
use crate::service::delivery::boundary::{Boundary, Envelope, Provenance};
use crate::service::mail_store::{Quarantine, Thread};

impl Boundary {
    /// A list row with its stranger-written fields wrapped.
    pub fn summary(&self, mut s: Summary) -> Summary {
        s.subject = self.wrap(&s.subject);
        s.preview = self.wrap(&s.preview);
        for a in &mut s.attachments {
            a.filename = self.wrap(&a.filename);
        }
        // Display names are the sender's words too.
        s.from_name = s.from_name.map(|name| self.wrap(&name));
        for name in s.names.values_mut() {
            *name = self.wrap(name);
        }
        s
    }

    /// A read message with its stranger-written fields wrapped.
    pub fn message(&self, m: MessageView) -> MessageView {
        MessageView {
            summary: self.summary(m.summary),
            text: self.wrap(&m.text),
            html: m.html.as_deref().map(|h| self.wrap(h)),
        }
    }

    /// A page of list rows for an agent: each row's stranger-written fields
    /// wrapped (the rows were encoded when the page was read), and the
    /// envelope described.
    pub fn list(&self, list: InboxList) -> Result<InboxList, ApiError> {
        let messages = list
            .messages
            .iter()
            .map(|raw| {
                let row: Summary = serde_json::from_str(raw.get()).map_err(ApiError::internal)?;
                serde_json::value::to_raw_value(&self.summary(row)).map_err(ApiError::internal)
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(InboxList {
            messages,
            envelope: Some(self.describe(None)),
            ..list
        })
    }

    /// A page of threads for an agent: each subject wrapped.
    pub fn threads(&self, list: ThreadList) -> ThreadList {
        ThreadList {
            threads: list.threads.into_iter().map(|t| self.thread(t)).collect(),
            envelope: Some(self.describe(None)),
            ..list
        }
    }

    /// A thread read (get_thread) or changed (mark_read): its summary and
    /// each row wrapped, and the envelope described.
    pub fn thread_view(&self, view: ThreadView) -> ThreadView {
        ThreadView {
            thread: self.thread(view.thread),
            messages: view.messages.into_iter().map(|s| self.summary(s)).collect(),
            envelope: Some(self.describe(None)),
            ..view
        }
    }

    /// A spam report's answer (mark_spam, mark_read with spam): the message
    /// as it now is, wrapped.
    pub fn reported(&self, reported: Reported) -> Reported {
        Reported {
            message: self.summary(reported.message),
            envelope: Some(self.describe(None)),
            ..reported
        }
    }

    /// A thread's summary with its subject and its participants' names
    /// wrapped.
    pub fn thread(&self, t: Thread) -> Thread {
        Thread {
            subject: self.wrap(&t.subject),
            names: t.names.iter().map(|(a, n)| (a.clone(), self.wrap(n))).collect(),
            ..t
        }
    }

    /// The envelope of a read of one message: who sent it and this service's
    /// verdicts, outside it.
    pub fn describe_read(&self, of: &Summary) -> Envelope {
        self.describe(Some(Provenance {
            from: of.from.clone(),
            authentication: of.authentication.as_ref().map(|a| a.summary),
            spoofed: of.authentication.as_ref().is_some_and(|a| a.spoofed),
            quarantine: of.quarantine.as_ref().map(|q| q.reason),
            spam: crate::service::receiving::spam::in_words(
                of.spam.as_ref(),
                of.quarantine.as_ref().is_some_and(|q| q.reason == Quarantine::Spam),
            ),
        }))
    }
}
