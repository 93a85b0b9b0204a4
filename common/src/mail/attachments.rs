//! Attachment uploads for sendMail: decoded, sized, and typed by their content
//! as well as by what the client declares (spec 2.1, 8).

use base64::Engine;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use serde_json::Value;

use schemars::JsonSchema;

use crate::error::{self, ApiError};
use crate::values::{Field, Origin};

pub const MAX_COUNT: usize = 3;
pub const MAX_EACH: usize = 2 * 1024 * 1024;
pub const MAX_TOTAL: usize = 4 * 1024 * 1024;

/// Standard alphabet, padding optional.
const BASE64: GeneralPurpose = GeneralPurpose::new(
    &base64::alphabet::STANDARD,
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
);

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attachment {
    pub filename: String,
    pub content_type: String,
    pub bytes: Vec<u8>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Jpeg,
    Png,
    Gif,
    Webp,
    Pdf,
    Text,
    Csv,
    Docx,
    Xlsx,
    Pptx,
}

impl Kind {
    fn mime(self) -> &'static str {
        match self {
            Kind::Jpeg => "image/jpeg",
            Kind::Png => "image/png",
            Kind::Gif => "image/gif",
            Kind::Webp => "image/webp",
            Kind::Pdf => "application/pdf",
            Kind::Text => "text/plain",
            Kind::Csv => "text/csv",
            Kind::Docx => "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
            Kind::Xlsx => "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
            Kind::Pptx => "application/vnd.openxmlformats-officedocument.presentationml.presentation",
        }
    }

    fn from_mime(mime: &str) -> Option<Kind> {
        let mime = mime.split(';').next().unwrap_or_default().trim().to_ascii_lowercase();
        Some(match mime.as_str() {
            "image/jpeg" | "image/jpg" | "image/pjpeg" => Kind::Jpeg,
            "image/png" => Kind::Png,
            "image/gif" => Kind::Gif,
            "image/webp" => Kind::Webp,
            "application/pdf" => Kind::Pdf,
            "text/plain" => Kind::Text,
            "text/csv" | "application/csv" => Kind::Csv,
            m if m == Kind::Docx.mime() => Kind::Docx,
            m if m == Kind::Xlsx.mime() => Kind::Xlsx,
            m if m == Kind::Pptx.mime() => Kind::Pptx,
            _ => return None,
        })
    }

    fn from_extension(ext: &str) -> Option<Kind> {
        Some(match ext.to_ascii_lowercase().as_str() {
            "jpg" | "jpeg" => Kind::Jpeg,
            "png" => Kind::Png,
            "gif" => Kind::Gif,
            "webp" => Kind::Webp,
            "pdf" => Kind::Pdf,
            "txt" | "text" | "log" | "md" => Kind::Text,
            "csv" => Kind::Csv,
            "docx" => Kind::Docx,
            "xlsx" => Kind::Xlsx,
            "pptx" => Kind::Pptx,
            _ => return None,
        })
    }

    /// What the bytes are, judged by their content alone (text in `charset`
    /// when the declared type names one and the bytes are not UTF-8).
    fn sniff(bytes: &[u8], charset: Option<&str>) -> Option<Kind> {
        let has = |needle: &[u8]| bytes.windows(needle.len()).any(|w| w == needle);
        Some(match bytes {
            [0xFF, 0xD8, 0xFF, ..] => Kind::Jpeg,
            [0x89, b'P', b'N', b'G', b'\r', b'\n', 0x1A, b'\n', ..] => Kind::Png,
            [b'G', b'I', b'F', b'8', b'7' | b'9', b'a', ..] => Kind::Gif,
            [b'R', b'I', b'F', b'F', _, _, _, _, b'W', b'E', b'B', b'P', ..] => Kind::Webp,
            [b'%', b'P', b'D', b'F', b'-', ..] => Kind::Pdf,
            // Office Open XML is a zip whose entry names say which application.
            [b'P', b'K', 3, 4, ..] if has(b"[Content_Types].xml") => {
                if has(b"word/") {
                    Kind::Docx
                } else if has(b"xl/") {
                    Kind::Xlsx
                } else if has(b"ppt/") {
                    Kind::Pptx
                } else {
                    return None;
                }
            }
            _ if looks_like_text(bytes, charset) => Kind::Text,
            _ => return None,
        })
    }

    fn matches(self, sniffed: Kind) -> bool {
        // CSV is text: the content cannot tell them apart.
        self == sniffed || (self == Kind::Csv && sniffed == Kind::Text)
    }
}

