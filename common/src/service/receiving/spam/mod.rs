//! Spam: received mail whose content rspamd on the mail host judged spam is
//! filed apart (`Quarantine::Spam`, the `SPAM#` partition, `view=spam`),
//! and what owners report teaches rspamd.
//!
//! - Filing ([`verdict_at_filing`]): the verdict the mail host passed in the
//!   envelope line (never a header) against the mailbox's settings
//!   (`spamFilter`, `spamThreshold`); an allow-list entry wins only for a
//!   sender this service authenticated.
//! - Reports ([`report`]): POST /inbox `{id, spam}` and the tool `mark_spam`
//!   move a message in or out of spam, and queue what the mail host's
//!   `mta-sync` then teaches rspamd's Bayes classifier ([`training`]).

pub mod report;
pub mod training;

use crate::mail::authenticate::{Authentication, Summary as AuthSummary};
use crate::mail::spam::{SpamAction, SpamVerdict};
use crate::messages;
use crate::service::mailboxes::mailbox::Mailbox;

/// Whether a received message is filed into spam: it has a verdict, the
/// mailbox filters (`spamFilter`, on unless the owner turned it off), the
/// verdict is spam by the mailbox's threshold (or rspamd's action without
/// one), and no allow-list entry names its sender, or one does but this
/// service could not authenticate that sender (DMARC pass): anyone can
/// write an allowed address into From.
pub fn verdict_at_filing(
    mailbox: &Mailbox,
    verdict: Option<&SpamVerdict>,
    auth: Option<&Authentication>,
    allowed_sender: bool,
) -> bool {
    let Some(verdict) = verdict else {
        return false;
    };
    if !mailbox.spam_filter || !verdict.is_spam(mailbox.spam_threshold) {
        return false;
    }
    let authenticated = auth.is_some_and(|a| a.summary == AuthSummary::Pass);
    !(allowed_sender && authenticated)
}

/// The content verdict of a message in words, for an agent's envelope:
/// what judged the content, and whether the message is in spam; none when
/// nothing judged it (no mail host, a send) and it is not in spam.
pub fn in_words(verdict: Option<&SpamVerdict>, in_spam: bool) -> Option<String> {
    Some(match (verdict, in_spam) {
        (Some(v), true) => messages::SPAM_KEPT_OUT.with_each(&[&v.score, &action_words(v.action)]),
        (None, true) => messages::SPAM_REPORTED.as_str().to_string(),
        (Some(v), false) => messages::SPAM_SCANNED.with_each(&[&v.score, &action_words(v.action)]),
        (None, false) => return None,
    })
}

fn action_words(action: SpamAction) -> &'static str {
    match action {
        SpamAction::NoAction => "rspamd would let it through",
        SpamAction::Greylist => "rspamd would greylist it",
        SpamAction::AddHeader => "rspamd would mark it as spam",
        SpamAction::RewriteSubject => "rspamd would mark its subject as spam",
        SpamAction::SoftReject => "rspamd would ask the sender to try later",
        SpamAction::Reject => "rspamd would reject it",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mail::authenticate::Authentication;
    use serde_json::Value;

    use crate::service::mailboxes::mailbox::Threshold;
    use crate::values::{Field, Origin};

    fn mailbox(filter: bool, threshold: Option<f64>) -> Mailbox {
        Mailbox {
            spam_filter: filter,
            spam_threshold: threshold,
            ..Mailbox::new(
                "example.com",
                "me",
                "u1",
                crate::service::mailboxes::mailbox::Mode::Hosted,
                vec![],
                1,
                "now",
            )
        }
    }

    fn verdict(score: f64, action: SpamAction) -> SpamVerdict {
        SpamVerdict {
            score,
            action,
            symbols: vec![],
        }
    }

    fn auth(summary: AuthSummary) -> Authentication {
        Authentication {
            summary,
            ..Authentication::unfinished(None)
        }
    }

    #[test]
    fn the_mailbox_decides_with_the_verdict_and_an_allow_entry_only_for_authenticated_mail() {
        let gtube = verdict(15.0, SpamAction::Reject);
        let pass = auth(AuthSummary::Pass);
        let none = auth(AuthSummary::None);
        let on = mailbox(true, None);
        assert!(verdict_at_filing(&on, Some(&gtube), Some(&pass), false));
        // No verdict (no mail host): never spam.
        assert!(!verdict_at_filing(&on, None, None, false));
        // Off.
        assert!(!verdict_at_filing(&mailbox(false, None), Some(&gtube), None, false));
        // The owner's threshold judges by score.
        assert!(!verdict_at_filing(
            &mailbox(true, Some(20.0)),
            Some(&gtube),
            None,
            false
        ));
        assert!(verdict_at_filing(
            &mailbox(true, Some(2.0)),
            Some(&verdict(3.0, SpamAction::NoAction)),
            None,
            false
        ));
        // An allowed sender: only when this service authenticated it.
        assert!(!verdict_at_filing(&on, Some(&gtube), Some(&pass), true));
        assert!(verdict_at_filing(&on, Some(&gtube), Some(&none), true));
        assert!(verdict_at_filing(&on, Some(&gtube), None, true));
    }

    #[test]
    fn a_threshold_is_a_number_in_range() {
        let read = |v: Value| Threshold::read(&v, Origin::Body, crate::error::SPAM_THRESHOLD_INVALID);
        assert_eq!(read(serde_json::json!(7.5)).unwrap(), Some(Threshold(7.5)));
        assert_eq!(read(serde_json::json!(-50)).unwrap(), Some(Threshold(-50.0)));
        assert_eq!(read(Value::Null).unwrap(), None);
        for bad in [
            serde_json::json!(100.5),
            serde_json::json!("7"),
            serde_json::json!(true),
        ] {
            assert!(read(bad).is_err());
        }
    }
}
