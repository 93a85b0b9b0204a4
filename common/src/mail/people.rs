//! People as a message names them: each address with the display name its
//! writer put beside it (mail-parser has decoded RFC 2047 words and raw
//! UTF-8), made safe to show: bidirectional controls removed, control
//! characters and runs of spaces made one space, at most 200 characters.
//! The addresses are the ones [`received::addresses`] reads (those a reply
//! can use), so a name never comes with an address a send would refuse.

use std::collections::BTreeMap;

use mail_parser::Address;

use super::received;

/// The longest display name kept, in characters.
pub const MAX_NAME: usize = 200;

/// One address, and the name written beside it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Person {
    pub name: Option<String>,
    pub address: String,
}

impl Person {
    /// An address without a name.
    pub fn bare(address: impl Into<String>) -> Person {
        Person {
            name: None,
            address: address.into(),
        }
    }

    /// `"Name" <address>` as a header shows it to a person (a log line, a
    /// quoted header block), or the bare address.
    pub fn shown(&self) -> String {
        match &self.name {
            Some(name) => format!("{name} <{}>", self.address),
            None => self.address.clone(),
        }
    }
}

/// The people of an address header, each address once, at most `max`. A
/// name goes with its address only when what it was written beside is one
/// address (a group's name names no one).
pub fn people(list: Option<&Address<'_>>, max: usize) -> Vec<Person> {
    let mut out: Vec<Person> = Vec::new();
    for written in list.into_iter().flat_map(|a| a.iter()) {
        let one = Address::List(vec![written.clone()]);
        let addresses = received::addresses(Some(&one), max);
        let name = match addresses.as_slice() {
            [address] => display_name(written.name(), address),
            _ => None,
        };
        for address in addresses {
            match out.iter().position(|p| p.address == address) {
                Some(known) => {
                    if out[known].name.is_none() {
                        out[known].name = name.clone();
                    }
                }
                None if out.len() < max => out.push(Person {
                    name: name.clone(),
                    address,
                }),
                None => return out,
            }
        }
    }
    out
}

/// A name safe to show, or none: blank, or only the address again.
pub fn display_name(written: Option<&str>, address: &str) -> Option<String> {
    let neutral = super::shown::neutral(written?);
    let mut name = String::with_capacity(neutral.len());
    for c in neutral.chars() {
        let c = if c.is_control() || c.is_whitespace() { ' ' } else { c };
        if c == ' ' && (name.is_empty() || name.ends_with(' ')) {
            continue;
        }
        name.push(c);
    }
    let name = name.trim_end().trim_matches(|c| c == '"' || c == '\'').trim();
    let name: String = name.chars().take(MAX_NAME).collect();
    let name = name.trim_end().to_string();
    let same = name.trim_matches(['<', '>']).eq_ignore_ascii_case(address);
    (!name.is_empty() && !same).then_some(name)
}

/// The names of these people by address (the first name given wins).
pub fn names<'a>(people: impl IntoIterator<Item = &'a Person>) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for person in people {
        if let Some(name) = &person.name {
            out.entry(person.address.clone()).or_insert_with(|| name.clone());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(headers: &str) -> mail_parser::Message<'static> {
        let raw = format!("{headers}Subject: x\r\n\r\nbody\r\n");
        mail_parser::MessageParser::default()
            .parse(raw.as_bytes())
            .unwrap()
            .into_owned()
    }

    #[test]
    fn names_are_decoded_and_kept_beside_their_address() {
        let m = parsed(
            "From: =?UTF-8?Q?Ren=C3=A9e_M=C3=BCller?= <Renee@Example.org>\r\n\
             To: \"Chen, Alice\" <alice@x.example>, bob@y.example, \"Zoë\" <zoe@z.example>\r\n\
             Cc: Team: Carol <carol@x.example>, dave@x.example;\r\n",
        );
        assert_eq!(
            people(m.from(), 5),
            [Person {
                name: Some("Renée Müller".into()),
                address: "renee@example.org".into()
            }]
        );
        let to = people(m.to(), 10);
        assert_eq!(to[0].name.as_deref(), Some("Chen, Alice"));
        assert_eq!(to[1], Person::bare("bob@y.example"));
        assert_eq!(to[2].name.as_deref(), Some("Zoë"));
        // A group's members keep their own names; the group's names no one.
        let cc = people(m.cc(), 10);
        assert_eq!(cc[0].name.as_deref(), Some("Carol"));
        assert_eq!(cc[1], Person::bare("dave@x.example"));
        assert_eq!(
            names(to.iter().chain(&cc)).into_iter().collect::<Vec<_>>(),
            [
                ("alice@x.example".to_string(), "Chen, Alice".to_string()),
                ("carol@x.example".into(), "Carol".into()),
                ("zoe@z.example".into(), "Zoë".into())
            ]
        );
    }

    #[test]
    fn a_name_is_made_safe_to_show() {
        assert_eq!(
            display_name(Some("Alice\u{202E}nelA"), "a@x.example").as_deref(),
            Some("AlicenelA")
        );
        assert_eq!(
            display_name(Some("  Bob \t\r\n  Smith "), "b@x.example").as_deref(),
            Some("Bob Smith")
        );
        assert_eq!(display_name(Some("b@x.example"), "b@x.example"), None);
        assert_eq!(display_name(Some("<B@X.example>"), "b@x.example"), None);
        assert_eq!(display_name(Some("  "), "b@x.example"), None);
        assert_eq!(display_name(None, "b@x.example"), None);
        let long = "n".repeat(500);
        assert_eq!(
            display_name(Some(&long), "b@x.example").unwrap().chars().count(),
            MAX_NAME
        );
        // RFC 6532: a name written in raw UTF-8.
        let m = parsed("From: Jöhn Dœ <john@x.example>\r\n");
        assert_eq!(people(m.from(), 1)[0].name.as_deref(), Some("Jöhn Dœ"));
    }

    #[test]
    fn each_address_is_kept_once_and_at_most_max() {
        let m = parsed("To: a@x.example, \"A\" <a@x.example>, b@x.example, c@x.example\r\n");
        let to = people(m.to(), 2);
        assert_eq!(to.len(), 2);
        assert_eq!(to[0].name.as_deref(), Some("A"), "a later name fills in");
        assert_eq!(to[1].address, "b@x.example");
    }
}
