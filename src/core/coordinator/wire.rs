//! The store's calls as bytes, for a store that lives across a round trip
//! (the edge's Durable Object): `begin`, `finish` and `abandon` for
//! requests, `inspect` and `release` for the admin paths (SPEC §12).
//!
//! A [`StoreCall`] carries the record policy and one call; the store runs it
//! on the record it holds with [`StoreCall::run`], which is pure: it returns
//! the encoded reply and the write to apply, in the same atomic section as
//! the read. Integers are big-endian; nested records and responses reuse the
//! record encoding.

use crate::core::record::codec::{Completed, DecodeError, Reader, Record, Writer};
use crate::core::record::decision::{self, Decision, Finished, Outcome, Step};
use crate::core::record::policy::RecordPolicy;
use crate::core::record::sealed::KeyId;
use crate::core::record::sealed::StoredAnswer;
use crate::core::record::state::{self, RecordState, ReleaseAnswer};
use crate::core::request::fingerprint::Fingerprint;

const BEGIN: u8 = 1;
const FINISH: u8 = 2;
const ABANDON: u8 = 3;
const INSPECT: u8 = 4;
const RELEASE: u8 = 5;

/// One call to a remote store.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StoreCall {
    /// [`decision::begin`] for a request with this fingerprint.
    Begin {
        /// Lease, TTL and release set to apply.
        policy: RecordPolicy,
        /// The request's fingerprint.
        fingerprint: Fingerprint,
        /// How long a duplicate may wait inside the store for a running
        /// attempt to end ([`StoreCall::wait_deadline`]), in ms; 0 answers
        /// at once (`IDEMPOTENCY_IN_FLIGHT_WAIT_MS`).
        wait_ms: u64,
        /// A number the caller drew for this call (0: none), kept in the
        /// reservation it makes, so it can abandon it if the reply is lost.
        reservation: u64,
        /// The seal keys the Worker holds (`None`: a Worker from before they
        /// were sent, which may hold any). A stored answer of another
        /// fingerprint sealed by none of them may be this request's under a
        /// key no longer configured (a sealed record's fingerprint is keyed,
        /// SPEC §13): it is unreadable, never a mismatch (SPEC §4).
        open_keys: Option<Vec<KeyId>>,
    },
    /// [`decision::abandon`]: give back the reservation `reservation`, made
    /// by a `begin` whose reply never came.
    Abandon {
        /// The TTL of the release tombstone.
        policy: RecordPolicy,
        /// The number the lost `begin` carried.
        reservation: u64,
    },
    /// [`decision::finish`] for attempt `attempt`.
    Finish {
        /// Lease, TTL and release set to apply.
        policy: RecordPolicy,
        /// The attempt that ended.
        attempt: u32,
        /// The reservation of the `begin` that began it (0: none, the
        /// attempt number alone names it). A record whose attempt was begun
        /// by another reservation is not this attempt's, whatever its number
        /// (the key expired and began again while this call was late).
        reservation: u64,
        /// How it ended.
        outcome: Outcome,
    },
    /// [`state::inspect`]: the record's state, for an operator.
    Inspect,
    /// [`state::release`]: release the attempt in flight, whose
    /// outcome an operator has settled.
    Release {
        /// The TTL of the release tombstone.
        policy: RecordPolicy,
        /// Release a running attempt too (`?force=true`).
        force: bool,
        /// Forget a completed answer too (`?completed=true`).
        completed: bool,
        /// The seal keys the Worker holds: a stored answer sealed by none of
        /// them can never be replayed, so it may be released too (SPEC §4).
        open_keys: Vec<KeyId>,
    },
}

