//! Model checks of the state machine (SPEC §3–4): many clients send
//! duplicates of many keys through `begin`/`finish` over a store, with
//! random interleavings, crashed attempts, unknown outcomes, releases,
//! lease expiries and clock jumps, on a virtual clock.
//!
//! Over the atomic store (what the Durable Object runs) every invariant
//! holds for thousands of random schedules. Over a simulated eventually
//! consistent store without compare-and-set (KV-only mode) the same
//! harness finds double executions: the race docs/promises.md warns about.

use std::cell::RefCell;
use std::collections::HashMap;
use std::convert::Infallible;
use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

use oncekey::core::{
    Completed, Decision, Fingerprint, Finished, IdempotencyKey, MemoryStore, Outcome, Record, RecordName, RecordPolicy,
    Store, StoredAnswer, StoredResponse,
};
use proptest::prelude::*;

const LEASE_MS: u64 = 1_000;
const TTL_MS: u64 = 60_000;

fn policy() -> RecordPolicy {
    RecordPolicy { lease_ms: LEASE_MS, ttl_ms: TTL_MS, release_on: vec![503] }
}

/// The stores here never wait: poll once.
fn now_or_never<F: Future>(f: F) -> F::Output {
    let mut f = pin!(f);
    match f.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(v) => v,
        Poll::Pending => panic!("in-memory stores never wait"),
    }
}

/// One step of a schedule.
#[derive(Clone, Debug)]
enum Action {
    /// A client sends key `key` (any client: the store sees only the key);
    /// `other_body` sends a different request under the same key.
    Send { key: usize, other_body: bool },
    /// A running attempt reports back.
    Finish { pick: usize, outcome: OutcomeKind },
    /// A running attempt dies without reporting (the isolate crashed).
    Crash { pick: usize },
    /// The store's clock moves (forward or back).
    Clock { delta_ms: i64 },
}

#[derive(Clone, Copy, Debug)]
enum OutcomeKind {
    Created,
    ServerError,
    Unavailable,
    NotSent,
    Unknown,
}

fn action() -> impl Strategy<Value = Action> {
    let outcome = prop_oneof![
        3 => Just(OutcomeKind::Created),
        1 => Just(OutcomeKind::ServerError),
        1 => Just(OutcomeKind::Unavailable),
        1 => Just(OutcomeKind::NotSent),
        1 => Just(OutcomeKind::Unknown),
    ];
    prop_oneof![
        6 => (0usize..4, prop::bool::weighted(0.05)).prop_map(|(key, other_body)| Action::Send { key, other_body }),
        3 => (any::<usize>(), outcome).prop_map(|(pick, outcome)| Action::Finish { pick, outcome }),
        1 => any::<usize>().prop_map(|pick| Action::Crash { pick }),
        2 => prop_oneof![
            4 => 0i64..(LEASE_MS as i64 / 2),
            2 => (LEASE_MS as i64 / 2)..(2 * LEASE_MS as i64),
            1 => -(LEASE_MS as i64)..0,
            1 => (TTL_MS as i64)..(3 * TTL_MS as i64),
        ]
        .prop_map(|delta_ms| Action::Clock { delta_ms }),
    ]
}

/// An attempt that was given the key.
struct Attempt {
    key: usize,
    attempt: u32,
    lease_ends: u64,
    /// Still holds the key: no later attempt has been started for it.
    holds_key: bool,
    /// Can still report back (not crashed, not already reported).
    reporting: bool,
}

/// What the model expects per key.
#[derive(Default)]
struct KeyModel {
    /// Until when the store must remember this key: the expiry of its last
    /// write (each write replaces the record).
    remembered_until: u64,
    /// The highest attempt started while remembered.
    max_attempt: u32,
    /// The stored answer, and until when it must be replayed.
    stored: Option<(StoredAnswer, u64)>,
}

/// Invariant violations found by one schedule.
#[derive(Debug, Default, PartialEq, Eq)]
struct Violations {
    /// A second execution started while another attempt's lease was live
    /// or a stored answer should have been replayed.
    double_executions: u32,
    /// Attempt numbers that did not rise while the key was remembered.
    attempts_not_rising: u32,
    /// A finish from an attempt that no longer held the key wrote something.
    stale_writes: u32,
    /// A finish from the attempt still holding the key (not reclaimed, not
    /// forgotten), its lease live or not, was thrown away.
    lost_finishes: u32,
    /// A client got a replay different from the stored answer.
    replay_mismatches: u32,
}

