//! The world's state and its moves: request exchanges and queue deliveries
//! wired to real [`Coordinator`]s through the encoded store calls the hosts
//! send, a KV map, a scripted origin and handler, an operator, and a
//! virtual clock that jumps to the next deadline, pause or alarm.
//!
//! Each [`Move`] is one thing that may happen next: a store call arrives at
//! its object, an origin answers, a timer fires, a Worker dies. Everything a
//! host does between two such events (read the body, write the log line,
//! answer the caller) is performed at once, as the hosts do it without
//! giving anything else a turn that matters to the protocols.

use std::rc::Rc;

use super::properties::{self, Violation};
use crate::core::{
    Action, BodyRead, CallId, Config, ConsumerConfig, Coordinator, DeliveryAction, DeliveryExchange, Effects, Exchange,
    HandlerRun, Message, OriginResult, Record, RecordName, Reply, RequestHead, StoreCall, StoredAnswer, StoredResponse,
};

/// What the origin (or the queue's handler) does on one attempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Script {
    /// It answers with this status (a handler: 2xx is done, anything else
    /// failed).
    Status(u16),
    /// No answer comes back in time: it may still be running.
    NoAnswer,
}

/// A small world to explore: who takes part and which faults may happen,
/// each at most as often as its budget says.
#[derive(Clone, Debug)]
pub struct Setup {
    /// Its name, for the report.
    pub name: &'static str,
    /// Requests with one key (the same request, sent by separate callers).
    pub callers: usize,
    /// Deliveries of one queue message (published more than once).
    pub deliveries: usize,
    /// How often the queue may deliver the message again (after a retry, or
    /// a consumer that died).
    pub redeliveries: usize,
    /// What attempt `n` gets: `script[n - 1]`, the last one after that.
    pub script: Vec<Script>,
    /// How many Workers may die mid-attempt.
    pub crashes: usize,
    /// How many store replies may be lost or come too late (the caller
    /// gives up on its call; the call itself may still arrive).
    pub store_faults: usize,
    /// A call may arrive late: after its sender's time limit, a lease,
    /// even a TTL (else it arrives within its sender's limit or never).
    pub late_calls: bool,
    /// How many times the clock may jump ahead (by [`JUMP_MS`]).
    pub jumps: usize,
    /// An operator's release of the key (`Some(force)`), once.
    pub release: Option<bool>,
    /// How many times the runtime may evict an object from memory (its
    /// storage stays; its parked calls and alarm bookkeeping are lost).
    pub evictions: usize,
    /// The key's record starts as bytes no build can read.
    pub unreadable: bool,
    /// Answers are sealed at rest (a seal key is set; the hosts' cipher is
    /// the stand-in of `cipher.rs`).
    pub sealed: bool,
    /// The clock moves only when nothing else can happen (every call has
    /// arrived, every run has ended): calls and runs take no time. A
    /// smaller world, for more actors: the races with a lease's end are
    /// explored in the worlds where the clock moves freely.
    pub quiet_clock: bool,
}

/// How far a clock jump moves the clock: most of a lease.
pub const JUMP_MS: u64 = LEASE_MS * 6 / 10;
const LEASE_MS: u64 = 10_000;
const START_MS: u64 = 1_000_000;
/// How late a late call may be, past its sender's limit: beyond a lease and
/// a TTL (the world's are 10 s and 60 s), so it can meet the key begun again.
const LATE_MS: u64 = 75_000;
const ORDER: &[u8] = br#"{"item":"tea"}"#;

/// The world.
#[derive(Clone)]
pub struct World {
    config: Rc<Config>,
    /// The record every caller's request names (one key, one scope).
    request: RecordName,
    consumer: Rc<ConsumerConfig>,
    script: Rc<Vec<Script>>,
    unreadable: bool,
    quiet_clock: bool,
    late_calls: bool,
    /// The clock, in ms.
    pub now: u64,
    objects: Vec<Object>,
    kv: Vec<(RecordName, Record)>,
    actors: Vec<Actor>,
    transit: Vec<Transit>,
    /// The life of the key each actor's attempt ran in.
    lives: Vec<Option<u32>>,
    /// How many store calls each actor (and, last, the operator) has sent:
    /// a call's id is its sender's and its number, the same whatever
    /// happened elsewhere first.
    sent: Vec<CallId>,
    budget: Budget,
    /// Every run of the origin or the handler so far.
    pub runs: Vec<Run>,
    /// Every answer the store has held, per record, and which one it holds
    /// now (the properties compare replays with them).
    pub answers: properties::Answers,
}