impl StoreCall {
    /// Runs the call on the record found, at the store's clock `now_ms`:
    /// the encoded reply (decode it with [`decode_decision`],
    /// [`decode_finished`], [`decode_inspected`] or [`decode_released`]) and
    /// the write to apply before replying.
    ///
    /// ```
    /// use oncekey::core::{decode_decision, Decision, Fingerprint, RecordPolicy, StoreCall, Write};
    /// let call = StoreCall::Begin { policy: RecordPolicy::default(), fingerprint: Fingerprint([3; 32]), wait_ms: 0, reservation: 0, open_keys: Some(Vec::new()) };
    /// let step = StoreCall::decode(&call.encode()).unwrap().run(None, 0);
    /// assert_eq!(decode_decision(&step.answer).unwrap(), Decision::Execute { attempt: 1, reclaimed: false });
    /// assert!(matches!(step.write, Write::Put(_)));
    /// ```
    pub fn run(self, found: Option<Record>, now_ms: u64) -> Step<Vec<u8>> {
        match self {
            Self::Begin { policy, fingerprint, reservation, open_keys, .. } => {
                let mut step = decision::begin_holding(found, fingerprint, now_ms, &policy, open_keys.as_deref());
                if let decision::Write::Put(Record::InFlight(reserved)) = &mut step.write {
                    reserved.reservation = reservation;
                }
                Step { answer: encode_decision(&step.answer), write: step.write }
            }
            Self::Abandon { policy, reservation } => {
                let step = decision::abandon(found, reservation, now_ms, &policy);
                Step { answer: vec![u8::from(step.answer)], write: step.write }
            }
            Self::Finish { policy, attempt, reservation, outcome } => {
                // Another reservation's attempt is not this one's: the
                // finish finds nothing of its own (`Stale`).
                let mine = |record: &Record| match record {
                    Record::InFlight(r) => {
                        reservation == 0
                            || r.reservation == 0
                            || r.reservation == reservation
                            || mutant!(FinishIgnoresAttempt)
                    }
                    _ => true,
                };
                let step = decision::finish(found.filter(mine), attempt, outcome, now_ms, &policy);
                Step { answer: encode_finished(&step.answer), write: step.write }
            }
            Self::Inspect => {
                let step = state::inspect(found, now_ms);
                Step { answer: encode_inspected(step.answer.as_ref()), write: step.write }
            }
            Self::Release { policy, force, completed, open_keys } => {
                let step = state::release(found, now_ms, &policy, state::ReleaseAsked { force, completed }, &open_keys);
                Step { answer: encode_released(&step.answer), write: step.write }
            }
        }
    }

    /// Runs the call on a record that does not decode (SPEC §3: fail
    /// closed): a `begin` answers [`Decision::Unreadable`], a `finish` or an
    /// `abandon` writes nothing, `inspect` shows it, and `release` — the
    /// operator's way out — replaces it with a release tombstone (the last
    /// attempt's number is unknown: the next attempt is 1).
    ///
    /// ```
    /// use oncekey::core::{decode_decision, Decision, Fingerprint, RecordPolicy, StoreCall, Write};
    /// let begin = StoreCall::Begin { policy: RecordPolicy::default(), fingerprint: Fingerprint([1; 32]), wait_ms: 0, reservation: 0, open_keys: Some(Vec::new()) };
    /// let step = begin.run_unreadable(5);
    /// assert_eq!((decode_decision(&step.answer), step.write), (Ok(Decision::Unreadable), Write::Keep));
    /// ```
    pub fn run_unreadable(self, now_ms: u64) -> Step<Vec<u8>> {
        let keep = |answer| Step { answer, write: decision::Write::Keep };
        match self {
            Self::Begin { .. } => keep(encode_decision(&Decision::Unreadable)),
            Self::Finish { .. } => keep(encode_finished(&Finished::Stale)),
            Self::Abandon { .. } => keep(vec![0]),
            Self::Inspect => keep(encode_inspected(Some(&RecordState::Unreadable))),
            Self::Release { policy, .. } => {
                let record = Record::Released(crate::core::record::codec::Released {
                    last_attempt: 0,
                    expires_at: now_ms.saturating_add(policy.ttl_ms),
                });
                Step {
                    answer: encode_released(&ReleaseAnswer::Released(RecordState::of(&record))),
                    write: decision::Write::Put(record),
                }
            }
        }
    }

