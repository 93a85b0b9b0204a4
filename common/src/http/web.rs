//! The web app for people: one HTML page and its ES modules and stylesheet
//! (the repository's `web/`), compiled into the binary and served at `/`.
//! The page talks to the REST routes only, like any other client; these paths
//! are not API operations (no `/api` twin, not in the catalogue).
//!
//! The assets live under `/app/<version>/`, where the version is a hash of
//! their bytes: cached for a year, and a new build is a new path. The page
//! itself is never cached, so it always names the current version.

use std::sync::OnceLock;

use axum::Router;
use axum::extract::Path;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use sha2::{Digest, Sha256};

/// Every asset: its name under `/app/<version>/`, its type, its bytes.
const ASSETS: &[(&str, &str, &str)] = &[
    ("app.css", "text/css", include_str!("../../../web/app.css")),
    ("main.js", JS, include_str!("../../../web/main.js")),
    ("api.js", JS, include_str!("../../../web/api.js")),
    ("ui.js", JS, include_str!("../../../web/ui.js")),
    ("start.js", JS, include_str!("../../../web/start.js")),
    ("domain.js", JS, include_str!("../../../web/domain.js")),
    ("mailboxes.js", JS, include_str!("../../../web/mailboxes.js")),
    ("mail.js", JS, include_str!("../../../web/mail.js")),
    ("message.js", JS, include_str!("../../../web/message.js")),
    ("compose.js", JS, include_str!("../../../web/compose.js")),
    ("settings.js", JS, include_str!("../../../web/settings.js")),
    ("operator.js", JS, include_str!("../../../web/operator.js")),
    ("sent.js", JS, include_str!("../../../web/sent.js")),
    ("guardrails.js", JS, include_str!("../../../web/guardrails.js")),
    ("checklist.js", JS, include_str!("../../../web/checklist.js")),
    ("words.js", JS, include_str!("../../../web/words.js")),
    ("keyboard.js", JS, include_str!("../../../web/keyboard.js")),
];

const JS: &str = "text/javascript";
const INDEX: &str = include_str!("../../../web/index.html");

/// The app's own pages and scripts come from this origin only; no script is
/// inline. A mail's HTML is shown in a sandboxed `srcdoc` frame (no scripts,
/// an opaque origin), which inherits this policy on top of its own: so inline
/// styles (the mail's own) and images from anywhere are allowed here, and the
/// frame's own policy blocks remote images until the person asks for them.
/// The app's own markup has no inline style and inserts no HTML.
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data: blob: https: http:; \
     connect-src 'self'; frame-src 'self' blob:; object-src 'none'; base-uri 'none'; form-action 'none'; \
     frame-ancestors 'none'";

/// The web app's paths: the page, and its assets by version.
pub const PATHS: [&str; 2] = ["/", "/app/{version}/{file}"];

/// The web app's routes, for the local server and the `mcp` function (which
/// also serves the API description). `local_sign_in`: the page offers the
/// local server's operator sign-in (`web_sign_in`).
pub fn router(local_sign_in: bool) -> Router {
    // Another verb gets the API's JSON 405, OPTIONS its 204.
    let page = get(move || index(local_sign_in))
        .options(super::preflight)
        .fallback(super::method_not_allowed);
    let assets = get(asset).options(super::preflight).fallback(super::method_not_allowed);
    Router::new().route(PATHS[0], page).route(PATHS[1], assets)
}

/// The hash of every asset's bytes, in hex (the first 12 characters).
pub fn version() -> &'static str {
    static VERSION: OnceLock<String> = OnceLock::new();
    VERSION.get_or_init(|| {
        let mut hash = Sha256::new();
        for (name, _, body) in ASSETS {
            hash.update(name.as_bytes());
            hash.update(body.as_bytes());
        }
        hex::encode(hash.finalize())[..12].to_string()
    })
}

async fn index(local_sign_in: bool) -> Response {
    let page = text("index.html", INDEX)
        .replace("{{version}}", version())
        .replace("{{local-sign-in}}", if local_sign_in { "on" } else { "off" });
    with_headers(page.into_response(), "text/html; charset=utf-8", "no-cache")
}

async fn asset(Path((wanted, file)): Path<(String, String)>) -> Response {
    let found = ASSETS.iter().find(|(name, _, _)| *name == file);
    match found {
        Some((name, kind, body)) if wanted == version() => with_headers(
            text(name, body).into_response(),
            kind,
            "public, max-age=31536000, immutable",
        ),
        _ => with_headers(
            (StatusCode::NOT_FOUND, "Not found").into_response(),
            "text/plain; charset=utf-8",
            "no-cache",
        ),
    }
}

/// An asset's text. A debug build with `MAILHOST_WEB_DIR` set reads it from
/// that directory at each request instead, so a change to the app shows on a
/// reload without a rebuild; a release build always serves what it embedded.
fn text(name: &str, embedded: &'static str) -> String {
    #[cfg(debug_assertions)]
    if let Some(dir) = std::env::var_os("MAILHOST_WEB_DIR")
        && let Ok(body) = std::fs::read_to_string(std::path::Path::new(&dir).join(name))
    {
        return body;
    }
    let _ = name;
    embedded.to_string()
}

fn with_headers(mut response: Response, kind: &str, cache: &'static str) -> Response {
    let headers = response.headers_mut();
    let set = [
        (header::CONTENT_TYPE, HeaderValue::from_str(kind).ok()),
        (header::CACHE_CONTROL, Some(HeaderValue::from_static(cache))),
        (header::CONTENT_SECURITY_POLICY, Some(HeaderValue::from_static(CSP))),
        (header::X_FRAME_OPTIONS, Some(HeaderValue::from_static("DENY"))),
        (
            header::X_CONTENT_TYPE_OPTIONS,
            Some(HeaderValue::from_static("nosniff")),
        ),
        (header::REFERRER_POLICY, Some(HeaderValue::from_static("no-referrer"))),
    ];
    for (name, value) in set {
        if let Some(value) = value {
            headers.insert(name, value);
        }
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_names_its_assets_by_version_and_has_no_inline_script() {
        assert!(INDEX.contains("/app/{{version}}/main.js"));
        assert!(!INDEX.contains("<script>"), "no inline script");
        assert!(!INDEX.contains("style="), "no inline style");
        assert_eq!(version().len(), 12);
    }

    /// words.js puts plain sentences in place of the API's; one it maps that
    /// the service no longer says would silently show the API's again.
    #[test]
    fn every_sentence_the_page_rewords_is_one_the_service_says() {
        let words = ASSETS.iter().find(|(n, _, _)| *n == "words.js").unwrap().2;
        let said: Vec<&str> = crate::error::ALL
            .iter()
            .map(|p| p.sentence)
            .chain(crate::messages::ALL.iter().map(|m| m.as_str()))
            .collect();
        let mut mapped = 0;
        for line in words.lines().map(str::trim).filter(|l| l.starts_with("['")) {
            let api = line[2..].split("', ").next().unwrap().replace("\\'", "'");
            assert!(
                said.contains(&api.as_str()),
                "words.js rewords a sentence the service never says: {api}"
            );
            mapped += 1;
        }
        assert!(mapped > 10, "the sentences were read");
    }

    #[test]
    fn every_module_imported_is_served() {
        for (_, _, body) in ASSETS {
            for line in body.lines().filter(|l| l.starts_with("import ")) {
                let from = line.rsplit("from ").next().unwrap();
                let name = from.trim_matches(|c| c == '\'' || c == '"' || c == ';' || c == '.' || c == '/');
                assert!(ASSETS.iter().any(|(n, _, _)| *n == name), "{line}");
            }
        }
    }
}
