//! The state machine of SPEC §3 as two pure functions.
//!
//! [`begin`] and [`finish`] take the record found (already read) and return
//! what to answer and what to write. A store runs each one inside its own
//! atomic section, so no read and write are ever split across a round trip.

use crate::core::record::codec::{Completed, InFlight, Record, Released};
use crate::core::record::policy::RecordPolicy;
use crate::core::record::sealed::{KeyId, StoredAnswer};
use crate::core::request::fingerprint::Fingerprint;

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
        /// Seconds for the `Retry-After` header: one while the attempt
        /// runs, the rest of the lease once its outcome is unknown.
        retry_after_secs: u32,
        /// Whether that attempt ended without an answer.
        outcome_unknown: bool,
        /// The attempt that holds the key (0: not known, from a store that
        /// predates it), for the 409's log line.
        attempt: u32,
    },
    /// The key was used with another request: 422 `key-reused`.
    Mismatch,
    /// Answer with the stored response and `Idempotent-Replayed: true`.
    Replay(Completed),
    /// The stored record does not decode (a newer layout after a rollback,
    /// or damage): whether the request ran is unknown, so nothing runs —
    /// 503 `record-unreadable` (SPEC §3), until an operator releases it.
    Unreadable,
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
            outcome_unknown: false,
            reservation: 0,
        })),
    };
    let keep = |answer: Decision| Step { answer, write: Write::Keep };
    match found.and_then(|record| record.live(now_ms)) {
        None => reserve(1, false),
        Some(Record::Released(r)) => reserve(r.last_attempt.saturating_add(1), false),
        Some(Record::InFlight(r)) if r.fingerprint != fingerprint => keep(Decision::Mismatch),
        Some(Record::InFlight(r))
            if now_ms < r.lease_expires_at
                && !(mutant!(ReclaimBeforeLeaseEnd) && now_ms >= r.lease_expires_at - policy.lease_ms / 2) =>
        {
            // An unknown outcome holds the key for the rest of its lease: a
            // retry sooner can only get this answer again.
            let retry_after_secs = if r.outcome_unknown {
                u32::try_from((r.lease_expires_at - now_ms).div_ceil(1000)).unwrap_or(u32::MAX)
            } else {
                IN_FLIGHT_RETRY_AFTER_SECS
            };
            keep(Decision::InFlight { retry_after_secs, outcome_unknown: r.outcome_unknown, attempt: r.attempt })
        }
        Some(Record::InFlight(r)) => reserve(r.attempt.saturating_add(1), true),
        Some(Record::Completed(r)) if r.fingerprint != fingerprint => keep(Decision::Mismatch),
        // The first replay asks for the key's KV copy (SPEC §4: most keys are
        // never retried, so none is written at completion); the record
        // remembers it, so later replays do not write it again.
        Some(Record::Completed(r)) if !r.copied => Step {
            answer: Decision::Replay(r.clone()),
            write: Write::Put(Record::Completed(Completed { copied: true, ..r })),
        },
        Some(Record::Completed(r)) => keep(Decision::Replay(r)),
    }
}

/// The answer a copy kept outside the store (a Workers KV copy, SPEC §4)
/// may replay: a live `Completed` record with this fingerprint, as [`begin`]
/// would replay it. Anything else (no copy, an expired one, another
/// fingerprint, an in-flight or released record) is no answer: a copy is
/// never trusted to say "absent", "in flight" or "reused", so the request
/// goes on to the store, or fails closed when the store is down.
///
/// ```
/// use oncekey::core::{Completed, Fingerprint, Record, StoredResponse, replay_from_copy};
/// let answer = StoredResponse { status: 201, headers: vec![], body: Some(b"{}".to_vec()) };
/// let copy = Completed { fingerprint: Fingerprint([1; 32]), attempt: 1, response: answer.into(), expires_at: 2_000, copied: false };
/// let found = || Some(Record::Completed(copy.clone()));
/// assert_eq!(replay_from_copy(found(), Fingerprint([1; 32]), 1_999), Some(copy.clone()));
/// assert_eq!(replay_from_copy(found(), Fingerprint([1; 32]), 2_000), None, "expired");
/// assert_eq!(replay_from_copy(found(), Fingerprint([2; 32]), 1_000), None, "another request");
/// ```
pub fn replay_from_copy(found: Option<Record>, fingerprint: Fingerprint, now_ms: u64) -> Option<Completed> {
    match found?.live(now_ms)? {
        Record::Completed(c) if c.fingerprint == fingerprint => Some(c),
        _ => None,
    }
}