    /// Whether this call must wait before it runs, and until when: a
    /// `begin` that would answer "in flight" to a duplicate of a running
    /// attempt (same fingerprint, lease live, outcome not unknown) waits for
    /// that attempt to end, from `called_at_ms` for at most its `wait_ms`
    /// and never past the lease. The store wakes it when the record changes
    /// and asks again; `None` means run now (a 409 if still in flight).
    ///
    /// ```
    /// use oncekey::core::{Fingerprint, RecordPolicy, StoreCall};
    /// let begin = |wait_ms| StoreCall::Begin { policy: RecordPolicy::default(), fingerprint: Fingerprint([1; 32]), wait_ms, reservation: 1, open_keys: Some(Vec::new()) };
    /// let step = begin(10_000).run(None, 0);
    /// let oncekey::core::Write::Put(running) = step.write else { unreachable!() };
    /// assert_eq!(begin(10_000).wait_deadline(Some(&running), 5, 5), Some(10_005));
    /// assert_eq!(begin(10_000).wait_deadline(Some(&running), 10_005, 5), None, "the wait is over");
    /// assert_eq!(begin(0).wait_deadline(Some(&running), 5, 5), None);
    /// assert_eq!(begin(10_000).wait_deadline(None, 5, 5), None, "nothing to wait for");
    /// ```
    pub fn wait_deadline(&self, found: Option<&Record>, now_ms: u64, called_at_ms: u64) -> Option<u64> {
        let Self::Begin { fingerprint, wait_ms, .. } = self else { return None };
        match found.filter(|record| record.is_live(now_ms)) {
            Some(Record::InFlight(r))
                if *wait_ms > 0
                    && r.fingerprint == *fingerprint
                    && !r.outcome_unknown
                    && now_ms < r.lease_expires_at =>
            {
                let deadline = called_at_ms.saturating_add(*wait_ms).min(r.lease_expires_at);
                (now_ms < deadline).then_some(deadline)
            }
            _ => None,
        }
    }

    /// Encodes the call: its kind, its policy (every kind but `inspect`
    /// has one), then its own fields.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Writer(Vec::with_capacity(96));
        out.0.push(match self {
            Self::Begin { .. } => BEGIN,
            Self::Finish { .. } => FINISH,
            Self::Abandon { .. } => ABANDON,
            Self::Inspect => INSPECT,
            Self::Release { .. } => RELEASE,
        });
        match self {
            Self::Begin { policy, .. }
            | Self::Finish { policy, .. }
            | Self::Abandon { policy, .. }
            | Self::Release { policy, .. } => {
                out.u64(policy.lease_ms);
                out.u64(policy.ttl_ms);
                out.u32(policy.release_on.len() as u32);
                for status in &policy.release_on {
                    out.0.extend_from_slice(&status.to_be_bytes());
                }
            }
            Self::Inspect => {}
        }
        match self {
            Self::Begin { fingerprint, wait_ms, reservation, open_keys, .. } => {
                out.0.extend_from_slice(&fingerprint.0);
                out.u64(*wait_ms);
                out.u64(*reservation);
                // Last, so that a begin without them (written before they
                // were added) still reads: as not said.
                if let Some(open_keys) = open_keys {
                    out.u32(open_keys.len() as u32);
                    for id in open_keys {
                        out.0.extend_from_slice(&id.0);
                    }
                }
            }
            Self::Abandon { reservation, .. } => out.u64(*reservation),
            Self::Release { force, completed, open_keys, .. } => {
                out.0.push(u8::from(*force) | (u8::from(*completed) << 1));
                out.u32(open_keys.len() as u32);
                for id in open_keys {
                    out.0.extend_from_slice(&id.0);
                }
            }
            Self::Inspect => {}
            Self::Finish { attempt, reservation, outcome, .. } => {
                out.u32(*attempt);
                match outcome {
                    Outcome::NotSent => out.0.push(0),
                    Outcome::Unknown => out.0.push(1),
                    Outcome::Answered(response) => {
                        out.0.push(2);
                        out.bytes(&response_bytes(response));
                    }
                }
                // Last, so that a finish without it (written before it was
                // added) still reads: as reservation 0.
                out.u64(*reservation);
            }
        }
        out.0
    }

    /// Decodes a call written by [`StoreCall::encode`].
    ///
    /// # Errors
    /// A [`DecodeError`] for anything else. Never panics.
    pub fn decode(bytes: &[u8]) -> Result<Self, DecodeError> {
        let mut r = Reader(bytes);
        let kind = r.u8()?;
        if kind == INSPECT {
            return finished_reading(r, Self::Inspect);
        }
        let lease_ms = r.u64()?;
        let ttl_ms = r.u64()?;
        let count = r.u32()? as usize;
        let mut release_on = Vec::with_capacity(count.min(64));
        for _ in 0..count {
            release_on.push(u16::from_be_bytes(r.array()?));
        }
        let policy = RecordPolicy { lease_ms, ttl_ms, release_on };
        let call = match kind {
            BEGIN => {
                let (fingerprint, wait_ms, reservation) = (r.fingerprint()?, r.u64()?, r.u64()?);
                let open_keys = match r.0.is_empty() {
                    true => None,
                    false => {
                        let count = r.u32()? as usize;
                        let mut keys = Vec::with_capacity(count.min(16));
                        for _ in 0..count {
                            keys.push(KeyId(r.array()?));
                        }
                        Some(keys)
                    }
                };
                Self::Begin { policy, fingerprint, wait_ms, reservation, open_keys }
            }
            ABANDON => Self::Abandon { policy, reservation: r.u64()? },
            // A release from the version before `force` ends here: not
            // forced; from the version before seal keys: none held. Its
            // flags: 1 force, 2 completed (before `completed`, only 1).
            RELEASE => {
                let flags = if r.0.is_empty() { 0 } else { r.u8()? };
                let (force, completed) = (flags & 1 != 0, flags & 2 != 0);
                let count = if r.0.is_empty() { 0 } else { r.u32()? as usize };
                let mut open_keys = Vec::with_capacity(count.min(16));
                for _ in 0..count {
                    open_keys.push(KeyId(r.array()?));
                }
                Self::Release { policy, force, completed, open_keys }
            }
            FINISH => {
                let attempt = r.u32()?;
                let outcome = match r.u8()? {
                    0 => Outcome::NotSent,
                    1 => Outcome::Unknown,
                    2 => Outcome::Answered(response_from(r.bytes()?)?),
                    other => return Err(DecodeError::UnknownKind(other)),
                };
                let reservation = if r.0.is_empty() { 0 } else { r.u64()? };
                Self::Finish { policy, attempt, reservation, outcome }
            }
            other => return Err(DecodeError::UnknownKind(other)),
        };
        finished_reading(r, call)
    }
}

