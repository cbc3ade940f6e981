//! What an operator may see of a record, and the two steps the admin paths
//! run in the store (SPEC §12): [`inspect`] reads a record's state,
//! [`release`] ends an in-flight attempt whose outcome the operator has
//! settled. A [`RecordState`] holds no body, no header and no fingerprint:
//! nothing of what the caller sent or the origin answered but its status.

use crate::core::record::codec::{Record, Released};
use crate::core::record::decision::{Step, Write};
use crate::core::record::policy::RecordPolicy;
use crate::core::record::sealed::KeyId;
use crate::core::request::scope::RecordName;

/// A record's state, as the admin paths answer it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecordState {
    /// An attempt holds the key.
    InFlight {
        /// Its attempt number.
        attempt: u32,
        /// When its lease ends (ms since the Unix epoch).
        lease_expires_at: u64,
        /// When the record may be forgotten (ms).
        expires_at: u64,
        /// Whether the attempt ended without an answer.
        outcome_unknown: bool,
    },
    /// The answer is stored for replays.
    Completed {
        /// The attempt that produced it.
        attempt: u32,
        /// Its status (0 when it is sealed: only a Worker can read it).
        status: u16,
        /// The key that sealed it, if it is sealed (SPEC §4).
        sealed: Option<KeyId>,
        /// When it is forgotten (ms).
        expires_at: u64,
    },
    /// The key was released; the next request runs as `last_attempt + 1`.
    Released {
        /// The attempt that released it.
        last_attempt: u32,
        /// When the tombstone is forgotten (ms).
        expires_at: u64,
    },
    /// The stored bytes do not decode (a newer layout after a rollback, or
    /// damage): every request with the key answers 503
    /// `record-unreadable` until it is released.
    Unreadable,
}

impl RecordState {
    /// The state of `record`.
    pub fn of(record: &Record) -> Self {
        match record {
            Record::InFlight(r) => Self::InFlight {
                attempt: r.attempt,
                lease_expires_at: r.lease_expires_at,
                expires_at: r.expires_at,
                outcome_unknown: r.outcome_unknown,
            },
            Record::Completed(r) => Self::Completed {
                attempt: r.attempt,
                status: r.response.plain().map_or(0, |response| response.status),
                sealed: r.response.sealed_by(),
                expires_at: r.expires_at,
            },
            Record::Released(r) => Self::Released { last_attempt: r.last_attempt, expires_at: r.expires_at },
        }
    }