fn looks_like_text(bytes: &[u8], charset: Option<&str>) -> bool {
    let text = match (std::str::from_utf8(bytes), charset.and_then(decoder)) {
        (Ok(text), _) => std::borrow::Cow::Borrowed(text),
        (Err(_), Some(decode)) => std::borrow::Cow::Owned(decode(bytes)),
        (Err(_), None) => return false,
    };
    !text
        .chars()
        .any(|c| c.is_control() && !matches!(c, '\n' | '\r' | '\t' | '\u{c}'))
}

/// The decoder of a charset mail-parser reads (ISO-8859-*, Windows-125*,
/// Shift_JIS, GB18030, ...): text files in mail come in them.
fn decoder(charset: &str) -> Option<mail_parser::decoders::charsets::DecoderFnc> {
    mail_parser::decoders::charsets::map::charset_decoder(charset.as_bytes())
}

/// The `charset` parameter of a declared type, when mail-parser reads it.
fn charset_of(declared: Option<&str>) -> Option<String> {
    let params = declared?.split(';').skip(1);
    params
        .filter_map(|p| p.split_once('='))
        .find(|(name, _)| name.trim().eq_ignore_ascii_case("charset"))
        .map(|(_, value)| value.trim().trim_matches('"').to_ascii_lowercase())
        .filter(|c| !c.is_empty() && c.len() <= 40 && decoder(c).is_some())
}

/// The type a file goes out with: its kind's, and a text file's charset
/// when its bytes are not UTF-8 (so the recipient reads them as written).
fn sent_type(kind: Kind, charset: Option<String>, bytes: &[u8]) -> String {
    match (kind, charset) {
        (Kind::Text | Kind::Csv, Some(c)) if std::str::from_utf8(bytes).is_err() => {
            format!("{}; charset={c}", kind.mime())
        }
        _ => kind.mime().to_string(),
    }
}

/// The `attachments` field of a send: at most 3, each within 2MB, 4MB
/// together.
#[derive(Debug, Default)]
pub struct Attachments(pub Vec<Attachment>);

impl Field for Attachments {
    type Problems = ();
    fn read(value: &Value, _: Origin, (): ()) -> Result<Option<Self>, ApiError> {
        match value {
            Value::Null => Ok(None),
            value => parse(value).map(|a| Some(Attachments(a))),
        }
    }
}

/// Each file of a REST send (spec 2.1): its name, its content in base64 and
/// optionally its type.
impl JsonSchema for Attachments {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Attachments".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "array",
            "maxItems": MAX_COUNT,
            "items": {
                "type": "object",
                "required": ["filename", "contentBase64"],
                "properties": {
                    "filename": { "type": "string", "minLength": 1, "maxLength": 255 },
                    "contentBase64": {
                        "type": "string",
                        "description": "Standard base64, or a data URL; at most 2MB decoded."
                    },
                    "contentType": {
                        "type": ["string", "null"],
                        "description": "Must agree with the bytes when given."
                    }
                }
            }
        })
    }
}

fn parse(value: &Value) -> Result<Vec<Attachment>, ApiError> {
    let list = match value {
        Value::Array(list) => list,
        _ => return Err(error::ATTACHMENTS_TYPE.into()),
    };
    if list.len() > MAX_COUNT {
        return Err(error::TOO_MANY_ATTACHMENTS.into());
    }
    let mut out = Vec::new();
    let mut total = 0;
    for (i, entry) in list.iter().enumerate() {
        let n = i + 1;
        let attachment = parse_one(n, entry)?;
        total += attachment.bytes.len();
        if total > MAX_TOTAL {
            return Err(error::ATTACHMENTS_TOO_LARGE.into());
        }
        out.push(attachment);
    }
    Ok(out)
}