/// Encodes a [`Decision`] as a store reply.
pub fn encode_decision(decision: &Decision) -> Vec<u8> {
    let mut out = Writer(Vec::with_capacity(16));
    match decision {
        Decision::Execute { attempt, reclaimed } => {
            out.0.push(1);
            out.u32(*attempt);
            out.0.push(u8::from(*reclaimed));
        }
        Decision::InFlight { retry_after_secs, outcome_unknown, attempt } => {
            out.0.push(6);
            out.u32(*retry_after_secs);
            out.0.push(u8::from(*outcome_unknown));
            out.u32(*attempt);
        }
        Decision::Mismatch => out.0.push(3),
        Decision::Unreadable => out.0.push(5),
        Decision::Replay(completed) => {
            out.0.push(4);
            out.0.extend_from_slice(&Record::Completed(completed.clone()).encode());
        }
    }
    out.0
}

/// Decodes a reply written by [`encode_decision`].
///
/// # Errors
/// A [`DecodeError`] for anything else.
pub fn decode_decision(bytes: &[u8]) -> Result<Decision, DecodeError> {
    let mut r = Reader(bytes);
    let decision = match r.u8()? {
        1 => Decision::Execute { attempt: r.u32()?, reclaimed: r.u8()? != 0 },
        // Kind 2, from a coordinator that predates the attempt number.
        2 => Decision::InFlight { retry_after_secs: r.u32()?, outcome_unknown: r.u8()? != 0, attempt: 0 },
        6 => Decision::InFlight { retry_after_secs: r.u32()?, outcome_unknown: r.u8()? != 0, attempt: r.u32()? },
        3 => Decision::Mismatch,
        5 => Decision::Unreadable,
        4 => return Ok(Decision::Replay(completed_from(r.0)?)),
        other => return Err(DecodeError::UnknownKind(other)),
    };
    finished_reading(r, decision)
}

/// Encodes a [`Finished`] as a store reply.
pub fn encode_finished(finished: &Finished) -> Vec<u8> {
    match finished {
        Finished::Stored(completed) => {
            let mut out = vec![1];
            out.extend_from_slice(&Record::Completed(completed.clone()).encode());
            out
        }
        Finished::Released => vec![2],
        Finished::LeaseKept => vec![3],
        Finished::Stale => vec![4],
    }
}

