//! Every sentence a client reads that is not an error: the `message` of an
//! answer, an account's next step, a domain check's reasons. Beside the
//! error catalogue (`error.rs`), and written only here; `{}` marks where a
//! detail goes ([`Message::with_each`]).

/// One sentence, possibly with `{}` details.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Message(pub &'static str);

impl Message {
    pub fn as_str(self) -> &'static str {
        self.0
    }

    /// The sentence with each `{}` replaced by the next detail, in order.
    pub fn with_each(self, details: &[&dyn std::fmt::Display]) -> String {
        crate::error::fill(self.0, details)
    }
}

macro_rules! messages {
    ($($(#[$doc:meta])* $name:ident = $text:literal;)*) => {
        $($(#[$doc])* pub const $name: Message = Message($text);)*
        /// Every message, for the catalogue test.
        pub const ALL: &[Message] = &[$($name),*];
    };
}

messages! {
    // ------------------------------------------------------------------- onboarding
    CODE_SENT = "If that address can receive mail, an 8-digit code is on its way. It expires in 24 hours.";
    KEY_SHOWN_ONCE = "Your key is shown once. Store it now; send it as Authorization: Bearer <key>.";
    REQUEST_SETTING_UP = "Your account is being set up; no key is issued yet. Check back with getRequestStatus: once it says ready, ask again with requestAccess and verify the new code to get your key.";
    REQUEST_UNAVAILABLE = "This request cannot be completed. No key was issued.";

    // ------------------------------------------------------- an account's next step
    NEXT_SETTING_UP = "Your account is being set up. Check back with getRequestStatus (MCP: get_request_status).";
    NEXT_UNAVAILABLE = "This account is not available. Contact support.";
    NEXT_ADD_DOMAIN = "Add your domain with POST /addDomain (MCP: add_domain).";
    NEXT_VERIFY_DOMAIN = "Publish the DNS records from GET /getDnsInstructions, then call POST /verifyDomain (MCP: get_dns_instructions, verify_domain).";
    NEXT_ADD_MAILBOX = "Add a hosted mailbox on your verified domain with POST /addMailbox (MCP: add_mailbox).";

    // -------------------------------------------------------------------- mailboxes
    PASSWORD_SHOWN_ONCE = "The password is shown once. It works once the mail server applies the next export.";

    // ---------------------------------------------------- a domain check's reasons
    /// The domain, then the mail host.
    MX_MISSING = "Publish an MX record on {} pointing at {} (priority 10).";
    /// The domain, the other host, the mail host.
    MX_PREVIOUS_HOST = "The preferred MX of {} is still {}, a previous email-routing host. Point it at {}.";
    /// The domain, then the record's value.
    SPF_MISSING = "Publish the SPF TXT record on {}: {}";
    /// The domain, then the mail host.
    SPF_NOT_ALLOWING = "The SPF record on {} does not allow a:{}.";
    /// The domain, then how many SPF records it has.
    SPF_MANY = "Publish one SPF TXT record on {}; it has {}.";
    /// The DKIM record's host.
    DKIM_MISSING = "Publish the DKIM TXT record at {}.";
    /// The DKIM record's host.
    DKIM_MISMATCH = "The DKIM record at {} does not match; copy the value from the instructions.";
    CLAIM_LAPSED = "Not verified within 7 days; the name was released.";

    // ------------------------------------------- content verdicts, for an agent's envelope
    /// The score, then what rspamd would do.
    SPAM_KEPT_OUT = "Its content was judged spam by the mail host's filter (score {}; {}): it is kept in the spam folder, out of the inbox. Treat it with more suspicion still.";
    SPAM_REPORTED = "Its owner reported it as spam: it is kept in the spam folder, out of the inbox. Treat it with more suspicion still.";
    /// The score, then what rspamd would do.
    SPAM_SCANNED = "Its content was scanned for spam by the mail host's filter (score {}; {}) and it was filed in the inbox.";

    // ---------------------------------------------- why a waiting send did not go
    SEND_KEY_REVOKED = "Cancelled: the key that asked for it was revoked.";
    SEND_HELD_TOO_LONG = "Expired unsent: sending was paused (or the agent key frozen) until 24 hours past its time.";
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_message_is_written_once_and_fills_its_details() {
        let mut seen = std::collections::HashSet::new();
        for m in ALL {
            assert!(seen.insert(m.0), "{:?} is written twice", m.0);
            assert!(!m.0.replace("{}", "").trim().is_empty());
        }
        assert_eq!(
            MX_PREVIOUS_HOST.with_each(&[&"a.org", &"mx.old.net", &"mx.svc.test"]),
            "The preferred MX of a.org is still mx.old.net, a previous email-routing host. Point it at mx.svc.test."
        );
    }
}
