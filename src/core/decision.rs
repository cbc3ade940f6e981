//! The state machine of SPEC §3 as two pure functions.
//!
//! [`begin`] and [`finish`] take the record found (already read) and return
//! what to answer and what to write. A store runs each one inside its own
//! atomic section, so no read and write are ever split across a round trip.

use super::fingerprint::Fingerprint;
use super::policy::RecordPolicy;
use super::record::{Completed, InFlight, Record, Released};
use super::response::StoredResponse;

/// Seconds a `key-in-flight` answer asks the caller to wait.
pub const IN_FLIGHT_RETRY_AFTER_SECS: u32 = 1;

/// What a request with a key does next.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// The key is now reserved for this attempt: call the origin with
    /// `Idempotency-Attempt: attempt`.
    Execute {
        /// The attempt number, higher than any before it for this record.
        attempt: u32,
        /// Whether an expired lease was taken over (a previous attempt's
        /// outcome is unknown).
        reclaimed: bool,
    },
    /// Another attempt holds a live lease: 409 `key-in-flight`.
    InFlight {
        /// Seconds for the `Retry-After` header.
        retry_after_secs: u32,
    },
    /// The key was used with another request: 422 `key-reused`.
    Mismatch,
    /// Answer with the stored response and `Idempotent-Replayed: true`.
    Replay(Completed),
}

/// What the store must do to its record after a step.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Write {
    /// Leave the record as it is.
    Keep,
    /// Replace the record (and set its expiry alarm).
    Put(Record),
}

/// A decision and the write that goes with it, to be applied atomically.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Step<T> {
    /// What the caller is told.
    pub answer: T,
    /// What the store writes.
    pub write: Write,
}

/// Decides a request with a key, given the record found (`None` when there
/// is none), the request's fingerprint and the store's clock.
///
/// An expired record reads as absent; an `InFlight` record whose lease
/// ended is reclaimed with the next attempt number.
///
/// ```
/// use oncekey::core::{begin, Decision, Fingerprint, RecordPolicy};
/// let step = begin(None, Fingerprint([0; 32]), 1_000, &RecordPolicy::default());
/// assert_eq!(step.answer, Decision::Execute { attempt: 1, reclaimed: false });
/// ```
pub fn begin(found: Option<Record>, fingerprint: Fingerprint, now_ms: u64, policy: &RecordPolicy) -> Step<Decision> {
    let reserve = |attempt: u32, reclaimed: bool| Step {
        answer: Decision::Execute { attempt, reclaimed },
        write: Write::Put(Record::InFlight(InFlight {
            fingerprint,
            attempt,
            lease_expires_at: now_ms.saturating_add(policy.lease_ms),
            expires_at: now_ms.saturating_add(policy.lease_ms).saturating_add(policy.ttl_ms),
        })),
    };
    let keep = |answer: Decision| Step { answer, write: Write::Keep };
    match found.and_then(|record| record.live(now_ms)) {
        None => reserve(1, false),
        Some(Record::Released(r)) => reserve(r.last_attempt.saturating_add(1), false),
        Some(Record::InFlight(r)) if r.fingerprint != fingerprint => keep(Decision::Mismatch),
        Some(Record::InFlight(r)) if now_ms < r.lease_expires_at => {
            keep(Decision::InFlight { retry_after_secs: IN_FLIGHT_RETRY_AFTER_SECS })
        }
        Some(Record::InFlight(r)) => reserve(r.attempt.saturating_add(1), true),
        Some(Record::Completed(r)) if r.fingerprint != fingerprint => keep(Decision::Mismatch),
        Some(Record::Completed(r)) => keep(Decision::Replay(r)),
    }
}

/// How an attempt at the origin ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The origin answered (any status, 5xx included).
    Answered(StoredResponse),
    /// The connection failed before the request was sent: the origin
    /// cannot have acted on it.
    NotSent,
    /// The request reached the origin but no answer came back (reset,
    /// timeout): it may or may not have acted.
    Unknown,
}

/// What finishing an attempt did to the record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Finished {
    /// The answer is stored for replays (the record to copy to KV).
    Stored(Completed),
    /// The key was released: a retry runs again with the next attempt.
    Released,
    /// The outcome is unknown: the lease stays until it ends.
    LeaseKept,
    /// The attempt no longer holds the key (reclaimed, expired or gone):
    /// nothing was written.
    Stale,
}

/// Finishes attempt `attempt`, given the record found now. Only a record
/// that is still `InFlight` with that attempt and a live lease is changed;
/// a finish that comes after its lease ended writes nothing, because from
/// then on another attempt may run (the caller still gets its answer).
///
/// ```
/// use oncekey::core::{begin, finish, Finished, Fingerprint, RecordPolicy, Outcome, StoredResponse, Write};
/// let policy = RecordPolicy::default();
/// let Write::Put(record) = begin(None, Fingerprint([0; 32]), 0, &policy).write else { unreachable!() };
/// let answer = StoredResponse { status: 201, headers: vec![], body: Some(b"{}".to_vec()) };
/// let step = finish(Some(record), 1, Outcome::Answered(answer), 10, &policy);
/// assert!(matches!(step.answer, Finished::Stored(_)));
/// ```
pub fn finish(found: Option<Record>, attempt: u32, outcome: Outcome, now_ms: u64, policy: &RecordPolicy) -> Step<Finished> {
    let current = match found.and_then(|record| record.live(now_ms)) {
        Some(Record::InFlight(r)) if r.attempt == attempt && now_ms < r.lease_expires_at => r,
        _ => return Step { answer: Finished::Stale, write: Write::Keep },
    };
    let release = || Step {
        answer: Finished::Released,
        write: Write::Put(Record::Released(Released {
            last_attempt: attempt,
            expires_at: now_ms.saturating_add(policy.ttl_ms),
        })),
    };
    match outcome {
        Outcome::Unknown => Step { answer: Finished::LeaseKept, write: Write::Keep },
        Outcome::NotSent => release(),
        Outcome::Answered(response) if policy.release_on.contains(&response.status) => release(),
        Outcome::Answered(response) => {
            let completed = Completed {
                fingerprint: current.fingerprint,
                attempt,
                response,
                expires_at: now_ms.saturating_add(policy.ttl_ms),
            };
            Step { answer: Finished::Stored(completed.clone()), write: Write::Put(Record::Completed(completed)) }
        }
    }
}
