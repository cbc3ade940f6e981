//! Model check of the coordinator's protocol (SPEC §3): one Durable
//! Object's [`Coordinator`] under random schedules of duplicates that wait,
//! attempts that finish in every way (or never), timers that fire late,
//! alarms and a moving clock, on a virtual clock.
//!
//! Invariants, after every step: at most one attempt holds the key at a
//! time (a new attempt is granted only once every earlier one has
//! finished or its lease has ended); attempt numbers only rise; a stored
//! answer never changes; and at the end every call has exactly one reply,
//! with nobody left waiting.

use std::collections::HashMap;

use oncekey::core::{
    CallId, Coordinator, Decision, Effects, Fingerprint, Outcome, RecordPolicy, StoreCall, StoredAnswer,
    StoredResponse, decode_decision,
};
use proptest::prelude::*;

const LEASE_MS: u64 = 1_000;
/// Long enough that nothing expires within a schedule: a stored answer must
/// then stay the same to the end.
const TTL_MS: u64 = 10_000_000;

fn policy() -> RecordPolicy {
    RecordPolicy { lease_ms: LEASE_MS, ttl_ms: TTL_MS, release_on: vec![503] }
}

#[derive(Clone, Debug)]
enum Step {
    /// A duplicate arrives, willing to wait `wait_ms` (0: answer at once).
    Begin { wait_ms: u64 },
    /// A granted attempt that has not reported yet reports, in one of the
    /// ways an attempt ends.
    Finish { pick: usize, how: How },
    /// The clock moves forward.
    Clock { ms: u64 },
    /// A waiter's timer fires (the host arms one per parked call).
    Timer,
    /// The expiry alarm runs.
    Alarm,
}

#[derive(Clone, Copy, Debug)]
enum How {
    Created,
    Failed,
    Unavailable,
    NotSent,
    Unknown,
}

fn step() -> impl Strategy<Value = Step> {
    let how = prop_oneof![
        2 => Just(How::Created),
        1 => Just(How::Failed),
        2 => Just(How::Unavailable),
        1 => Just(How::NotSent),
        1 => Just(How::Unknown),
    ];
    prop_oneof![
        6 => prop_oneof![Just(0u64), Just(300), Just(5_000)].prop_map(|wait_ms| Step::Begin { wait_ms }),
        3 => (any::<usize>(), how).prop_map(|(pick, how)| Step::Finish { pick, how }),
        3 => prop_oneof![0u64..200, 200u64..1_500].prop_map(|ms| Step::Clock { ms }),
        2 => Just(Step::Timer),
        1 => Just(Step::Alarm),
    ]
}

/// A granted attempt.
struct Grant {
    attempt: u32,
    lease_ends: u64,
    /// Whether its finish reached the object.
    finished: bool,
}

struct Model {
    object: Coordinator,
    now: u64,
    next_id: CallId,
    issued: Vec<CallId>,
    replies: HashMap<CallId, usize>,
    grants: Vec<Grant>,
    stored: Option<(u32, StoredAnswer)>,
}

impl Model {
    fn apply(&mut self, effects: Effects) {
        for reply in effects.replies {
            for id in reply.to {
                *self.replies.entry(id).or_default() += 1;
                // Finish replies are not decisions; begins have even ids.
                if id % 2 == 1 {
                    continue;
                }
                match decode_decision(&reply.bytes).expect("a begin's reply is a decision") {
                    Decision::Execute { attempt, .. } => {
                        for g in &self.grants {
                            assert!(
                                g.finished || self.now >= g.lease_ends,
                                "attempt {attempt} granted at {} while attempt {} holds the key until {}",
                                self.now,
                                g.attempt,
                                g.lease_ends
                            );
                            assert!(attempt > g.attempt, "attempt numbers rise");
                        }
                        assert!(self.stored.is_none(), "an attempt after an answer was stored");
                        self.grants.push(Grant { attempt, lease_ends: self.now + LEASE_MS, finished: false });
                    }
                    Decision::Replay(completed) => {
                        let stored = self.stored.as_ref().expect("a replay of a stored answer");
                        assert_eq!((completed.attempt, &completed.response), (stored.0, &stored.1), "it never changes");
                    }
                    Decision::InFlight { .. } => {}
                    Decision::Mismatch => panic!("one request only"),
                    Decision::Unreadable => panic!("every record here decodes"),
                }
            }
        }
    }