/// [`begin`] by a Worker that holds the seal keys `open_keys` (`None`: not
/// said, as a Worker from before they were sent). A stored answer sealed by
/// a key the Worker no longer holds keeps a fingerprint keyed under that
/// key, which no request's matches any more (SPEC §13): it is still this
/// key's answer, so it is answered as a replay, for the Worker to fail
/// closed on as unopenable (503 `record-unreadable`, naming the key) —
/// never a 422 (SPEC §4).
pub fn begin_holding(
    found: Option<Record>,
    fingerprint: Fingerprint,
    now_ms: u64,
    policy: &RecordPolicy,
    open_keys: Option<&[KeyId]>,
) -> Step<Decision> {
    let unopenable = |id: KeyId| open_keys.is_some_and(|keys| !keys.contains(&id));
    match found.and_then(|record| record.live(now_ms)) {
        Some(Record::Completed(c))
            if c.fingerprint != fingerprint && c.response.sealed_by().is_some_and(unopenable) =>
        {
            Step { answer: Decision::Replay(c), write: Write::Keep }
        }
        live => begin(live, fingerprint, now_ms, policy),
    }
}

/// Gives back a reservation whose `begin` reply was lost (SPEC §3): the
/// caller never called the origin, so a record still `InFlight`, running,
/// with this `reservation` becomes `Released` (attempt numbers keep
/// rising). Anything else — another reservation, an attempt that has ended,
/// no record — is left alone. Answers whether it released.
///
/// ```
/// use oncekey::core::{abandon, Fingerprint, Record, RecordPolicy, StoreCall, Write};
/// let call = StoreCall::Begin { policy: RecordPolicy::default(), fingerprint: Fingerprint([1; 32]), wait_ms: 0, reservation: 42, open_keys: Some(Vec::new()) };
/// let Write::Put(reserved) = call.run(None, 0).write else { unreachable!() };
/// assert!(abandon(Some(reserved.clone()), 42, 5, &RecordPolicy::default()).answer);
/// assert!(!abandon(Some(reserved), 7, 5, &RecordPolicy::default()).answer, "someone else's");
/// ```
pub fn abandon(found: Option<Record>, reservation: u64, now_ms: u64, policy: &RecordPolicy) -> Step<bool> {
    match found.and_then(|record| record.live(now_ms)) {
        Some(Record::InFlight(r))
            if reservation != 0
                && (r.reservation == reservation || mutant!(AbandonIgnoresReservation))
                && !r.outcome_unknown =>
        {
            Step {
                answer: true,
                write: Write::Put(Record::Released(Released {
                    last_attempt: r.attempt,
                    expires_at: now_ms.saturating_add(policy.ttl_ms),
                })),
            }
        }
        _ => Step { answer: false, write: Write::Keep },
    }
}

/// KV's smallest `expirationTtl`, in seconds.
pub const KV_MIN_TTL_SECS: u64 = 60;

/// The `expirationTtl` of a KV copy of `completed` written at `now_ms`: it
/// expires with the record, never under KV's 60 s floor (reads check
/// `expires_at` themselves, so a copy kept longer is never replayed late).
///
/// ```
/// use oncekey::core::copy_ttl_secs;
/// assert_eq!(copy_ttl_secs(86_400_000, 0), 86_400);
/// assert_eq!(copy_ttl_secs(1_500, 0), 60);
/// ```
pub fn copy_ttl_secs(expires_at: u64, now_ms: u64) -> u64 {
    expires_at.saturating_sub(now_ms).div_ceil(1000).max(KV_MIN_TTL_SECS)
}

