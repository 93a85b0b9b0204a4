//! What a claim is keyed by: the request's Idempotency-Key (the REST header
//! reaches the input as the `idempotencyKey` field) and the request it
//! came with.

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::error::{self, ApiError};
use crate::keys;
use crate::store::Key;
use crate::validate::{Fields, Input, Later, Slot};
use crate::values::IdempotencyKey;

/// The request's key, read before the input is parsed (a bad one is a 400
/// of its own); none without one.
pub(super) fn of<T: Input>(input: &Later<T>) -> Result<Option<IdempotencyKey>, ApiError> {
    Ok(input
        .fields()
        .map(|f| <Option<IdempotencyKey>>::pick(f, "idempotencyKey", error::IDEMPOTENCY_KEY_INVALID))
        .transpose()?
        .flatten())
}

/// The request without its key, and `operation` (a route beside sendMail:
/// the same body sent to two of them is two requests), hashed.
pub(super) fn fingerprint(fields: Option<&Fields>, operation: Option<&str>) -> String {
    let mut request = fields.map(|f| f.map.clone()).unwrap_or_default();
    request.remove("idempotencyKey");
    if let Some(operation) = operation {
        request.insert("operation".into(), operation.into());
    }
    // serde_json's maps are ordered, so equal bodies hash equally.
    hex::encode(Sha256::digest(Value::Object(request).to_string()))
}

/// The record of `key` in the caller's `bucket` ([`crate::auth::Caller::holder`]).
pub(super) fn record(bucket: &str, key: &IdempotencyKey) -> Key {
    keys::idempotency(bucket, &hex::encode(Sha256::digest(key.as_bytes())))
}