fn fingerprint(key: usize, other_body: bool) -> Fingerprint {
    let body = format!("{{\"item\":\"item-{key}\"{}}}", if other_body { ",\"x\":1" } else { "" });
    Fingerprint::of("POST", "/api/orders", Some("application/json"), body.as_bytes())
}

fn record_name(key: usize) -> RecordName {
    let key = IdempotencyKey::parse(&format!("key-{key}")).expect("valid key");
    RecordName::new("shop.example", &[], |_| None, &key)
}

fn answer(status: u16, key: usize, attempt: u32) -> StoredAnswer {
    StoredResponse { status, headers: vec![], body: Some(format!("key {key} attempt {attempt}").into_bytes()) }.into()
}

/// A store the harness can also peek into, to see whether a finish wrote.
trait ModelStore: Store<Error = Infallible> {
    fn peek(&self, name: &RecordName) -> Option<Record>;
}

impl ModelStore for MemoryStore {
    fn peek(&self, name: &RecordName) -> Option<Record> {
        self.get(name)
    }
}

/// Picks the `pick`-th attempt that can still report back.
fn reporting(attempts: &mut [Attempt], pick: usize) -> Option<&mut Attempt> {
    let count = attempts.iter().filter(|a| a.reporting).count();
    if count == 0 {
        return None;
    }
    attempts.iter_mut().filter(|a| a.reporting).nth(pick % count)
}

/// Runs one schedule and counts the invariant violations.
fn run<S: ModelStore>(store: &S, actions: &[Action]) -> Violations {
    let mut now: u64 = 1_000_000;
    // Real time never runs back, whatever the store's clock says: the
    // highest reading so far is a lower bound on it.
    let mut real_now = now;
    let mut attempts: Vec<Attempt> = Vec::new();
    let mut keys: HashMap<usize, KeyModel> = HashMap::new();
    let mut v = Violations::default();
    for action in actions {
        match *action {
            Action::Clock { delta_ms } => {
                now = now.saturating_add_signed(delta_ms);
                real_now = real_now.max(now);
            }
            Action::Send { key, other_body } => {
                let model = keys.entry(key).or_default();
                match now_or_never(store.begin(&record_name(key), fingerprint(key, other_body), now)).unwrap() {
                    Decision::Execute { attempt, .. } => {
                        let live_lease = attempts.iter().any(|a| a.key == key && a.holds_key && now < a.lease_ends);
                        let live_answer = model.stored.as_ref().is_some_and(|(_, until)| now < *until);
                        if live_lease || live_answer {
                            v.double_executions += 1;
                        }
                        if now >= model.remembered_until {
                            // Forgotten: numbering may start over.
                            model.max_attempt = 0;
                            model.stored = None;
                        } else if attempt <= model.max_attempt {
                            v.attempts_not_rising += 1;
                        }
                        model.max_attempt = model.max_attempt.max(attempt);
                        let lease_ends = now + LEASE_MS;
                        model.remembered_until = lease_ends + TTL_MS;
                        for a in attempts.iter_mut().filter(|a| a.key == key) {
                            a.holds_key = false;
                        }
                        attempts.push(Attempt { key, attempt, lease_ends, holds_key: true, reporting: true });
                    }
                    Decision::Replay(Completed { response, .. }) => {
                        if model.stored.as_ref().map(|(r, _)| r) != Some(&response) {
                            v.replay_mismatches += 1;
                        }
                    }
                    Decision::InFlight { .. } | Decision::Mismatch => {}
                    Decision::Unreadable => unreachable!("records in memory always decode"),
                }
            }
            Action::Finish { pick, outcome } => {
                let Some(a) = reporting(&mut attempts, pick) else { continue };
                a.reporting = false;
                if real_now >= a.lease_ends + TTL_MS {
                    // An attempt reports back long before its record can be
                    // forgotten: the origin call is cut at the origin timeout,
                    // which is below the lease, and the TTL is at least 60 s.
                    // A report this late cannot happen. Measured in real time:
                    // a store clock that ran back does not make it possible.
                    continue;
                }
                let (key, attempt) = (a.key, a.attempt);
                // Superseded: another attempt took the key, or the store's
                // clock says the record is forgotten. A finish after the
                // lease ended is not superseded while nobody reclaimed.
                let superseded = !a.holds_key || now >= a.lease_ends + TTL_MS;
                let name = record_name(key);
                let before = store.peek(&name);
                let outcome = match outcome {
                    OutcomeKind::Created => Outcome::Answered(answer(201, key, attempt)),
                    OutcomeKind::ServerError => Outcome::Answered(answer(500, key, attempt)),
                    OutcomeKind::Unavailable => Outcome::Answered(answer(503, key, attempt)),
                    OutcomeKind::NotSent => Outcome::NotSent,
                    OutcomeKind::Unknown => Outcome::Unknown,
                };
                let model = keys.entry(key).or_default();
                let finished = now_or_never(store.finish(&name, attempt, outcome, now)).unwrap();
                match &finished {
                    Finished::Stored(done) => {
                        model.stored = Some((done.response.clone(), now + TTL_MS));
                        model.remembered_until = now + TTL_MS;
                    }
                    Finished::Released => model.remembered_until = now + TTL_MS,
                    Finished::LeaseKept | Finished::Stale => {}
                }
                // Stored or released, the attempt gave the key back; an
                // unknown outcome keeps holding it until the lease ends.
                if matches!(finished, Finished::Stored(_) | Finished::Released) {
                    a_release(&mut attempts, key, attempt);
                }
                if superseded && store.peek(&name) != before {
                    v.stale_writes += 1;
                }
                if !superseded && finished == Finished::Stale {
                    v.lost_finishes += 1;
                }
            }
            Action::Crash { pick } => {
                // The attempt never reports back; its lease keeps the key.
                if let Some(a) = reporting(&mut attempts, pick) {
                    a.reporting = false;
                }
            }
        }
    }
    v
}

