//! Retries of conflicting writes, with jittered exponential backoff.

use std::time::Duration;

use aws_sdk_dynamodb::error::{DisplayErrorContext, ProvideErrorMetadata, SdkError};
use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;

use super::backend_sdk;
use crate::store::{StoreError, StoreResult};

/// Why an attempt failed: a conflict with a concurrent transaction is worth
/// another try, anything else is the answer.
pub(super) enum Failure {
    Conflict(String),
    Final(StoreError),
}

pub(super) fn failure<E>(err: SdkError<E>) -> Failure
where
    E: ProvideErrorMetadata + std::error::Error + 'static,
{
    if transient(&err) {
        return Failure::Final(StoreError::Unavailable(DisplayErrorContext(&err).to_string()));
    }
    match err.code() {
        Some("ConditionalCheckFailedException") => Failure::Final(StoreError::ConditionFailed),
        // A single-item write on an item inside an ongoing transaction is refused
        // with this, and the SDK does not retry it.
        Some("TransactionConflictException") => Failure::Conflict(DisplayErrorContext(&err).to_string()),
        _ => Failure::Final(backend_sdk(&err)),
    }
}

pub(super) fn transact_failure(err: SdkError<TransactWriteItemsError>) -> Failure {
    if let Some(TransactWriteItemsError::TransactionCanceledException(cancelled)) = err.as_service_error() {
        let codes: Vec<&str> = cancelled
            .cancellation_reasons()
            .iter()
            .filter_map(|r| r.code())
            .collect();
        // A false condition decides the outcome even when another write conflicted.
        if codes.contains(&"ConditionalCheckFailed") {
            return Failure::Final(StoreError::ConditionFailed);
        }
        if codes.contains(&"TransactionConflict") {
            return Failure::Conflict(DisplayErrorContext(&err).to_string());
        }
    }
    failure(err)
}

/// What the SDK's standard retries (common/src/context.rs) gave up on and a
/// later request may not: throttling, a 5xx, no connection, no answer in time.
fn transient<E: ProvideErrorMetadata>(err: &SdkError<E>) -> bool {
    match err {
        SdkError::DispatchFailure(_) | SdkError::TimeoutError(_) | SdkError::ResponseError(_) => true,
        SdkError::ServiceError(service) => {
            THROTTLED.contains(&err.code().unwrap_or_default()) || service.raw().status().as_u16() >= 500
        }
        _ => false,
    }
}

const THROTTLED: [&str; 3] = [
    "ProvisionedThroughputExceededException",
    "ThrottlingException",
    "RequestLimitExceeded",
];

pub(super) const ATTEMPTS: u32 = 6;

/// 10-20ms after the first try, doubling up to 160-320ms.
pub(super) fn backoff(tries: u32) -> Duration {
    let ceiling = 10u64 << tries.min(5);
    Duration::from_millis(rand::random_range(ceiling / 2..=ceiling))
}

/// Runs `attempt` again while it fails on a conflict, with jittered exponential
/// backoff so racing writers spread out instead of colliding again.
pub(super) async fn retrying<T, F, Fut>(mut attempt: F) -> StoreResult<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, Failure>>,
{
    let mut tries = 1;
    loop {
        match attempt().await {
            Ok(out) => return Ok(out),
            Err(Failure::Final(e)) => return Err(e),
            // Still conflicting: busy, not broken.
            Err(Failure::Conflict(message)) if tries >= ATTEMPTS => {
                return Err(StoreError::Unavailable(message));
            }
            Err(Failure::Conflict(_)) => {
                tokio::time::sleep(backoff(tries)).await;
                tries += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn conflicts_are_retried_until_an_answer_or_the_last_attempt() {
        let mut tries = 0;
        let answer: StoreResult<()> = retrying(|| {
            tries += 1;
            let outcome = if tries < 3 {
                Failure::Conflict("busy".into())
            } else {
                Failure::Final(StoreError::ConditionFailed)
            };
            async move { Err(outcome) }
        })
        .await;
        assert!(matches!(answer, Err(StoreError::ConditionFailed)));
        assert_eq!(tries, 3);

        tries = 0;
        let gave_up: StoreResult<()> = retrying(|| {
            tries += 1;
            async { Err(Failure::Conflict("busy".into())) }
        })
        .await;
        assert!(matches!(gave_up, Err(StoreError::Unavailable(m)) if m == "busy"));
        assert_eq!(tries, ATTEMPTS);
    }
}