/// Decodes a reply written by [`encode_finished`].
///
/// # Errors
/// A [`DecodeError`] for anything else.
pub fn decode_finished(bytes: &[u8]) -> Result<Finished, DecodeError> {
    match bytes {
        [1, rest @ ..] => Ok(Finished::Stored(completed_from(rest)?)),
        [2] => Ok(Finished::Released),
        [3] => Ok(Finished::LeaseKept),
        [4] => Ok(Finished::Stale),
        [] => Err(DecodeError::Truncated),
        [kind, ..] => Err(DecodeError::UnknownKind(*kind)),
    }
}

/// Encodes a record's state (or its absence) as the reply to `inspect`.
pub fn encode_inspected(state: Option<&RecordState>) -> Vec<u8> {
    let mut out = Writer(Vec::with_capacity(32));
    match state {
        None => out.0.push(0),
        Some(state) => state_bytes(&mut out, state),
    }
    out.0
}

/// Decodes a reply written by [`encode_inspected`].
///
/// # Errors
/// A [`DecodeError`] for anything else.
pub fn decode_inspected(bytes: &[u8]) -> Result<Option<RecordState>, DecodeError> {
    let mut r = Reader(bytes);
    let state = match r.0.first() {
        Some(0) => {
            r.u8()?;
            None
        }
        _ => Some(state_from(&mut r)?),
    };
    finished_reading(r, state)
}

/// Encodes what a `release` did as its reply.
pub fn encode_released(answer: &ReleaseAnswer) -> Vec<u8> {
    let mut out = Writer(Vec::with_capacity(32));
    match answer {
        ReleaseAnswer::Released(state) => {
            out.0.push(1);
            state_bytes(&mut out, state);
        }
        ReleaseAnswer::NotInFlight(state) => {
            out.0.push(2);
            state_bytes(&mut out, state);
        }
        ReleaseAnswer::Absent => out.0.push(3),
        ReleaseAnswer::Running(state) => {
            out.0.push(4);
            state_bytes(&mut out, state);
        }
    }
    out.0
}

/// Decodes a reply written by [`encode_released`].
///
/// # Errors
/// A [`DecodeError`] for anything else.
pub fn decode_released(bytes: &[u8]) -> Result<ReleaseAnswer, DecodeError> {
    let mut r = Reader(bytes);
    let answer = match r.u8()? {
        1 => ReleaseAnswer::Released(state_from(&mut r)?),
        2 => ReleaseAnswer::NotInFlight(state_from(&mut r)?),
        3 => ReleaseAnswer::Absent,
        4 => ReleaseAnswer::Running(state_from(&mut r)?),
        other => return Err(DecodeError::UnknownKind(other)),
    };
    finished_reading(r, answer)
}

/// A record state: its kind (1 in flight, 2 completed, 3 released, 4
/// unreadable, 5 completed and sealed), then its fields.
fn state_bytes(out: &mut Writer, state: &RecordState) {
    match *state {
        RecordState::InFlight { attempt, lease_expires_at, expires_at, outcome_unknown } => {
            out.0.push(1);
            out.u32(attempt);
            out.u64(lease_expires_at);
            out.u64(expires_at);
            out.0.push(u8::from(outcome_unknown));
        }
        RecordState::Completed { attempt, status, sealed: None, expires_at } => {
            out.0.push(2);
            out.u32(attempt);
            out.0.extend_from_slice(&status.to_be_bytes());
            out.u64(expires_at);
        }
        RecordState::Completed { attempt, sealed: Some(key_id), expires_at, .. } => {
            out.0.push(5);
            out.u32(attempt);
            out.0.extend_from_slice(&key_id.0);
            out.u64(expires_at);
        }
        RecordState::Released { last_attempt, expires_at } => {
            out.0.push(3);
            out.u32(last_attempt);
            out.u64(expires_at);
        }
        RecordState::Unreadable => out.0.push(4),
    }
}