/// One Durable Object: its coordinator, what its storage holds, its alarm,
/// and the calls parked in it.
#[derive(Clone, Debug)]
struct Object {
    name: RecordName,
    coordinator: Coordinator,
    stored: Option<Vec<u8>>,
    alarm: Option<u64>,
    parked: Vec<CallId>,
    /// How many times the key has been forgotten (expired) and begun anew:
    /// an attempt is its number within one life of the key.
    life: u32,
}

/// A store call on its way to its object (from an actor, or the operator).
/// It may arrive at any time up to its sender's time limit for it, even
/// after the sender gave up on it (a late call); past the limit it is lost:
/// a call does not arrive a lease or a TTL after it was sent.
#[derive(Clone, Debug)]
struct Transit {
    from: Option<usize>,
    id: CallId,
    name: RecordName,
    bytes: Vec<u8>,
    until: u64,
}

/// One run of the origin or the handler.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Run {
    /// The record it runs for.
    pub name: RecordName,
    /// Its attempt number.
    pub attempt: u32,
    /// When it started.
    pub started: u64,
    /// When its lease ends, as the record said when it started.
    pub lease_end: Option<u64>,
    /// Whether it has ended (a crashed Worker's run never does: the origin
    /// may go on).
    pub ended: bool,
    /// Whether its record has expired since: the key is no longer
    /// remembered, and its next request is a first one again (SPEC §4).
    pub forgotten: bool,
}

#[derive(Clone, Debug)]
struct Budget {
    crashes: usize,
    store_faults: usize,
    jumps: usize,
    release: Option<bool>,
    redeliveries: usize,
    evictions: usize,
}

#[derive(Clone, Debug)]
#[expect(clippy::large_enum_variant, reason = "every world is cloned whole: a box would only add an allocation")]
enum Actor {
    /// A request not sent yet.
    Caller,
    /// A queue delivery not started yet.
    Queued,
    Request {
        exchange: Exchange,
        wait: Wait,
        name: Option<RecordName>,
    },
    Delivery {
        delivery: DeliveryExchange,
        wait: Wait,
        name: Option<RecordName>,
        retried: bool,
    },
    Done,
    Crashed,
}

/// What an actor waits for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Wait {
    /// A store call's reply, until the host's time limit for it.
    Store {
        id: CallId,
        until: u64,
    },
    /// The origin's (or the handler's) answer, until the host's time limit.
    Run {
        attempt: u32,
        until: u64,
    },
    Pause(u64),
}

/// One thing that may happen next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Move {
    /// The next caller sends its request.
    Send,
    /// The queue delivers the message (again).
    Deliver,
    /// A store call in transit arrives at its object.
    Arrive(usize),
    /// An actor's origin or handler run ends as the script says.
    RunEnds(usize),
    /// An actor's store call gets no reply: lost, or late.
    StoreFault(usize),
    /// The host's time limit for an actor's store call or run has come.
    TimeLimit(usize),
    /// An actor's Worker dies.
    Crash(usize),
    /// A parked call's deadline has come: the object is woken.
    Wake(usize),
    /// An object's alarm runs.
    Alarm(usize),
    /// The runtime evicts an object from memory: a new instance loads the
    /// record from storage at its next call; the calls parked in the old
    /// one get no reply (their senders' time limits end them).
    Evict(usize),
    /// An actor's pause has ended.
    Resume(usize),
    /// The clock moves to the next deadline, pause, alarm or lease end.
    Tick,
    /// The clock jumps ahead by [`JUMP_MS`].
    Jump,
    /// The operator releases the key.
    Release,
}