/// Files a send carries that it did not upload (a forward's, from a
/// stored message): (filename, stored content type, bytes), held to an
/// upload's limits and types, each judged by its bytes. A stored type this
/// service would not send (`application/octet-stream`, say) is left to the
/// bytes and the name to decide.
pub fn carried(files: Vec<(String, String, Vec<u8>)>) -> Result<Vec<Attachment>, ApiError> {
    if files.len() > MAX_COUNT {
        return Err(error::TOO_MANY_ATTACHMENTS.into());
    }
    let mut out = Vec::new();
    let mut total = 0;
    for (i, (filename, content_type, bytes)) in files.into_iter().enumerate() {
        let n = i + 1;
        if bytes.is_empty() {
            return Err(error::ATTACHMENT_EMPTY.with(n));
        }
        if bytes.len() > MAX_EACH {
            return Err(error::ATTACHMENT_TOO_LARGE.with(n));
        }
        total += bytes.len();
        if total > MAX_TOTAL {
            return Err(error::ATTACHMENTS_TOO_LARGE.into());
        }
        if filename.chars().any(|c| c.is_control() || c == '/' || c == '\\') {
            return Err(error::ATTACHMENT_FILENAME_INVALID.with(n));
        }
        let declared = Kind::from_mime(&content_type).map(|_| content_type);
        let charset = charset_of(declared.as_deref());
        let kind = kind_of(n, &filename, declared, &bytes)?;
        out.push(Attachment {
            filename,
            content_type: sent_type(kind, charset, &bytes),
            bytes,
        });
    }
    Ok(out)
}

/// Attachment `n` (from 1) of a send: its fields read, its content decoded,
/// and its type agreed by its bytes, its name and its declared type.
fn parse_one(n: usize, entry: &Value) -> Result<Attachment, ApiError> {
    let obj = entry.as_object().ok_or_else(|| error::ATTACHMENT_NOT_OBJECT.with(n))?;
    let filename = match obj.get("filename") {
        Some(Value::String(s)) if !s.trim().is_empty() => s.trim().to_string(),
        _ => return Err(error::ATTACHMENT_FILENAME_MISSING.with(n)),
    };
    if filename.chars().count() > 255 || filename.chars().any(|c| c.is_control() || c == '/' || c == '\\') {
        return Err(error::ATTACHMENT_FILENAME_INVALID.with(n));
    }
    let declared_type = match obj.get("contentType") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) if s.trim().is_empty() => None,
        Some(Value::String(s)) => Some(s.trim().to_string()),
        Some(_) => return Err(error::ATTACHMENT_TYPE_NOT_STRING.with(n)),
    };
    let raw = match obj.get("contentBase64") {
        Some(Value::String(s)) if !s.is_empty() => s.as_str(),
        _ => return Err(error::ATTACHMENT_CONTENT_MISSING.with(n)),
    };
    let (url_type, bytes) = decode(n, raw)?;
    let declared = declared_type.or(url_type);
    let charset = charset_of(declared.as_deref());
    let kind = kind_of(n, &filename, declared, &bytes)?;
    Ok(Attachment {
        filename,
        content_type: sent_type(kind, charset, &bytes),
        bytes,
    })
}