    fn call(&mut self, call: StoreCall, finish: bool) {
        // Begins take even ids, finishes odd ones.
        let id = self.next_id * 2 + u64::from(finish);
        self.next_id += 1;
        self.issued.push(id);
        let effects = self.object.call(id, &call.encode(), self.now).expect("a store call");
        self.apply(effects);
    }
}

fn run(steps: Vec<Step>) {
    let mut m = Model {
        object: Coordinator::new(),
        now: 1_000_000,
        next_id: 0,
        issued: Vec::new(),
        replies: HashMap::new(),
        grants: Vec::new(),
        stored: None,
    };
    m.object.load(None);
    let fingerprint = Fingerprint([7; 32]);
    for step in steps {
        match step {
            Step::Begin { wait_ms } => {
                m.call(
                    StoreCall::Begin {
                        policy: policy(),
                        fingerprint,
                        wait_ms,
                        reservation: 0,
                        open_keys: Some(Vec::new()),
                    },
                    false,
                );
            }
            Step::Finish { pick, how } => {
                let open: Vec<usize> = (0..m.grants.len()).filter(|&i| !m.grants[i].finished).collect();
                let Some(&i) = open.get(pick % open.len().max(1)) else { continue };
                m.grants[i].finished = true;
                let attempt = m.grants[i].attempt;
                let answer = |status: u16| StoredResponse {
                    status,
                    headers: vec![],
                    body: Some(attempt.to_be_bytes().to_vec()),
                };
                let outcome = match how {
                    How::Created => Outcome::Answered(answer(201).into()),
                    How::Failed => Outcome::Answered(answer(500).into()),
                    How::Unavailable => Outcome::Answered(answer(503).into()),
                    How::NotSent => Outcome::NotSent,
                    How::Unknown => Outcome::Unknown,
                };
                // Only the attempt still holding the record stores its answer.
                let holds = m.grants.iter().all(|g| g.attempt <= attempt);
                if holds
                    && let Outcome::Answered(a) = &outcome
                    && a.plain().is_some_and(|a| a.status != 503)
                {
                    m.stored = Some((attempt, a.clone()));
                }
                m.call(StoreCall::Finish { policy: policy(), attempt, reservation: 0, outcome }, true);
            }
            Step::Clock { ms } => m.now += ms,
            Step::Timer => {
                let effects = m.object.wake(m.now);
                m.apply(effects);
            }
            Step::Alarm => {
                let effects = m.object.alarm(m.now);
                assert!(!effects.delete_all, "nothing expires within a schedule");
                m.apply(effects);
            }
        }
    }
    // Every waiter ends: its timer fires at the latest at its deadline.
    for _ in 0..3 {
        m.now += 10_000;
        let effects = m.object.wake(m.now);
        m.apply(effects);
    }
    assert_eq!(m.object.waiting(), 0, "every waiter ended");
    for id in &m.issued {
        assert_eq!(m.replies.get(id), Some(&1), "call {id} has exactly one reply");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2_000, ..ProptestConfig::default() })]

    #[test]
    fn one_attempt_at_a_time_and_every_waiter_ends(steps in prop::collection::vec(step(), 1..80)) {
        run(steps);
    }
}

/// The schedule of the issue: a slow first attempt, eight waiters, a 503
/// release; then attempt 2 stores its answer.
#[test]
fn eight_waiters_and_a_release() {
    let mut steps = vec![Step::Begin { wait_ms: 5_000 }];
    steps.extend((0..8).map(|_| Step::Begin { wait_ms: 5_000 }));
    steps.push(Step::Clock { ms: 500 });
    steps.push(Step::Finish { pick: 0, how: How::Unavailable });
    steps.push(Step::Finish { pick: 0, how: How::Created });
    run(steps);
}