fn a_release(attempts: &mut [Attempt], key: usize, attempt: u32) {
    for a in attempts.iter_mut().filter(|a| a.key == key && a.attempt == attempt) {
        a.holds_key = false;
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|c| c.parse().ok()).unwrap_or(3000),
        ..ProptestConfig::default()
    })]

    #[test]
    fn prop_atomic_store_keeps_every_invariant(actions in proptest::collection::vec(action(), 1..300)) {
        let store = MemoryStore::new(policy());
        prop_assert_eq!(run(&store, &actions), Violations::default());
    }
}

/// KV-only mode over Workers KV, simulated: reads may be up to
/// `lag_ms` stale (KV replicates eventually and caches misses), there is no
/// compare-and-set, and nothing marks a key as in flight.
struct EventuallyConsistentKv {
    lag_ms: u64,
    writes: RefCell<HashMap<RecordName, Vec<(u64, Completed)>>>,
    pending: RefCell<HashMap<(RecordName, u32), Fingerprint>>,
}

impl Store for EventuallyConsistentKv {
    type Error = Infallible;

    async fn begin(&self, name: &RecordName, fingerprint: Fingerprint, now_ms: u64) -> Result<Decision, Infallible> {
        // A reader sees only writes older than the replication lag.
        let visible = self.writes.borrow().get(name).and_then(|ws| {
            ws.iter().rev().find(|(at, _)| at.saturating_add(self.lag_ms) <= now_ms).map(|(_, c)| c.clone())
        });
        Ok(match visible.filter(|c| now_ms < c.expires_at) {
            Some(c) if c.fingerprint == fingerprint => Decision::Replay(c),
            Some(_) => Decision::Mismatch,
            None => {
                let attempt = self.pending.borrow().len() as u32 + 1;
                self.pending.borrow_mut().insert((*name, attempt), fingerprint);
                Decision::Execute { attempt, reclaimed: false }
            }
        })
    }

