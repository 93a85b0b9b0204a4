//! API keys: `svc_` plus 32 random bytes, URL-safe. The server keeps only a keyed
//! hash (HMAC-SHA256 with the server secret) and the last four characters.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use sha2::Sha256;
use subtle::ConstantTimeEq;

pub const KEY_PREFIX: &str = "svc_";

/// What the store keeps for a standard key, under its digest: the account it
/// opens and, for a scoped key, its name and limits. Written by the account
/// and key services, read at every request.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct KeyRecord {
    pub uid: String,
    pub key_id: String,
    pub last4: String,
    pub created_at: String,
    /// A scoped key's name; the account key has none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// A scoped key's limits; the account key has none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<super::Scope>,
    /// When a scoped key last authenticated (to the minute).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_used_at: Option<String>,
}

/// How stale a scoped key's `lastUsedAt` may get before a request writes it
/// again: one write a minute per busy key, not one per request.
const LAST_USED_EVERY_SECS: i64 = 60;

/// The standard key whose digest this is, if one is on file. A scoped key's
/// use is noted (at most once a minute) for GET /keys.
pub async fn owner(
    store: &dyn crate::store::Store,
    digest: &str,
    now: chrono::DateTime<chrono::Utc>,
) -> crate::store::StoreResult<Option<super::StandardKey>> {
    let Some(found) = store.get(&crate::keys::api_key(digest)).await? else {
        return Ok(None);
    };
    let key: KeyRecord = crate::store::record(found)?;
    if key.scope.is_some() {
        let stale = key.last_used_at.as_deref().is_none_or(|at| {
            chrono::DateTime::parse_from_rfc3339(at)
                .is_ok_and(|at| (now - at.to_utc()).num_seconds() >= LAST_USED_EVERY_SECS)
        });
        if stale {
            touch(store, digest, &key, &crate::clock::iso(now)).await?;
        }
    }
    Ok(Some(super::StandardKey {
        uid: key.uid,
        key_id: key.key_id,
        last4: key.last4,
        name: key.name,
        scope: key.scope,
    }))
}

/// Notes a scoped key's use on its record and its listing row. Both only if
/// they still exist: a key revoked meanwhile stays gone.
async fn touch(
    store: &dyn crate::store::Store,
    digest: &str,
    key: &KeyRecord,
    now: &str,
) -> crate::store::StoreResult<()> {
    use crate::store::{Cond, StoreError, Update, Write};
    let update = || Update::new().set("lastUsedAt", now);
    let writes = vec![
        Write::Update {
            key: crate::keys::api_key(digest),
            update: update(),
            cond: Some(Cond::Exists),
        },
        Write::Update {
            key: crate::keys::scoped_key(&key.uid, &key.key_id),
            update: update(),
            cond: Some(Cond::Exists),
        },
    ];
    match store.transact(writes).await {
        Ok(()) | Err(StoreError::ConditionFailed) => Ok(()),
        Err(e) => Err(e),
    }
}

/// On a scoped key's listing row once its revoke has begun: from then on
/// it issues no mailbox password, so the revoke, which then takes the ones
/// it issued, leaves none behind.
pub const REVOKING: &str = "revoking";

/// The condition a mailbox password a scoped key issues is written under,
/// in the same transaction: the key is held and not being revoked.
pub fn may_issue_password(uid: &str, key_id: &str) -> crate::store::Write {
    use crate::store::Cond;
    crate::store::Write::Check {
        key: crate::keys::scoped_key(uid, key_id),
        cond: Cond::And(vec![Cond::Exists, Cond::missing(REVOKING)]),
    }
}

#[derive(Clone)]
pub struct KeyHasher {
    /// The HMAC with its key already absorbed: every request hashes a key,
    /// and cloning this state skips hashing the secret again.
    keyed: Hmac<Sha256>,
}

impl KeyHasher {
    pub fn new(secret: impl Into<Vec<u8>>) -> Self {
        let secret: Vec<u8> = secret.into();
        Self {
            keyed: Hmac::<Sha256>::new_from_slice(&secret).expect("HMAC takes any key length"),
        }
    }

    /// Hex HMAC-SHA256 of a secret value, for storage and lookup. `purpose`
    /// separates domains so a key and a code with the same text never collide.
    pub fn digest(&self, purpose: &str, value: &str) -> String {
        let mut mac = self.keyed.clone();
        mac.update(purpose.as_bytes());
        mac.update(&[0]);
        mac.update(value.as_bytes());
        // Into a fixed buffer: `hex::encode` goes a char at a time (3% of the
        // instructions of a GET /credits, benches/instructions.sh).
        let mut text = [0u8; 64];
        // Cannot fail: 32 bytes are 64 digits.
        let _ = hex::encode_to_slice(mac.finalize().into_bytes(), &mut text);
        String::from_utf8_lossy(&text).into_owned()
    }

