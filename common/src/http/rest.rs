//! A catalogued operation over REST: admit the caller, read the input from
//! the body or the query, run the operation, write its output as JSON.

use axum::extract::{Query, Request};
use axum::http::request::Parts;
use axum::response::{IntoResponse, Response};

use super::AppState;
use super::preamble::{Door, Received, receive, receive_known};
use crate::api::{Download, Operation, Output, Rest, Source};
use crate::auth::Authenticated;
use crate::service::caller::Confirmation;
use crate::validate::Fields;

pub(super) async fn serve(op: &'static Operation, rest: &'static Rest, ctx: AppState, req: Request) -> Response {
    let (parts, body) = req.into_parts();
    let max_body = (rest.source != Source::Query).then_some(rest.max_body);
    let received = match rest.starts_on_known_key {
        true => receive_known(&ctx, op.access, &parts, body, max_body).await,
        false => receive(&ctx, Door::Rule(op.access), &parts, body, max_body)
            .await
            .map(|r| (r, None)),
    };
    let (mut received, check) = match received {
        Ok(received) => received,
        Err(e) => return e.into_response(),
    };
    let Some(check) = check else {
        return answer(op, rest, &ctx, &parts, &received, None).await;
    };
    let confirmation = Some(check.confirmation());
    let (settled, answered) = tokio::join!(check.settle(), answer(op, rest, &ctx, &parts, &received, confirmation));
    // The key's record changed since this process last read it: the call
    // wrote nothing (it waits for the read before its first write), so it
    // runs again as the caller the record says now, or is refused as it says.
    let Err(now) = settled else { return answered };
    let auth = now.and_then(|caller| {
        let auth = Authenticated {
            caller,
            via: received.auth.via,
        };
        op.access.admit(&auth).map(|()| auth)
    });
    match auth {
        Ok(auth) => received.auth = auth,
        Err(e) => return e.into_response(),
    }
    answer(op, rest, &ctx, &parts, &received, None).await
}

/// The operation's answer for a caller let in; `confirmation` when the
/// caller is its key's record as last read.
async fn answer(
    op: &'static Operation,
    rest: &'static Rest,
    ctx: &AppState,
    parts: &Parts,
    received: &Received,
    confirmation: Option<Confirmation>,
) -> Response {
    let query = || {
        Query::<Vec<(String, String)>>::try_from_uri(&parts.uri)
            .map(|Query(pairs)| Fields::from_query(pairs))
            .unwrap_or_default()
    };
    let fields = match rest.source {
        Source::Query => Ok(query()),
        Source::Body => Fields::parse(&received.body),
        Source::BodyOrQuery => Fields::parse(&received.body).map(|mut fields| {
            for (name, value) in query().map {
                fields.map.entry(name).or_insert(value);
            }
            fields
        }),
    };
    // The Idempotency-Key header reaches the input as a field (the header wins).
    let fields = fields.map(|mut fields| {
        if let Some(key) = parts.headers.get("idempotency-key") {
            let key = String::from_utf8_lossy(key.as_bytes()).into_owned();
            fields.map.insert("idempotencyKey".into(), key.into());
        }
        fields
    });
    let mut call = received.call(ctx, "rest");
    call.confirmation = confirmation;
    // HEAD answers as GET would, and changes nothing.
    call.peek = parts.method == axum::http::Method::HEAD;
    match op.execute(&call, fields).await {
        Ok(Output::Json(output)) => json(output),
        Ok(Output::Accepted(output)) => (axum::http::StatusCode::ACCEPTED, json(output)).into_response(),
        Ok(Output::Bytes(file)) => download(file),
        Err(e) => e.into_response(),
    }
}

/// JSON text the operation encoded.
fn json(text: Box<serde_json::value::RawValue>) -> Response {
    use axum::http::{HeaderValue, header};
    let text: Box<str> = text.into();
    (
        [(header::CONTENT_TYPE, HeaderValue::from_static("application/json"))],
        String::from(text),
    )
        .into_response()
}

/// File bytes as they are stored, saved under their name.
fn download(file: Download) -> Response {
    use axum::http::{HeaderValue, header};
    let name: String = file
        .filename
        .chars()
        .map(|c| {
            if c.is_ascii_graphic() && c != '"' && c != '\\' || c == ' ' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let kind = if file.inline { "inline" } else { "attachment" };
    let disposition = HeaderValue::from_str(&format!("{kind}; filename=\"{name}\""))
        .unwrap_or(HeaderValue::from_static("attachment"));
    let content_type =
        HeaderValue::from_str(&file.content_type).unwrap_or(HeaderValue::from_static("application/octet-stream"));
    let mut response = file.bytes.into_response();
    response.headers_mut().insert(header::CONTENT_TYPE, content_type);
    response.headers_mut().insert(header::CONTENT_DISPOSITION, disposition);
    // A stranger wrote these bytes: never sniffed into another type, and
    // when a browser shows one, it runs no script and reaches no origin.
    response
        .headers_mut()
        .insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    response
        .headers_mut()
        .insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static("sandbox"));
    response
}
