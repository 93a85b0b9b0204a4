//! HTML a send carries: cleaned of everything that runs before it leaves
//! (ammonia, on html5ever, parses it as a browser would and keeps an allow
//! list: no script, no event handler, no `javascript:` URL, no form, frame,
//! object or style element), keeping what mail is laid out with (inline
//! styles and the presentational attributes of tables). And text written as
//! HTML, for a quote or a forwarded message in an HTML part.

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
}