fn state_from(r: &mut Reader<'_>) -> Result<RecordState, DecodeError> {
    Ok(match r.u8()? {
        1 => RecordState::InFlight {
            attempt: r.u32()?,
            lease_expires_at: r.u64()?,
            expires_at: r.u64()?,
            outcome_unknown: r.u8()? != 0,
        },
        2 => RecordState::Completed {
            attempt: r.u32()?,
            status: u16::from_be_bytes(r.array()?),
            sealed: None,
            expires_at: r.u64()?,
        },
        5 => RecordState::Completed {
            attempt: r.u32()?,
            status: 0,
            sealed: Some(KeyId(r.array()?)),
            expires_at: r.u64()?,
        },
        3 => RecordState::Released { last_attempt: r.u32()?, expires_at: r.u64()? },
        4 => RecordState::Unreadable,
        other => return Err(DecodeError::UnknownKind(other)),
    })
}

/// A response travels as a `Completed` record holding only it.
/// An answer, plain or sealed, as the record layout writes it (the other
/// fields zero).
fn response_bytes(response: &StoredAnswer) -> Vec<u8> {
    Record::Completed(Completed {
        fingerprint: Fingerprint([0; 32]),
        attempt: 0,
        response: response.clone(),
        expires_at: 0,
        copied: false,
    })
    .encode()
}

fn response_from(bytes: &[u8]) -> Result<StoredAnswer, DecodeError> {
    completed_from(bytes).map(|c| c.response)
}

fn completed_from(bytes: &[u8]) -> Result<Completed, DecodeError> {
    match Record::decode(bytes)? {
        Record::Completed(completed) => Ok(completed),
        Record::InFlight(_) => Err(DecodeError::UnknownKind(1)),
        Record::Released(_) => Err(DecodeError::UnknownKind(3)),
    }
}