impl World {
    /// The world of `setup`, at its start.
    ///
    /// # Panics
    /// The world's own configuration does not parse.
    pub fn new(setup: &Setup) -> Self {
        let seal_keys = if setup.sealed { "AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE=" } else { "" };
        let vars = [
            ("IDEMPOTENCY_LEASE_SECONDS", "10"),
            ("IDEMPOTENCY_ORIGIN_TIMEOUT_SECONDS", "5"),
            ("IDEMPOTENCY_TTL_SECONDS", "60"),
            ("IDEMPOTENCY_IN_FLIGHT_WAIT_MS", "10000"),
            ("IDEMPOTENCY_ADMIN_TOKEN", "model-operator-token-0123456789"),
            ("IDEMPOTENCY_SEAL_KEYS", seal_keys),
        ];
        let config = Config::from_vars(|name| vars.iter().find(|(k, _)| *k == name).map(|(_, v)| (*v).to_owned()))
            .expect("the world's configuration");
        let consumer = ConsumerConfig::new("loyalty", config.policy.records.clone());
        let answers = properties::Answers::new(config.seal_keys.clone());
        let mut actors = vec![Actor::Caller; setup.callers];
        actors.extend(std::iter::repeat_n(Actor::Queued, setup.deliveries));
        Self {
            request: request_name(&config),
            config: Rc::new(config),
            consumer: Rc::new(consumer),
            script: Rc::new(setup.script.clone()),
            unreadable: setup.unreadable,
            quiet_clock: setup.quiet_clock,
            late_calls: setup.late_calls,
            now: START_MS,
            objects: Vec::new(),
            kv: Vec::new(),
            actors,
            transit: Vec::new(),
            sent: vec![0; setup.callers + setup.deliveries + 1],
            lives: vec![None; setup.callers + setup.deliveries],
            budget: Budget {
                crashes: setup.crashes,
                store_faults: setup.store_faults,
                jumps: setup.jumps,
                release: setup.release,
                redeliveries: setup.redeliveries,
                evictions: setup.evictions,
            },
            runs: Vec::new(),
            answers,
        }
    }

    /// The actors, for a trace's reader.
    pub fn actors(&self) -> String {
        self.actors.iter().enumerate().map(|(i, a)| format!("  actor {i}: {a:?}\n")).collect()
    }

    /// The world's state as a string, for deduplication (the shared
    /// configuration left out).
    pub fn state(&self) -> String {
        let actors: Vec<String> = self
            .actors
            .iter()
            .map(|actor| match actor {
                Actor::Request { exchange, wait, name } => format!("R{}|{wait:?}|{name:?}", exchange.protocol_state()),
                Actor::Delivery { delivery, wait, name, retried } => {
                    format!("D{}|{wait:?}|{name:?}|{retried}", delivery.protocol_state())
                }
                other => format!("{other:?}"),
            })
            .collect();
        format!(
            "{}|{:?}|{:?}|{actors:?}|{:?}|{:?}|{:?}|{:?}|{:?}|{:?}",
            self.now, self.objects, self.kv, self.transit, self.sent, self.budget, self.runs, self.answers, self.lives
        )
    }

    /// Whether every actor has ended (answered, settled or crashed).
    pub fn every_actor_ended(&self) -> Result<(), Violation> {
        match self.actors.iter().position(|a| !matches!(a, Actor::Done | Actor::Crashed)) {
            None => Ok(()),
            Some(i) => Err(Violation::new("every-waiter-ends", format!("actor {i} never ended: {:?}", self.actors[i]))),
        }
    }

    /// The records the objects hold now (those that decode).
    pub fn stored_records(&self) -> Vec<Record> {
        self.objects.iter().filter_map(|o| o.stored.as_deref()).filter_map(|b| Record::decode(b).ok()).collect()
    }

    /// Every move that may happen next.
    pub fn moves(&self) -> Vec<Move> {
        let mut moves = Vec::new();
        // Callers are alike: the first one not yet sent stands for any.
        if self.actors.iter().any(|a| matches!(a, Actor::Caller)) {
            moves.push(Move::Send);
        }
        if self.actors.iter().any(|a| matches!(a, Actor::Queued)) {
            moves.push(Move::Deliver);
        }
        moves.extend((0..self.transit.len()).map(Move::Arrive));
        for (i, actor) in self.actors.iter().enumerate() {
            let wait = match actor {
                Actor::Request { wait, .. } | Actor::Delivery { wait, .. } => *wait,
                _ => continue,
            };
            match wait {
                Wait::Run { until, .. } | Wait::Store { until, .. } if until <= self.now => {
                    moves.push(Move::TimeLimit(i));
                }
                Wait::Run { .. } => moves.push(Move::RunEnds(i)),
                Wait::Store { .. } if self.budget.store_faults > 0 => moves.push(Move::StoreFault(i)),
                Wait::Pause(at) if at <= self.now => moves.push(Move::Resume(i)),
                _ => {}
            }
            if self.budget.crashes > 0 {
                moves.push(Move::Crash(i));
            }
        }
        for (o, object) in self.objects.iter().enumerate() {
            if object.parked.iter().any(|id| object.coordinator.deadline_of(*id).is_some_and(|d| d <= self.now)) {
                moves.push(Move::Wake(o));
            }
            if object.alarm.is_some_and(|at| at <= self.now) {
                moves.push(Move::Alarm(o));
            }
            if self.budget.evictions > 0 && !object.coordinator.needs_load() {
                moves.push(Move::Evict(o));
            }
        }
        let due = moves.iter().any(|m| match *m {
            Move::Wake(_) | Move::Alarm(_) | Move::Resume(_) | Move::TimeLimit(_) => true,
            // With a quiet clock a call someone waits for takes no time; a
            // call its sender gave up on may come whenever.
            Move::Arrive(t) => {
                let Transit { from, id, .. } = &self.transit[t];
                self.quiet_clock && from.is_none_or(|i| waits_on(&self.actors[i], *id))
            }
            _ => false,
        });
        if !due && self.next_event().is_some() {
            moves.push(Move::Tick);
        }
        if self.budget.jumps > 0 {
            moves.push(Move::Jump);
        }
        if self.budget.release.is_some() {
            moves.push(Move::Release);
        }
        moves
    }

