//! The snippet of a hit: the first place the query's words occur, with the
//! text around it, from the field the index says they matched in (the body
//! first: its head on the row, then the whole text, then the HTML as text).

use crate::error::ApiError;
use crate::search::Field;
use crate::search::grammar::Node;
use crate::search::text::{self, Word};
use crate::service::mail_store::{self, Row};

/// Characters of context before and after the match.
const BEFORE: usize = 60;
const AFTER: usize = 140;

/// The words a hit can show: each word or phrase the query asks for (not
/// those it leaves out), with the field it names.
pub(super) fn wanted(node: &Node, positive: bool, out: &mut Vec<(Option<Field>, Vec<String>)>) {
    match node {
        Node::Words { field, words } if positive => out.push((*field, words.clone())),
        Node::And(parts) | Node::Or(parts) => parts.iter().for_each(|p| wanted(p, positive, out)),
        Node::Not(inner) => wanted(inner, !positive, out),
        _ => {}
    }
}

/// Where the first of the wanted words (in `field`) occurs in `text`: a byte range.
fn first_match(text: &str, field: Field, wanted: &[(Option<Field>, Vec<String>)]) -> Option<std::ops::Range<usize>> {
    let phrases: Vec<&Vec<String>> = wanted
        .iter()
        .filter(|(f, _)| f.is_none_or(|f| f == field))
        .map(|(_, w)| w)
        .collect();
    if phrases.is_empty() {
        return None;
    }
    let mut words: Vec<(Option<String>, std::ops::Range<usize>)> = Vec::new();
    text::spans(text, |w, r| {
        words.push((
            match w {
                Word::Kept(w) => Some(w.to_string()),
                Word::TooLong => None,
            },
            r,
        ))
    });
    for start in 0..words.len() {
        for phrase in &phrases {
            let fits = phrase.iter().enumerate().all(|(i, p)| {
                words
                    .get(start + i)
                    .is_some_and(|(w, _)| w.as_deref() == Some(p.as_str()))
            });
            if fits {
                let end = words[start + phrase.len() - 1].1.end;
                return Some(words[start].1.start..end);
            }
        }
    }
    None
}

/// The text around a match, whitespace folded, cut at word boundaries.
fn around(text: &str, at: std::ops::Range<usize>) -> String {
    let before: Vec<(usize, char)> = text[..at.start].char_indices().collect();
    let mut start = before.len().checked_sub(BEFORE).map_or(0, |i| before[i].0);
    if start > 0 {
        // Begin at a word.
        start = text[start..at.start]
            .find(char::is_whitespace)
            .map_or(start, |i| start + i);
    }
    let mut end = text[at.end..]
        .char_indices()
        .nth(AFTER)
        .map_or(text.len(), |(i, _)| at.end + i);
    if end < text.len() {
        end = text[at.end..end].rfind(char::is_whitespace).map_or(end, |i| at.end + i);
    }
    let mut out = String::new();
    if start > 0 {
        out.push('…');
    }
    out.push_str(&text[start..end].split_whitespace().collect::<Vec<_>>().join(" "));
    if end < text.len() {
        out.push('…');
    }
    out
}

/// A hit's snippet and the field it is from; the preview, from no field,
/// when the query asked for no words (only operators).
pub(super) async fn of(
    ctx: &crate::context::Context,
    row: &Row,
    wanted: &[(Option<Field>, Vec<String>)],
    fields: u8,
) -> Result<(String, Option<Field>), ApiError> {
    let in_field = |f: Field| fields & (1 << f.code()) != 0;
    if in_field(Field::Body) {
        if let Some(at) = first_match(&row.text, Field::Body, wanted) {
            return Ok((around(&row.text, at), Some(Field::Body)));
        }
        if row.text_in_blob || row.has_html {
            let (text, html) = mail_store::body(ctx, row).await?;
            if let Some(at) = first_match(&text, Field::Body, wanted) {
                return Ok((around(&text, at), Some(Field::Body)));
            }
            if let Some(html) = html {
                let rendered = crate::mail::html::to_text(&html);
                if let Some(at) = first_match(&rendered, Field::Body, wanted) {
                    return Ok((around(&rendered, at), Some(Field::Body)));
                }
            }
        }
    }
    let filenames: Vec<&str> = row.attachments.iter().map(|a| a.filename.as_str()).collect();
    let others = [
        (Field::Subject, row.subject.clone()),
        (Field::From, row.from.clone()),
        (Field::To, row.to.join(", ")),
        (Field::Filename, filenames.join(", ")),
    ];
    for (field, text) in others {
        if in_field(field)
            && let Some(at) = first_match(&text, field, wanted)
        {
            return Ok((around(&text, at), Some(field)));
        }
    }
    // Matched where the row keeps no text (a display name, Cc): the
    // preview, and where it matched.
    let field = Field::ALL.into_iter().find(|f| in_field(*f));
    Ok((row.preview.clone(), field))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_snippet_is_the_text_around_the_first_match() {
        let wanted = vec![(None, vec!["resume".to_string()])];
        let text = format!(
            "{} Please find my Résumé attached. {}",
            "intro ".repeat(30),
            "outro ".repeat(40)
        );
        let at = first_match(&text, Field::Body, &wanted).unwrap();
        assert_eq!(&text[at.clone()], "Résumé");
        let snippet = around(&text, at);
        assert!(snippet.starts_with('…') && snippet.ends_with('…'), "{snippet}");
        assert!(snippet.contains("Please find my Résumé attached."), "{snippet}");
        assert!(snippet.chars().count() <= BEFORE + AFTER + 10, "{snippet}");
        let phrase = vec![(Some(Field::Body), vec!["find".to_string(), "my".to_string()])];
        assert!(first_match(&text, Field::Body, &phrase).is_some());
        assert!(first_match(&text, Field::Subject, &phrase).is_none());
        assert_eq!(around("short resume", 6..12), "short resume");
    }
}