fn finished_reading<T>(r: Reader<'_>, value: T) -> Result<T, DecodeError> {
    match r.0.len() {
        0 => Ok(value),
        n => Err(DecodeError::TrailingBytes(n)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::StoredResponse;
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    fn answer(status: u16, body: Option<Vec<u8>>) -> StoredAnswer {
        StoredResponse { status, headers: vec![("content-type".into(), "text/plain".into())], body }.into()
    }

    #[test]
    fn calls_round_trip() {
        let policy = RecordPolicy { lease_ms: 5, ttl_ms: 60_000, release_on: vec![503, 429] };
        let calls = [
            StoreCall::Begin {
                policy: policy.clone(),
                fingerprint: Fingerprint([9; 32]),
                wait_ms: 10_000,
                reservation: 9,
                open_keys: Some(Vec::new()),
            },
            StoreCall::Begin {
                policy: policy.clone(),
                fingerprint: Fingerprint([8; 32]),
                wait_ms: 0,
                reservation: 1,
                open_keys: Some(vec![KeyId([1, 2, 3, 4]), KeyId([5; 4])]),
            },
            StoreCall::Abandon { policy: policy.clone(), reservation: u64::MAX },
            StoreCall::Finish { policy: policy.clone(), attempt: 7, reservation: 3, outcome: Outcome::NotSent },
            StoreCall::Finish { policy: policy.clone(), attempt: 7, reservation: 3, outcome: Outcome::Unknown },
            StoreCall::Finish {
                policy: policy.clone(),
                attempt: 1,
                reservation: 0,
                outcome: Outcome::Answered(answer(500, None)),
            },
            StoreCall::Finish {
                policy: policy.clone(),
                attempt: 2,
                reservation: u64::MAX,
                outcome: Outcome::Answered(answer(201, Some(b"\0ok".to_vec()))),
            },
            StoreCall::Inspect,
            StoreCall::Release { policy: policy.clone(), force: false, completed: false, open_keys: vec![] },
            StoreCall::Release { policy: policy.clone(), force: true, completed: false, open_keys: vec![] },
            StoreCall::Release { policy: policy.clone(), force: false, completed: true, open_keys: vec![] },
            StoreCall::Release {
                policy,
                force: true,
                completed: true,
                open_keys: vec![KeyId([1, 2, 3, 4]), KeyId([5; 4])],
            },
        ];
        for call in calls {
            assert_eq!(StoreCall::decode(&call.encode()), Ok(call.clone()));
            let bytes = call.encode();
            for cut in 0..bytes.len() {
                if let StoreCall::Release { policy, force, completed, open_keys } = &call {
                    // The layouts before the keys, and before the flags.
                    let keys_at = bytes.len() - 4 - 4 * open_keys.len();
                    let earlier = match cut {
                        _ if cut == keys_at => Some((*force, *completed)),
                        _ if cut == keys_at - 1 => Some((false, false)),
                        _ => None,
                    };
                    if let Some((force, completed)) = earlier {
                        let before = StoreCall::Release { policy: policy.clone(), force, completed, open_keys: vec![] };
                        assert_eq!(StoreCall::decode(&bytes[..cut]), Ok(before), "the earlier layout decodes");
                        continue;
                    }
                }
                if let StoreCall::Begin { policy, fingerprint, wait_ms, reservation, open_keys: Some(keys) } = &call
                    && cut == bytes.len() - 4 - 4 * keys.len()
                {
                    let (policy, fingerprint, wait_ms, reservation) =
                        (policy.clone(), *fingerprint, *wait_ms, *reservation);
                    let unsaid = StoreCall::Begin { policy, fingerprint, wait_ms, reservation, open_keys: None };
                    assert_eq!(StoreCall::decode(&bytes[..cut]), Ok(unsaid), "the earlier layout decodes");
                    continue;
                }
                if let StoreCall::Finish { policy, attempt, outcome, .. } = &call
                    && cut == bytes.len() - 8
                {
                    let (policy, attempt, outcome) = (policy.clone(), *attempt, outcome.clone());
                    let unreserved = StoreCall::Finish { policy, attempt, reservation: 0, outcome };
                    assert_eq!(StoreCall::decode(&bytes[..cut]), Ok(unreserved), "the earlier layout decodes");
                    continue;
                }
                assert!(StoreCall::decode(&bytes[..cut]).is_err(), "{call:?} cut at {cut}");
            }
            let mut longer = bytes.clone();
            longer.push(0);
            assert_eq!(StoreCall::decode(&longer), Err(DecodeError::TrailingBytes(1)));
        }
    }

    #[test]
    fn replies_round_trip() {
        let completed = Completed {
            fingerprint: Fingerprint([4; 32]),
            attempt: 2,
            response: answer(201, None),
            expires_at: 99,
            copied: false,
        };
        for d in [
            Decision::Execute { attempt: 3, reclaimed: true },
            Decision::InFlight { retry_after_secs: 1, outcome_unknown: false, attempt: 3 },
            Decision::Mismatch,
            Decision::Unreadable,
            Decision::Replay(completed.clone()),
        ] {
            assert_eq!(decode_decision(&encode_decision(&d)), Ok(d));
        }
        for f in [Finished::Stored(completed), Finished::Released, Finished::LeaseKept, Finished::Stale] {
            assert_eq!(decode_finished(&encode_finished(&f)), Ok(f));
        }
        assert!(decode_decision(&[]).is_err() && decode_finished(&[9]).is_err());
        // A coordinator that predates the attempt number answers kind 2.
        let earlier = [2, 0, 0, 0, 90, 1];
        let attempt_unknown = Decision::InFlight { retry_after_secs: 90, outcome_unknown: true, attempt: 0 };
        assert_eq!(decode_decision(&earlier), Ok(attempt_unknown));
        let states = [
            RecordState::InFlight { attempt: 2, lease_expires_at: 5, expires_at: u64::MAX, outcome_unknown: true },
            RecordState::Completed { attempt: 1, status: 201, sealed: None, expires_at: 99 },
            RecordState::Released { last_attempt: u32::MAX, expires_at: 7 },
            RecordState::Unreadable,
        ];
        assert_eq!(decode_inspected(&encode_inspected(None)), Ok(None));
        for state in states {
            assert_eq!(decode_inspected(&encode_inspected(Some(&state))), Ok(Some(state)));
            for answer in
                [ReleaseAnswer::Released(state), ReleaseAnswer::NotInFlight(state), ReleaseAnswer::Running(state)]
            {
                let bytes = encode_released(&answer);
                assert_eq!(decode_released(&bytes), Ok(answer));
                for cut in 0..bytes.len() {
                    assert!(decode_released(&bytes[..cut]).is_err());
                }
            }
            let bytes = encode_inspected(Some(&state));
            for cut in 0..bytes.len() {
                assert!(decode_inspected(&bytes[..cut]).is_err());
            }
        }
        assert_eq!(decode_released(&encode_released(&ReleaseAnswer::Absent)), Ok(ReleaseAnswer::Absent));
        assert_eq!(decode_inspected(&[0, 0]), Err(DecodeError::TrailingBytes(1)));
    }

    #[test]
    fn inspect_and_release_run_in_the_store_and_release_writes_the_tombstone() {
        let policy = RecordPolicy::default();
        let begin = StoreCall::Begin {
            policy: policy.clone(),
            fingerprint: Fingerprint([1; 32]),
            wait_ms: 0,
            reservation: 3,
            open_keys: Some(Vec::new()),
        };
        let decision::Write::Put(running) = begin.run(None, 0).write else { panic!() };
        let seen = StoreCall::Inspect.run(Some(running.clone()), 1);
        assert_eq!(seen.write, decision::Write::Keep);
        assert!(matches!(decode_inspected(&seen.answer), Ok(Some(RecordState::InFlight { attempt: 1, .. }))));
        let refused = StoreCall::Release { policy: policy.clone(), force: false, completed: false, open_keys: vec![] }
            .run(Some(running.clone()), 2);
        assert!(matches!(decode_released(&refused.answer), Ok(ReleaseAnswer::Running(_))));
        assert_eq!(refused.write, decision::Write::Keep, "a running attempt is not released unforced");
        let released =
            StoreCall::Release { policy, force: true, completed: false, open_keys: vec![] }.run(Some(running), 2);
        assert!(matches!(decode_released(&released.answer), Ok(ReleaseAnswer::Released(_))));
        assert!(matches!(released.write, decision::Write::Put(Record::Released(ref r)) if r.last_attempt == 1));
        assert_eq!(decode_inspected(&StoreCall::Inspect.run(None, 3).answer), Ok(None));
    }

    #[test]
    fn run_applies_the_pure_steps() {
        let policy = RecordPolicy::default();
        let fp = Fingerprint([1; 32]);
        let first = StoreCall::Begin {
            policy: policy.clone(),
            fingerprint: fp,
            wait_ms: 0,
            reservation: 0,
            open_keys: Some(Vec::new()),
        }
        .run(None, 0);
        let decision::Write::Put(record) = first.write else { panic!("begin must reserve") };
        let again = StoreCall::Begin {
            policy: policy.clone(),
            fingerprint: fp,
            wait_ms: 0,
            reservation: 0,
            open_keys: Some(Vec::new()),
        }
        .run(Some(record.clone()), 1);
        assert_eq!(
            decode_decision(&again.answer),
            Ok(Decision::InFlight { retry_after_secs: 1, outcome_unknown: false, attempt: 1 })
        );
        let done = StoreCall::Finish {
            policy,
            attempt: 1,
            reservation: 0,
            outcome: Outcome::Answered(answer(201, Some(vec![1]))),
        }
        .run(Some(record), 2);
        assert!(matches!(decode_finished(&done.answer), Ok(Finished::Stored(_))));
        assert!(matches!(done.write, decision::Write::Put(Record::Completed(_))));
    }

    #[test]
    fn a_finish_counts_only_for_the_reservation_that_began_its_attempt() {
        // Found by `make model`: a finish of attempt 1 that arrived late,
        // after its key expired and a new request began attempt 1 again,
        // released the new attempt while it ran.
        let policy = RecordPolicy { lease_ms: 10_000, ttl_ms: 60_000, release_on: vec![503] };
        let begin = StoreCall::Begin {
            policy: policy.clone(),
            fingerprint: Fingerprint([1; 32]),
            wait_ms: 0,
            reservation: 2,
            open_keys: Some(Vec::new()),
        };
        let crate::core::Write::Put(running) = begin.run(None, 70_000).write else { panic!("reserved") };
        let late = |reservation| StoreCall::Finish {
            policy: policy.clone(),
            attempt: 1,
            reservation,
            outcome: Outcome::Answered(answer(503, None)),
        };
        let step = late(1).run(Some(running.clone()), 70_001);
        assert_eq!((decode_finished(&step.answer), step.write), (Ok(Finished::Stale), crate::core::Write::Keep));
        for own in [2, 0] {
            let step = late(own).run(Some(running.clone()), 70_001);
            assert_eq!(decode_finished(&step.answer), Ok(Finished::Released), "reservation {own}");
        }
        // A finish written before the reservation was added reads as 0.
        let mut old = late(0).encode();
        old.truncate(old.len() - 8);
        assert_eq!(StoreCall::decode(&old), Ok(late(0)));
    }
}