    /// The next time something is due: a parked call's deadline, an alarm,
    /// a pause's end, a lease's end.
    fn next_event(&self) -> Option<u64> {
        let mut times = Vec::new();
        for object in &self.objects {
            times.extend(object.parked.iter().filter_map(|id| object.coordinator.deadline_of(*id)));
            times.extend(object.alarm);
            if let Some(Ok(Record::InFlight(r))) = object.stored.as_deref().map(Record::decode) {
                times.push(r.lease_expires_at);
            }
        }
        for actor in &self.actors {
            if let Actor::Request { wait, .. } | Actor::Delivery { wait, .. } = actor {
                times.push(match *wait {
                    Wait::Pause(at) | Wait::Run { until: at, .. } | Wait::Store { until: at, .. } => at,
                });
            }
        }
        times.into_iter().filter(|t| *t > self.now).min()
    }

    /// What `mv` does from this state, in words, for a trace.
    pub fn describe(&self, mv: Move) -> String {
        let at = self.now - START_MS;
        match mv {
            Move::Send => "a caller sends its request".into(),
            Move::Deliver => "the queue delivers the message".into(),
            Move::Arrive(t) => {
                let Transit { from, bytes, .. } = &self.transit[t];
                let who = from.map_or("the operator".to_owned(), |i| format!("actor {i}"));
                let call = StoreCall::decode(bytes).map_or("?".into(), |c| call_name(&c));
                format!("{who}'s {call} arrives at the object at {at}")
            }
            Move::RunEnds(i) => match self.actors[i] {
                Actor::Request { wait: Wait::Run { attempt, .. }, .. }
                | Actor::Delivery { wait: Wait::Run { attempt, .. }, .. } => {
                    let script = self.script[(attempt as usize - 1).min(self.script.len() - 1)];
                    format!("actor {i}'s attempt {attempt} ends at {at}: {script:?}")
                }
                _ => format!("{mv:?}"),
            },
            Move::StoreFault(i) => format!("actor {i}'s store call gets no reply (lost or late) at {at}"),
            Move::TimeLimit(i) => format!("actor {i}'s host stops waiting at its time limit, {at}"),
            Move::Crash(i) => format!("actor {i}'s Worker dies at {at}"),
            Move::Wake(_) => format!("the object wakes its parked calls at {at}"),
            Move::Alarm(_) => format!("the object's alarm runs at {at}"),
            Move::Evict(_) => format!("the runtime evicts the object from memory at {at}"),
            Move::Resume(i) => format!("actor {i}'s pause ends at {at}"),
            Move::Tick => format!("the clock moves to {}", self.next_event().map_or(0, |t| t - START_MS)),
            Move::Jump => format!("the clock jumps to {}", at + JUMP_MS),
            Move::Release => match self.budget.release {
                Some(true) => "the operator sends a forced release".into(),
                _ => "the operator sends a release".into(),
            },
        }
    }