/// The bytes of `contentBase64` (base64, or a data URL, which carries its own
/// type and must say base64), at most `MAX_EACH`, never empty; and the data
/// URL's type.
fn decode(n: usize, raw: &str) -> Result<(Option<String>, Vec<u8>), ApiError> {
    let (url_type, data) = match raw.strip_prefix("data:") {
        Some(rest) => {
            let (meta, data) = rest
                .split_once(',')
                .ok_or_else(|| error::ATTACHMENT_DATA_URL_INVALID.with(n))?;
            let mut params = meta.split(';');
            let mime = params.next().unwrap_or_default().trim();
            if !params.any(|p| p.trim().eq_ignore_ascii_case("base64")) {
                return Err(error::ATTACHMENT_DATA_URL_NOT_BASE64.with(n));
            }
            ((!mime.is_empty()).then(|| mime.to_string()), data)
        }
        None => (None, raw),
    };
    let compact: String = data.chars().filter(|c| !c.is_ascii_whitespace()).collect();
    if compact.len() / 4 * 3 > MAX_EACH + 3 {
        return Err(error::ATTACHMENT_TOO_LARGE.with(n));
    }
    let bytes = BASE64
        .decode(compact.as_bytes())
        .map_err(|_| error::ATTACHMENT_BASE64_INVALID.with(n))?;
    if bytes.len() > MAX_EACH {
        return Err(error::ATTACHMENT_TOO_LARGE.with(n));
    }
    if bytes.is_empty() {
        return Err(error::ATTACHMENT_EMPTY.with(n));
    }
    Ok((url_type, bytes))
}

