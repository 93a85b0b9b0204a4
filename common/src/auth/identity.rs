//! Identity tokens: RS256 JWTs checked against a JWKS (Firebase in production).
//! Local mode signs its own with a key pair kept in the data directory, and
//! `mailhost token` mints tokens that server accepts.

use std::time::Duration;

use aws_lc_rs::encoding::AsDer;
use aws_lc_rs::signature::KeyPair;
use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde::{Deserialize, Serialize};
use tokio::sync::RwLock;

use crate::secrets::{SecretError, Secrets};

pub const LOCAL_ISSUER: &str = "mailhost-local";
pub const LOCAL_AUDIENCE: &str = "mailhost";
pub const SIGNING_KEY_SECRET: &str = "identity-signing-key";
const LOCAL_KID: &str = "local-1";

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Claims {
    pub iss: String,
    pub aud: String,
    pub sub: String,
    pub iat: i64,
    pub exp: i64,
    #[serde(default)]
    pub email: Option<String>,
    #[serde(default)]
    pub email_verified: bool,
    /// A custom claim the identity provider may set for operator accounts.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub operator: bool,
}

/// A verified identity-token holder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdentityUser {
    pub uid: String,
    pub email: String,
    pub operator: bool,
}

pub struct IdentityVerifier {
    jwks: RwLock<JwkSet>,
    jwks_url: Option<String>,
    issuer: String,
    audience: String,
}

impl IdentityVerifier {
    pub fn with_jwks(jwks: JwkSet, issuer: &str, audience: &str) -> Self {
        Self {
            jwks: RwLock::new(jwks),
            jwks_url: None,
            issuer: issuer.into(),
            audience: audience.into(),
        }
    }

    /// Fetches the JWKS now and again whenever a token names a key it lacks.
    pub async fn remote(url: &str, issuer: &str, audience: &str) -> anyhow::Result<Self> {
        let jwks = fetch_jwks(url).await?;
        Ok(Self {
            jwks: RwLock::new(jwks),
            jwks_url: Some(url.into()),
            issuer: issuer.into(),
            audience: audience.into(),
        })
    }

    /// The claims of a valid token whose email is verified, or `None`.
    pub async fn verify(&self, token: &str) -> Option<Claims> {
        let header = jsonwebtoken::decode_header(token).ok()?;
        if header.alg != Algorithm::RS256 {
            return None;
        }
        let mut key = self.decoding_key(header.kid.as_deref()).await;
        if key.is_none()
            && let Some(url) = &self.jwks_url
            && let Ok(fresh) = fetch_jwks(url).await
        {
            *self.jwks.write().await = fresh;
            key = self.decoding_key(header.kid.as_deref()).await;
        }
        let mut validation = Validation::new(Algorithm::RS256);
        validation.set_issuer(&[&self.issuer]);
        validation.set_audience(&[&self.audience]);
        validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        let claims = jsonwebtoken::decode::<Claims>(token, &key?, &validation).ok()?.claims;
        (claims.email_verified && claims.email.as_deref().is_some_and(|e| !e.is_empty())).then_some(claims)
    }

    async fn decoding_key(&self, kid: Option<&str>) -> Option<DecodingKey> {
        let jwks = self.jwks.read().await;
        let jwk = match kid {
            Some(kid) => jwks.find(kid)?,
            None if jwks.keys.len() == 1 => &jwks.keys[0],
            None => return None,
        };
        DecodingKey::from_jwk(jwk).ok()
    }
}

async fn fetch_jwks(url: &str) -> anyhow::Result<JwkSet> {
    let client = reqwest::Client::builder().timeout(Duration::from_secs(5)).build()?;
    Ok(client.get(url).send().await?.error_for_status()?.json().await?)
}

/// The local identity provider: an RSA key pair kept as a secret.
pub struct LocalSigner {
    pem: String,
    jwks: JwkSet,
}

impl LocalSigner {
    pub async fn load_or_create(secrets: &dyn Secrets) -> Result<Self, SecretError> {
        let pem = crate::secrets::get_or_create(secrets, SIGNING_KEY_SECRET, || {
            let pair = aws_lc_rs::rsa::KeyPair::generate(aws_lc_rs::rsa::KeySize::Rsa2048).expect("RSA key generation");
            let der = AsDer::<aws_lc_rs::encoding::Pkcs8V1Der>::as_der(&pair).expect("PKCS#8 encoding");
            pem_encode("PRIVATE KEY", der.as_ref())
        })
        .await?;
        Self::from_pem(&pem)
    }

