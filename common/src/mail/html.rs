//! HTML a send carries: cleaned of everything that runs before it leaves
//! (ammonia, on html5ever, parses it as a browser would and keeps an allow
//! list: no script, no event handler, no `javascript:` URL, no form, frame,
//! object or style element), keeping what mail is laid out with (inline
//! styles and the presentational attributes of tables). And text written as
//! HTML, for a quote or a forwarded message in an HTML part; and HTML read as
//! text, for a row's text and preview, the search index and its snippets.

/// Attributes every element keeps beside ammonia's defaults: mail is laid
/// out with them (CSS in an attribute runs no script in any mail client).
const PRESENTATION: &[&str] = &[
    "style",
    "align",
    "valign",
    "bgcolor",
    "color",
    "width",
    "height",
    "border",
    "cellpadding",
    "cellspacing",
    "dir",
];

/// `html` with everything that runs removed; links open without a referrer.
pub fn sanitize(html: &str) -> String {
    ammonia::Builder::default()
        .add_generic_attributes(PRESENTATION)
        .add_url_schemes(&["cid"])
        .clean(html)
        .to_string()
}

/// Text as HTML text: `&`, `<`, `>` and quotes escaped.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + text.len() / 16);
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Plain text as an HTML fragment: escaped, its line breaks kept.
pub fn from_text(text: &str) -> String {
    let lines: Vec<String> = text.lines().map(escape).collect();
    format!("<div style=\"white-space:pre-wrap\">{}</div>", lines.join("<br>\n"))
}

/// Elements whose end ends a line of text. mail-parser's rendering breaks
/// only at `<br>` and `</p>` (left out here, so they break once), and would
/// read `<h1>Weekly</h1><div>News` as the one word `WeeklyNews`.
const BLOCKS: &[&str] = &[
    "address",
    "article",
    "blockquote",
    "dd",
    "div",
    "dl",
    "dt",
    "footer",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "header",
    "li",
    "ol",
    "pre",
    "section",
    "table",
    "td",
    "th",
    "tr",
    "ul",
];

/// HTML as text: mail-parser's rendering, a line ending where a block
/// element ends, and no more than one blank line in a row.
pub fn to_text(html: &str) -> String {
    let mut broken = String::with_capacity(html.len() + html.len() / 16);
    let mut rest = html;
    while let Some(at) = rest.find("</") {
        let (before, tag) = rest.split_at(at);
        broken.push_str(before);
        if ends_block(&tag[2..]) {
            broken.push_str("<br>");
        }
        broken.push_str("</");
        rest = &tag[2..];
    }
    broken.push_str(rest);
    let rendered = mail_parser::decoders::html::html_to_text(&broken);
    let mut text = String::with_capacity(rendered.len());
    let mut blank = 0;
    for line in rendered.lines() {
        let line = line.trim_end();
        blank = if line.is_empty() { blank + 1 } else { 0 };
        if blank < 2 && !(line.is_empty() && text.is_empty()) {
            text.push_str(line);
            text.push('\n');
        }
    }
    text.truncate(text.trim_end().len());
    text
}

/// Whether a closing tag (what follows its `</`) ends a block element.
fn ends_block(tag: &str) -> bool {
    let end = tag.find(|c: char| !c.is_ascii_alphanumeric()).unwrap_or(tag.len());
    let (name, after) = tag.split_at(end);
    BLOCKS.iter().any(|b| b.eq_ignore_ascii_case(name))
        && after.chars().next().is_none_or(|c| c == '>' || c.is_ascii_whitespace())
}

/// A message's first text body, its HTML read by [`to_text`] when it has
/// only HTML.
pub fn body_text<'x>(message: &'x mail_parser::Message<'x>) -> Option<std::borrow::Cow<'x, str>> {
    match &message.text_part(0)?.body {
        mail_parser::PartType::Html(html) => Some(to_text(html).into()),
        _ => message.body_text(0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_runs_is_removed_and_layout_is_kept() {
        let dirty = r##"<p onclick="steal()" style="color:red">Hi<script>alert(1)</script></p>
            <a href="javascript:alert(1)">x</a><a href="https://example.org/">ok</a>
            <img src="x" onerror="steal()"><iframe src="https://evil.example/"></iframe>
            <form action="https://evil.example/"><input name="p"></form><style>body{}</style>
            <table cellpadding="4"><tr><td align="right" bgcolor="#eee">cell</td></tr></table>
            <svg><script>alert(2)</script></svg><img src="cid:logo@x">"##;
        let clean = sanitize(dirty);
        for gone in [
            "script",
            "onclick",
            "onerror",
            "javascript:",
            "iframe",
            "<form",
            "<input",
            "<style",
            "alert",
        ] {
            assert!(!clean.to_lowercase().contains(gone), "{gone} in {clean}");
        }
        for kept in [
            "style=\"color:red\"",
            "href=\"https://example.org/\"",
            "cellpadding=\"4\"",
            "align=\"right\"",
            "bgcolor=\"#eee\"",
            "src=\"cid:logo@x\"",
            "rel=\"noopener noreferrer\"",
        ] {
            assert!(clean.contains(kept), "{kept} not in {clean}");
        }
    }

    #[test]
    fn text_becomes_inert_html() {
        assert_eq!(
            escape(r#"<b>"a" & 'b'</b>"#),
            "&lt;b&gt;&quot;a&quot; &amp; &#39;b&#39;&lt;/b&gt;"
        );
        assert_eq!(
            from_text("one <x>\ntwo"),
            "<div style=\"white-space:pre-wrap\">one &lt;x&gt;<br>\ntwo</div>"
        );
    }

    #[test]
    fn html_read_as_text_ends_a_line_where_a_block_ends() {
        let html = "<h1>Weekly Gazette</h1><p>The aubergine <b>won</b>.</p>\
            <ul><li>One</li><LI>Two</LI></ul><table><tr><td>a</td><td>b</td></tr></table>\
            <div>End<br>here</div><h2 class=x>Tail</h2 ><span>in</span>line";
        assert_eq!(
            to_text(html),
            "Weekly Gazette\nThe aubergine won.\nOne\nTwo\n\na\nb\n\nEnd\nhere\nTail\ninline"
        );
        // What is not a block's end joins no line: inline tags, a tag whose
        // name only begins like one, a comment.
        assert_eq!(to_text("<b>a</b><i>b</i></divx>c<!-- </div> -->d"), "abcd");
        let parsed = mail_parser::MessageParser::default()
            .parse(b"Content-Type: text/html\r\n\r\n<h1>Weekly Gazette</h1><p>The aubergine</p>".as_slice())
            .unwrap();
        assert_eq!(body_text(&parsed).unwrap(), "Weekly Gazette\nThe aubergine");
    }
}
