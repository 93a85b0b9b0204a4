//! Identity tokens: RS256 JWTs checked against a JWKS (Firebase in production).
//! Local mode signs its own with a key pair kept in the data directory, and
//! `mailhost token` mints tokens that server accepts.

use std::time::{Duration, Instant};

use aws_lc_rs::encoding::AsDer;
use aws_lc_rs::signature::KeyPair;
use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde::{Deserialize, Serialize};
use tokio::sync::RwLock;

use crate::secrets::{SecretError, Secrets};

pub use crate::config::{LOCAL_AUDIENCE, LOCAL_ISSUER};
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

/// At most one JWKS fetch per this interval: a flood of tokens naming unknown
/// key ids (forged `kid`s) costs one fetch a minute, not one each.
pub const JWKS_REFRESH_INTERVAL: Duration = Duration::from_secs(60);

pub struct IdentityVerifier {
    jwks: RwLock<JwkSet>,
    jwks_url: Option<String>,
    /// When the JWKS was last fetched (or tried); held while fetching, so
    /// concurrent requests wait for one fetch instead of starting their own.
    fetched_at: tokio::sync::Mutex<Option<Instant>>,
    issuer: String,
    audience: String,
}

impl IdentityVerifier {
    pub fn with_jwks(jwks: JwkSet, issuer: &str, audience: &str) -> Self {
        Self {
            jwks: RwLock::new(jwks),
            jwks_url: None,
            fetched_at: Default::default(),
            issuer: issuer.into(),
            audience: audience.into(),
        }
    }

    /// Fetches the JWKS when the first token arrives (no network call at
    /// cold start) and again when a token names a key it lacks, at most once
    /// per [`JWKS_REFRESH_INTERVAL`].
    pub fn remote(url: &str, issuer: &str, audience: &str) -> Self {
        Self {
            jwks: RwLock::new(JwkSet { keys: Vec::new() }),
            jwks_url: Some(url.into()),
            fetched_at: Default::default(),
            issuer: issuer.into(),
            audience: audience.into(),
        }
    }

    /// Refreshes the JWKS unless it was fetched within the interval. Returns
    /// after any fetch already under way has finished.
    async fn refresh(&self, url: &str, kid: Option<&str>) {
        let mut fetched_at = self.fetched_at.lock().await;
        // Another request may have fetched the key while this one waited.
        if self.decoding_key(kid).await.is_some() {
            return;
        }
        if fetched_at.is_some_and(|at| at.elapsed() < JWKS_REFRESH_INTERVAL) {
            return;
        }
        *fetched_at = Some(Instant::now());
        match fetch_jwks(url).await {
            Ok(fresh) => *self.jwks.write().await = fresh,
            Err(e) => tracing::warn!(error = %e, "JWKS fetch failed"),
        }
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
        {
            self.refresh(url, header.kid.as_deref()).await;
            key = self.decoding_key(header.kid.as_deref()).await;
        }
        let mut validation = Validation::new(Algorithm::RS256);
        validation.set_issuer(&[&self.issuer]);
        validation.set_audience(&[&self.audience]);
        validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        // Not before its `nbf`, and not issued in the future (jsonwebtoken
        // checks no `iat`): both with the leeway `exp` has.
        validation.validate_nbf = true;
        let claims = jsonwebtoken::decode::<Claims>(token, &key?, &validation).ok()?.claims;
        let now = chrono::Utc::now().timestamp();
        if claims.iat > now + validation.leeway as i64 {
            return None;
        }
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
        self.sign(&claims)
    }

