//! What a stranger wrote, made safe to show or to save a file under: the
//! Unicode bidirectional controls removed. One right-to-left override turns
//! `receipt_<U+202E>fdp.exe` into what reads as `receipt_exe.pdf`; without
//! the controls each character shows in its own direction, so a name reads
//! as what it is. Letters of right-to-left scripts need none of them to show
//! right.

use std::borrow::Cow;

/// The bidirectional controls (Unicode's Bidi_Control property): the
/// marks (ALM, LRM, RLM), the embeddings and overrides (LRE, RLE, PDF, LRO,
/// RLO) and the isolates (LRI, RLI, FSI, PDI).
pub fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{061C}' | '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

/// `text` without its bidirectional controls (borrowed when it has none).
pub fn neutral(text: &str) -> Cow<'_, str> {
    if text.chars().any(is_bidi_control) {
        Cow::Owned(text.chars().filter(|c| !is_bidi_control(*c)).collect())
    } else {
        Cow::Borrowed(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_override_no_longer_turns_a_name_around() {
        assert_eq!(neutral("receipt_\u{202E}fdp.exe"), "receipt_fdp.exe");
        for c in [
            '\u{061C}', '\u{200E}', '\u{200F}', '\u{202A}', '\u{202B}', '\u{202C}', '\u{202D}', '\u{202E}', '\u{2066}',
            '\u{2067}', '\u{2068}', '\u{2069}',
        ] {
            assert_eq!(neutral(&format!("a{c}b")), "ab", "{:04X}", c as u32);
        }
        // Text without them, right-to-left scripts included, is left alone.
        assert!(matches!(neutral("שלום, مرحبا ☃"), Cow::Borrowed(_)));
        assert!(matches!(neutral("plain"), Cow::Borrowed(_)));
    }
}
