//! The coordinator's protocol (SPEC §3, §4): what one Durable Object does
//! with each store call, each waiter's timer and its expiry alarm, as a
//! sans-IO object.
//!
//! A host's Durable Object owns one [`Coordinator`] and only performs what
//! it returns: it loads the record once ([`Coordinator::load`]), hands each
//! call in ([`Coordinator::call`]), writes and deletes what [`Effects`] say,
//! sets the alarm, delivers each reply, and arms one timer per parked call
//! for [`Coordinator::deadline_of`], reporting it with
//! [`Coordinator::wake`]. Every step here is synchronous: between the
//! record it reads and the write it returns nothing can run, so a host
//! cannot let two calls decide on one reading.
//!
//! A duplicate of a running attempt parks here (it "waits inside the
//! object"). Whenever the record is written, every parked call is decided
//! again against the record as it is *then*, one after the other in the
//! order they arrived: when a release frees the key, the first one reserves
//! it and the rest see that new attempt running and go on waiting.
//!
//! ```
//! use oncekey::core::{Coordinator, Decision, Fingerprint, RecordPolicy, StoreCall, decode_decision};
//! let begin = StoreCall::Begin { policy: RecordPolicy::default(), fingerprint: Fingerprint([1; 32]), wait_ms: 10_000, reservation: 0, open_keys: Some(Vec::new()) };
//! let mut object = Coordinator::new();
//! object.load(None);
//! let first = object.call(1, &begin.encode(), 0).unwrap();
//! assert!(first.put.is_some(), "the reservation is written");
//! assert_eq!(decode_decision(&first.replies[0].bytes), Ok(Decision::Execute { attempt: 1, reclaimed: false }));
//! let duplicate = object.call(2, &begin.encode(), 5).unwrap();
//! assert!(duplicate.replies.is_empty(), "it waits");
//! assert_eq!(object.deadline_of(2), Some(10_005));
//! ```

use crate::core::coordinator::expiry::{Expiry, on_alarm};
use crate::core::coordinator::wire::{StoreCall, encode_decision};
use crate::core::record::codec::{DecodeError, Record};
use crate::core::record::decision::{Decision, IN_FLIGHT_RETRY_AFTER_SECS, Write};
use crate::core::request::fingerprint::Fingerprint;

/// The storage key under which a host's Durable Object keeps the record
/// ([`Record::encode`]d): the same on both hosts, so either host's object
/// reads what the other wrote.
pub const RECORD_KEY: &str = "record";

/// A host's name for one store call it handed in, to deliver its reply.
pub type CallId = u64;

/// The most calls that wait on one key at once (SPEC §3). Past it a
/// duplicate is answered at once (409 `key-in-flight`), so an object's
/// memory stays bounded whatever a retry storm sends.
pub const MAX_WAITERS: usize = 64;

/// One Durable Object's state: the record as last read or written, and the
/// calls waiting on it.
#[derive(Clone, Debug, Default)]
pub struct Coordinator {
    /// `None` until loaded; then what storage holds.
    record: Option<Stored>,
    /// Calls parked until the record changes or their deadline passes, in
    /// arrival order.
    waiters: Vec<Waiter>,
    /// Whether the expiry alarm is set (by this instance).
    alarm_set: bool,
    /// Reservations abandoned before their `begin` arrived (calls may be
    /// delivered out of order): that `begin` reserves nothing when it lands.
    abandoned: Vec<u64>,
    /// What the model checker's mutants of this object remember.
    #[cfg(feature = "model")]
    stale: Stale,
}

/// The records the coordinator's mutants decide on (`make model`): the one
/// each waiter parked on (`waiter-decides-on-stale-record`), the released
/// one a walk started from (`release-wakes-every-waiter`).
#[cfg(feature = "model")]
#[derive(Clone, Debug, Default)]
struct Stale {
    parked_on: Vec<(CallId, Option<Record>)>,
    walk: Option<Option<Record>>,
}

#[cfg(feature = "model")]
impl Stale {
    fn view(&self, id: CallId) -> Option<Option<Record>> {
        if mutant!(WaiterDecidesOnStaleRecord)
            && let Some((_, seen)) = self.parked_on.iter().find(|(parked, _)| *parked == id)
        {
            return Some(seen.clone());
        }
        self.walk.clone()
    }
}