/// How an attempt at the origin ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The origin answered (any status, 5xx included). A sealed answer's
    /// status is not a release status: the Worker that sealed it checked.
    Answered(StoredAnswer),
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
    /// The outcome is unknown: the record says so, and the lease stays
    /// until it ends.
    LeaseKept,
    /// The attempt no longer holds the key (reclaimed, expired or gone):
    /// nothing was written.
    Stale,
}

/// Finishes attempt `attempt`, given the record found now. Only a record
/// that is still `InFlight` with that attempt is changed (not reclaimed,
/// not expired, not gone) — even after its lease ended: nobody reclaimed
/// the key, so the answer is still this attempt's, and throwing it away
/// would let the next retry run the work again. A reclaimed record holds a
/// higher attempt number, so a finish that lost the key writes nothing (its
/// caller still gets the answer).
///
/// ```
/// use oncekey::core::{begin, finish, Finished, Fingerprint, RecordPolicy, Outcome, StoredResponse, Write};
/// let policy = RecordPolicy::default();
/// let Write::Put(record) = begin(None, Fingerprint([0; 32]), 0, &policy).write else { unreachable!() };
/// let answer = StoredResponse { status: 201, headers: vec![], body: Some(b"{}".to_vec()) };
/// let step = finish(Some(record), 1, Outcome::Answered(answer.into()), 10, &policy);
/// assert!(matches!(step.answer, Finished::Stored(_)));
/// ```
pub fn finish(
    found: Option<Record>,
    attempt: u32,
    outcome: Outcome,
    now_ms: u64,
    policy: &RecordPolicy,
) -> Step<Finished> {
    let current = match found.and_then(|record| record.live(now_ms)) {
        Some(Record::InFlight(r)) if r.attempt == attempt || mutant!(FinishIgnoresAttempt) => r,
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
        Outcome::Unknown => Step {
            answer: Finished::LeaseKept,
            write: Write::Put(Record::InFlight(InFlight { outcome_unknown: true, ..current })),
        },
        Outcome::NotSent => release(),
        Outcome::Answered(StoredAnswer::Plain(response)) if policy.releases(response.status) => release(),
        Outcome::Answered(response) => {
            let completed = Completed {
                fingerprint: current.fingerprint,
                attempt,
                response,
                expires_at: now_ms.saturating_add(policy.ttl_ms),
                copied: false,
            };
            Step { answer: Finished::Stored(completed.clone()), write: Write::Put(Record::Completed(completed)) }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::StoredResponse;
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    const FP: Fingerprint = Fingerprint([1; 32]);
    const OTHER: Fingerprint = Fingerprint([2; 32]);
    const NOW: u64 = 1_000_000;

    fn policy() -> RecordPolicy {
        RecordPolicy { lease_ms: 10_000, ttl_ms: 60_000, release_on: vec![408, 425, 429, 503] }
    }

    fn in_flight(fingerprint: Fingerprint, attempt: u32, lease_expires_at: u64) -> Record {
        Record::InFlight(InFlight {
            fingerprint,
            attempt,
            lease_expires_at,
            expires_at: lease_expires_at + 60_000,
            outcome_unknown: false,
            reservation: 0,
        })
    }

    fn answer(status: u16) -> StoredAnswer {
        StoredResponse {
            status,
            headers: vec![("content-type".into(), "application/json".into())],
            body: Some(b"{}".to_vec()),
        }
        .into()
    }

    fn completed(fingerprint: Fingerprint, expires_at: u64) -> Completed {
        Completed { fingerprint, attempt: 2, response: answer(201), expires_at, copied: false }
    }

    fn reserved(attempt: u32) -> Write {
        Write::Put(in_flight(FP, attempt, NOW + 10_000))
    }

    #[test]
    fn begin_follows_the_spec_table() {
        let execute = |attempt, reclaimed| Decision::Execute { attempt, reclaimed };
        let rows: Vec<(&str, Option<Record>, Decision, Write)> = vec![
            ("none", None, execute(1, false), reserved(1)),
            (
                "released",
                Some(Record::Released(Released { last_attempt: 4, expires_at: NOW + 1 })),
                execute(5, false),
                reserved(5),
            ),
            ("in flight, other fingerprint", Some(in_flight(OTHER, 1, NOW + 5_000)), Decision::Mismatch, Write::Keep),
            (
                "in flight, other fingerprint, lease expired",
                Some(in_flight(OTHER, 1, NOW - 1)),
                Decision::Mismatch,
                Write::Keep,
            ),
            (
                "in flight, lease live",
                Some(in_flight(FP, 1, NOW + 1)),
                Decision::InFlight { retry_after_secs: 1, outcome_unknown: false, attempt: 1 },
                Write::Keep,
            ),
            ("in flight, lease expired", Some(in_flight(FP, 3, NOW)), execute(4, true), reserved(4)),
            (
                "completed, other fingerprint",
                Some(Record::Completed(completed(OTHER, NOW + 1))),
                Decision::Mismatch,
                Write::Keep,
            ),
            (
                "completed, same fingerprint, its first replay: the copy is asked for, once",
                Some(Record::Completed(completed(FP, NOW + 1))),
                Decision::Replay(completed(FP, NOW + 1)),
                Write::Put(Record::Completed(Completed { copied: true, ..completed(FP, NOW + 1) })),
            ),
            (
                "completed, same fingerprint, replayed before",
                Some(Record::Completed(Completed { copied: true, ..completed(FP, NOW + 1) })),
                Decision::Replay(Completed { copied: true, ..completed(FP, NOW + 1) }),
                Write::Keep,
            ),
            // Expired records read as absent, whatever their kind.
            ("expired completed", Some(Record::Completed(completed(FP, NOW))), execute(1, false), reserved(1)),
            (
                "expired completed, other fingerprint",
                Some(Record::Completed(completed(OTHER, NOW - 5))),
                execute(1, false),
                reserved(1),
            ),
            (
                "expired released",
                Some(Record::Released(Released { last_attempt: 9, expires_at: NOW })),
                execute(1, false),
                reserved(1),
            ),
            (
                "expired in flight",
                Some(Record::InFlight(InFlight {
                    fingerprint: OTHER,
                    attempt: 7,
                    lease_expires_at: NOW - 10,
                    expires_at: NOW,
                    outcome_unknown: false,
                    reservation: 0,
                })),
                execute(1, false),
                reserved(1),
            ),
        ];
        for (name, found, want, write) in rows {
            let step = begin(found, FP, NOW, &policy());
            assert_eq!(step.answer, want, "{name}");
            assert_eq!(step.write, write, "{name}");
        }
    }

    #[test]
    fn only_a_live_matching_copy_is_replayed() {
        let rows: Vec<(&str, Option<Record>, Option<Completed>)> = vec![
            ("no copy", None, None),
            (
                "completed, same fingerprint",
                Some(Record::Completed(completed(FP, NOW + 1))),
                Some(completed(FP, NOW + 1)),
            ),
            ("completed, other fingerprint", Some(Record::Completed(completed(OTHER, NOW + 1))), None),
            ("completed, expired now", Some(Record::Completed(completed(FP, NOW))), None),
            ("completed, expired long ago", Some(Record::Completed(completed(FP, 1))), None),
            ("in flight, lease live", Some(in_flight(FP, 1, NOW + 5_000)), None),
            ("in flight, lease over", Some(in_flight(FP, 1, NOW - 1)), None),
            ("released", Some(Record::Released(Released { last_attempt: 1, expires_at: NOW + 1 })), None),
        ];
        for (name, found, want) in rows {
            assert_eq!(replay_from_copy(found.clone(), FP, NOW), want, "{name}");
            // The same rule as the store's: a copy replays exactly when `begin` would.
            let begun = match begin(found, FP, NOW, &policy()).answer {
                Decision::Replay(c) => Some(c),
                _ => None,
            };
            assert_eq!(begun, want, "{name}: begin");
        }
    }

    #[test]
    fn reserved_record_lives_past_its_lease() {
        let Write::Put(record) = begin(None, FP, NOW, &policy()).write else { panic!("no write") };
        assert_eq!(record.expires_at(), NOW + 10_000 + 60_000);
    }

    #[test]
    fn attempt_numbers_saturate_instead_of_wrapping() {
        let found = Record::Released(Released { last_attempt: u32::MAX, expires_at: NOW + 1 });
        assert_eq!(
            begin(Some(found), FP, NOW, &policy()).answer,
            Decision::Execute { attempt: u32::MAX, reclaimed: false }
        );
    }

    fn finish_live(attempt: u32, outcome: Outcome) -> Step<Finished> {
        finish(Some(in_flight(FP, 2, NOW + 1)), attempt, outcome, NOW, &policy())
    }

    fn released(last_attempt: u32) -> Write {
        Write::Put(Record::Released(Released { last_attempt, expires_at: NOW + 60_000 }))
    }

    #[test]
    fn finish_stores_any_other_answer_5xx_included() {
        for status in [200, 201, 204, 302, 400, 404, 409, 422, 500, 502, 504] {
            let step = finish_live(2, Outcome::Answered(answer(status)));
            let want = Completed {
                fingerprint: FP,
                attempt: 2,
                response: answer(status),
                expires_at: NOW + 60_000,
                copied: false,
            };
            assert_eq!(step.answer, Finished::Stored(want.clone()), "{status}");
            assert_eq!(step.write, Write::Put(Record::Completed(want)), "{status}");
        }
    }

    #[test]
    fn finish_keeps_an_omitted_body_omitted() {
        let big = StoredResponse { status: 200, headers: vec![], body: None };
        let step = finish_live(2, Outcome::Answered(big.clone().into()));
        let Finished::Stored(done) = step.answer else { panic!("not stored") };
        assert_eq!(done.response, big.into());
    }

    #[test]
    fn finish_releases_on_the_release_set_and_on_unsent_requests() {
        for status in [408, 425, 429, 503] {
            let step = finish_live(2, Outcome::Answered(answer(status)));
            assert_eq!((step.answer, step.write), (Finished::Released, released(2)), "{status}");
        }
        let step = finish_live(2, Outcome::NotSent);
        assert_eq!((step.answer, step.write), (Finished::Released, released(2)));
        let custom = RecordPolicy { release_on: vec![500], ..policy() };
        let step = finish(Some(in_flight(FP, 2, NOW + 1)), 2, Outcome::Answered(answer(500)), NOW, &custom);
        assert_eq!(step.answer, Finished::Released);
        let step = finish(Some(in_flight(FP, 2, NOW + 1)), 2, Outcome::Answered(answer(503)), NOW, &custom);
        assert!(matches!(step.answer, Finished::Stored(_)));
    }

    #[test]
    fn finish_with_unknown_outcome_keeps_the_lease_and_records_that_it_is_unknown() {
        let step = finish(Some(in_flight(FP, 2, NOW + 30_500)), 2, Outcome::Unknown, NOW, &policy());
        let Write::Put(record) = step.write else { panic!("the record says the outcome is unknown") };
        assert_eq!(step.answer, Finished::LeaseKept);
        let Record::InFlight(kept) = &record else { panic!() };
        assert_eq!((kept.attempt, kept.lease_expires_at, kept.outcome_unknown), (2, NOW + 30_500, true));
        // A duplicate is told so, and to come back when the lease ends.
        let seen = begin(Some(record.clone()), FP, NOW + 500, &policy()).answer;
        assert_eq!(seen, Decision::InFlight { retry_after_secs: 30, outcome_unknown: true, attempt: 2 });
        let seen = begin(Some(record.clone()), FP, NOW + 30_499, &policy()).answer;
        assert_eq!(seen, Decision::InFlight { retry_after_secs: 1, outcome_unknown: true, attempt: 2 });
        // After the lease, a retry reclaims as the next attempt.
        assert_eq!(
            begin(Some(record), FP, NOW + 30_500, &policy()).answer,
            Decision::Execute { attempt: 3, reclaimed: true }
        );
    }

    #[test]
    fn a_finish_after_its_lease_ended_still_lands_if_nobody_reclaimed() {
        // LEASE=10: the origin answered at 9.1 s, the first finish failed,
        // its retry lands at 10.05 s.
        let step = finish(Some(in_flight(FP, 2, NOW - 50)), 2, Outcome::Answered(answer(201)), NOW, &policy());
        assert!(matches!(step.answer, Finished::Stored(ref c) if c.attempt == 2), "{:?}", step.answer);
        let step = finish(Some(in_flight(FP, 2, NOW - 50)), 2, Outcome::NotSent, NOW, &policy());
        assert_eq!(step.answer, Finished::Released);
        let step = finish(Some(in_flight(FP, 2, NOW - 50)), 2, Outcome::Unknown, NOW, &policy());
        assert_eq!(step.answer, Finished::LeaseKept);
    }

    #[test]
    fn abandon_gives_back_only_its_own_running_reservation() {
        let reserved = |reservation, outcome_unknown| {
            Record::InFlight(InFlight {
                fingerprint: FP,
                attempt: 4,
                lease_expires_at: NOW + 5_000,
                expires_at: NOW + 65_000,
                outcome_unknown,
                reservation,
            })
        };
        let step = abandon(Some(reserved(42, false)), 42, NOW, &policy());
        assert_eq!((step.answer, step.write), (true, released(4)), "attempt numbers keep rising");
        let refused: Vec<(&str, Option<Record>, u64)> = vec![
            ("another caller's reservation", Some(reserved(41, false)), 42),
            ("no reservation number", Some(reserved(0, false)), 0),
            ("an attempt whose outcome is unknown", Some(reserved(42, true)), 42),
            ("completed", Some(Record::Completed(completed(FP, NOW + 1))), 42),
            ("released", Some(Record::Released(Released { last_attempt: 4, expires_at: NOW + 1 })), 42),
            ("nothing", None, 42),
        ];
        for (name, found, reservation) in refused {
            let step = abandon(found, reservation, NOW, &policy());
            assert_eq!((step.answer, step.write), (false, Write::Keep), "{name}");
        }
    }

    #[test]
    fn stale_finishes_write_nothing() {
        let outcomes =
            [Outcome::Answered(answer(201)), Outcome::Answered(answer(503)), Outcome::NotSent, Outcome::Unknown];
        let cases: Vec<(&str, Option<Record>)> = vec![
            ("gone", None),
            ("reclaimed by a later attempt", Some(in_flight(FP, 3, NOW + 1))),
            ("older attempt number", Some(in_flight(FP, 1, NOW + 1))),
            ("completed", Some(Record::Completed(completed(FP, NOW + 1)))),
            ("released", Some(Record::Released(Released { last_attempt: 2, expires_at: NOW + 1 }))),
            (
                "record expired",
                Some(Record::InFlight(InFlight {
                    fingerprint: FP,
                    attempt: 2,
                    lease_expires_at: NOW + 1,
                    expires_at: NOW,
                    outcome_unknown: false,
                    reservation: 0,
                })),
            ),
        ];
        for (name, found) in cases {
            for outcome in outcomes.clone() {
                let step = finish(found.clone(), 2, outcome, NOW, &policy());
                assert_eq!((step.answer, step.write), (Finished::Stale, Write::Keep), "{name}");
            }
        }
    }
}