    pub fn key_digest(&self, key: &str) -> String {
        self.digest("key", key)
    }
}

/// Compares two digests in constant time.
pub fn same_digest(a: &str, b: &str) -> bool {
    a.len() == b.len() && bool::from(a.as_bytes().ct_eq(b.as_bytes()))
}

/// An API key's id, shown and used to revoke it: `key_` and 12 hex digits.
pub fn new_key_id() -> String {
    crate::values::KeyId::mint().into_string()
}

pub fn new_key() -> String {
    format!("{KEY_PREFIX}{}", URL_SAFE_NO_PAD.encode(rand::random::<[u8; 32]>()))
}

/// The agent key held in a secret. Secrets Manager generates the random part
/// (`GenerateSecretString`, 64 alphanumerics, about 380 bits); the key is
/// `svc_` + that. A value that already starts with `svc_` is the key itself.
pub fn agent_key_from_secret(secret: &str) -> String {
    let secret = secret.trim();
    if secret.starts_with(KEY_PREFIX) {
        secret.to_string()
    } else {
        format!("{KEY_PREFIX}{secret}")
    }
}

pub fn last4(key: &str) -> String {
    key.chars()
        .rev()
        .take(4)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect()
}

/// A random secret for HMAC keys, tokens and the like.
pub fn new_secret() -> String {
    URL_SAFE_NO_PAD.encode(rand::random::<[u8; 32]>())
}

/// A mailbox app password: 24 characters from an alphabet without look-alikes.
pub fn new_password() -> String {
    const ALPHABET: &[u8] = b"abcdefghijkmnpqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789";
    (0..24)
        .map(|_| ALPHABET[rand::random_range(0..ALPHABET.len())] as char)
        .collect()
}

/// SHA512-CRYPT (`$6$...`), the hash Dovecot's passwd-file reads.
pub fn sha512_crypt(password: &str) -> String {
    use sha_crypt::PasswordHasher;
    let salt: [u8; 12] = rand::random();
    sha_crypt::ShaCrypt::SHA512
        .hash_password_with_salt(password.as_bytes(), &salt)
        .expect("SHA512-CRYPT takes any password and a 12-byte salt")
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_agent_key_is_svc_and_the_generated_secret() {
        let generated = "a".repeat(64);
        assert_eq!(agent_key_from_secret(&generated), format!("svc_{generated}"));
        assert_eq!(
            agent_key_from_secret(&format!("svc_{generated}\n")),
            format!("svc_{generated}")
        );
    }

    #[test]
    fn a_new_key_is_svc_and_32_random_bytes_url_safe() {
        let key = new_key();
        let random = key.strip_prefix("svc_").expect("svc_ prefix");
        assert_eq!(URL_SAFE_NO_PAD.decode(random).expect("URL-safe base64").len(), 32);
    }

    #[test]
    fn passwords_hash_as_sha512_crypt_and_verify() {
        use sha_crypt::PasswordVerifier;
        let password = new_password();
        assert_eq!(password.len(), 24);
        let hash = sha512_crypt(&password);
        assert!(hash.starts_with("$6$"), "{hash}");
        let parsed = sha_crypt::PasswordHash::new(hash.as_str()).unwrap();
        assert!(
            sha_crypt::ShaCrypt::SHA512
                .verify_password(password.as_bytes(), &parsed)
                .is_ok()
        );
        assert!(sha_crypt::ShaCrypt::SHA512.verify_password(b"wrong", &parsed).is_err());
    }

    #[test]
    fn keys_are_prefixed_long_and_distinct() {
        let a = new_key();
        assert!(a.starts_with("svc_") && a.len() >= 4 + 43);
        assert_ne!(a, new_key());
        assert_eq!(last4("svc_abcdef"), "cdef");
    }

    #[test]
    fn digests_depend_on_secret_and_purpose() {
        let h = KeyHasher::new("s1");
        assert_eq!(h.key_digest("k"), h.key_digest("k"));
        assert_ne!(h.key_digest("k"), KeyHasher::new("s2").key_digest("k"));
        assert_ne!(h.digest("key", "k"), h.digest("code", "k"));
        assert!(same_digest(&h.key_digest("k"), &h.key_digest("k")));
        assert!(!same_digest(&h.key_digest("k"), &h.key_digest("j")));
    }
}