    async fn finish(
        &self,
        name: &RecordName,
        attempt: u32,
        outcome: Outcome,
        now_ms: u64,
    ) -> Result<Finished, Infallible> {
        let Some(fingerprint) = self.pending.borrow().get(&(*name, attempt)).copied() else {
            return Ok(Finished::Stale);
        };
        Ok(match outcome {
            Outcome::Answered(response) if response.plain().is_some_and(|r| r.status != 503) => {
                let done = Completed { fingerprint, attempt, response, expires_at: now_ms + TTL_MS, copied: false };
                self.writes.borrow_mut().entry(*name).or_default().push((now_ms, done.clone()));
                Finished::Stored(done)
            }
            Outcome::Unknown => Finished::LeaseKept,
            _ => Finished::Released,
        })
    }
}

impl ModelStore for EventuallyConsistentKv {
    fn peek(&self, _: &RecordName) -> Option<Record> {
        None
    }
}

/// Concurrent duplicates: every client sends each key, then the attempts
/// report back, with a little time passing in between.
fn duplicate_burst(seed: u64) -> Vec<Action> {
    let mut state = seed | 1;
    let mut rand = move |n: u64| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state % n
    };
    let mut actions = Vec::new();
    for _ in 0..50 {
        match rand(10) {
            0..=4 => actions.push(Action::Send { key: rand(4) as usize, other_body: false }),
            5..=7 => actions.push(Action::Finish { pick: rand(100) as usize, outcome: OutcomeKind::Created }),
            _ => actions.push(Action::Clock { delta_ms: rand(300) as i64 }),
        }
    }
    actions
}

#[test]
fn kv_only_mode_runs_concurrent_duplicates_twice() {
    let mut kv_doubles = 0;
    let mut atomic_doubles = 0;
    for seed in 0..200 {
        let actions = duplicate_burst(seed);
        let kv = EventuallyConsistentKv { lag_ms: 500, writes: RefCell::default(), pending: RefCell::default() };
        kv_doubles += run(&kv, &actions).double_executions;
        atomic_doubles += run(&MemoryStore::new(policy()), &actions).double_executions;
    }
    assert_eq!(atomic_doubles, 0, "the atomic store never runs a duplicate");
    assert!(kv_doubles > 0, "the KV-only model should find double executions");
    eprintln!("KV-only mode: {kv_doubles} double executions over 200 schedules; atomic store: 0");
}

#[test]
fn the_harness_catches_a_store_that_ignores_leases() {
    // Guard against a model that cannot fail: a store that always executes.
    struct Reckless;
    impl Store for Reckless {
        type Error = Infallible;
        async fn begin(&self, _: &RecordName, _: Fingerprint, _: u64) -> Result<Decision, Infallible> {
            Ok(Decision::Execute { attempt: 1, reclaimed: false })
        }
        async fn finish(&self, _: &RecordName, _: u32, _: Outcome, _: u64) -> Result<Finished, Infallible> {
            Ok(Finished::Stale)
        }
    }
    impl ModelStore for Reckless {
        fn peek(&self, _: &RecordName) -> Option<Record> {
            None
        }
    }
    let send = Action::Send { key: 0, other_body: false };
    let v = run(&Reckless, &[send.clone(), send]);
    assert_eq!(v.double_executions, 1);
    assert_eq!(v.attempts_not_rising, 1);
    let finish = Action::Finish { pick: 0, outcome: OutcomeKind::Created };
    assert_eq!(run(&Reckless, &[Action::Send { key: 0, other_body: false }, finish]).lost_finishes, 1);
}

#[test]
fn a_store_clock_that_runs_back_does_not_revive_a_late_report() {
    // Found by the property test in CI: key 3's first attempt, then its record
    // is forgotten and a new attempt 1 starts; the store clock runs back 2 ms
    // and the first attempt reports. Real time is past the point where that
    // report could still arrive, so the model must not count it as possible.
    let send = |key| Action::Send { key, other_body: false };
    let actions = [
        send(3),
        Action::Clock { delta_ms: (LEASE_MS + TTL_MS) as i64 },
        send(3),
        Action::Clock { delta_ms: -2 },
        Action::Finish { pick: 0, outcome: OutcomeKind::Created },
    ];
    assert_eq!(run(&MemoryStore::new(policy()), &actions), Violations::default());
}