    pub fn from_pem(pem: &str) -> Result<Self, SecretError> {
        let bad = |e: &dyn std::fmt::Display| SecretError(format!("identity signing key: {e}"));
        let der = pem_decode(pem).ok_or_else(|| bad(&"not PEM"))?;
        let pair = aws_lc_rs::rsa::KeyPair::from_pkcs8(&der).map_err(|e| bad(&e))?;
        let public = pair.public_key();
        let jwk = serde_json::json!({
            "kty": "RSA", "use": "sig", "alg": "RS256", "kid": LOCAL_KID,
            "n": URL_SAFE_NO_PAD.encode(public.modulus().big_endian_without_leading_zero()),
            "e": URL_SAFE_NO_PAD.encode(public.exponent().big_endian_without_leading_zero()),
        });
        let jwks = serde_json::from_value(serde_json::json!({ "keys": [jwk] })).map_err(|e| bad(&e))?;
        Ok(Self {
            pem: pem.to_string(),
            jwks,
        })
    }

    pub fn jwks(&self) -> JwkSet {
        self.jwks.clone()
    }

    /// Mints a token for a verified email, valid for `ttl`.
    pub fn mint(&self, email: &str, operator: bool, ttl: Duration) -> anyhow::Result<String> {
        let now = chrono::Utc::now().timestamp();
        let claims = Claims {
            iss: LOCAL_ISSUER.into(),
            aud: LOCAL_AUDIENCE.into(),
            sub: format!("local:{}", email.to_ascii_lowercase()),
            iat: now,
            exp: now + ttl.as_secs() as i64,
            email: Some(email.to_ascii_lowercase()),
            email_verified: true,
            operator,
        };
        let mut header = Header::new(Algorithm::RS256);
        header.kid = Some(LOCAL_KID.into());
        Ok(jsonwebtoken::encode(
            &header,
            &claims,
            &EncodingKey::from_rsa_pem(self.pem.as_bytes())?,
        )?)
    }
}

pub(crate) fn pem_encode(label: &str, der: &[u8]) -> String {
    let b64 = STANDARD.encode(der);
    let mut out = format!("-----BEGIN {label}-----\n");
    for line in b64.as_bytes().chunks(64) {
        out.push_str(std::str::from_utf8(line).expect("base64 is ASCII"));
        out.push('\n');
    }
    out.push_str(&format!("-----END {label}-----\n"));
    out
}

fn pem_decode(pem: &str) -> Option<Vec<u8>> {
    let body: String = pem.lines().filter(|l| !l.starts_with("-----")).collect();
    STANDARD.decode(body.trim()).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::secrets::DirSecrets;

    #[tokio::test]
    async fn a_minted_token_verifies_and_a_tampered_one_does_not() {
        let dir = std::env::temp_dir().join(format!("mh-id-{}", rand::random::<u64>()));
        let signer = LocalSigner::load_or_create(&DirSecrets::new(&dir)).await.unwrap();
        let again = LocalSigner::load_or_create(&DirSecrets::new(&dir)).await.unwrap();
        assert_eq!(signer.pem.trim_end(), again.pem.trim_end(), "the key pair is kept");
        let verifier = IdentityVerifier::with_jwks(signer.jwks(), LOCAL_ISSUER, LOCAL_AUDIENCE);
        let token = signer.mint("Ops@Example.com", true, Duration::from_secs(60)).unwrap();
        let claims = verifier.verify(&token).await.unwrap();
        assert_eq!(claims.email.as_deref(), Some("ops@example.com"));
        assert!(claims.operator);
        let mut bad = token.clone();
        bad.pop();
        bad.push(if token.ends_with('A') { 'B' } else { 'A' });
        assert!(verifier.verify(&bad).await.is_none());
        let other = IdentityVerifier::with_jwks(signer.jwks(), LOCAL_ISSUER, "someone-else");
        assert!(other.verify(&token).await.is_none(), "audience is checked");
        std::fs::remove_dir_all(dir).ok();
    }
}