/// How many early abandons an object remembers.
const ABANDONED_KEPT: usize = 32;

/// What the object's storage holds.
#[derive(Clone, Debug)]
enum Stored {
    Nothing,
    Record(Record),
    /// Bytes that do not decode: a newer layout after a rollback, or damage.
    /// Every call fails closed on it ([`StoreCall::run_unreadable`]).
    Unreadable,
}

#[derive(Clone, Debug)]
struct Waiter {
    id: CallId,
    call: StoreCall,
    called_at: u64,
    deadline: u64,
}

/// What the host does after a step, in this order: write `put` (or delete
/// everything), set the alarm, then deliver each reply once the write has
/// succeeded (a reply must never promise a write that failed).
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Effects {
    /// The record to store under the object's one storage key.
    pub put: Option<Record>,
    /// Delete everything stored (the alarm found the record expired).
    pub delete_all: bool,
    /// Set the expiry alarm to run at this time (ms since the epoch).
    pub set_alarm: Option<u64>,
    /// Replies to deliver, each to one or more calls.
    pub replies: Vec<CallReply>,
}

/// One reply, the same bytes for every call it goes to: however many
/// waiters get a stored answer, it is held once.
#[derive(Debug, PartialEq, Eq)]
pub struct CallReply {
    /// The calls it answers.
    pub to: Vec<CallId>,
    /// The encoded reply ([`decode_decision`](crate::core::decode_decision) and
    /// its siblings read it).
    pub bytes: Vec<u8>,
}

impl Coordinator {
    /// An object that has not read its record yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether the host must [`load`](Self::load) the record before
    /// handing anything in.
    pub fn needs_load(&self) -> bool {
        self.record.is_none()
    }

    /// The stored record's bytes (`None`: nothing stored), read once. A
    /// load after the first is ignored: what this object wrote since is
    /// newer than any read that started before it. Bytes that do not decode
    /// are kept as unreadable, never taken for "nothing" (SPEC §3).
    pub fn load(&mut self, stored: Option<&[u8]>) {
        if self.record.is_none() {
            self.record = Some(match stored.map(Record::decode) {
                None => Stored::Nothing,
                Some(Ok(record)) => Stored::Record(record),
                Some(Err(_)) => Stored::Unreadable,
            });
        }
    }

    /// Forgets the record after a write failed, so the next step reads it
    /// again; parked calls stay parked.
    pub fn forget(&mut self) {
        self.record = None;
    }

    /// One store call (its encoded bytes) at the object's clock `now_ms`:
    /// answered now, or parked until the record changes or its deadline
    /// ([`deadline_of`](Self::deadline_of)) passes.
    ///
    /// # Errors
    /// The bytes are not a store call; nothing changed.
    ///
    /// # Panics
    /// The record was not loaded ([`needs_load`](Self::needs_load)).
    pub fn call(&mut self, id: CallId, bytes: &[u8], now_ms: u64) -> Result<Effects, DecodeError> {
        let call = StoreCall::decode(bytes)?;
        let mut effects = Effects::default();
        if self.overtaken(id, &call, now_ms, &mut effects) {
            return Ok(effects);
        }
        match call.wait_deadline(self.found(), now_ms, now_ms) {
            Some(deadline) if self.waiters.len() < MAX_WAITERS => {
                #[cfg(feature = "model")]
                self.stale.parked_on.push((id, self.found().cloned()));
                self.waiters.push(Waiter { id, call, called_at: now_ms, deadline });
            }
            // Past the bound, or nothing to wait for: decided now.
            _ => {
                if self.decide(id, call, now_ms, &mut effects, &mut None) {
                    self.settle_waiters(now_ms, &mut effects);
                }
            }
        }
        Ok(effects)
    }

    /// A parked call's timer fired (or any timer: it is harmless): every
    /// parked call whose deadline has passed is decided now.
    ///
    /// # Panics
    /// The record was not loaded.
    pub fn wake(&mut self, now_ms: u64) -> Effects {
        let mut effects = Effects::default();
        self.settle_waiters(now_ms, &mut effects);
        effects
    }

    /// When the parked call `id` must be woken ([`wake`](Self::wake)) if
    /// nothing answers it first; `None` once it is answered.
    pub fn deadline_of(&self, id: CallId) -> Option<u64> {
        self.waiters.iter().find(|w| w.id == id).map(|w| w.deadline)
    }

