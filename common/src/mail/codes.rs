//! One-time codes and links found in a message, so an agent finishing a
//! sign-up need not parse mail itself (MCP `wait_for_message`).
//!
//! A code is a run of 4 to 8 digits standing alone (groups of three or more
//! digits split by one space or hyphen count together, "123 456"), or a 4 to 10 character
//! upper-case code with a digit right after a word such as "code". Runs that
//! touch letters, dots, commas, colons or slashes are amounts, dates, times or
//! versions, and not codes. Codes on a line that says code, verify, OTP, PIN
//! and the like come first; a bare year-like number elsewhere is dropped.

/// The most codes and links returned.
const MAX_FOUND: usize = 10;

const CODE_WORDS: &[&str] = &[
    "code", "verif", "otp", "pin", "passcode", "one-time", "one time", "security", "confirm", "2fa", "token",
    "sign in", "sign-in", "log in", "login",
];

const LINK_WORDS: &[&str] = &[
    "verif", "confirm", "activate", "token", "magic", "login", "signin", "sign-in", "reset",
];

/// The codes in a subject and body, likeliest first.
pub fn codes(subject: &str, text: &str) -> Vec<String> {
    let mut keyed = Vec::new();
    let mut bare = Vec::new();
    for line in std::iter::once(subject).chain(text.lines()) {
        let lower = line.to_lowercase();
        let keyword = CODE_WORDS.iter().any(|w| lower.contains(w));
        for code in digit_runs(line) {
            let year = code.len() == 4 && (code.starts_with("19") || code.starts_with("20"));
            if keyword {
                keyed.push(code);
            } else if !year {
                bare.push(code);
            }
        }
        if keyword {
            keyed.extend(word_codes(line));
        }
    }
    let mut out: Vec<String> = Vec::new();
    for code in keyed.into_iter().chain(bare) {
        if !out.contains(&code) && out.len() < MAX_FOUND {
            out.push(code);
        }
    }
    out
}

/// Standalone digit runs of 4 to 8 digits (groups joined by one space or '-').
fn digit_runs(line: &str) -> Vec<String> {
    let chars: Vec<char> = line.chars().collect();
    let blocks =
        |c: char| c.is_alphanumeric() || matches!(c, '.' | ',' | ':' | '/' | '_' | '@' | '$' | '€' | '£' | '%');
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        if !chars[i].is_ascii_digit() || (i > 0 && (blocks(chars[i - 1]) || chars[i - 1] == '-')) {
            i += 1;
            continue;
        }
        let start = i;
        let mut groups = vec![String::new()];
        let mut end = i;
        while end < chars.len() {
            if chars[end].is_ascii_digit() {
                if let Some(group) = groups.last_mut() {
                    group.push(chars[end]);
                }
                end += 1;
            } else if matches!(chars[end], ' ' | '-') && chars.get(end + 1).is_some_and(|c| c.is_ascii_digit()) {
                groups.push(String::new());
                end += 1;
            } else {
                break;
            }
        }
        let touches = chars
            .get(end)
            .is_some_and(|c| blocks(*c) && *c != '.' && *c != ',' && *c != ':')
            || (chars.get(end).is_some_and(|c| matches!(c, '.' | ',' | ':'))
                && chars.get(end + 1).is_some_and(|c| c.is_ascii_digit()));
        // "123 456" is one code; "2026-11-23" or "+1 555 0100" is not.
        let grouped_well = groups.len() == 1 || groups.iter().all(|g| g.len() >= 3);
        let digits = groups.concat();
        if (4..=8).contains(&digits.len()) && !touches && grouped_well {
            out.push(digits);
        }
        i = end.max(start + 1);
    }
    out
}

/// Upper-case letter-and-digit codes right after "code", "code:" or "code is".
fn word_codes(line: &str) -> Vec<String> {
    let words: Vec<&str> = line.split_whitespace().collect();
    let mut out = Vec::new();
    for (i, w) in words.iter().enumerate() {
        if !w.to_lowercase().trim_end_matches(':').ends_with("code") {
            continue;
        }
        let mut next = words.get(i + 1).copied();
        if next.is_some_and(|n| n.eq_ignore_ascii_case("is")) {
            next = words.get(i + 2).copied();
        }
        let Some(candidate) = next.map(|n| n.trim_matches(|c: char| !c.is_ascii_alphanumeric())) else {
            continue;
        };
        let shaped = (4..=10).contains(&candidate.len())
            && candidate.chars().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit())
            && candidate.chars().any(|c| c.is_ascii_digit())
            && candidate.chars().any(|c| c.is_ascii_uppercase());
        if shaped {
            out.push(candidate.to_string());
        }
    }
    out
}

/// The http(s) links in a body (and its HTML), verification-looking ones first.
pub fn links(text: &str, html: Option<&str>) -> Vec<String> {
    let mut found: Vec<String> = Vec::new();
    for source in std::iter::once(text).chain(html) {
        let mut rest = source;
        while let Some(at) = rest.find("http") {
            let tail = &rest[at..];
            if !(tail.starts_with("https://") || tail.starts_with("http://")) {
                rest = &tail[4..];
                continue;
            }
            let end = tail
                .find(|c: char| c.is_whitespace() || matches!(c, '<' | '>' | '"' | '\'' | ')' | ']'))
                .unwrap_or(tail.len());
            let link = tail[..end]
                .trim_end_matches(['.', ',', ';', ':', '!', '?'])
                .replace("&amp;", "&");
            if link.len() > "https://".len() && !found.contains(&link) {
                found.push(link);
            }
            rest = &tail[end..];
        }
    }
    let likely = |l: &String| LINK_WORDS.iter().any(|w| l.to_lowercase().contains(w));
    let (mut first, rest): (Vec<String>, Vec<String>) = found.into_iter().partition(likely);
    first.extend(rest);
    first.truncate(MAX_FOUND);
    first
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_verification_codes() {
        assert_eq!(codes("Your code", "Your verification code is 482913."), ["482913"]);
        assert_eq!(codes("Sign in", "Use 123 456 to sign in"), ["123456"]);
        assert_eq!(codes("", "Your code: AB12CD"), ["AB12CD"]);
        assert_eq!(codes("Welcome", "Enter 7741 on the page.\nSee you in 2026."), ["7741"]);
        assert_eq!(codes("Your OTP is 90210", ""), ["90210"]);
    }

    #[test]
    fn leaves_amounts_dates_times_and_long_numbers() {
        let text = "Total $1234.50 on 2026-11-23 at 10:30, order 123456789, v1.2345, call +1 555 0100 x";
        assert!(
            codes("Receipt", text).iter().all(|c| c != "1234" && c != "123456789"),
            "{:?}",
            codes("Receipt", text)
        );
        assert!(codes("Receipt", "In 2025 we grew").is_empty());
    }

    #[test]
    fn finds_links_verification_first() {
        let text = "Read https://example.com/blog. Then confirm: https://example.com/verify?t=abc&u=1";
        assert_eq!(
            links(text, Some("<a href=\"https://example.com/verify?t=abc&amp;u=1\">x</a>")),
            ["https://example.com/verify?t=abc&u=1", "https://example.com/blog"]
        );
    }
}