    /// `in-flight`, `completed` or `released`.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::InFlight { .. } => "in-flight",
            Self::Completed { .. } => "completed",
            Self::Released { .. } => "released",
            Self::Unreadable => "unreadable",
        }
    }

    /// The attempt it names (the last one, for a release).
    pub fn attempt(&self) -> u32 {
        match self {
            Self::InFlight { attempt, .. } | Self::Completed { attempt, .. } => *attempt,
            Self::Released { last_attempt, .. } => *last_attempt,
            Self::Unreadable => 0,
        }
    }

    /// The JSON the admin paths answer: `record` (the name in hex), `kind`,
    /// `attempt`, `expiresAt`, and `leaseExpiresAt` with `outcomeUnknown`
    /// for an attempt in flight or `status` (or `sealed`) for a stored
    /// answer. Times are
    /// RFC 3339 in UTC, to the millisecond.
    ///
    /// ```
    /// use oncekey::core::{RecordName, RecordState};
    /// let state = RecordState::Completed { attempt: 1, status: 201, sealed: None, expires_at: 1_767_225_600_000 };
    /// let json: serde_json::Value = serde_json::from_str(&state.to_json(&RecordName([0xab; 32]), &[])).unwrap();
    /// assert_eq!(json["kind"], "completed");
    /// assert_eq!(json["status"], 201);
    /// assert_eq!(json["expiresAt"], "2026-01-01T00:00:00.000Z");
    /// assert_eq!(json["record"].as_str().unwrap().len(), 64);
    /// ```
    ///
    /// A sealed answer shows `sealed`: the `keyId` that sealed it and
    /// whether it `opens` (its key is among `open_keys`, the keys the
    /// Worker holds) — never its status.
    pub fn to_json(&self, name: &RecordName, open_keys: &[KeyId]) -> String {
        if *self == Self::Unreadable {
            // Nothing of it can be read but that it is there.
            return format!(r#"{{"record":"{}","kind":"unreadable"}}"#, name.to_hex());
        }
        // Written out rather than built as a `Value` (a smaller wasm): every
        // part is hex, a fixed word, a number or a timestamp, none escaped.
        let rest = match *self {
            Self::InFlight { lease_expires_at, outcome_unknown, .. } => {
                format!(r#","leaseExpiresAt":"{}","outcomeUnknown":{outcome_unknown}"#, rfc3339(lease_expires_at))
            }
            Self::Completed { sealed: Some(id), .. } => {
                format!(r#","sealed":{{"keyId":"{}","opens":{}}}"#, id.to_hex(), open_keys.contains(&id))
            }
            Self::Completed { status, .. } => format!(r#","status":{status}"#),
            Self::Released { .. } | Self::Unreadable => String::new(),
        };
        let expires_at = match *self {
            Self::InFlight { expires_at, .. }
            | Self::Completed { expires_at, .. }
            | Self::Released { expires_at, .. } => expires_at,
            Self::Unreadable => 0,
        };
        format!(
            r#"{{"record":"{}","kind":"{}","attempt":{},"expiresAt":"{}"{rest}}}"#,
            name.to_hex(),
            self.kind(),
            self.attempt(),
            rfc3339(expires_at)
        )
    }
}

/// What [`release`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReleaseAnswer {
    /// The attempt in flight was released: the record's new state.
    Released(RecordState),
    /// The record holds no attempt in flight (a stored answer, or a
    /// release): nothing was written.
    NotInFlight(RecordState),
    /// The attempt is running (its lease is live and its outcome not yet
    /// known): its origin call may still be under way, so it is not
    /// released unless forced. Nothing was written.
    Running(RecordState),
    /// There is no record (or it expired).
    Absent,
}

/// The state of the record found, for the admin paths' `GET`: `None` when
/// there is none or it expired. Writes nothing.
///
/// ```
/// use oncekey::core::{inspect, Record, Released, RecordState};
/// let tombstone = Record::Released(Released { last_attempt: 2, expires_at: 100 });
/// assert_eq!(inspect(Some(tombstone.clone()), 99).answer, Some(RecordState::Released { last_attempt: 2, expires_at: 100 }));
/// assert_eq!(inspect(Some(tombstone), 100).answer, None, "expired");
/// ```
pub fn inspect(found: Option<Record>, now_ms: u64) -> Step<Option<RecordState>> {
    Step { answer: found.and_then(|r| r.live(now_ms)).map(|r| RecordState::of(&r)), write: Write::Keep }
}

/// What an operator's release asks for besides an attempt whose outcome
/// is settled (SPEC §12).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReleaseAsked {
    /// `?force=true`: release a running attempt too.
    pub force: bool,
    /// `?completed=true`: forget a completed answer too.
    pub completed: bool,
}

/// Releases the attempt in flight whose outcome the operator has settled —
/// its outcome unknown, or its lease over — so the record becomes
/// `Released(last_attempt = its attempt)` for the TTL, the next request runs
/// as the next attempt, and that attempt's own `finish`, if it ever comes,
/// finds it stale and writes nothing. A running attempt (lease live, outcome
/// not yet known) is released only when `asked.force` is set: its origin
/// call may still be under way, so the next attempt could run beside it. A
/// stored answer is forgotten when `asked.completed` is set (the record
/// becomes `Released` with its attempt, numbers rising on), or when it is
/// sealed by none of `open_keys` (the seal keys the Worker holds): nothing
/// can replay it. Any other stored answer or a release is left as it is;
/// so is nothing.
///
/// ```
/// use oncekey::core::{begin, release, Fingerprint, RecordPolicy, ReleaseAnswer, ReleaseAsked, RecordState, Write};
/// let policy = RecordPolicy::default();
/// let Write::Put(running) = begin(None, Fingerprint([1; 32]), 0, &policy).write else { unreachable!() };
/// let asked = ReleaseAsked::default();
/// assert!(matches!(release(Some(running.clone()), 10, &policy, asked, &[]).answer, ReleaseAnswer::Running(_)));
/// let step = release(Some(running), 10, &policy, ReleaseAsked { force: true, ..asked }, &[]);
/// assert_eq!(step.answer, ReleaseAnswer::Released(RecordState::Released { last_attempt: 1, expires_at: 10 + policy.ttl_ms }));
/// assert!(matches!(step.write, Write::Put(_)));
/// ```
pub fn release(
    found: Option<Record>,
    now_ms: u64,
    policy: &RecordPolicy,
    asked: ReleaseAsked,
    open_keys: &[KeyId],
) -> Step<ReleaseAnswer> {
    let ReleaseAsked { force, completed } = asked;
    let keep = |answer| Step { answer, write: Write::Keep };
    match found.and_then(|r| r.live(now_ms)) {
        None => keep(ReleaseAnswer::Absent),
        Some(running @ Record::InFlight(_))
            if !force
                && matches!(&running, Record::InFlight(r) if !r.outcome_unknown && now_ms < r.lease_expires_at) =>
        {
            keep(ReleaseAnswer::Running(RecordState::of(&running)))
        }
        Some(Record::InFlight(r)) => {
            // SPEC §3: an attempt number is never given twice. A forced
            // release leaves its attempt running: the tombstone keeps its
            // number until that attempt's `finish` can no longer arrive (its
            // lease covers it), whatever the TTL.
            let expires_at = now_ms.saturating_add(policy.ttl_ms).max(r.lease_expires_at);
            let last_attempt = if mutant!(TombstoneForgetsAttempt) { 0 } else { r.attempt };
            let released = Released { last_attempt, expires_at };
            let record = Record::Released(released);
            Step { answer: ReleaseAnswer::Released(RecordState::of(&record)), write: Write::Put(record) }
        }
        // SPEC §12: `?completed=true` forgets a completed answer (a
        // receiver's bug, fixed after it answered), and so does the layer
        // for an answer sealed by a key the Worker no longer holds (§4),
        // which can never be replayed. The next attempt runs, numbered on.
        Some(Record::Completed(c))
            if completed || c.response.sealed_by().is_some_and(|id| !open_keys.contains(&id)) =>
        {
            let record = Record::Released(Released {
                last_attempt: c.attempt,
                expires_at: now_ms.saturating_add(policy.ttl_ms),
            });
            Step { answer: ReleaseAnswer::Released(RecordState::of(&record)), write: Write::Put(record) }
        }
        Some(other) => keep(ReleaseAnswer::NotInFlight(RecordState::of(&other))),
    }
}

/// `ms` since the Unix epoch as RFC 3339 UTC with milliseconds.
fn rfc3339(ms: u64) -> String {
    let (days, rest) = (ms / 86_400_000, ms % 86_400_000);
    // Civil date from days since 1970-01-01 (H. Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    let (h, m, s, milli) = (rest / 3_600_000, rest / 60_000 % 60, rest / 1000 % 60, rest % 1000);
    format!("{year:04}-{month:02}-{day:02}T{h:02}:{m:02}:{s:02}.{milli:03}Z")
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    use crate::core::{Completed, Fingerprint, InFlight, StoredResponse};

    const NOW: u64 = 1_000_000;

    fn policy() -> RecordPolicy {
        RecordPolicy { lease_ms: 10_000, ttl_ms: 60_000, release_on: vec![503] }
    }

    fn in_flight(outcome_unknown: bool, lease_expires_at: u64) -> Record {
        Record::InFlight(InFlight {
            fingerprint: Fingerprint([1; 32]),
            attempt: 3,
            lease_expires_at,
            expires_at: NOW + 70_000,
            outcome_unknown,
            reservation: 9,
        })
    }

    fn completed() -> Record {
        Record::Completed(Completed {
            fingerprint: Fingerprint([1; 32]),
            attempt: 2,
            response: StoredResponse {
                status: 201,
                headers: vec![("set-cookie".into(), "secret=1".into())],
                body: Some(b"{\"card\":\"4242\"}".to_vec()),
            }
            .into(),
            expires_at: NOW + 60_000,
            copied: false,
        })
    }

    fn tombstone() -> Record {
        Record::Released(Released { last_attempt: 4, expires_at: NOW + 5 })
    }

    #[test]
    fn release_follows_its_table() {
        let released = |attempt| {
            let state = RecordState::Released { last_attempt: attempt, expires_at: NOW + 60_000 };
            let write = Write::Put(Record::Released(Released { last_attempt: attempt, expires_at: NOW + 60_000 }));
            (ReleaseAnswer::Released(state), write)
        };
        let rows: Vec<(&str, Option<Record>, (ReleaseAnswer, Write))> = vec![
            (
                "running, lease live",
                Some(in_flight(false, NOW + 5_000)),
                (ReleaseAnswer::Running(RecordState::of(&in_flight(false, NOW + 5_000))), Write::Keep),
            ),
            ("running, lease over", Some(in_flight(false, NOW)), released(3)),
            ("outcome unknown, lease live", Some(in_flight(true, NOW + 5_000)), released(3)),
            ("lease over, not reclaimed", Some(in_flight(true, NOW - 1)), released(3)),
            ("completed", Some(completed()), (ReleaseAnswer::NotInFlight(RecordState::of(&completed())), Write::Keep)),
            (
                "already released",
                Some(tombstone()),
                (
                    ReleaseAnswer::NotInFlight(RecordState::Released { last_attempt: 4, expires_at: NOW + 5 }),
                    Write::Keep,
                ),
            ),
            ("nothing", None, (ReleaseAnswer::Absent, Write::Keep)),
            (
                "expired",
                Some(Record::Released(Released { last_attempt: 4, expires_at: NOW })),
                (ReleaseAnswer::Absent, Write::Keep),
            ),
        ];
        for (name, found, (answer, write)) in rows {
            let step = release(found.clone(), NOW, &policy(), ReleaseAsked::default(), &[]);
            assert_eq!((step.answer, step.write), (answer, write), "{name}");
        }
        let force = ReleaseAsked { force: true, completed: false };
        let forced = release(Some(in_flight(false, NOW + 5_000)), NOW, &policy(), force, &[]);
        assert_eq!((forced.answer, forced.write), released(3), "running, forced");
        // `?completed=true` forgets a stored answer, its attempt kept; it
        // releases a running attempt no more than without it.
        let forget = ReleaseAsked { force: false, completed: true };
        let forgot = release(Some(completed()), NOW, &policy(), forget, &[]);
        assert_eq!((forgot.answer, forgot.write), released(2), "completed, forgotten with its attempt");
        let running = release(Some(in_flight(false, NOW + 5_000)), NOW, &policy(), forget, &[]);
        assert!(matches!(running.answer, ReleaseAnswer::Running(_)), "a running attempt is not released by it");
        let already = release(Some(tombstone()), NOW, &policy(), forget, &[]);
        assert!(matches!(already.answer, ReleaseAnswer::NotInFlight(_)), "a release stays one");
    }

    #[test]
    fn after_a_release_the_next_request_runs_as_the_next_attempt_and_the_old_finish_is_stale() {
        use crate::core::{Decision, Finished, Outcome, begin, finish};
        let Write::Put(record) =
            release(Some(in_flight(true, NOW + 5_000)), NOW, &policy(), ReleaseAsked::default(), &[]).write
        else {
            panic!()
        };
        let next = begin(Some(record.clone()), Fingerprint([1; 32]), NOW + 1, &policy());
        assert_eq!(next.answer, Decision::Execute { attempt: 4, reclaimed: false });
        let late = finish(Some(record), 3, Outcome::Unknown, NOW + 2, &policy());
        assert_eq!((late.answer, late.write), (Finished::Stale, Write::Keep));
    }

    #[test]
    fn a_forced_release_keeps_its_attempt_number_until_the_released_attempt_can_no_longer_finish() {
        use crate::core::{Decision, Finished, Outcome, begin, finish};
        // A TTL shorter than the lease (a policy built in code): the
        // tombstone still outlives the running attempt's lease.
        let short = RecordPolicy { lease_ms: 120_000, ttl_ms: 60_000, release_on: vec![] };
        let lease_end = NOW + 120_000;
        let Write::Put(tombstone) = release(
            Some(in_flight(false, lease_end)),
            NOW,
            &short,
            ReleaseAsked { force: true, completed: false },
            &[],
        )
        .write
        else {
            panic!()
        };
        assert!(matches!(tombstone, Record::Released(Released { expires_at, .. }) if expires_at == lease_end));
        // Past the TTL, within the released attempt's lease: the next request
        // is attempt 4, never 1, and attempt 3's late finish writes nothing.
        let next = begin(Some(tombstone), Fingerprint([1; 32]), NOW + 90_000, &short);
        assert_eq!(next.answer, Decision::Execute { attempt: 4, reclaimed: false });
        let Write::Put(running) = next.write else { panic!() };
        let late = finish(Some(running), 3, Outcome::Unknown, NOW + 100_000, &short);
        assert_eq!((late.answer, late.write), (Finished::Stale, Write::Keep));
    }

    fn keys(value: &serde_json::Value) -> Vec<&str> {
        let mut keys: Vec<&str> = value.as_object().unwrap().keys().map(String::as_str).collect();
        keys.sort_unstable();
        keys
    }

    #[test]
    fn inspect_shows_the_state_and_never_the_answer() {
        assert_eq!(inspect(None, NOW).answer, None);
        assert_eq!(inspect(Some(completed()), NOW + 60_000).answer, None, "expired");
        let step = inspect(Some(completed()), NOW);
        assert_eq!(step.write, Write::Keep);
        let state = step.answer.unwrap();
        assert_eq!(state, RecordState::Completed { attempt: 2, status: 201, sealed: None, expires_at: NOW + 60_000 });
        let json = state.to_json(&RecordName([7; 32]), &[]);
        assert!(!json.contains("4242") && !json.contains("secret") && !json.contains("set-cookie"), "{json}");
        let value: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(keys(&value), ["attempt", "expiresAt", "kind", "record", "status"]);

        let unknown = inspect(Some(in_flight(true, 1_767_225_600_001)), NOW).answer.unwrap();
        let value: serde_json::Value = serde_json::from_str(&unknown.to_json(&RecordName([7; 32]), &[])).unwrap();
        assert_eq!(value["kind"], "in-flight");
        assert_eq!(value["attempt"], 3);
        assert_eq!(value["outcomeUnknown"], true);
        assert_eq!(value["leaseExpiresAt"], "2026-01-01T00:00:00.001Z");
        assert_eq!(value["record"], "07".repeat(32));
        let value: serde_json::Value =
            serde_json::from_str(&RecordState::of(&tombstone()).to_json(&RecordName([7; 32]), &[])).unwrap();
        assert_eq!(
            (keys(&value), &value["kind"]),
            (vec!["attempt", "expiresAt", "kind", "record"], &"released".into())
        );
    }

    #[test]
    fn times_are_rfc3339() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(rfc3339(951_782_400_000), "2000-02-29T00:00:00.000Z");
        assert_eq!(rfc3339(1_709_164_799_999), "2024-02-28T23:59:59.999Z");
        assert_eq!(rfc3339(4_102_444_800_000), "2100-01-01T00:00:00.000Z");
    }
}
