//! Who wrote a message: the addresses its `From:` (or `Sender:`) headers
//! name, read one way for every door that shows, judges or checks an author.
//! Received mail is shown from an address DMARC judged, because the checks
//! are handed these addresses rather than reading the headers again their
//! own way; a submission goes out only when its one author is the mailbox
//! that logged in.
//!
//! An author reduces to one address when the message has one such header
//! holding one mailbox. Several headers, several addresses or a group (RFC
//! 6854) do not reduce: every address is kept, in order, each once.

use mail_parser::{Address, HeaderName, HeaderValue, Message};

use super::received;

/// The most addresses kept of one message's authors.
const MAX_AUTHORS: usize = 100;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Authors {
    /// Every address named, lower case, in order, each once.
    pub addresses: Vec<String>,
    /// How many such headers the message has.
    pub headers: usize,
    /// Whether it reduces to one address: one header, one mailbox, no group.
    single: bool,
}

impl Authors {
    /// The `From:` headers' addresses.
    pub fn of(message: &Message<'_>) -> Authors {
        Authors::named(message, HeaderName::From)
    }

    /// The `Sender:` headers' addresses.
    pub fn sender(message: &Message<'_>) -> Authors {
        Authors::named(message, HeaderName::Sender)
    }

    fn named(message: &Message<'_>, name: HeaderName<'_>) -> Authors {
        let (mut headers, mut mailboxes, mut group) = (0, 0, false);
        let mut addresses: Vec<String> = Vec::new();
        for value in message.header_values(name) {
            headers += 1;
            let HeaderValue::Address(address) = value else {
                continue;
            };
            group |= matches!(address, Address::Group(_));
            mailboxes += address.iter().filter(|a| a.address().is_some()).count();
            for a in received::addresses(Some(address), MAX_AUTHORS) {
                if !addresses.contains(&a) && addresses.len() < MAX_AUTHORS {
                    addresses.push(a);
                }
            }
        }
        Authors {
            single: headers == 1 && mailboxes == 1 && !group && addresses.len() == 1,
            addresses,
            headers,
        }
    }

    /// The one author, when there is exactly one.
    pub fn single(&self) -> Option<&str> {
        self.single.then(|| self.addresses[0].as_str())
    }

    /// The address a received message is shown from: the one author, else
    /// the first address named; empty when none can be read.
    pub fn shown(&self) -> &str {
        self.addresses.first().map_or("", String::as_str)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn authors(headers: &str) -> Authors {
        let raw = format!("{headers}To: me@tom.example\r\nSubject: x\r\n\r\nbody\r\n");
        let message = mail_parser::MessageParser::default().parse(raw.as_bytes()).unwrap();
        Authors::of(&message)
    }

    #[test]
    fn one_mailbox_in_one_header_is_one_author() {
        let one = authors("From: CEO <CEO@Bank.test>\r\n");
        assert_eq!(one.single(), Some("ceo@bank.test"));
        assert_eq!(one.shown(), "ceo@bank.test");
        // Obsolete spaces around the @ are the same address.
        assert_eq!(authors("From: ceo @ bank.test\r\n").single(), Some("ceo@bank.test"));
        // RFC 6532: a UTF-8 address.
        assert_eq!(
            authors("From: \"Jöhn Doe\" <jdöe@mächine.example>\r\n").single(),
            Some("jdöe@mächine.example")
        );
    }

    #[test]
    fn several_headers_addresses_or_a_group_do_not_reduce_to_one() {
        for (headers, named) in [
            (
                "From: CEO <ceo@bank.test>, x@attacker.test\r\n",
                vec!["ceo@bank.test", "x@attacker.test"],
            ),
            (
                "From: x@attacker.test\r\nFrom: CEO <ceo@bank.test>\r\n",
                vec!["x@attacker.test", "ceo@bank.test"],
            ),
            (
                "From: Bank: ceo@bank.test, x@attacker.test;\r\n",
                vec!["ceo@bank.test", "x@attacker.test"],
            ),
            ("From: Bank: ceo@bank.test;\r\n", vec!["ceo@bank.test"]),
            ("From: ceo@bank.test, ceo@bank.test\r\n", vec!["ceo@bank.test"]),
            (
                "From: ceo@bank.test x@attacker.test\r\n",
                vec!["ceo@bank.test", "x@attacker.test"],
            ),
        ] {
            let a = authors(headers);
            assert_eq!(a.single(), None, "{headers}");
            assert_eq!(a.addresses, named, "{headers}");
            assert_eq!(a.shown(), named[0], "{headers}");
        }
        let none = authors("From: nobody\r\n");
        assert_eq!((none.single(), none.shown(), none.headers), (None, "", 1));
        assert_eq!(authors("").headers, 0);
    }
}