    /// Performs `mv`, or says which property it broke.
    pub fn apply(&mut self, mv: Move) -> Result<(), Violation> {
        match mv {
            Move::Send => {
                let i = self.actors.iter().position(|a| matches!(a, Actor::Caller)).expect("a caller");
                let (exchange, action) = Exchange::start(Rc::clone(&self.config), request_head(i), self.now);
                self.drive(i, exchange, None, action)?;
            }
            Move::Deliver => {
                let i = self.actors.iter().position(|a| matches!(a, Actor::Queued)).expect("a delivery");
                let message = Message {
                    id: "m-1".into(),
                    body: Ok(crate::core::MessageBody::Value(b"{}".to_vec())),
                    timestamp_ms: START_MS,
                };
                let (delivery, action) = DeliveryExchange::start(&self.consumer, message, None);
                self.drive_delivery(i, delivery, None, false, action)?;
            }
            Move::Arrive(t) => self.arrive(t)?,
            Move::RunEnds(i) => self.run_ends(i, false)?,
            Move::TimeLimit(i) => self.time_limit(i)?,
            Move::StoreFault(i) => {
                self.budget.store_faults -= 1;
                self.resume_store(i, Err("the store call timed out".into()))?;
            }
            Move::Crash(i) => {
                self.budget.crashes -= 1;
                let queued = matches!(self.actors[i], Actor::Delivery { .. });
                self.actors[i] = if queued && self.budget.redeliveries > 0 {
                    self.budget.redeliveries -= 1;
                    Actor::Queued
                } else {
                    Actor::Crashed
                };
            }
            Move::Wake(o) => {
                let effects = self.objects[o].coordinator.wake(self.now);
                self.effects(o, effects, None)?;
            }
            Move::Alarm(o) => {
                // A new instance reads its record before the alarm runs.
                let object = &mut self.objects[o];
                if object.coordinator.needs_load() {
                    object.coordinator.load(object.stored.as_deref());
                }
                self.objects[o].alarm = None;
                let effects = self.objects[o].coordinator.alarm(self.now);
                if effects.delete_all {
                    self.forget(self.objects[o].name);
                }
                self.effects(o, effects, None)?;
            }
            Move::Evict(o) => {
                self.budget.evictions -= 1;
                let object = &mut self.objects[o];
                object.coordinator = Coordinator::new();
                object.parked.clear();
            }
            Move::Resume(i) => match self.actors[i].clone() {
                Actor::Request { exchange: mut ex, name, .. } => {
                    let action = ex.paused(self.now);
                    self.drive(i, ex, name, action)?;
                }
                Actor::Delivery { delivery: mut d, name, retried, .. } => {
                    let action = d.paused();
                    self.drive_delivery(i, d, name, retried, action)?;
                }
                _ => unreachable!("only a pausing actor resumes"),
            },
            Move::Tick => {
                self.set_clock(self.next_event().expect("a tick has somewhere to go"));
            }
            Move::Jump => {
                self.budget.jumps -= 1;
                self.set_clock(self.now + JUMP_MS);
            }
            Move::Release => {
                let force = self.budget.release.take().expect("a release");
                let name = self.request;
                // Never `completed`: forgetting an answer runs the request
                // again by design, which the model's at-most-once check forbids.
                let policy = self.config.policy.records.clone();
                let call = StoreCall::Release { policy, force, completed: false, open_keys: vec![] };
                self.send(None, name, &call, u64::MAX);
            }
        };
        self.answers.check(self.objects.iter().map(|o| (o.name, o.stored.as_deref())))
    }

    fn send(&mut self, from: Option<usize>, name: RecordName, call: &StoreCall, until: u64) -> CallId {
        let sender = from.unwrap_or(self.sent.len() - 1);
        self.sent[sender] += 1;
        let id = (sender as CallId + 1) * 1_000 + self.sent[sender];
        let until = if self.late_calls { until + LATE_MS } else { until };
        self.transit.push(Transit { from, id, name, bytes: call.encode(), until });
        id
    }

    /// The clock moves to `now`: calls past their time limit are lost.
    fn set_clock(&mut self, now: u64) {
        self.now = now;
        self.transit.retain(|t| t.until >= now);
    }

    fn object(&mut self, name: RecordName) -> usize {
        if let Some(o) = self.objects.iter().position(|o| o.name == name) {
            return o;
        }
        let stored = (self.unreadable && name == self.request).then(|| b"OK\xff\x01newer".to_vec());
        self.objects.push(Object {
            name,
            coordinator: Coordinator::new(),
            stored,
            alarm: None,
            parked: Vec::new(),
            life: 0,
        });
        self.objects.len() - 1
    }

    /// The store forgets a record (it expired): its answer and its runs
    /// belong to a key no longer remembered.
    fn forget(&mut self, name: RecordName) {
        self.answers.forget(name);
        if let Some(object) = self.objects.iter_mut().find(|o| o.name == name) {
            object.life += 1;
        }
        for run in self.runs.iter_mut().filter(|r| r.name == name) {
            run.forgotten = true;
        }
    }