    /// Signs any claims with the local key (tests make tokens that are wrong
    /// on purpose).
    pub fn sign(&self, claims: &impl Serialize) -> anyhow::Result<String> {
        let mut header = Header::new(Algorithm::RS256);
        header.kid = Some(LOCAL_KID.into());
        Ok(jsonwebtoken::encode(
            &header,
            claims,
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

    /// A JWKS server on loopback that counts the fetches.
    #[tokio::test]
    async fn a_token_not_yet_valid_or_issued_in_the_future_is_refused() {
        let dir = std::env::temp_dir().join(format!("mailhost-nbf-{:016x}", rand::random::<u64>()));
        let signer = LocalSigner::load_or_create(&DirSecrets::new(&dir)).await.unwrap();
        let verifier = IdentityVerifier::with_jwks(signer.jwks(), LOCAL_ISSUER, LOCAL_AUDIENCE);
        let now = chrono::Utc::now().timestamp();
        let claims = |iat: i64, nbf: Option<i64>| {
            let mut c = serde_json::json!({
                "iss": LOCAL_ISSUER, "aud": LOCAL_AUDIENCE, "sub": "local:a@example.com",
                "iat": iat, "exp": now + 3600, "email": "a@example.com", "email_verified": true,
            });
            if let Some(nbf) = nbf {
                c["nbf"] = nbf.into();
            }
            signer.sign(&c).unwrap()
        };
        assert!(verifier.verify(&claims(now, None)).await.is_some());
        assert!(verifier.verify(&claims(now, Some(now - 10))).await.is_some());
        assert!(
            verifier.verify(&claims(now + 30, None)).await.is_some(),
            "within the leeway"
        );
        assert!(
            verifier.verify(&claims(now, Some(now + 600))).await.is_none(),
            "not before nbf"
        );
        assert!(
            verifier.verify(&claims(now + 600, None)).await.is_none(),
            "issued in the future"
        );
        std::fs::remove_dir_all(&dir).ok();
    }

    async fn jwks_server(jwks: JwkSet) -> (String, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let fetches = std::sync::Arc::new(AtomicUsize::new(0));
        let counted = fetches.clone();
        let app = axum::Router::new().route(
            "/jwks",
            axum::routing::get(move || {
                counted.fetch_add(1, Ordering::SeqCst);
                let jwks = jwks.clone();
                async move { axum::Json(jwks) }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/jwks", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        (url, fetches)
    }

    #[tokio::test]
    async fn the_jwks_is_fetched_at_the_first_token_and_at_most_once_a_minute() {
        use std::sync::atomic::Ordering;
        let dir = std::env::temp_dir().join(format!("mh-id-{}", rand::random::<u64>()));
        let signer = LocalSigner::load_or_create(&DirSecrets::new(&dir)).await.unwrap();
        let (url, fetches) = jwks_server(signer.jwks()).await;
        let verifier = IdentityVerifier::remote(&url, LOCAL_ISSUER, LOCAL_AUDIENCE);
        assert_eq!(
            fetches.load(Ordering::SeqCst),
            0,
            "nothing fetched before a token arrives"
        );

        let token = signer.mint("a@example.com", false, Duration::from_secs(60)).unwrap();
        let (a, b) = tokio::join!(verifier.verify(&token), verifier.verify(&token));
        assert!(a.is_some() && b.is_some());
        assert_eq!(
            fetches.load(Ordering::SeqCst),
            1,
            "one fetch for concurrent first tokens"
        );

        // Tokens naming key ids the JWKS lacks: no further fetch within the minute.
        for n in 0..20 {
            let mut header = Header::new(Algorithm::RS256);
            header.kid = Some(format!("forged-{n}"));
            let claims: Claims = serde_json::from_str(
                &String::from_utf8(URL_SAFE_NO_PAD.decode(token.split('.').nth(1).unwrap()).unwrap()).unwrap(),
            )
            .unwrap();
            let forged = jsonwebtoken::encode(
                &header,
                &claims,
                &EncodingKey::from_rsa_pem(signer.pem.as_bytes()).unwrap(),
            )
            .unwrap();
            assert!(verifier.verify(&forged).await.is_none());
        }
        assert_eq!(
            fetches.load(Ordering::SeqCst),
            1,
            "forged key ids cost no fetch within a minute"
        );
        assert!(verifier.verify(&token).await.is_some(), "the cached key still verifies");
        std::fs::remove_dir_all(dir).ok();
    }
}
