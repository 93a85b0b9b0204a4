//! Small parsers for the values clients send: emails, hostnames, request bodies.

use serde_json::{Map, Value};

use crate::error::ApiError;

/// A JSON object body with typed, precise field access.
pub struct Fields(pub Map<String, Value>);

impl Fields {
    pub fn parse(bytes: &[u8]) -> Result<Self, ApiError> {
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Ok(Fields(Map::new()));
        }
        match serde_json::from_slice::<Value>(bytes) {
            Ok(Value::Object(map)) => Ok(Fields(map)),
            Ok(_) => Err(ApiError::bad_request("The request body must be a JSON object")),
            Err(_) => Err(ApiError::bad_request("Invalid JSON body")),
        }
    }

    pub fn has(&self, name: &str) -> bool {
        self.0.get(name).is_some_and(|v| !v.is_null())
    }

    /// A string field, trimmed; `None` when absent, null or empty.
    pub fn str(&self, name: &str) -> Result<Option<String>, ApiError> {
        match self.0.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) if s.trim().is_empty() => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.trim().to_string())),
            Some(_) => Err(ApiError::bad_request(format!("{name} must be a string"))),
        }
    }

    pub fn bool(&self, name: &str) -> Result<Option<bool>, ApiError> {
        match self.0.get(name) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(_) => Err(ApiError::bad_request(format!("{name} must be a boolean"))),
        }
    }
}

pub const MAX_EMAIL: usize = 254;

/// Lowercased hostname with the trailing dot stripped, if it is a valid DNS name
/// with at least two labels.
pub fn hostname(input: &str) -> Option<String> {
    let name = input.trim().trim_end_matches('.').to_ascii_lowercase();
    let labels: Vec<&str> = name.split('.').collect();
    let valid_label = |l: &&str| {
        !l.is_empty()
            && l.len() <= 63
            && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
            && !l.starts_with('-')
            && !l.ends_with('-')
    };
    let tld_ok = labels
        .last()
        .is_some_and(|t| t.bytes().any(|b| b.is_ascii_alphabetic()));
    (name.len() <= 253 && labels.len() >= 2 && labels.iter().all(valid_label) && tld_ok).then_some(name)
}

/// A lowercased address `local@domain` with a plain local part and a valid domain.
pub fn email(input: &str) -> Option<String> {
    let input = input.trim();
    if input.len() > MAX_EMAIL || input.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return None;
    }
    let (local, domain) = input.rsplit_once('@')?;
    let local_ok = !local.is_empty()
        && local.len() <= 64
        && !local.starts_with('.')
        && !local.ends_with('.')
        && !local.contains("..")
        && local
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-/=?^_`{|}~.".contains(&b));
    let domain = hostname(domain)?;
    local_ok.then(|| format!("{}@{domain}", local.to_ascii_lowercase()))
}

pub fn email_domain(email: &str) -> &str {
    email.rsplit_once('@').map(|(_, d)| d).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hostnames_are_normalized_and_checked() {
        assert_eq!(hostname(" Example.COM. ").as_deref(), Some("example.com"));
        assert_eq!(hostname("a-b.example.co.uk").as_deref(), Some("a-b.example.co.uk"));
        for bad in [
            "",
            "localhost",
            "-a.com",
            "a..com",
            "a_b.com",
            "exa mple.com",
            "1.2.3.4",
            "é.com",
        ] {
            assert_eq!(hostname(bad), None, "{bad}");
        }
    }

    #[test]
    fn emails_are_lowercased_and_checked() {
        assert_eq!(email("Ann.Lee+x@Example.com").as_deref(), Some("ann.lee+x@example.com"));
        for bad in [
            "",
            "a",
            "@x.com",
            "a@",
            "a b@x.com",
            "a@@x.com",
            ".a@x.com",
            "a@x",
            "a\u{0}@x.com",
        ] {
            assert_eq!(email(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn fields_refuse_wrong_types() {
        let f = Fields::parse(br#"{"a": 1, "b": " x ", "c": true, "d": ""}"#).unwrap();
        assert!(f.str("a").is_err());
        assert_eq!(f.str("b").unwrap().as_deref(), Some("x"));
        assert_eq!(f.str("d").unwrap(), None);
        assert_eq!(f.bool("c").unwrap(), Some(true));
        assert!(Fields::parse(b"[1]").is_err());
        assert!(Fields::parse(b"{").is_err());
        assert!(Fields::parse(b"").unwrap().0.is_empty());
    }
}
