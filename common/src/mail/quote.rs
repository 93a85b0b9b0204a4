//! The original below a reply or a forward, as mail apps write it: a reply
//! quotes it line by line under "On <date>, <sender> wrote:" (in HTML, in a
//! blockquote); a forward carries it whole under a "Forwarded message"
//! block naming its sender, date, subject and recipients. What a stranger
//! wrote goes into HTML escaped, or as HTML sanitised with the rest.

use super::html;

/// The most of an original's text (or HTML) carried below a reply or a
/// forward; a longer one is cut there, and says so.
pub const MAX_ORIGINAL: usize = 256 * 1024;

/// What a cut original ends with.
pub const CUT: &str = "[... the rest of the original message is not included]";

/// The message being answered or forwarded, as it is shown.
pub struct Original<'a> {
    /// Its sender, `Name <address>` or the address.
    pub from: &'a str,
    /// When it was written, as shown.
    pub date: &'a str,
    pub subject: &'a str,
    /// Its To and Cc, each `Name <address>` or the address.
    pub to: &'a [String],
    pub cc: &'a [String],
    pub text: &'a str,
    /// Its HTML body, when it had one.
    pub html: Option<&'a str>,
}

/// `text` cut at `MAX_ORIGINAL` bytes (on a character boundary), and
/// whether it was.
fn within(text: &str) -> (&str, bool) {
    if text.len() <= MAX_ORIGINAL {
        return (text, false);
    }
    let mut end = MAX_ORIGINAL;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    (&text[..end], true)
}

impl Original<'_> {
    fn attribution(&self) -> String {
        format!("On {}, {} wrote:", self.date, self.from)
    }

    /// The original's text, cut to the limit.
    fn text(&self) -> String {
        match within(self.text) {
            (text, false) => text.to_string(),
            (text, true) => format!("{text}\n{CUT}"),
        }
    }

    /// The original as HTML: its own (when it is within the limit), else
    /// its text written as HTML.
    fn html(&self) -> String {
        match self.html.map(within) {
            Some((html, false)) => html.to_string(),
            _ => html::from_text(&self.text()),
        }
    }

    fn header_lines(&self) -> Vec<(&'static str, String)> {
        let mut lines = vec![
            ("From", self.from.to_string()),
            ("Date", self.date.to_string()),
            ("Subject", self.subject.to_string()),
        ];
        if !self.to.is_empty() {
            lines.push(("To", self.to.join(", ")));
        }
        if !self.cc.is_empty() {
            lines.push(("Cc", self.cc.join(", ")));
        }
        lines
    }

    /// A reply's text: the reply, then the original quoted line by line.
    pub fn reply_text(&self, reply: &str) -> String {
        let quoted: Vec<String> = self
            .text()
            .lines()
            .map(|line| {
                if line.is_empty() {
                    ">".to_string()
                } else {
                    format!("> {line}")
                }
            })
            .collect();
        format!(
            "{}\n\n{}\n{}\n",
            reply.trim_end(),
            self.attribution(),
            quoted.join("\n")
        )
    }

    /// A reply's HTML, not yet sanitised: the reply, then the original in a
    /// blockquote.
    pub fn reply_html(&self, reply: &str) -> String {
        format!(
            "{reply}\n<br>\n<div>{}</div>\n<blockquote style=\"margin:0 0 0 .8ex;border-left:1px solid #ccc;padding-left:1ex\">{}</blockquote>",
            html::escape(&self.attribution()),
            self.html()
        )
    }

    /// A forward's text: the note (if any), then the original whole.
    pub fn forward_text(&self, note: Option<&str>) -> String {
        let mut out = String::new();
        if let Some(note) = note {
            out.push_str(note.trim_end());
            out.push_str("\n\n");
        }
        out.push_str("---------- Forwarded message ---------\n");
        for (name, value) in self.header_lines() {
            out.push_str(&format!("{name}: {value}\n"));
        }
        out.push('\n');
        out.push_str(&self.text());
        out
    }

    /// A forward's HTML, not yet sanitised: the note (HTML, if any), then
    /// the original whole.
    pub fn forward_html(&self, note: Option<&str>) -> String {
        let lines: Vec<String> = self
            .header_lines()
            .into_iter()
            .map(|(name, value)| format!("{name}: {}", html::escape(&value)))
            .collect();
        format!(
            "{}\n<div>---------- Forwarded message ---------<br>\n{}</div>\n<br>\n{}",
            note.unwrap_or_default(),
            lines.join("<br>\n"),
            self.html()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn original<'a>(text: &'a str, html: Option<&'a str>, to: &'a [String]) -> Original<'a> {
        Original {
            from: "Alice Chen <alice@x.example>",
            date: "Mon, 23 Nov 2026 at 10:00 +00:00",
            subject: "Plans",
            to,
            cc: &[],
            text,
            html,
        }
    }

    #[test]
    fn a_reply_quotes_the_original_below_it() {
        let o = original("Shall we?\n\nSee you <soon>", None, &[]);
        assert_eq!(
            o.reply_text("Yes.\n"),
            "Yes.\n\nOn Mon, 23 Nov 2026 at 10:00 +00:00, Alice Chen <alice@x.example> wrote:\n> Shall we?\n>\n> See you <soon>\n"
        );
        let html = html::sanitize(&o.reply_html("<p>Yes.</p>"));
        assert!(html.starts_with("<p>Yes.</p>"), "{html}");
        assert!(html.contains("Alice Chen &lt;alice@x.example&gt; wrote:"), "{html}");
        assert!(
            html.contains("<blockquote") && html.contains("See you &lt;soon&gt;"),
            "{html}"
        );
        // The original's own HTML is quoted, cleaned with the rest.
        let o = original("t", Some("<b>bold</b><script>x()</script>"), &[]);
        let html = html::sanitize(&o.reply_html("r"));
        assert!(html.contains("<b>bold</b>") && !html.contains("script"), "{html}");
    }

    #[test]
    fn a_forward_carries_the_original_whole() {
        let to = vec!["Me <me@y.example>".to_string()];
        let o = original("Body line", None, &to);
        assert_eq!(
            o.forward_text(Some("FYI")),
            "FYI\n\n---------- Forwarded message ---------\nFrom: Alice Chen <alice@x.example>\n\
             Date: Mon, 23 Nov 2026 at 10:00 +00:00\nSubject: Plans\nTo: Me <me@y.example>\n\nBody line"
        );
        assert!(o.forward_text(None).starts_with("---------- Forwarded message"));
        let html = html::sanitize(&o.forward_html(None));
        assert!(
            html.contains("To: Me &lt;me@y.example&gt;") && html.contains("Body line"),
            "{html}"
        );
    }

    #[test]
    fn a_long_original_is_cut_and_says_so() {
        let long = "é".repeat(MAX_ORIGINAL);
        let o = original(&long, Some(&long), &[]);
        let text = o.forward_text(None);
        assert!(text.ends_with(CUT) && text.len() < MAX_ORIGINAL + 500);
        // An HTML body past the limit is quoted from its cut text instead.
        assert!(o.reply_html("r").contains(&html::escape(CUT)));
    }
}