    /// How many calls are parked.
    pub fn waiting(&self) -> usize {
        self.waiters.len()
    }

    /// The expiry alarm ran: it deletes an expired record, or re-arms for a
    /// record that lives longer.
    ///
    /// # Panics
    /// The record was not loaded.
    pub fn alarm(&mut self, now_ms: u64) -> Effects {
        self.alarm_set = false;
        let mut effects = Effects::default();
        match on_alarm(self.found(), now_ms) {
            Expiry::Rearm { at_ms } => {
                self.alarm_set = true;
                effects.set_alarm = Some(at_ms);
            }
            Expiry::Delete => {
                self.record = Some(Stored::Nothing);
                effects.delete_all = true;
            }
            Expiry::Idle => {}
        }
        effects
    }

    /// Setting the alarm failed: the next write sets it again. Replies are
    /// never held back for it.
    pub fn alarm_failed(&mut self) {
        self.alarm_set = false;
    }

    /// An abandon, or the `begin` it gave up on, when the two cross (SPEC
    /// §3): an abandon whose `begin` is still parked here ends that wait
    /// without a reservation; one whose `begin` has not arrived leaves a
    /// mark, and that `begin`, when it lands, is answered without reserving
    /// anything (its caller stopped listening). Whether the call was
    /// answered so.
    fn overtaken(&mut self, id: CallId, call: &StoreCall, now_ms: u64, effects: &mut Effects) -> bool {
        let gave_up = || {
            encode_decision(&Decision::InFlight {
                retry_after_secs: IN_FLIGHT_RETRY_AFTER_SECS,
                outcome_unknown: false,
                attempt: 0,
            })
        };
        match *call {
            StoreCall::Begin { reservation, .. } if reservation != 0 => {
                let Some(at) = self.abandoned.iter().position(|&r| r == reservation) else { return false };
                self.abandoned.remove(at);
                effects.replies.push(CallReply { to: vec![id], bytes: gave_up() });
                true
            }
            StoreCall::Abandon { reservation, .. } if reservation != 0 => {
                if let Some(at) = self
                    .waiters
                    .iter()
                    .position(|w| matches!(w.call, StoreCall::Begin { reservation: r, .. } if r == reservation))
                {
                    let waiter = self.waiters.remove(at);
                    effects.replies.push(CallReply { to: vec![waiter.id], bytes: gave_up() });
                    effects.replies.push(CallReply { to: vec![id], bytes: vec![0] });
                    return true;
                }
                let holds = matches!(self.found(), Some(Record::InFlight(r)) if r.reservation == reservation && now_ms < r.expires_at);
                if !holds {
                    if self.abandoned.len() == ABANDONED_KEPT {
                        self.abandoned.remove(0);
                    }
                    self.abandoned.push(reservation);
                }
                false
            }
            _ => false,
        }
    }

    fn found(&self) -> Option<&Record> {
        match self.record.as_ref().expect("the coordinator's record is loaded before any step") {
            Stored::Record(record) => Some(record),
            Stored::Nothing | Stored::Unreadable => None,
        }
    }

    /// Runs one call on the record and applies its write: whether it
    /// wrote. `memo` holds the last reply that wrote nothing, by
    /// fingerprint, so that waiters given the same answer share one copy.
    fn decide(
        &mut self,
        id: CallId,
        call: StoreCall,
        now_ms: u64,
        effects: &mut Effects,
        memo: &mut Option<(Fingerprint, usize)>,
    ) -> bool {
        let fingerprint = match &call {
            StoreCall::Begin { fingerprint, .. } => Some(*fingerprint),
            _ => None,
        };
        if let (Some(fp), Some((seen, at))) = (fingerprint, *memo)
            && fp == seen
        {
            effects.replies[at].to.push(id);
            return false;
        }
        let found = self.found().cloned();
        #[cfg(feature = "model")]
        let found = self.stale.view(id).unwrap_or(found);
        let step = match self.record {
            Some(Stored::Unreadable) => call.run_unreadable(now_ms),
            _ => call.run(found, now_ms),
        };
        effects.replies.push(CallReply { to: vec![id], bytes: step.answer });
        match step.write {
            Write::Keep => {
                *memo = fingerprint.map(|fp| (fp, effects.replies.len() - 1));
                false
            }
            Write::Put(record) => {
                *memo = None;
                if !self.alarm_set {
                    self.alarm_set = true;
                    effects.set_alarm = Some(record.expires_at());
                }
                self.record = Some(Stored::Record(record.clone()));
                effects.put = Some(record);
                true
            }
        }
    }