    fn arrive(&mut self, t: usize) -> Result<(), Violation> {
        let Transit { from, id, name, bytes, .. } = self.transit.remove(t);
        let call = StoreCall::decode(&bytes).expect("the world sends only calls that decode");
        let o = self.object(name);
        let object = &mut self.objects[o];
        if object.coordinator.needs_load() {
            object.coordinator.load(object.stored.as_deref());
        }
        let before = object.stored.clone();
        let expired = matches!(before.as_deref().map(Record::decode), Some(Ok(r)) if !r.is_live(self.now));
        let effects = object.coordinator.call(id, &bytes, self.now).expect("a call that decodes");
        if !effects.replies.iter().any(|r| r.to.contains(&id)) {
            object.parked.push(id);
        }
        if expired {
            self.forget(name);
        }
        if let StoreCall::Release { .. } = call {
            self.answers.forget(name);
            // A release of an attempt in flight (forced, or of an unknown
            // outcome) is the operator saying it is dead: its lease ends now
            // (SPEC §12), its number stays used.
            let running = matches!(before.as_deref().map(Record::decode), Some(Ok(Record::InFlight(_))));
            if running && effects.put.is_some() {
                for run in self.runs.iter_mut().filter(|r| r.name == name) {
                    run.lease_end = None;
                }
            }
        }
        // A finish from an earlier life of the key is another attempt's,
        // whatever its number.
        let earlier = from.is_some_and(|i| self.lives[i].is_some_and(|life| life != self.objects[o].life));
        let finish = match &call {
            StoreCall::Finish { attempt, .. } => Some((*attempt, earlier, before)),
            _ => None,
        };
        self.effects(o, effects, finish)
    }

    /// The host's time limit for a store call or a run has come.
    fn time_limit(&mut self, i: usize) -> Result<(), Violation> {
        match self.actors[i] {
            Actor::Request { wait: Wait::Run { .. }, .. } | Actor::Delivery { wait: Wait::Run { .. }, .. } => {
                self.run_ends(i, true)
            }
            _ => self.resume_store(i, Err("the store's time limit passed".into())),
        }
    }

    /// Performs an object's effects: the write, the alarm, then each reply.
    fn effects(
        &mut self,
        o: usize,
        effects: Effects,
        finish: Option<(u32, bool, Option<Vec<u8>>)>,
    ) -> Result<(), Violation> {
        let object = &mut self.objects[o];
        if effects.delete_all {
            object.stored = None;
        }
        if let Some(record) = &effects.put {
            object.stored = Some(record.encode());
        }
        if let Some(at) = effects.set_alarm {
            object.alarm = Some(at);
        }
        if let Some((attempt, earlier_life, before)) = finish {
            properties::finish_keeps_later_attempts(
                attempt,
                earlier_life,
                before.as_deref(),
                object.stored.as_deref(),
            )?;
        }
        // What the store holds now, before any reply is compared with it.
        self.answers.check(std::iter::once((object.name, object.stored.as_deref())))?;
        let replies: Vec<(CallId, Vec<u8>)> =
            effects.replies.into_iter().flat_map(|r| r.to.into_iter().map(move |id| (id, r.bytes.clone()))).collect();
        object.parked.retain(|id| !replies.iter().any(|(to, _)| to == id));
        for (id, bytes) in replies {
            if let Some(i) = self.actors.iter().position(|a| waits_on(a, id)) {
                self.resume_store(i, Ok(bytes))?;
            }
        }
        Ok(())
    }

    fn resume_store(&mut self, i: usize, reply: Result<Vec<u8>, String>) -> Result<(), Violation> {
        match self.actors[i].clone() {
            Actor::Request { exchange: mut ex, name, .. } => {
                let action = ex.store_answered(reply, self.now);
                self.drive(i, ex, name, action)
            }
            Actor::Delivery { delivery: mut d, name, retried, .. } => {
                let action = d.store_answered(reply, self.now);
                self.drive_delivery(i, d, name, retried, action)
            }
            _ => unreachable!("only a waiting actor gets a reply"),
        }
    }

