//! Per-domain DKIM keys: RSA 2048, generated at add time. The private key is kept
//! as a secret (PKCS#8 PEM); the public key is published at `mail._domainkey`.

use aws_lc_rs::encoding::{AsDer, Pkcs8V1Der, PublicKeyX509Der};
use aws_lc_rs::signature::KeyPair;
use base64::Engine;
use base64::engine::general_purpose::STANDARD;

pub const SELECTOR: &str = "mail";

pub struct DkimKey {
    pub private_pem: String,
    /// Base64 SubjectPublicKeyInfo: the `p=` of the DNS record.
    pub public_b64: String,
}

pub fn generate() -> anyhow::Result<DkimKey> {
    let pair = aws_lc_rs::rsa::KeyPair::generate(aws_lc_rs::rsa::KeySize::Rsa2048)?;
    let private = AsDer::<Pkcs8V1Der>::as_der(&pair)?;
    let public = AsDer::<PublicKeyX509Der>::as_der(pair.public_key())?;
    Ok(DkimKey {
        private_pem: crate::auth::identity::pem_encode("PRIVATE KEY", private.as_ref()),
        public_b64: STANDARD.encode(public.as_ref()),
    })
}

/// The TXT value customers publish.
pub fn record_value(public_b64: &str) -> String {
    format!("v=DKIM1; k=rsa; p={public_b64}")
}

/// The `p=` tag of a published DKIM record, whitespace removed.
pub fn published_key(txt: &str) -> Option<String> {
    txt.split(';')
        .map(str::trim)
        .find_map(|tag| tag.strip_prefix("p="))
        .map(|p| p.split_whitespace().collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_generated_key_reads_back_from_its_record() {
        let key = generate().unwrap();
        assert!(key.private_pem.starts_with("-----BEGIN PRIVATE KEY-----"));
        let value = record_value(&key.public_b64);
        assert_eq!(published_key(&value).as_deref(), Some(key.public_b64.as_str()));
        let spaced = format!("v=DKIM1; k=rsa; p={} {}", &key.public_b64[..10], &key.public_b64[10..]);
        assert_eq!(published_key(&spaced).as_deref(), Some(key.public_b64.as_str()));
        assert_eq!(published_key("v=DKIM1; k=rsa"), None);
    }
}
