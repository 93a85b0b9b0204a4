//! Row and thread ids: what they are made of, and what a valid one looks like.

use sha2::{Digest, Sha256};

use super::shapes::Direction;

/// A thread's id: 64 lowercase hex characters from the mailbox and the
/// Message-ID that started the conversation.
pub fn thread_id(mailbox: &str, root_message_id: &str) -> String {
    hex::encode(Sha256::digest(format!("{mailbox}\n{root_message_id}")))
}

/// The Message-ID a conversation started with, as a message names it: the
/// first of its References, else what it replies to, else itself. Any message
/// of the conversation names the same root whatever order they arrive in.
pub fn root_of<'a>(message_id: &'a str, in_reply_to: &'a [String], references: &'a [String]) -> &'a str {
    references
        .first()
        .or(in_reply_to.first())
        .map(String::as_str)
        .unwrap_or(message_id)
}

/// A new row id: the 13-digit filing time in milliseconds, then 16 random hex
/// characters inbound, or `o` and 16 outbound, so ids of both directions sort
/// by time and tell their direction.
pub fn new_id(ms: i64, direction: Direction) -> String {
    let mark = if direction == Direction::Outbound { "o" } else { "" };
    format!("{:013}{mark}{}", ms.max(0), hex::encode(rand::random::<[u8; 8]>()))
}

pub fn direction_of(id: &str) -> Direction {
    if id.as_bytes().get(13) == Some(&b'o') {
        Direction::Outbound
    } else {
        Direction::Inbound
    }
}

pub fn valid_id(id: &str) -> bool {
    (1..=128).contains(&id.len()) && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

pub fn valid_thread_id(id: &str) -> bool {
    id.len() == 64 && id.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_sort_by_time_and_tell_their_direction() {
        let a = new_id(1_700_000_000_000, Direction::Inbound);
        let b = new_id(1_700_000_000_001, Direction::Outbound);
        assert!(a < b);
        assert_eq!(direction_of(&a), Direction::Inbound);
        assert_eq!(direction_of(&b), Direction::Outbound);
        assert!(valid_id(&a) && valid_id(&b));
    }

    #[test]
    fn the_root_does_not_depend_on_arrival_order() {
        let refs = vec!["<a@x>".to_string()];
        let irt = vec!["<b@x>".to_string()];
        assert_eq!(root_of("<c@x>", &irt, &refs), "<a@x>");
        assert_eq!(root_of("<b@x>", &refs, &[]), "<a@x>");
        assert_eq!(root_of("<a@x>", &[], &[]), "<a@x>");
        let t = thread_id("me@example.com", "<a@x>");
        assert!(valid_thread_id(&t));
    }
}