    /// A run ends as the script says, or the host stops waiting for it
    /// (`timed_out`: the origin may still be running).
    fn run_ends(&mut self, i: usize, timed_out: bool) -> Result<(), Violation> {
        let (attempt, name) = match &self.actors[i] {
            Actor::Request { wait: Wait::Run { attempt, .. }, name, .. }
            | Actor::Delivery { wait: Wait::Run { attempt, .. }, name, .. } => {
                (*attempt, name.expect("a run has a record"))
            }
            _ => unreachable!("only a running actor's run ends"),
        };
        let script =
            if timed_out { Script::NoAnswer } else { self.script[(attempt as usize - 1).min(self.script.len() - 1)] };
        if script != Script::NoAnswer
            && let Some(run) = self.runs.iter_mut().rfind(|r| r.name == name && r.attempt == attempt)
        {
            run.ended = true;
        }
        match self.actors[i].clone() {
            Actor::Request { exchange: mut ex, .. } => {
                let result = match script {
                    Script::Status(status) => OriginResult::Answered {
                        status,
                        headers: vec![("content-type".into(), "application/json".into())],
                        body: format!(r#"{{"attempt":{attempt}}}"#).into_bytes(),
                    },
                    Script::NoAnswer => OriginResult::NoAnswer("the origin's time limit passed".into()),
                };
                let action = ex.origin_answered(result, self.now);
                self.drive(i, ex, Some(name), action)?;
            }
            Actor::Delivery { delivery: mut d, retried, .. } => {
                let run = match script {
                    Script::Status(200..=299) => HandlerRun::Done,
                    Script::Status(_) => HandlerRun::Failed,
                    Script::NoAnswer => HandlerRun::StillRunning,
                };
                let action = d.handler_ended(run, None);
                self.drive_delivery(i, d, Some(name), retried, action)?;
            }
            _ => unreachable!(),
        }
        Ok(())
    }

    /// Performs a request exchange's actions until it waits for the world.
    fn drive(
        &mut self,
        i: usize,
        mut ex: Exchange,
        mut name: Option<RecordName>,
        mut action: Action,
    ) -> Result<(), Violation> {
        let now = self.now;
        let wait = loop {
            action = match action {
                Action::ReadBody { .. } => ex.body_read(BodyRead::Complete(ORDER.to_vec()), now),
                Action::ReadCopy { name, .. } => {
                    let found = self.kv.iter().find(|(n, _)| *n == name).map(|(_, r)| r.clone());
                    ex.copy_read(Ok(found), now)
                }
                Action::Detach => ex.detached(now),
                Action::Store { name: record, call, timeout_ms } => {
                    assert!(record == self.request, "the operator and the world name the callers' record");
                    name = Some(record);
                    let until = now + timeout_ms;
                    break Wait::Store { id: self.send(Some(i), record, &call, until), until };
                }
                Action::CallOrigin { attempt, timeout_ms, .. } => {
                    self.run_starts(i, name.expect("a begin named the record"), attempt)?;
                    break Wait::Run { attempt, until: now + timeout_ms };
                }
                // A pause of 0 ms is a moment a Worker may die in (after the
                // answer, before the finish); with no death to explore, none.
                Action::Pause { ms: 0 } if self.budget.crashes == 0 => ex.paused(now),
                Action::Pause { ms } => break Wait::Pause(now + ms),
                Action::Forward { .. } => ex.forwarded(Ok((200, Vec::new())), now),
                Action::Respond(reply) => {
                    self.answered(name, &reply)?;
                    ex.responded(now)
                }
                Action::Log(_) => ex.logged(now),
                Action::Metric(_) => ex.metric_written(now),
                Action::WriteCopy { name, completed } => {
                    self.kv.retain(|(n, _)| *n != name);
                    self.kv.push((name, Record::Completed(completed)));
                    ex.copy_written(now)
                }
                // Sealing is local work, no moment to die in: the stand-in
                // cipher, with one nonce (states that differ only by a
                // nonce are one state).
                Action::Cipher(call) => ex.ciphered(super::cipher::perform(&call, 0), now),
                Action::Done => {
                    self.actors[i] = Actor::Done;
                    return Ok(());
                }
            };
        };
        self.actors[i] = Actor::Request { exchange: ex, wait, name };
        Ok(())
    }

    /// Performs a delivery's actions until it waits for the world.
    fn drive_delivery(
        &mut self,
        i: usize,
        mut d: DeliveryExchange,
        mut name: Option<RecordName>,
        mut retried: bool,
        mut action: DeliveryAction,
    ) -> Result<(), Violation> {
        let wait = loop {
            action = match action {
                DeliveryAction::Store { name: record, call, timeout_ms } => {
                    name = Some(record);
                    let until = self.now + timeout_ms;
                    break Wait::Store { id: self.send(Some(i), record, &call, until), until };
                }
                DeliveryAction::RunHandler { event, timeout_ms } => {
                    self.run_starts(i, name.expect("a begin named the record"), event.attempt)?;
                    break Wait::Run { attempt: event.attempt, until: self.now + timeout_ms };
                }
                DeliveryAction::Ack => d.settled(),
                DeliveryAction::Retry { .. } => {
                    retried = true;
                    d.settled()
                }
                DeliveryAction::Pause { ms } => break Wait::Pause(self.now + ms),
                DeliveryAction::Log(_) => d.logged(),
                DeliveryAction::Done => {
                    self.actors[i] = if retried && self.budget.redeliveries > 0 {
                        self.budget.redeliveries -= 1;
                        Actor::Queued
                    } else {
                        Actor::Done
                    };
                    return Ok(());
                }
            };
        };
        self.actors[i] = Actor::Delivery { delivery: d, wait, name, retried };
        Ok(())
    }

    /// An origin or handler run starts: no attempt number twice, and none
    /// while another attempt's lease lives.
    fn run_starts(&mut self, actor: usize, name: RecordName, attempt: u32) -> Result<(), Violation> {
        let life = self.objects.iter().find(|o| o.name == name).map_or(0, |o| o.life);
        self.lives[actor] = Some(life);
        let stored = self.objects.iter().find(|o| o.name == name).and_then(|o| o.stored.as_deref());
        let lease_end = match stored.map(Record::decode) {
            Some(Ok(Record::InFlight(r))) if r.attempt == attempt => Some(r.lease_expires_at),
            _ => None,
        };
        let run = Run { name, attempt, started: self.now, lease_end, ended: false, forgotten: false };
        properties::run_may_start(&self.runs, &run)?;
        self.runs.push(run);
        Ok(())
    }

    /// A caller is answered: a replay must be the stored answer.
    fn answered(&self, name: Option<RecordName>, reply: &Reply) -> Result<(), Violation> {
        let stored = name.and_then(|n| self.objects.iter().find(|o| o.name == n)).and_then(|o| o.stored.as_deref());
        properties::unreadable_fails_closed(stored, reply)?;
        let replayed = reply.headers.iter().any(|(k, v)| k.eq_ignore_ascii_case("idempotent-replayed") && v == "true");
        match name {
            Some(name) if replayed => self.answers.replay_is_stored(name, reply),
            _ => Ok(()),
        }
    }
}

/// The record name of the callers' key, as the exchange names it (every
/// caller sends the same key in the same scope).
fn request_name(config: &Config) -> RecordName {
    let key = crate::core::IdempotencyKey::parse("order-1").expect("a key");
    let head = request_head(0);
    RecordName::new(&head.host, &config.scope, |n| head.header(n), &key)
}

/// Caller `i`'s request: every caller sends the same one, with its own
/// reservation number.
fn request_head(i: usize) -> RequestHead {
    RequestHead {
        method: "POST".into(),
        host: "shop.example".into(),
        path: "/api/orders".into(),
        key: Some(b"order-1".to_vec()),
        headers: vec![("content-type".into(), "application/json".into())],
        reservation: i as u64 + 1,
        ..RequestHead::default()
    }
}

fn waits_on(actor: &Actor, id: CallId) -> bool {
    matches!(actor, Actor::Request { wait: Wait::Store { id: w, .. }, .. } | Actor::Delivery { wait: Wait::Store { id: w, .. }, .. } if *w == id)
}

fn call_name(call: &StoreCall) -> String {
    match call {
        StoreCall::Begin { reservation, .. } => format!("begin (reservation {reservation})"),
        StoreCall::Finish { attempt, outcome, .. } => {
            format!("finish of attempt {attempt} ({})", outcome_name(outcome))
        }
        StoreCall::Abandon { reservation, .. } => format!("abandon of reservation {reservation}"),
        StoreCall::Inspect => "inspect".into(),
        StoreCall::Release { force, .. } => format!("release (force: {force})"),
    }
}

fn outcome_name(outcome: &crate::core::Outcome) -> String {
    match outcome {
        crate::core::Outcome::Answered(StoredAnswer::Plain(StoredResponse { status, .. })) => {
            format!("answered {status}")
        }
        other => format!("{other:?}"),
    }
}