/// The kind the bytes are, which the name's extension and the declared type
/// (when given) must be allowed and agree with; the declared one wins.
fn kind_of(n: usize, filename: &str, declared_type: Option<String>, bytes: &[u8]) -> Result<Kind, ApiError> {
    let charset = charset_of(declared_type.as_deref());
    let sniffed = Kind::sniff(bytes, charset.as_deref()).ok_or_else(|| error::ATTACHMENT_KIND_NOT_ALLOWED.with(n))?;
    let extension = filename.rsplit_once('.').map(|(_, ext)| ext);
    let by_name = match extension {
        Some(ext) => Some(
            Kind::from_extension(ext)
                .ok_or_else(|| error::ATTACHMENT_TYPE_NOT_ALLOWED.with_each(&[&n, &format_args!(".{ext}")]))?,
        ),
        None => None,
    };
    let by_type = match declared_type {
        Some(t) => Some(Kind::from_mime(&t).ok_or_else(|| error::ATTACHMENT_TYPE_NOT_ALLOWED.with_each(&[&n, &t]))?),
        None => None,
    };
    for declared in [by_type, by_name].into_iter().flatten() {
        if !declared.matches(sniffed) {
            return Err(error::ATTACHMENT_CONTENT_MISMATCH.with(n));
        }
    }
    Ok(by_type.or(by_name).unwrap_or(sniffed))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR";

    fn b64(bytes: &[u8]) -> String {
        base64::engine::general_purpose::STANDARD.encode(bytes)
    }

    fn one(v: Value) -> Result<Vec<Attachment>, ApiError> {
        parse(&json!([v]))
    }

    #[test]
    fn content_decides_and_declarations_must_agree() {
        let png = one(json!({"filename": "a.png", "contentBase64": b64(PNG)})).unwrap();
        assert_eq!(png[0].content_type, "image/png");
        let url =
            one(json!({"filename": "a", "contentBase64": format!("data:image/png;base64,{}", b64(PNG))})).unwrap();
        assert_eq!(url[0].content_type, "image/png");
        let csv = one(json!({"filename": "t.csv", "contentBase64": b64(b"a,b\n1,2\n")})).unwrap();
        assert_eq!(csv[0].content_type, "text/csv");
        let lie = one(json!({"filename": "a.pdf", "contentBase64": b64(PNG)})).unwrap_err();
        assert!(lie.error.contains("does not match"), "{}", lie.error);
        let lie =
            one(json!({"filename": "a.png", "contentType": "application/pdf", "contentBase64": b64(PNG)})).unwrap_err();
        assert!(lie.error.contains("does not match"));
        let exe = one(json!({"filename": "run.exe", "contentBase64": b64(b"MZ\x90\0\x03")})).unwrap_err();
        assert!(exe.error.contains("not an allowed"), "{}", exe.error);
        let named_exe = one(json!({"filename": "run.exe", "contentBase64": b64(PNG)})).unwrap_err();
        assert!(named_exe.error.contains("not allowed"));
        let zip = one(json!({"filename": "a.docx", "contentBase64": b64(b"PK\x03\x04 plain zip")})).unwrap_err();
        assert!(zip.error.contains("not an allowed"));
        let docx = one(
            json!({"filename": "a.docx", "contentBase64": b64(b"PK\x03\x04..[Content_Types].xml..word/document.xml")}),
        );
        assert_eq!(docx.unwrap()[0].content_type, Kind::Docx.mime());
    }

    #[test]
    fn carried_files_meet_an_uploads_limits() {
        let file = |name: &str, ct: &str, bytes: &[u8]| (name.to_string(), ct.to_string(), bytes.to_vec());
        let ok = carried(vec![
            file("a.png", "application/octet-stream", PNG),
            file("notes.txt", "text/plain; charset=utf-8", b"hello"),
        ])
        .unwrap();
        assert_eq!(
            ok.iter().map(|a| a.content_type.as_str()).collect::<Vec<_>>(),
            ["image/png", "text/plain"]
        );
        // Text in the charset its type names (here Latin-1's "café") goes
        // out with that charset; not UTF-8 and naming none, it is no text.
        let latin = carried(vec![file(
            "menu.txt",
            "text/plain; charset=\"ISO-8859-1\"",
            b"caf\xe9\n",
        )])
        .unwrap();
        assert_eq!(latin[0].content_type, "text/plain; charset=iso-8859-1");
        assert_eq!(latin[0].bytes, b"caf\xe9\n");
        let err = carried(vec![file("menu.txt", "text/plain", b"caf\xe9\n")]).unwrap_err();
        assert!(err.is(error::ATTACHMENT_KIND_NOT_ALLOWED), "{}", err.error);
        let err = carried(vec![file("menu.txt", "text/plain; charset=no-such", b"caf\xe9\n")]).unwrap_err();
        assert!(err.is(error::ATTACHMENT_KIND_NOT_ALLOWED), "{}", err.error);
        let err = carried(vec![file("run.exe", "application/x-msdownload", b"MZ\x90\0")]).unwrap_err();
        assert!(err.error.contains("Attachment 1"), "{}", err.error);
        let four = vec![file("a.txt", "text/plain", b"a"); 4];
        assert!(carried(four).unwrap_err().is(error::TOO_MANY_ATTACHMENTS));
        let big = vec![b'a'; MAX_EACH + 1];
        assert!(
            carried(vec![file("a.txt", "text/plain", &big)])
                .unwrap_err()
                .is(error::ATTACHMENT_TOO_LARGE)
        );
    }

    #[test]
    fn sizes_counts_and_encoding_are_checked() {
        let big = vec![b'a'; MAX_EACH + 1];
        assert!(
            one(json!({"filename": "a.txt", "contentBase64": b64(&big)}))
                .unwrap_err()
                .error
                .contains("2MB")
        );
        let near = b64(&vec![b'a'; MAX_EACH - 10]);
        let three = json!([
            {"filename": "a.txt", "contentBase64": near},
            {"filename": "b.txt", "contentBase64": near},
            {"filename": "c.txt", "contentBase64": near},
        ]);
        assert!(parse(&three).unwrap_err().error.contains("4MB"));
        let four = json!([{}, {}, {}, {}]);
        assert_eq!(parse(&four).unwrap_err().error, "Max 3 attachments per request");
        assert!(
            one(json!({"filename": "a.txt", "contentBase64": "***"}))
                .unwrap_err()
                .error
                .contains("base64")
        );
        assert!(one(json!({"filename": "a.txt", "contentBase64": "data:text/plain,hello"})).is_err());
        assert!(one(json!({"contentBase64": b64(b"x")})).is_err());
        assert!(one(json!({"filename": "../x.txt", "contentBase64": b64(b"x")})).is_err());
        assert!(parse(&json!("nope")).is_err());
        let wrapped = format!("{}\n{}", &b64(b"hello there")[..8], &b64(b"hello there")[8..]);
        assert_eq!(
            one(json!({"filename": "a.txt", "contentBase64": wrapped})).unwrap()[0].bytes,
            b"hello there"
        );
    }
}