    /// Every parked call looks again at the record as it is now, in arrival
    /// order: each either goes on waiting (its deadline recomputed) or is
    /// decided. After a decision that writes, the walk starts over, so that
    /// every waiter, before or after it, sees the new record.
    fn settle_waiters(&mut self, now_ms: u64, effects: &mut Effects) {
        let mut memo = None;
        let mut i = 0;
        #[cfg(feature = "model")]
        {
            let released = matches!(self.found(), Some(Record::Released(_)));
            self.stale.walk = (mutant!(ReleaseWakesEveryWaiter) && released).then(|| self.found().cloned());
        }
        while i < self.waiters.len() {
            let waiter = &self.waiters[i];
            let seen = self.found();
            #[cfg(feature = "model")]
            let stale = self.stale.view(waiter.id);
            #[cfg(feature = "model")]
            let seen = match &stale {
                Some(stale) => stale.as_ref(),
                None => seen,
            };
            match waiter.call.wait_deadline(seen, now_ms, waiter.called_at) {
                Some(deadline) => {
                    self.waiters[i].deadline = deadline;
                    i += 1;
                }
                None => {
                    let Waiter { id, call, .. } = self.waiters.remove(i);
                    if self.decide(id, call, now_ms, effects, &mut memo) {
                        i = 0;
                    }
                }
            }
        }
        #[cfg(feature = "model")]
        {
            self.stale.walk = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    use crate::core::{Decision, Finished, Outcome, RecordPolicy, StoredResponse, decode_decision, decode_finished};

    const FP: Fingerprint = Fingerprint([1; 32]);

    fn policy() -> RecordPolicy {
        RecordPolicy { lease_ms: 10_000, ttl_ms: 60_000, release_on: vec![503] }
    }

    fn begin(wait_ms: u64) -> Vec<u8> {
        StoreCall::Begin { policy: policy(), fingerprint: FP, wait_ms, reservation: 0, open_keys: Some(Vec::new()) }
            .encode()
    }

    fn finish(attempt: u32, status: u16) -> Vec<u8> {
        let answer = StoredResponse { status, headers: vec![], body: Some(format!("{status}").into_bytes()) };
        StoreCall::Finish { policy: policy(), attempt, reservation: 0, outcome: Outcome::Answered(answer.into()) }
            .encode()
    }

    fn loaded() -> Coordinator {
        let mut object = Coordinator::new();
        assert!(object.needs_load());
        object.load(None);
        object
    }

    /// Each `begin`'s decision (finish calls here have ids from 100), in
    /// the order the replies were made.
    fn decisions(effects: &Effects) -> Vec<(CallId, Decision)> {
        let mut out = Vec::new();
        for reply in effects.replies.iter().filter(|r| r.to[0] < 100) {
            for id in &reply.to {
                out.push((*id, decode_decision(&reply.bytes).unwrap()));
            }
        }
        out
    }

    #[test]
    fn a_release_grants_exactly_one_waiter_the_next_attempt_and_the_rest_wait_for_it() {
        let mut object = loaded();
        object.call(0, &begin(10_000), 0).unwrap();
        for id in 1..=8 {
            assert!(object.call(id, &begin(10_000), id).unwrap().replies.is_empty());
        }
        assert_eq!(object.waiting(), 8);
        let released = object.call(100, &finish(1, 503), 1_500).unwrap();
        assert_eq!(decode_finished(&released.replies[0].bytes), Ok(Finished::Released));
        assert_eq!(
            decisions(&released),
            [(1, Decision::Execute { attempt: 2, reclaimed: false })],
            "the first to arrive runs attempt 2, nobody else is answered"
        );
        assert!(matches!(released.put, Some(Record::InFlight(ref r)) if r.attempt == 2), "one write: the last record");
        assert_eq!(object.waiting(), 7);
        assert_eq!(object.deadline_of(2), Some(10_002), "still waiting, for attempt 2 now");

        let stored = object.call(101, &finish(2, 201), 2_000).unwrap();
        assert!(matches!(decode_finished(&stored.replies[0].bytes), Ok(Finished::Stored(_))));
        // The first waiter's replay asks for the KV copy (and the record
        // remembers it); every other waiter shares one copy of the answer.
        assert_eq!(stored.replies.len(), 3);
        assert_eq!(stored.replies[1].to, [2]);
        assert!(
            matches!(decode_decision(&stored.replies[1].bytes), Ok(Decision::Replay(c)) if c.attempt == 2 && !c.copied)
        );
        assert_eq!(stored.replies[2].to, (3..=8).collect::<Vec<_>>());
        assert!(
            matches!(decode_decision(&stored.replies[2].bytes), Ok(Decision::Replay(c)) if c.attempt == 2 && c.copied)
        );
        assert!(matches!(stored.put, Some(Record::Completed(ref c)) if c.copied), "the record: copy asked for");
        assert_eq!(object.waiting(), 0);
    }

    #[test]
    fn waiters_past_the_bound_are_answered_at_once() {
        let mut object = loaded();
        object.call(0, &begin(10_000), 0).unwrap();
        for id in 1..=MAX_WAITERS as u64 {
            assert!(object.call(id, &begin(10_000), 1).unwrap().replies.is_empty());
        }
        let over = object.call(99, &begin(10_000), 2).unwrap();
        assert_eq!(
            decisions(&over),
            [(99, Decision::InFlight { retry_after_secs: 1, outcome_unknown: false, attempt: 1 })]
        );
        assert_eq!(object.waiting(), MAX_WAITERS);
    }

    #[test]
    fn a_waiter_ends_at_its_deadline_and_takes_over_only_a_lease_that_ended() {
        let mut object = loaded();
        object.call(0, &begin(10_000), 0).unwrap();
        object.call(1, &begin(2_000), 100).unwrap();
        object.call(2, &begin(10_000), 200).unwrap();
        assert!(object.wake(2_099).replies.is_empty(), "too early for anyone");
        let woken = object.wake(2_100);
        assert_eq!(
            decisions(&woken),
            [(1, Decision::InFlight { retry_after_secs: 1, outcome_unknown: false, attempt: 1 })]
        );
        assert_eq!(object.deadline_of(1), None);
        assert_eq!(object.deadline_of(2), Some(10_000), "capped at the lease's end");
        let reclaimed = object.wake(10_000);
        assert_eq!(decisions(&reclaimed), [(2, Decision::Execute { attempt: 2, reclaimed: true })]);
    }

    #[test]
    fn an_unknown_outcome_ends_every_wait_with_the_honest_409() {
        let mut object = loaded();
        object.call(0, &begin(10_000), 0).unwrap();
        object.call(1, &begin(10_000), 1).unwrap();
        object.call(2, &begin(10_000), 1).unwrap();
        let unknown =
            StoreCall::Finish { policy: policy(), attempt: 1, reservation: 0, outcome: Outcome::Unknown }.encode();
        let effects = object.call(103, &unknown, 4_000).unwrap();
        let conflict = Decision::InFlight { retry_after_secs: 6, outcome_unknown: true, attempt: 1 };
        assert_eq!(decisions(&effects), [(1, conflict.clone()), (2, conflict)]);
    }

    #[test]
    fn the_alarm_is_set_once_and_deletes_what_expired() {
        let mut object = loaded();
        let first = object.call(0, &begin(0), 0).unwrap();
        assert_eq!(first.set_alarm, Some(70_000));
        assert_eq!(object.call(101, &finish(1, 201), 5).unwrap().set_alarm, None, "the alarm re-arms itself");
        assert_eq!(object.alarm(50_000).set_alarm, Some(60_005));
        let gone = object.alarm(60_005);
        assert!(gone.delete_all && gone.put.is_none());
        assert_eq!(
            decisions(&object.call(2, &begin(0), 60_006).unwrap()),
            [(2, Decision::Execute { attempt: 1, reclaimed: false })]
        );
        object.alarm_failed();
        assert!(object.call(103, &finish(1, 201), 60_007).unwrap().set_alarm.is_some(), "set again after a failure");
    }

    #[test]
    fn a_load_after_the_first_changes_nothing_and_bad_calls_are_refused() {
        let mut object = loaded();
        object.call(0, &begin(0), 0).unwrap();
        let stale = Record::Released(crate::core::Released { last_attempt: 9, expires_at: 99_999 }).encode();
        object.load(Some(&stale));
        assert_eq!(
            decisions(&object.call(1, &begin(0), 1).unwrap()),
            [(1, Decision::InFlight { retry_after_secs: 1, outcome_unknown: false, attempt: 1 })]
        );
        assert!(object.call(2, &[42], 2).is_err());
        object.forget();
        assert!(object.needs_load());
        object.load(Some(&stale));
        assert_eq!(
            decisions(&object.call(3, &begin(0), 3).unwrap()),
            [(3, Decision::Execute { attempt: 10, reclaimed: false })]
        );
    }

    #[test]
    fn a_record_that_does_not_decode_fails_closed_until_an_operator_releases_it() {
        use crate::core::{RecordState, ReleaseAnswer, decode_inspected, decode_released};
        let mut newer = Record::Released(crate::core::Released { last_attempt: 3, expires_at: 99_999 }).encode();
        newer[2] += 1; // the layout version a newer build would write
        let mut object = Coordinator::new();
        object.load(Some(&newer));
        assert_eq!(
            decisions(&object.call(1, &begin(10_000), 0).unwrap()),
            [(1, Decision::Unreadable)],
            "never absent, never waits"
        );
        let late = object.call(101, &finish(1, 201), 1).unwrap();
        assert_eq!((decode_finished(&late.replies[0].bytes), late.put), (Ok(Finished::Stale), None));
        assert!(!object.alarm(1_000_000_000).delete_all, "the alarm keeps what it cannot read");
        let seen = object.call(102, &StoreCall::Inspect.encode(), 2).unwrap();
        assert_eq!(decode_inspected(&seen.replies[0].bytes), Ok(Some(RecordState::Unreadable)));
        let release =
            StoreCall::Release { policy: policy(), force: false, completed: false, open_keys: vec![] }.encode();
        let released = object.call(103, &release, 3).unwrap();
        assert!(matches!(decode_released(&released.replies[0].bytes), Ok(ReleaseAnswer::Released(_))));
        assert!(matches!(released.put, Some(Record::Released(ref r)) if r.last_attempt == 0));
        assert_eq!(
            decisions(&object.call(2, &begin(0), 4).unwrap()),
            [(2, Decision::Execute { attempt: 1, reclaimed: false })]
        );
    }

    #[test]
    fn an_abandon_ends_its_parked_begin_and_one_that_overtakes_its_begin_leaves_a_mark() {
        let with = |reservation| {
            StoreCall::Begin {
                policy: policy(),
                fingerprint: FP,
                wait_ms: 10_000,
                reservation,
                open_keys: Some(Vec::new()),
            }
            .encode()
        };
        let abandon = |reservation| StoreCall::Abandon { policy: policy(), reservation }.encode();
        let mut object = loaded();
        object.call(0, &with(1), 0).unwrap();
        object.call(2, &with(2), 1).unwrap();
        assert_eq!(object.waiting(), 1);
        let ended = object.call(102, &abandon(2), 2).unwrap();
        assert_eq!(
            decisions(&ended),
            [(2, Decision::InFlight { retry_after_secs: 1, outcome_unknown: false, attempt: 0 })]
        );
        assert_eq!((object.waiting(), ended.put), (0, None), "the parked begin ends without a reservation");

        // The abandon of reservation 3 arrives first: the key is held by 1.
        let early = object.call(103, &abandon(3), 3).unwrap();
        assert_eq!((early.replies[0].bytes.as_slice(), early.put), (&[0u8][..], None));
        object.call(104, &finish(1, 503), 4).unwrap();
        let late = object.call(3, &with(3), 5).unwrap();
        assert_eq!(
            decisions(&late),
            [(3, Decision::InFlight { retry_after_secs: 1, outcome_unknown: false, attempt: 0 })]
        );
        assert_eq!(late.put, None, "the late begin reserved nothing though the key was free");
        assert_eq!(
            decisions(&object.call(4, &with(4), 6).unwrap()),
            [(4, Decision::Execute { attempt: 2, reclaimed: false })]
        );
    }
}
