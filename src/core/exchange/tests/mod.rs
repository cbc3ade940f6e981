//! The exchange driven end to end as the hosts drive it: its store calls
//! encoded and answered by a real [`Coordinator`] per record (as the
//! Durable Object runs it; a parked call is woken at its deadline), a KV
//! map, a scripted origin. Each row pins one rule the hosts used to decide
//! themselves; every interleaving of many exchanges is the model's
//! (`crate::core::world`).

#[cfg(target_arch = "wasm32")]
use wasm_bindgen_test::wasm_bindgen_test as test;

use std::collections::HashMap;
use std::rc::Rc;

use super::*;
use crate::core::{Config, Coordinator, DataPoint, Decision, Finished, Problem, Record, RecordName, StoreCall};

/// The stand-ins an exchange runs against, and what it did to them.
struct World {
    config: Rc<Config>,
    /// Each record's coordinator object, as the hosts' Durable Objects run it.
    objects: HashMap<RecordName, Coordinator>,
    /// What each object last put in its storage, encoded.
    stored: HashMap<RecordName, Vec<u8>>,
    /// The last store call's id.
    calls_sent: u64,
    kv: HashMap<RecordName, Record>,
    /// Store calls that fail before the store sees them, in turn.
    store_failures: usize,
    kv_fails: bool,
    origin: Box<dyn FnMut(u32) -> OriginResult>,
    calls: Vec<u32>,
    /// Reservations the exchange gave back.
    abandoned: Vec<u64>,
    /// Data points written, in order.
    points: Vec<DataPoint>,
    /// The status and headers of what an unprotected forward gets back.
    forwarded_status: u16,
    forwarded_headers: Vec<(String, String)>,
    /// Steps whose next performance throws instead ([`Exchange::step_failed`]).
    throw_at: Vec<&'static str>,
    now: u64,
}

/// What one exchange did.
#[derive(Debug)]
struct Run {
    /// The actions' names, in order.
    steps: Vec<&'static str>,
    reply: Reply,
    log: serde_json::Value,
    edits: Vec<HeaderEdit>,
    forwarded_body: Option<Option<Vec<u8>>>,
    /// The body the last origin call sent.
    origin_body: Option<Vec<u8>>,
}

fn created() -> OriginResult {
    OriginResult::Answered {
        status: 201,
        headers: vec![("content-type".into(), "application/json".into()), ("set-cookie".into(), "s=1".into())],
        body: br#"{"orderId":"o1"}"#.to_vec(),
    }
}

impl World {
    fn new(vars: &[(&str, &str)]) -> Self {
        Self {
            objects: HashMap::new(),
            stored: HashMap::new(),
            calls_sent: 0,
            config: configured(vars),
            kv: HashMap::new(),
            store_failures: 0,
            kv_fails: false,
            origin: Box::new(|_| created()),
            calls: Vec::new(),
            abandoned: Vec::new(),
            points: Vec::new(),
            forwarded_status: 200,
            forwarded_headers: vec![("content-type".into(), "text/plain".into())],
            throw_at: Vec::new(),
            now: 1_000,
        }
    }

    /// One call to `name`'s object, answered at once or, parked behind a
    /// running attempt, at its deadline (the clock moves there).
    fn object_call(&mut self, name: RecordName, call: &StoreCall) -> Vec<u8> {
        self.calls_sent += 1;
        let id = self.calls_sent;
        let object = self.objects.entry(name).or_insert_with(|| {
            let mut object = Coordinator::new();
            object.load(None);
            object
        });
        let mut effects = object.call(id, &call.encode(), self.now).expect("the exchange's call decodes");
        while !effects.replies.iter().any(|r| r.to.contains(&id)) {
            if let Some(put) = &effects.put {
                self.stored.insert(name, put.encode());
            }
            self.now = object.deadline_of(id).expect("a call with no reply is parked");
            effects = object.wake(self.now);
        }
        if let Some(put) = &effects.put {
            self.stored.insert(name, put.encode());
        }
        effects.replies.into_iter().find(|r| r.to.contains(&id)).map(|r| r.bytes).expect("its reply")
    }

    fn fail_store(&mut self) -> bool {
        let fail = self.store_failures > 0;
        self.store_failures = self.store_failures.saturating_sub(1);
        fail
    }

    /// Drives one request to its end, performing every action.
    fn run(&mut self, head: RequestHead, body: BodyRead) -> Run {
        let (mut exchange, mut action) = Exchange::start(Rc::clone(&self.config), head, self.now);
        let mut body = Some(body);
        let (mut steps, mut reply, mut edits, mut forwarded_body) = (Vec::new(), None, Vec::new(), None);
        let mut origin_body = None;
        let mut log = serde_json::Value::Null;
        loop {
            self.now += 1;
            let now = self.now;
            let name = step_name(&action);
            if let Some(i) = self.throw_at.iter().position(|s| *s == name) {
                self.throw_at.remove(i);
                steps.extend([name, "threw"]);
                if let Action::Respond(r) = action {
                    reply = Some(r);
                }
                action = exchange.step_failed(format!("{name} threw"), now);
                continue;
            }
            action = match action {
                Action::ReadBody { .. } => {
                    steps.push("read-body");
                    exchange.body_read(body.take().expect("the body is read once"), now)
                }
                Action::ReadCopy { name, .. } => {
                    steps.push("read-copy");
                    let found = if self.kv_fails { Err("kv down".into()) } else { Ok(self.kv.get(&name).cloned()) };
                    exchange.copy_read(found, now)
                }
                Action::Detach => {
                    steps.push("detach");
                    exchange.detached(now)
                }
                Action::Store { name, call, timeout_ms } => {
                    // Every call as the object answers it: encoded, decided
                    // by the coordinator, its reply decoded by the exchange.
                    assert!(timeout_ms >= self.config.policy.store_timeout_ms);
                    steps.push(match call {
                        StoreCall::Begin { .. } => "begin",
                        StoreCall::Finish { .. } => "finish",
                        StoreCall::Inspect => "inspect",
                        StoreCall::Release { .. } => "release",
                        StoreCall::Abandon { .. } => "abandon",
                    });
                    if let StoreCall::Abandon { reservation, .. } = call {
                        self.abandoned.push(reservation);
                    }
                    let reply = if self.fail_store() {
                        Err("store exploded".to_owned())
                    } else {
                        Ok(self.object_call(name, &call))
                    };
                    exchange.store_answered(reply, self.now)
                }
                Action::CallOrigin { attempt, edits: e, body, .. } => {
                    steps.push("call-origin");
                    self.calls.push(attempt);
                    edits = e;
                    origin_body = Some(body);
                    let result = (self.origin)(attempt);
                    exchange.origin_answered(result, now)
                }
                Action::Pause { .. } => {
                    steps.push("pause");
                    exchange.paused(now)
                }
                Action::Forward { edits: e, body, .. } => {
                    steps.push("forward");
                    edits = e;
                    forwarded_body = Some(body);
                    exchange.forwarded(Ok((self.forwarded_status, self.forwarded_headers.clone())), now)
                }
                Action::Respond(r) => {
                    steps.push("respond");
                    reply = Some(r);
                    exchange.responded(now)
                }
                Action::Log(line) => {
                    steps.push("log");
                    log = serde_json::from_str(&line).unwrap();
                    exchange.logged(now)
                }
                Action::Metric(point) => {
                    steps.push("metric");
                    self.points.push(point);
                    exchange.metric_written(now)
                }
                Action::WriteCopy { name, completed } => {
                    steps.push("write-copy");
                    self.kv.insert(name, Record::Completed(completed));
                    exchange.copy_written(now)
                }
                Action::Cipher(call) => {
                    steps.push(match call.op {
                        CipherOp::Seal => "seal",
                        CipherOp::Open => "open",
                    });
                    exchange.ciphered(crate::core::world::cipher::perform(&call, now), now)
                }
                Action::Done => break,
            };
        }
        Run { steps, reply: reply.expect("every exchange answers"), log, edits, forwarded_body, origin_body }
    }
}

/// The configuration these variables make.
fn configured(vars: &[(&str, &str)]) -> Rc<Config> {
    let vars: Vec<(String, String)> = vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    Rc::new(Config::from_vars(|name| vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone())).unwrap())
}

/// The name a step goes by in [`Run::steps`].
fn step_name(action: &Action) -> &'static str {
    match action {
        Action::ReadBody { .. } => "read-body",
        Action::ReadCopy { .. } => "read-copy",
        Action::Detach => "detach",
        Action::Store { call: StoreCall::Begin { .. }, .. } => "begin",
        Action::Store { call: StoreCall::Finish { .. }, .. } => "finish",
        Action::Store { call: StoreCall::Inspect, .. } => "inspect",
        Action::Store { call: StoreCall::Release { .. }, .. } => "release",
        Action::Store { call: StoreCall::Abandon { .. }, .. } => "abandon",
        Action::CallOrigin { .. } => "call-origin",
        Action::Pause { .. } => "pause",
        Action::Forward { .. } => "forward",
        Action::Respond(_) => "respond",
        Action::Log(_) => "log",
        Action::Metric(_) => "metric",
        Action::WriteCopy { .. } => "write-copy",
        Action::Cipher(CipherCall { op: CipherOp::Seal, .. }) => "seal",
        Action::Cipher(CipherCall { op: CipherOp::Open, .. }) => "open",
        Action::Done => "done",
    }
}

mod forms;
mod routes;
mod sealing;
mod webhooks;

#[test]
fn each_line_names_method_and_path_never_the_query_and_says_why_a_request_was_refused() {
    // SPEC §12: an on-call engineer can act on each line.
    let mut world = World::new(&[("IDEMPOTENCY_IN_FLIGHT_WAIT_MS", "0")]);
    let with_query = RequestHead { query: Some("token=s3cret".into()), ..keyed("k1") };
    let first = world.run(with_query, order());
    assert_eq!((first.log["method"].as_str(), first.log["path"].as_str()), (Some("POST"), Some("/api/orders")));
    assert!(!first.log.to_string().contains("s3cret"), "never the query");
    assert!(first.log["reason"].is_null(), "no refusal");
    let bad = world.run(RequestHead { key: Some(b"two words".to_vec()), ..keyed("") }, order());
    let reason = bad.log["reason"].as_str().unwrap();
    assert!(reason.contains("outside visible ASCII"), "which key rule failed: {reason}");
    let large = World::new(&[("IDEMPOTENCY_MAX_BODY_BYTES", "1000")]).run(keyed("k2"), BodyRead::TooLarge);
    assert!(large.log["reason"].as_str().unwrap().contains("1000 bytes"), "which limit: {}", large.log["reason"]);
    // A 409's line carries the attempt it concerns.
    world.origin = Box::new(|_| OriginResult::NoAnswer("reset".into()));
    world.run(keyed("k3"), order());
    let conflict = world.run(keyed("k3"), order());
    assert_eq!(
        (conflict.log["oncekey"].as_str(), conflict.log["attempt"].as_u64()),
        (Some("in-flight-unknown"), Some(1))
    );
    assert!(conflict.log["reason"].as_str().unwrap().contains("unknown"));
}

#[test]
fn log_sample_drops_only_routine_lines_and_never_a_data_point() {
    // SPEC §5: at 0, a stored first execution and a replay write no line;
    // every other decision still does; data points are never sampled.
    let mut world = World::new(&[("IDEMPOTENCY_LOG_SAMPLE", "0"), ("IDEMPOTENCY_IN_FLIGHT_WAIT_MS", "0")]);
    let metered = |head: RequestHead| RequestHead { metrics: true, reservation: 7, ..head };
    let logged = |run: &Run| run.steps.contains(&"log");
    let first = world.run(metered(keyed("k1")), order());
    let replay = world.run(metered(keyed("k1")), order());
    assert_eq!((first.reply.status, header(&replay.reply, "idempotent-replayed")), (201, Some("true")));
    assert!(!logged(&first) && !logged(&replay), "{:?} {:?}", first.steps, replay.steps);
    assert_eq!(world.points.len(), 2, "both data points");
    let reused = world.run(metered(keyed("k1")), BodyRead::Complete(br#"{"item":"other"}"#.to_vec()));
    assert_eq!((code(&reused.reply).as_str(), logged(&reused)), ("key-reused", true));
    let bad = world.run(metered(RequestHead { key: Some(b"two words".to_vec()), ..keyed("") }), order());
    assert!(logged(&bad), "a refusal: {:?}", bad.steps);
    world.origin = Box::new(|_| OriginResult::Answered { status: 503, headers: Vec::new(), body: Vec::new() });
    let released = world.run(metered(keyed("k2")), order());
    assert_eq!((released.log["finish"].as_str(), logged(&released)), (Some("released"), true));
    world.origin = Box::new(|_| OriginResult::NoAnswer("reset".into()));
    let unknown = world.run(metered(keyed("k3")), order());
    let conflict = world.run(metered(keyed("k3")), order());
    assert!(logged(&unknown) && logged(&conflict), "an unknown outcome and its 409");
    assert_eq!(world.points.len(), 7, "a data point for every decision");
    world.store_failures = 1;
    let down = world.run(metered(keyed("k4")), order());
    assert_eq!((code(&down.reply).as_str(), logged(&down)), ("store-unavailable", true));

    // At 1 (the default) every line is written; between, the request's draw decides.
    let mut all = World::new(&[]);
    assert!(logged(&all.run(keyed("k1"), order())) && logged(&all.run(keyed("k1"), order())));
    let mut half = World::new(&[("IDEMPOTENCY_LOG_SAMPLE", "0.5")]);
    let drawn = |draw: u64| RequestHead { reservation: draw, ..keyed("k9") };
    assert!(logged(&half.run(drawn(1), order())), "a low draw logs");
    assert!(!logged(&half.run(drawn((999_999 << 1) | 1), order())), "a high draw does not");
}

#[test]
fn an_interim_status_is_no_answer_never_stored_nor_built() {
    // A fifth red team: workerd's fetch handed back a 103 (Early Hints) or
    // a 100 (a client's `Expect: 100-continue`) as the response; the JS
    // host stored it, the Rust host panicked building it.
    let mut world = World::new(&[("IDEMPOTENCY_IN_FLIGHT_WAIT_MS", "0")]);
    for status in [100, 102, 103, 600] {
        world.origin = Box::new(move |_| OriginResult::Answered { status, headers: Vec::new(), body: Vec::new() });
        let key = format!("k{status}");
        let run = world.run(keyed(&key), order());
        assert_eq!((run.reply.status, code(&run.reply).as_str()), (502, "origin-unreachable"), "{status}");
        assert_eq!(run.log["finish"].as_str(), Some("lease-kept"), "{status}: the outcome is unknown");
        assert!(run.log["error"].as_str().unwrap().contains(&format!("answered {status}")), "{}", run.log);
        assert_eq!(code(&world.run(keyed(&key), order()).reply), "outcome-unknown", "{status}: nothing stored");
    }
    // Passed through: a WebSocket upgrade's 101 as it came, another 1xx a 502.
    let uncovered = || RequestHead { method: "GET".into(), key: None, ..keyed("") };
    world.forwarded_status = 101;
    assert_eq!(world.run(uncovered(), order()).reply.status, 101);
    world.forwarded_status = 103;
    let interim = world.run(uncovered(), order());
    assert_eq!((interim.reply.status, code(&interim.reply).as_str()), (502, "origin-unreachable"));
}

#[test]
fn a_handler_that_threw_is_an_unknown_outcome_said_as_the_handler_s() {
    let mut world = World::new(&[("IDEMPOTENCY_IN_FLIGHT_WAIT_MS", "0")]);
    world.origin = Box::new(|_| OriginResult::HandlerThrew("TypeError: x is undefined".into()));
    let run = world.run(keyed("k1"), order());
    assert_eq!((run.reply.status, run.log["finish"].as_str()), (502, Some("lease-kept")));
    let detail = serde_json::from_slice::<serde_json::Value>(match &run.reply.body {
        ReplyBody::Bytes(bytes) => bytes,
        ReplyBody::Origin => panic!("a problem"),
    })
    .unwrap()["detail"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(detail.contains("handler failed; the outcome is unknown"), "{detail}");
    assert!(run.log["error"].as_str().unwrap().starts_with("the handler threw: TypeError"));
    assert_eq!(code(&world.run(keyed("k1"), order()).reply), "outcome-unknown");
}

#[test]
fn cloudflare_s_own_52x_releases_or_holds_the_key_and_is_never_stored() {
    // SPEC §3: (status, marked as Cloudflare's) → (answered, finish, a retry runs again).
    let rows = [
        (521, true, 502, "released", true),
        (522, true, 502, "released", true),
        (523, true, 502, "released", true),
        (525, true, 502, "released", true),
        (526, true, 502, "released", true),
        (530, true, 502, "released", true),
        (520, true, 502, "lease-kept", false),
        (524, true, 502, "lease-kept", false),
        (521, false, 521, "stored", false),
        (524, false, 524, "stored", false),
    ];
    for (status, marked, answered, finish, runs_again) in rows {
        let mut world = World::new(&[("IDEMPOTENCY_IN_FLIGHT_WAIT_MS", "0")]);
        world.origin = Box::new(move |attempt| {
            let mut headers = vec![("content-type".into(), "text/html".into())];
            if marked {
                headers.push(("server".into(), "cloudflare".into()));
                headers.push(("cf-ray".into(), "8f00-LHR".into()));
            }
            match attempt {
                1 => OriginResult::Answered { status, headers, body: b"<h1>Web server is down</h1>".to_vec() },
                _ => created(),
            }
        });
        let first = world.run(keyed("k1"), order());
        let case = format!("{status} marked={marked}");
        assert_eq!((first.reply.status, first.log["finish"].as_str()), (answered, Some(finish)), "{case}");
        if marked {
            assert!(first.log["error"].as_str().unwrap().contains("Cloudflare answered"), "{case}");
        }
        let retry = world.run(keyed("k1"), order());
        if runs_again {
            assert_eq!((retry.reply.status, world.calls.as_slice()), (201, &[1, 2][..]), "{case}: never stored");
        } else if marked {
            assert_eq!(code(&retry.reply), "outcome-unknown", "{case}");
        } else {
            assert_eq!(header(&retry.reply, "idempotent-replayed"), Some("true"), "{case}: the origin's own answer");
        }
    }
}

#[test]
fn a_throw_at_any_step_after_the_origin_answered_never_skips_the_finish() {
    // SPEC §8: whatever a host step throws once the origin has answered
    // (building the answer, a page the rewriter refuses, the pause, the
    // finish call itself), the attempt's outcome is still recorded.
    for step in ["respond", "pause", "finish", "log", "write-copy"] {
        // A copy at completion, so that its write is one of the steps.
        let mut world = World::new(&[("IDEMPOTENCY_KV_COPY", "always")]);
        world.throw_at = vec![step];
        let run = world.run(keyed("k1"), order());
        assert!(run.steps.contains(&"threw"), "{step}: {:?}", run.steps);
        let finishes = run.steps.iter().filter(|s| **s == "finish").count();
        assert_eq!(finishes, if step == "finish" { 2 } else { 1 }, "{step}: {:?}", run.steps);
        if step != "log" {
            assert_eq!(run.log["finish"].as_str(), Some("stored"), "{step}");
        }
        let again = world.run(keyed("k1"), order());
        assert_eq!(header(&again.reply, "idempotent-replayed"), Some("true"), "{step}: the answer is stored");
        assert_eq!(world.calls, [1], "{step}");
    }
    // Every finish try throwing: it gives up as a failing store does, the
    // caller already answered; the key is left to its lease, never "running"
    // past it.
    let mut world = World::new(&[]);
    world.throw_at = vec!["finish"; 3];
    let run = world.run(keyed("k1"), order());
    assert_eq!(run.log["finish"].as_str(), Some("store-failed"));
    assert_eq!(run.reply.status, 201);
    // A throw during the origin call is no answer: the outcome is unknown.
    let mut world = World::new(&[("IDEMPOTENCY_IN_FLIGHT_WAIT_MS", "0")]);
    world.throw_at = vec!["call-origin"];
    let run = world.run(keyed("k1"), order());
    assert_eq!((run.reply.status, run.log["finish"].as_str()), (502, Some("lease-kept")));
    assert_eq!(code(&world.run(keyed("k1"), order()).reply), "outcome-unknown");
    // Before anything was reserved: the request's own error, nothing held.
    let mut world = World::new(&[]);
    world.throw_at = vec!["read-body"];
    assert_eq!(code(&world.run(keyed("k1"), order()).reply), "body-incomplete");
    world.throw_at = vec!["begin"];
    let failed = world.run(keyed("k2"), order());
    assert_eq!(code(&failed.reply), "store-unavailable");
    assert!(failed.steps.contains(&"abandon"), "the lost begin's reservation is given back");
}

fn keyed(key: &str) -> RequestHead {
    RequestHead {
        method: "POST".into(),
        host: "shop.example".into(),
        path: "/api/orders".into(),
        key: Some(key.as_bytes().to_vec()),
        headers: vec![("content-type".into(), "application/json".into())],
        reservation: 77,
        ..RequestHead::default()
    }
}

fn order() -> BodyRead {
    BodyRead::Complete(br#"{"item":"tea"}"#.to_vec())
}

fn header<'a>(reply: &'a Reply, name: &str) -> Option<&'a str> {
    reply.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
}

fn code(reply: &Reply) -> String {
    let ReplyBody::Bytes(body) = &reply.body else { panic!("a problem has a body") };
    let body: serde_json::Value = serde_json::from_slice(body).unwrap();
    body["type"].as_str().unwrap().trim_start_matches("urn:oncekey:problem:").to_owned()
}

#[test]
fn a_first_execution_makes_one_store_call_before_the_origin_and_none_before_its_answer() {
    let mut world = World::new(&[]);
    let run = world.run(keyed("k1"), order());
    // SPEC §4: the answer goes first, `finish` after it; the log line says how `finish` ended.
    // No KV write: the copy waits for the key to be asked for again.
    assert_eq!(run.steps, ["read-body", "detach", "begin", "call-origin", "respond", "pause", "finish", "log"]);
    assert_eq!(run.reply.status, 201);
    assert_eq!(run.reply.body, ReplyBody::Bytes(br#"{"orderId":"o1"}"#.to_vec()));
    assert_eq!(header(&run.reply, "set-cookie"), Some("s=1"), "the caller gets every header");
    assert_eq!(
        run.edits,
        [HeaderEdit::Set("Idempotency-Key", "k1".into()), HeaderEdit::Set("Idempotency-Attempt", "1".into())]
    );
    let timing = header(&run.reply, "server-timing").unwrap();
    assert!(timing.starts_with("do;") && timing.contains("origin;"), "{timing}");
    assert!(timing.ends_with(r#"finish;desc="after-answer""#), "{timing}");
    assert_eq!((run.log["oncekey"].as_str(), run.log["finish"].as_str()), (Some("execute"), Some("stored")));
    assert_eq!(run.log["after_answer_ms"].as_u64(), Some(2), "the pause and finish, a tick each of the world's clock");
    assert_eq!(
        run.log["record"].as_str().map(str::len),
        Some(64),
        "the record's whole name, as the admin paths take it"
    );
    assert_eq!(world.calls, [1]);
}

#[test]
fn a_retry_is_replayed_by_the_object_and_only_the_first_one_writes_the_kv_copy() {
    let mut world = World::new(&[]);
    world.run(keyed("k1"), order());
    assert!(world.kv.is_empty(), "no copy for a key not asked for again");
    let run = world.run(keyed("k1"), order());
    // KV is never read on the way (a copy is read only when the object fails).
    assert_eq!(run.steps, ["read-body", "detach", "begin", "respond", "log", "write-copy"]);
    assert_eq!((run.reply.status, header(&run.reply, "idempotent-replayed")), (201, Some("true")));
    assert_eq!(header(&run.reply, "cache-control"), Some("no-store"));
    let again = world.run(keyed("k1"), order());
    assert_eq!(again.steps, ["read-body", "detach", "begin", "respond", "log"], "the copy is written once");
    assert_eq!(world.calls, [1]);
}

#[test]
fn kv_writes_are_paid_for_retries_only_n_first_executions_m_retried_m_writes() {
    // SPEC §4 (issue 35): N keys, M of them retried (some several times).
    let mut world = World::new(&[]);
    let writes = std::cell::Cell::new(0);
    let mut run = |key: &str| {
        let run = world.run(keyed(key), order());
        writes.set(writes.get() + run.steps.iter().filter(|s| **s == "write-copy").count());
    };
    for i in 0..10 {
        run(&format!("k{i}"));
    }
    assert_eq!(writes.get(), 0, "10 first executions, no KV write");
    for (i, retries) in [(0, 1), (3, 3), (7, 2)] {
        for _ in 0..retries {
            run(&format!("k{i}"));
        }
    }
    assert_eq!(writes.get(), 3, "3 keys retried: 3 writes, whatever the number of retries");
    // `always`: a write per first execution, none on replays.
    let mut always = World::new(&[("IDEMPOTENCY_KV_COPY", "always")]);
    let first = always.run(keyed("k1"), order());
    assert_eq!(first.steps.last(), Some(&"write-copy"));
    assert!(!always.run(keyed("k1"), order()).steps.contains(&"write-copy"));
    // `off`: none at all.
    let mut off = World::new(&[("IDEMPOTENCY_KV_REPLAY", "off")]);
    off.run(keyed("k1"), order());
    assert!(!off.run(keyed("k1"), order()).steps.contains(&"write-copy"));
}

#[test]
fn an_answer_s_cookies_replay_to_the_browser_that_got_them_only() {
    // SPEC §3: a double-submitted sign-in signs the person in; nobody else
    // ever receives their session, and no KV copy holds it.
    let mut world = World::new(&[]);
    let browser = |cookie: Option<&str>, site: &str| {
        let mut head = keyed("k1");
        head.headers.push(("sec-fetch-site".into(), site.into()));
        head.headers.extend(cookie.map(|c| ("cookie".to_owned(), c.to_owned())));
        head
    };
    let first = world.run(browser(Some("csrf=a"), "same-origin"), order());
    assert_eq!(header(&first.reply, "set-cookie"), Some("s=1"), "the first answer as the origin sent it");
    let again = world.run(browser(Some("csrf=a"), "same-origin"), order());
    assert_eq!(header(&again.reply, "idempotent-replayed"), Some("true"));
    assert_eq!(header(&again.reply, "set-cookie"), Some("s=1"), "the same browser: signed in");
    for (cookie, site) in [(Some("csrf=b"), "same-origin"), (None, "same-origin"), (Some("csrf=a"), "cross-site")] {
        let other = world.run(browser(cookie, site), order());
        assert_eq!(header(&other.reply, "idempotent-replayed"), Some("true"));
        assert_eq!(header(&other.reply, "set-cookie"), None, "{cookie:?} {site}: someone else");
    }
    assert!(world.kv.values().all(|copy| !format!("{copy:?}").contains("s=1")), "no session in a KV copy");
    assert!(!world.kv.is_empty(), "the copy was written");
    // An answer to another site's request keeps no cookie at all.
    let mut cross = keyed("k2");
    cross.headers.push(("sec-fetch-site".into(), "cross-site".into()));
    world.run(cross.clone(), order());
    cross.headers[1].1 = "same-origin".into();
    assert_eq!(header(&world.run(cross, order()).reply, "set-cookie"), None);
    assert_eq!(world.calls, [1, 1]);
}

#[test]
fn read_first_answers_from_a_copy_and_puts_a_missing_one_back() {
    let mut world = World::new(&[("IDEMPOTENCY_KV_REPLAY", "read-first")]);
    let first = world.run(keyed("k1"), order());
    assert_eq!(first.steps[..3], ["read-body", "read-copy", "detach"], "a miss goes on to the object");
    // The first retry: still no copy (none at completion), so the object
    // replays and the copy is written.
    let first_retry = world.run(keyed("k1"), order());
    assert_eq!(first_retry.steps, ["read-body", "read-copy", "detach", "begin", "respond", "log", "write-copy"]);
    let from_kv = world.run(keyed("k1"), order());
    assert_eq!(from_kv.steps, ["read-body", "read-copy", "respond", "log"]);
    assert_eq!(
        (from_kv.log["tier"].as_str(), header(&from_kv.reply, "idempotent-replayed")),
        (Some("kv"), Some("true"))
    );
    world.kv.clear();
    let put_back = world.run(keyed("k1"), order());
    assert_eq!(put_back.steps, ["read-body", "read-copy", "detach", "begin", "respond", "log", "write-copy"]);
    assert_eq!(world.kv.len(), 1);
    world.kv_fails = true;
    let kv_down = world.run(keyed("k1"), order());
    assert_eq!(kv_down.reply.status, 201, "a KV error goes on to the object");
    assert!(kv_down.log["error"].as_str().is_some_and(|e| e.contains("kv read")));
}

#[test]
fn a_copy_from_another_request_or_an_expired_one_is_never_replayed() {
    let vars = [
        ("IDEMPOTENCY_KV_REPLAY", "read-first"),
        ("IDEMPOTENCY_TTL_SECONDS", "60"),
        ("IDEMPOTENCY_LEASE_SECONDS", "60"),
    ];
    let mut world = World::new(&vars);
    world.run(keyed("k1"), order());
    let other = world.run(keyed("k1"), BodyRead::Complete(br#"{"item":"cake"}"#.to_vec()));
    assert_eq!((other.reply.status, code(&other.reply).as_str()), (422, "key-reused"));
    world.now += 61_000;
    let later = world.run(keyed("k1"), order());
    assert_eq!(later.steps[..3], ["read-body", "read-copy", "detach"], "the expired copy is a miss");
    assert_eq!(world.calls, [1, 1], "the key is new again after its TTL");
}

#[test]
fn when_the_object_fails_a_copy_is_replayed_else_503() {
    let mut world = World::new(&[]);
    world.run(keyed("k1"), order());
    world.run(keyed("k1"), order()); // its first replay writes the copy
    world.store_failures = 1;
    let replayed = world.run(keyed("k1"), order());
    assert_eq!(replayed.steps, ["read-body", "detach", "begin", "read-copy", "respond", "log", "abandon"]);
    assert_eq!((replayed.reply.status, replayed.log["tier"].as_str()), (201, Some("kv")));
    assert!(replayed.log["error"].as_str().is_some_and(|e| e.starts_with("store:")));
    world.store_failures = 1;
    let none = world.run(keyed("k2"), order());
    assert_eq!((none.reply.status, code(&none.reply).as_str()), (503, "store-unavailable"));
    assert_eq!(header(&none.reply, "retry-after"), Some("1"));
    assert_eq!(world.calls, [1], "fail closed: the origin is not called");
    assert_eq!(
        none.steps[none.steps.len() - 1],
        "abandon",
        "a lost begin reply's reservation is given back after the 503"
    );
    assert_eq!(world.abandoned, [77, 77]);
    let mut off = World::new(&[("IDEMPOTENCY_KV_REPLAY", "off")]);
    let run = off.run(keyed("k1"), order());
    assert!(!run.steps.contains(&"write-copy"), "off: no copies");
    off.store_failures = 1;
    assert_eq!(off.run(keyed("k1"), order()).steps, ["read-body", "detach", "begin", "respond", "log", "abandon"]);
}

#[test]
fn failing_open_forwards_the_body_read_without_a_client_attempt_number() {
    let mut world = World::new(&[("IDEMPOTENCY_FAIL_OPEN", "true"), ("IDEMPOTENCY_KV_REPLAY", "off")]);
    world.store_failures = 1;
    let run = world.run(keyed("k1"), order());
    assert_eq!(run.steps, ["read-body", "detach", "begin", "forward", "respond", "log", "abandon"]);
    assert_eq!(run.edits, [HeaderEdit::Remove("Idempotency-Attempt")]);
    assert_eq!(run.forwarded_body, Some(Some(br#"{"item":"tea"}"#.to_vec())));
    assert_eq!((run.reply.body.clone(), run.log["oncekey"].as_str()), (ReplyBody::Origin, Some("fail-open")));
}

#[test]
fn in_flight_and_reused_keys_are_refused_with_the_decision_s_retry_after() {
    let mut world = World::new(&[]);
    let (mut exchange, _) = Exchange::start(Rc::clone(&world.config), keyed("k1"), 0);
    exchange.body_read(order(), 1);
    exchange.detached(2);
    let in_flight = Decision::InFlight { retry_after_secs: 7, outcome_unknown: false, attempt: 0 };
    // First it waits inside the store for the running attempt, once...
    let Action::Store { call: StoreCall::Begin { wait_ms, .. }, timeout_ms, .. } =
        exchange.begun(Ok(in_flight.clone()), 3)
    else {
        panic!("a duplicate waits")
    };
    assert_eq!(timeout_ms, world.config.policy.store_timeout_ms + wait_ms, "the wait on top of the store's limit");
    assert_eq!(wait_ms, 10_000);
    // ...and if that attempt still runs when the wait ends, 409.
    let Action::Respond(reply) = exchange.begun(Ok(in_flight), 10_003) else { panic!() };
    assert_eq!((reply.status, code(&reply).as_str(), header(&reply, "retry-after")), (409, "key-in-flight", Some("7")));
    assert_eq!(exchange.log().waited_ms, Some(10_000));
    // An unknown outcome is not waited for, nor is anything with the wait off.
    let (mut unknown, _) = Exchange::start(Rc::clone(&world.config), keyed("k1"), 0);
    unknown.body_read(order(), 1);
    unknown.detached(2);
    let Action::Respond(reply) =
        unknown.begun(Ok(Decision::InFlight { retry_after_secs: 90, outcome_unknown: true, attempt: 0 }), 3)
    else {
        panic!("no wait for an unknown outcome")
    };
    assert_eq!(header(&reply, "retry-after"), Some("90"));
    let off = World::new(&[("IDEMPOTENCY_IN_FLIGHT_WAIT_MS", "0")]);
    let (mut no_wait, _) = Exchange::start(Rc::clone(&off.config), keyed("k1"), 0);
    no_wait.body_read(order(), 1);
    no_wait.detached(2);
    let running = Decision::InFlight { retry_after_secs: 1, outcome_unknown: false, attempt: 0 };
    assert!(matches!(no_wait.begun(Ok(running), 3), Action::Respond(ref r) if r.status == 409));
    world.run(keyed("k2"), order());
    let reused = world.run(keyed("k2"), BodyRead::Complete(b"{}".to_vec()));
    assert_eq!((reused.reply.status, code(&reused.reply).as_str()), (422, "key-reused"));
}

#[test]
fn an_origin_failure_is_an_outcome_and_a_502() {
    for (result, finish) in
        [(OriginResult::NotSent("refused".into()), "released"), (OriginResult::NoAnswer("reset".into()), "lease-kept")]
    {
        let mut world = World::new(&[]);
        world.origin = Box::new(move |_| result.clone());
        let run = world.run(keyed("k1"), order());
        assert_eq!((run.reply.status, code(&run.reply).as_str()), (502, "origin-unreachable"));
        assert_eq!(run.log["finish"].as_str(), Some(finish));
        // The answer says what the layer knows: never "unknown" for a request not sent.
        let ReplyBody::Bytes(body) = &run.reply.body else { panic!() };
        let detail = String::from_utf8_lossy(body);
        assert_eq!(detail.contains("not carried out"), finish == "released", "{detail}");
        assert_eq!(detail.contains("outcome is unknown"), finish == "lease-kept", "{detail}");
        assert!(!run.steps.contains(&"write-copy"));
    }
}

#[test]
fn a_caller_that_goes_away_bounds_the_rest_of_the_origin_call_to_what_workers_allows() {
    let world = World::new(&[]);
    let (mut exchange, _) = Exchange::start(Rc::clone(&world.config), keyed("k1"), 0);
    exchange.body_read(order(), 1);
    exchange.detached(2);
    assert_eq!(exchange.caller_gone(3), None, "no origin call yet: nothing to bound");
    exchange.begun(Ok(Decision::Execute { attempt: 1, reclaimed: false }), 10);
    // 30 s after the disconnect, less a whole finish (3 x 5 s + 0.5 s).
    assert_eq!(exchange.caller_gone(5_000), Some(AFTER_DISCONNECT_MS - 15_500));
    assert_eq!(exchange.caller_gone(95_000), Some(5_010), "never past the origin's own limit");
    // The host ends the call as no answer: the outcome is recorded as unknown.
    let Action::Respond(reply) =
        exchange.origin_answered(OriginResult::NoAnswer("the caller went away".into()), 19_500)
    else {
        panic!("the answer goes first")
    };
    assert_eq!(reply.status, 502);
    assert_eq!(exchange.responded(19_501), Action::Pause { ms: 0 }, "the answer's bytes go first");
    let Action::Store { call: StoreCall::Finish { outcome, .. }, .. } = exchange.paused(19_501) else {
        panic!("finish follows")
    };
    assert_eq!(outcome, crate::core::Outcome::Unknown);
    assert_eq!(exchange.caller_gone(19_600), None, "the origin call is over");
}

#[test]
fn a_failed_finish_is_repeated_twice_after_pauses_then_given_up() {
    let mut world = World::new(&[]);
    world.store_failures = 0;
    let (mut exchange, _) = Exchange::start(Rc::clone(&world.config), keyed("k1"), 0);
    exchange.body_read(order(), 1);
    exchange.detached(2);
    exchange.begun(Ok(Decision::Execute { attempt: 1, reclaimed: false }), 3);
    let Action::Respond(reply) = exchange.origin_answered(created(), 4) else { panic!("the answer goes first") };
    assert_eq!(reply.status, 201, "the caller has the origin's answer whatever finish does");
    assert_eq!(exchange.responded(4), Action::Pause { ms: 0 }, "a turn for the answer's bytes first");
    assert!(matches!(exchange.paused(4), Action::Store { call: StoreCall::Finish { attempt: 1, .. }, .. }));
    let fail = || Err("store exploded".to_owned());
    assert_eq!(exchange.finished(fail(), 5), Action::Pause { ms: FINISH_RETRY_PAUSES_MS[0] });
    assert!(matches!(exchange.paused(105), Action::Store { call: StoreCall::Finish { attempt: 1, .. }, .. }));
    assert_eq!(exchange.finished(fail(), 106), Action::Pause { ms: FINISH_RETRY_PAUSES_MS[1] });
    assert!(matches!(exchange.paused(506), Action::Store { call: StoreCall::Finish { attempt: 1, .. }, .. }));
    let Action::Log(line) = exchange.finished(fail(), 507) else {
        panic!("given up after two repeats: the log line says so")
    };
    let line: serde_json::Value = serde_json::from_str(&line).unwrap();
    assert_eq!((line["finish"].as_str(), line["error"].as_str()), (Some("store-failed"), Some("store exploded")));
    assert_eq!((line["status"].as_u64(), line["after_answer_ms"].as_u64()), (Some(201), Some(503)), "pauses included");
    assert_eq!(exchange.logged(508), Action::Done, "nothing stored: no copy");
    // One failure, then the repeat lands: stored, and copied.
    let mut world = World::new(&[]);
    world.origin = Box::new(|_| created());
    let (mut exchange, _) = Exchange::start(Rc::clone(&world.config), keyed("k1"), 0);
    exchange.body_read(order(), 1);
    exchange.detached(2);
    exchange.begun(Ok(Decision::Execute { attempt: 1, reclaimed: false }), 3);
    exchange.origin_answered(created(), 4);
    exchange.responded(4);
    exchange.paused(4);
    exchange.finished(fail(), 5);
    exchange.paused(105);
    let stored = crate::core::Completed {
        fingerprint: crate::core::Fingerprint([0; 32]),
        attempt: 1,
        response: crate::core::StoredResponse { status: 201, headers: vec![], body: Some(vec![]) }.into(),
        expires_at: 9,
        copied: false,
    };
    assert!(matches!(exchange.finished(Ok(Finished::Stored(stored)), 106), Action::Log(_)));
    assert_eq!(exchange.logged(108), Action::Done, "no copy until the key is asked for again");
}

#[test]
fn an_answer_over_the_limit_is_answered_whole_and_stored_without_its_body() {
    let mut world = World::new(&[("IDEMPOTENCY_MAX_RESPONSE_BYTES", "4")]);
    let run = world.run(keyed("k1"), order());
    assert_eq!(run.reply.body, ReplyBody::Bytes(br#"{"orderId":"o1"}"#.to_vec()));
    let replay = world.run(keyed("k1"), order());
    assert_eq!(replay.reply.body, ReplyBody::Bytes(Vec::new()));
    assert_eq!(header(&replay.reply, "idempotent-body-omitted"), Some("true"));
}

#[test]
fn which_requests_are_covered_and_when_a_key_is_required() {
    let mut world = World::new(&[("IDEMPOTENCY_REQUIRED_PATHS", "/api/orders")]);
    let missing = world.run(RequestHead { key: None, ..keyed("") }, order());
    assert_eq!((missing.reply.status, code(&missing.reply).as_str()), (400, "missing-key"));
    let invalid = world.run(keyed("bad key"), order());
    assert_eq!((invalid.reply.status, code(&invalid.reply).as_str()), (400, "invalid-key"));
    let other = RequestHead { key: None, path: "/api/other".into(), has_attempt_header: true, ..keyed("") };
    let passed = world.run(other, order());
    assert_eq!(passed.steps, ["forward", "respond"], "the baseline path logs nothing");
    assert_eq!(
        passed.edits,
        [HeaderEdit::Remove("Idempotency-Attempt")],
        "a client's attempt number never reaches the origin"
    );
    assert_eq!(passed.forwarded_body, Some(None), "the request's own body, unread");
    let get = world.run(RequestHead { method: "GET".into(), ..keyed("k1") }, order());
    assert_eq!((get.steps.as_slice(), get.edits.len()), (&["forward", "respond"][..], 0));
}

#[test]
fn bodies_over_the_limit_or_broken_off_are_refused() {
    let mut world = World::new(&[]);
    let large = world.run(keyed("k1"), BodyRead::TooLarge);
    assert_eq!((large.reply.status, code(&large.reply).as_str()), (413, "body-too-large"));
    let broken = world.run(keyed("k1"), BodyRead::Incomplete);
    assert_eq!((broken.reply.status, code(&broken.reply).as_str()), (400, "body-incomplete"));
    assert!(world.calls.is_empty());
}

#[test]
fn cors_headers_for_an_allowed_caller_and_preflights_only_for_covered_requests() {
    let mut world = World::new(&[("IDEMPOTENCY_CORS_ORIGINS", "https://app.example")]);
    let from = |origin: &str| RequestHead { origin: Some(origin.into()), ..keyed("k1") };
    let allowed = world.run(from("https://app.example"), order());
    assert_eq!(header(&allowed.reply, "access-control-allow-origin"), Some("https://app.example"));
    assert!(header(&allowed.reply, "access-control-expose-headers").is_some_and(|h| h.contains("Idempotent-Replayed")));
    let stranger = world.run(RequestHead { key: Some(b"k2".to_vec()), ..from("https://evil.example") }, order());
    assert_eq!(header(&stranger.reply, "access-control-allow-origin"), None);
    let preflight = |method: &str| RequestHead {
        method: "OPTIONS".into(),
        key: None,
        preflight_method: Some(method.into()),
        preflight_headers: Some("idempotency-key, content-type".into()),
        ..from("https://app.example")
    };
    let covered = world.run(preflight("POST"), BodyRead::Incomplete);
    assert_eq!((covered.reply.status, covered.steps.as_slice()), (204, &["respond", "log"][..]));
    assert!(header(&covered.reply, "access-control-allow-headers").is_some_and(|h| h.contains("idempotency-key")));
    assert_eq!(world.run(preflight("GET"), BodyRead::Incomplete).steps, ["forward", "respond"]);
    // SPEC §5: what the layer only passes through (uncovered, or keyless)
    // reaches the browser as the origin sent it: the layer's CORS is for
    // covered keyed requests and its own answers.
    let get = world.run(RequestHead { method: "GET".into(), key: None, ..from("https://app.example") }, order());
    let keyless = world.run(RequestHead { key: None, ..from("https://app.example") }, order());
    for passed in [get, keyless] {
        assert_eq!(passed.steps, ["forward", "respond"]);
        assert!(passed.reply.headers.iter().all(|(n, _)| !n.starts_with("access-control-")), "{:?}", passed.reply);
    }
    let refused = world.run(RequestHead { key: Some(b"a b".to_vec()), ..from("https://app.example") }, order());
    assert_eq!(header(&refused.reply, "access-control-allow-origin"), Some("https://app.example"), "its own answer");
}

#[test]
fn kv_only_mode_is_a_stage_of_the_exchange_begin_on_the_copy_and_the_answer_after_its_write() {
    let mut world = World::new(&[("IDEMPOTENCY_CONSISTENCY", "kv")]);
    let run = world.run(keyed("k1"), order());
    // No store call: `begin` decides on the copy read, `finish` on the
    // reservation held here; the copy is the only record, so the answer
    // waits for its write and a sequential retry finds it.
    assert_eq!(run.steps, ["read-body", "detach", "read-copy", "call-origin", "write-copy", "respond", "log"]);
    assert_eq!((run.log["tier"].as_str(), run.log["finish"].as_str()), (Some("kv"), Some("stored")));
    assert!(header(&run.reply, "server-timing").is_some_and(|t| t.starts_with("kv;") && !t.contains("finish")));
    assert_eq!(run.log["after_answer_ms"], serde_json::Value::Null);
    let retry = world.run(keyed("k1"), order());
    assert_eq!(retry.steps, ["read-body", "detach", "read-copy", "respond", "log"]);
    assert_eq!((retry.reply.status, header(&retry.reply, "idempotent-replayed")), (201, Some("true")));
    let reused = world.run(keyed("k1"), BodyRead::Complete(br#"{"item":"coffee"}"#.to_vec()));
    assert_eq!(code(&reused.reply), "key-reused");
    assert_eq!(world.calls, [1]);
    // An expired copy is no copy: the key runs again.
    world.now += 2 * 86_400_000;
    assert_eq!(world.run(keyed("k1"), order()).log["oncekey"].as_str(), Some("execute"));
    assert_eq!(world.calls, [1, 1]);
    // A release status is not written: the next retry runs again.
    world.origin = Box::new(|_| OriginResult::Answered { status: 503, headers: vec![], body: vec![] });
    let released = world.run(keyed("k3"), order());
    assert_eq!((released.log["finish"].as_str(), released.steps.contains(&"write-copy")), (Some("released"), false));
    world.kv_fails = true;
    let failed = world.run(keyed("k2"), order());
    assert_eq!(failed.reply.status, 503, "no fallback: KV is the store");
    assert!(failed.log["error"].as_str().is_some_and(|e| e.starts_with("kv read: ")), "{}", failed.log);
    assert!(!failed.steps.contains(&"abandon"), "KV holds no reservation to give back");
}

#[test]
fn a_result_out_of_turn_ends_the_exchange() {
    let world = World::new(&[]);
    let (mut exchange, _) = Exchange::start(Rc::clone(&world.config), keyed("k1"), 0);
    assert_eq!(exchange.begun(Ok(Decision::Mismatch), 1), Action::Done);
    assert_eq!(exchange.origin_answered(created(), 1), Action::Done);
    let _ = Problem::KeyReused;
}

#[test]
fn the_origin_s_exposed_headers_are_kept_and_its_cors_headers_never_replayed() {
    let mut world = World::new(&[("IDEMPOTENCY_CORS_ORIGINS", "https://a.example, https://b.example")]);
    world.origin = Box::new(|_| OriginResult::Answered {
        status: 201,
        headers: vec![
            ("location".into(), "/orders/1".into()),
            ("access-control-allow-origin".into(), "https://a.example".into()),
            ("access-control-expose-headers".into(), "Location, idempotent-replayed".into()),
        ],
        body: b"{}".to_vec(),
    });
    let from = |origin: &str| RequestHead { origin: Some(origin.into()), ..keyed("k1") };
    let first = world.run(from("https://a.example"), order());
    assert_eq!(
        header(&first.reply, "access-control-expose-headers"),
        Some("Location, idempotent-replayed, Idempotent-Body-Omitted, Retry-After, Server-Timing"),
        "merged, not replaced, and no name twice"
    );
    assert_eq!(header(&first.reply, "access-control-allow-origin"), Some("https://a.example"));
    let replay = world.run(from("https://b.example"), order());
    assert_eq!(header(&replay.reply, "idempotent-replayed"), Some("true"));
    assert_eq!(header(&replay.reply, "access-control-allow-origin"), Some("https://b.example"), "the caller at hand");
    assert_eq!(
        replay.reply.headers.iter().filter(|(n, _)| n == "access-control-allow-origin").count(),
        1,
        "the first caller's origin was not stored"
    );
    assert_eq!(header(&replay.reply, "location"), Some("/orders/1"));
}

#[test]
fn an_api_s_own_cors_is_replayed_to_the_origin_it_answered_and_no_other() {
    // IDEMPOTENCY_CORS_ORIGINS unset: the API answers CORS itself (SPEC §3).
    let mut world = World::new(&[]);
    world.origin = Box::new(|_| OriginResult::Answered {
        status: 201,
        headers: vec![
            ("location".into(), "/orders/1".into()),
            ("access-control-allow-origin".into(), "https://shop.example".into()),
            ("access-control-expose-headers".into(), "Location".into()),
            ("vary".into(), "Origin".into()),
        ],
        body: b"{}".to_vec(),
    });
    let from = |origin: Option<&str>| RequestHead { origin: origin.map(Into::into), ..keyed("k1") };
    let first = world.run(from(Some("https://shop.example")), order());
    assert_eq!(header(&first.reply, "access-control-allow-origin"), Some("https://shop.example"));
    let replay = world.run(from(Some("https://shop.example")), order());
    assert_eq!(header(&replay.reply, "idempotent-replayed"), Some("true"));
    assert_eq!(header(&replay.reply, "access-control-allow-origin"), Some("https://shop.example"), "readable again");
    assert_eq!(header(&replay.reply, "access-control-expose-headers"), Some("Location"));
    assert!(replay.reply.headers.iter().all(|(n, _)| !n.starts_with(':')), "the marker is never sent");
    for stranger in [Some("https://evil.example"), None] {
        let other = world.run(from(stranger), order());
        assert_eq!(header(&other.reply, "idempotent-replayed"), Some("true"), "{stranger:?}");
        assert!(
            other.reply.headers.iter().all(|(n, _)| !n.starts_with("access-control-")),
            "{stranger:?}: no one else gets the first caller's permission"
        );
        assert_eq!(header(&other.reply, "location"), Some("/orders/1"));
    }
}

#[test]
fn credentialed_callers_get_allow_credentials_with_their_own_origin() {
    let vars = [("IDEMPOTENCY_CORS_ORIGINS", "https://app.example"), ("IDEMPOTENCY_CORS_CREDENTIALS", "true")];
    let mut world = World::new(&vars);
    let from = RequestHead { origin: Some("https://app.example".into()), ..keyed("k1") };
    for run in [world.run(from.clone(), order()), world.run(from.clone(), order())] {
        assert_eq!(header(&run.reply, "access-control-allow-origin"), Some("https://app.example"), "never `*`");
        assert_eq!(header(&run.reply, "access-control-allow-credentials"), Some("true"));
    }
    let preflight = RequestHead { method: "OPTIONS".into(), key: None, preflight_method: Some("POST".into()), ..from };
    let answered = world.run(preflight, BodyRead::Incomplete);
    assert_eq!(header(&answered.reply, "access-control-allow-credentials"), Some("true"));
    assert_eq!(header(&answered.reply, "access-control-allow-origin"), Some("https://app.example"));
    let without = World::new(&[("IDEMPOTENCY_CORS_ORIGINS", "*")])
        .run(RequestHead { origin: Some("https://app.example".into()), ..keyed("k2") }, order());
    assert_eq!(header(&without.reply, "access-control-allow-credentials"), None);
}

#[test]
fn a_duplicate_that_waited_gets_the_first_attempt_s_answer() {
    let world = World::new(&[]);
    let (mut duplicate, _) = Exchange::start(Rc::clone(&world.config), keyed("k1"), 0);
    duplicate.body_read(order(), 1);
    assert!(
        matches!(duplicate.detached(2), Action::Store { call: StoreCall::Begin { wait_ms: 0, .. }, .. }),
        "the first call does not wait"
    );
    let running = Decision::InFlight { retry_after_secs: 1, outcome_unknown: false, attempt: 0 };
    assert!(matches!(
        duplicate.begun(Ok(running), 3),
        Action::Store { call: StoreCall::Begin { wait_ms: 10_000, .. }, timeout_ms: 15_000, .. }
    ));
    let stored = crate::core::Completed {
        fingerprint: crate::core::Fingerprint([0; 32]),
        attempt: 1,
        response: crate::core::StoredResponse { status: 201, headers: vec![], body: Some(b"{}".to_vec()) }.into(),
        expires_at: 99_999,
        copied: false,
    };
    let Action::Respond(reply) = duplicate.begun(Ok(Decision::Replay(stored)), 1_503) else { panic!() };
    assert_eq!((reply.status, header(&reply, "idempotent-replayed")), (201, Some("true")));
    let log = duplicate.log();
    assert_eq!((log.outcome.as_str(), log.waited_ms), ("replay", Some(1_500)));
    // A released key: the duplicate runs next, as attempt 2.
    let (mut next, _) = Exchange::start(Rc::clone(&world.config), keyed("k2"), 0);
    next.body_read(order(), 1);
    next.detached(2);
    next.begun(Ok(Decision::InFlight { retry_after_secs: 1, outcome_unknown: false, attempt: 0 }), 3);
    let action = next.begun(Ok(Decision::Execute { attempt: 2, reclaimed: false }), 900);
    assert!(matches!(action, Action::CallOrigin { attempt: 2, .. }));
}

#[test]
fn an_answer_too_large_to_hold_streams_to_the_caller_and_is_stored_without_its_body() {
    let mut world = World::new(&[("IDEMPOTENCY_MAX_RESPONSE_BYTES", "4")]);
    world.origin = Box::new(|_| OriginResult::Streaming {
        status: 200,
        headers: vec![("content-type".into(), "text/csv".into()), ("set-cookie".into(), "s=1".into())],
    });
    let first = world.run(keyed("k1"), order());
    assert_eq!((first.reply.status, first.reply.body.clone()), (200, ReplyBody::Origin), "the kept response, streamed");
    assert_eq!(first.log["finish"].as_str(), Some("stored"));
    let replay = world.run(keyed("k1"), order());
    assert_eq!((replay.reply.status, replay.reply.body.clone()), (200, ReplyBody::Bytes(Vec::new())));
    assert_eq!(header(&replay.reply, "idempotent-body-omitted"), Some("true"));
    assert_eq!(header(&replay.reply, "content-type"), Some("text/csv"));
    assert_eq!(world.calls, [1]);
}

/// An operator's request to an admin path, with this `Authorization`.
fn admin(method: &str, path: &str, authorization: Option<&str>) -> RequestHead {
    RequestHead {
        method: method.into(),
        host: "shop.example".into(),
        path: path.into(),
        headers: authorization.map(|a| vec![("authorization".to_owned(), a.to_owned())]).unwrap_or_default(),
        ..RequestHead::default()
    }
}

fn json_body(reply: &Reply) -> serde_json::Value {
    let ReplyBody::Bytes(body) = &reply.body else { panic!("an admin answer has a body") };
    serde_json::from_slice(body).unwrap()
}

const TOKEN: (&str, &str) = ("IDEMPOTENCY_ADMIN_TOKEN", "s3cret");

#[test]
fn an_operator_reads_an_unknown_outcome_releases_it_and_the_retry_runs_as_the_next_attempt() {
    let mut world = World::new(&[TOKEN]);
    world.origin = Box::new(|attempt| if attempt == 1 { OriginResult::NoAnswer("reset".into()) } else { created() });
    let first = world.run(keyed("k1"), order());
    assert_eq!(first.log["finish"].as_str(), Some("lease-kept"));
    let record = first.log["record"].as_str().unwrap().to_owned();
    let path = format!("/.well-known/oncekey/records/{record}");
    let bearer = Some("Bearer s3cret");

    let seen = world.run(admin("GET", &path, bearer), BodyRead::Incomplete);
    assert_eq!(seen.steps, ["inspect", "respond", "log"], "one store call, no body read, nothing detached");
    assert_eq!((seen.reply.status, header(&seen.reply, "content-type")), (200, Some("application/json")));
    assert_eq!(header(&seen.reply, "cache-control"), Some("no-store"));
    let state = json_body(&seen.reply);
    assert_eq!(
        (state["kind"].as_str(), state["attempt"].as_u64(), state["outcomeUnknown"].as_bool()),
        (Some("in-flight"), Some(1), Some(true))
    );
    assert_eq!(state["record"].as_str(), Some(record.as_str()));
    assert!(state["leaseExpiresAt"].as_str().is_some_and(|t| t.ends_with('Z')));
    assert_eq!((seen.log["oncekey"].as_str(), seen.log["record"].as_str()), (Some("inspect"), Some(record.as_str())));

    assert_eq!(world.run(keyed("k1"), order()).reply.status, 409, "held until the lease ends");
    let release = format!("{path}/release");
    let released = world.run(admin("POST", &release, bearer), BodyRead::Incomplete);
    assert_eq!(released.steps, ["release", "respond", "log"]);
    let state = json_body(&released.reply);
    assert_eq!(
        (released.reply.status, state["kind"].as_str(), state["attempt"].as_u64()),
        (200, Some("released"), Some(1))
    );
    assert_eq!(
        (released.log["oncekey"].as_str(), released.log["finish"].as_str()),
        (Some("release"), Some("released"))
    );

    let retry = world.run(keyed("k1"), order());
    assert_eq!((retry.reply.status, world.calls.as_slice()), (201, &[1, 2][..]), "the next retry runs as attempt 2");
    let refused = world.run(admin("POST", &release, bearer), BodyRead::Incomplete);
    assert_eq!((refused.reply.status, code(&refused.reply).as_str()), (409, "not-in-flight"));
    let ReplyBody::Bytes(problem) = &refused.reply.body else { panic!() };
    assert!(String::from_utf8_lossy(problem).contains("completed"), "the detail says why");
    let done = world.run(admin("GET", &path, bearer), BodyRead::Incomplete);
    let state = json_body(&done.reply);
    assert_eq!(
        (state["kind"].as_str(), state["status"].as_u64(), state["attempt"].as_u64()),
        (Some("completed"), Some(201), Some(2))
    );
    let ReplyBody::Bytes(bytes) = &done.reply.body else { panic!() };
    assert!(!String::from_utf8_lossy(bytes).contains("orderId"), "never the stored body");
}

#[test]
fn admin_paths_need_the_token_name_a_record_and_pass_through_when_off() {
    let mut world = World::new(&[TOKEN, ("IDEMPOTENCY_CORS_ORIGINS", "https://app.example")]);
    let hex = "ab".repeat(32);
    let path = format!("/.well-known/oncekey/records/{hex}");
    for authorization in [None, Some("Bearer wrong"), Some("Basic s3cret"), Some("s3cret")] {
        let run = world.run(admin("GET", &path, authorization), BodyRead::Incomplete);
        assert_eq!((run.reply.status, code(&run.reply).as_str()), (401, "unauthorized"), "{authorization:?}");
        assert_eq!(run.steps, ["respond", "log"], "no store call");
        assert_eq!(header(&run.reply, "www-authenticate"), Some("Bearer"));
        assert!(!serde_json::to_string(&run.log).unwrap().contains("s3cret"), "the token is never logged");
    }
    let none = world.run(admin("GET", &path, Some("Bearer s3cret")), BodyRead::Incomplete);
    assert_eq!(
        (none.reply.status, code(&none.reply).as_str(), none.steps.as_slice()),
        (404, "record-not-found", &["inspect", "respond", "log"][..])
    );
    let absent = world.run(admin("POST", &format!("{path}/release"), Some("Bearer s3cret")), BodyRead::Incomplete);
    assert_eq!((absent.reply.status, code(&absent.reply).as_str()), (404, "record-not-found"));
    let bad = world.run(admin("GET", "/.well-known/oncekey/records/ABC", Some("Bearer s3cret")), BodyRead::Incomplete);
    assert_eq!((bad.reply.status, bad.steps.as_slice()), (404, &["respond", "log"][..]));
    let wrong_method = world.run(admin("DELETE", &path, Some("Bearer s3cret")), BodyRead::Incomplete);
    assert_eq!((wrong_method.reply.status, header(&wrong_method.reply, "allow")), (405, Some("GET")));
    let from_a_page =
        RequestHead { origin: Some("https://app.example".into()), ..admin("GET", &path, Some("Bearer s3cret")) };
    assert_eq!(header(&world.run(from_a_page, BodyRead::Incomplete).reply, "access-control-allow-origin"), None);
    // SPEC §12: the token on any other path (a misspelled admin path) is
    // refused, never forwarded: it never leaves the layer.
    for misspelled in ["/.well-known/oncekey/record/x", "/.well-known/oncekey", "/api/orders"] {
        let run = world.run(admin("GET", misspelled, Some("Bearer s3cret")), BodyRead::Incomplete);
        assert_eq!((run.reply.status, code(&run.reply).as_str()), (404, "record-not-found"), "{misspelled}");
        assert_eq!(run.steps, ["respond", "log"], "{misspelled}: not forwarded");
    }
    let spelled = world.run(
        admin("GET", &format!("/.WELL-KNOWN/oncekey//records/{hex}/"), Some("Bearer s3cret")),
        BodyRead::Incomplete,
    );
    assert_eq!(spelled.steps, ["inspect", "respond", "log"], "another spelling of an admin path is one");
    let user = world.run(admin("GET", "/api/orders", Some("Bearer a-user")), BodyRead::Incomplete);
    assert_eq!(user.steps, ["forward", "respond"], "a caller's own token goes on");
    // Without the token, the same paths are the origin's.
    let mut off = World::new(&[]);
    let passed = off.run(admin("POST", &format!("{path}/release"), Some("Bearer s3cret")), BodyRead::Incomplete);
    assert_eq!((passed.steps.as_slice(), passed.reply.body.clone()), (&["forward", "respond"][..], ReplyBody::Origin));
}

#[test]
fn admin_paths_with_the_store_down_or_kv_as_the_store() {
    let mut world = World::new(&[TOKEN]);
    world.store_failures = 1;
    let path = format!("/.well-known/oncekey/records/{}", "cd".repeat(32));
    let down = world.run(admin("GET", &path, Some("Bearer s3cret")), BodyRead::Incomplete);
    assert_eq!((down.reply.status, code(&down.reply).as_str()), (503, "store-unavailable"));
    assert!(
        !down.steps.contains(&"abandon") && !down.steps.contains(&"read-copy"),
        "no fallback, nothing to give back"
    );

    let mut kv = World::new(&[TOKEN, ("IDEMPOTENCY_CONSISTENCY", "kv")]);
    let first = kv.run(keyed("k1"), order());
    let record = first.log["record"].as_str().unwrap();
    let name =
        RecordName::new("shop.example", &kv.config.scope, |_| None, &crate::core::IdempotencyKey::parse("k1").unwrap());
    assert!(kv.kv.contains_key(&name), "the first run wrote its copy");
    let path = format!("/.well-known/oncekey/records/{record}");
    let seen = kv.run(admin("GET", &path, Some("Bearer s3cret")), BodyRead::Incomplete);
    assert_eq!((seen.steps.as_slice(), seen.reply.status), (&["read-copy", "respond", "log"][..], 200));
    assert_eq!((json_body(&seen.reply)["kind"].as_str(), seen.log["tier"].as_str()), (Some("completed"), Some("kv")));
    let refused = kv.run(admin("POST", &format!("{path}/release"), Some("Bearer s3cret")), BodyRead::Incomplete);
    assert_eq!((refused.reply.status, code(&refused.reply).as_str()), (409, "not-in-flight"));
}

#[test]
fn with_metrics_bound_each_decision_writes_one_data_point_after_its_log_line() {
    let mut world = World::new(&[]);
    let with_metrics = |head: RequestHead| RequestHead { metrics: true, ..head };
    let run = world.run(with_metrics(keyed("k1")), order());
    assert_eq!(
        run.steps,
        ["read-body", "detach", "begin", "call-origin", "respond", "pause", "finish", "log", "metric"]
    );
    let point = world.points.pop().unwrap();
    let record = run.log["record"].as_str().unwrap();
    assert_eq!(point.blobs, ["execute", "do", "stored", record, ""]);
    assert_eq!(point.indexes, ["execute"]);
    let number = |field: &str| run.log[field].as_f64().unwrap_or(0.0);
    let logged = [
        number("attempt"),
        number("status"),
        number("kv_ms"),
        number("do_ms"),
        number("origin_ms"),
        number("waited_ms"),
        number("after_answer_ms"),
    ];
    assert_eq!(point.doubles, logged, "the same numbers as the log line");
    assert_eq!(point.doubles[..2], [1.0, 201.0]);
    let replay = world.run(with_metrics(keyed("k1")), order());
    assert_eq!(replay.steps, ["read-body", "detach", "begin", "respond", "log", "metric", "write-copy"]);
    assert_eq!(world.points.pop().unwrap().blobs[..2], ["replay".to_owned(), "do".to_owned()]);
    let refused = world.run(with_metrics(keyed("bad key")), order());
    assert_eq!(refused.steps, ["respond", "log", "metric"]);
    assert_eq!(world.points.pop().unwrap().blobs, ["invalid-key", "layer", "", "", ""]);
    // The quiet pass-through writes neither; without the binding, no point.
    let get = world.run(with_metrics(RequestHead { method: "GET".into(), ..keyed("k1") }), order());
    assert_eq!(get.steps, ["forward", "respond"]);
    assert!(!world.run(keyed("k1"), order()).steps.contains(&"metric"));
    assert!(world.points.is_empty());
}

#[test]
fn the_authorization_header_is_read_only_when_the_admin_paths_are_on() {
    let scoped_by_cookie = [("IDEMPOTENCY_SCOPE", "cookie:session")];
    let overrides = ["x-http-method-override", "x-http-method", "x-method-override"];
    let read = |vars: &[(&str, &str)]| RequestHead::headers_read(&World::new(vars).config).join(" ");
    let with_overrides = |names: &[&str]| [names, &overrides[..]].concat().join(" ");
    assert_eq!(
        read(&scoped_by_cookie),
        with_overrides(&["content-type", "content-length", "cookie", "sec-fetch-site"])
    );
    assert_eq!(
        read(&[scoped_by_cookie[0], TOKEN]),
        with_overrides(&["content-type", "content-length", "cookie", "authorization", "sec-fetch-site"])
    );
    assert_eq!(
        read(&[TOKEN]),
        with_overrides(&["content-type", "content-length", "authorization", "cookie", "sec-fetch-site"]),
        "once"
    );
}

#[test]
fn an_oversized_body_is_drained_to_four_times_the_limit_and_at_least_1_mib() {
    for (limit, drain) in [(10, 1 << 20), (1 << 20, 4 << 20)] {
        let world = World::new(&[("IDEMPOTENCY_MAX_BODY_BYTES", &limit.to_string())]);
        let (mut exchange, action) = Exchange::start(Rc::clone(&world.config), keyed("k1"), 0);
        assert_eq!(action, Action::ReadBody { whole: false }, "no declared length: chunk by chunk");
        let chunk = vec![7u8; 1024];
        let mut read = 0;
        while exchange.body_chunk(&chunk) {
            read += chunk.len();
            assert!(read <= drain, "reading stops past {drain} bytes");
        }
        assert!(read + chunk.len() > drain && read >= drain - chunk.len(), "read on to {drain}: {read}");
        let Action::Respond(reply) = exchange.body_ended(false, 1) else { panic!("answered") };
        assert_eq!((reply.status, code(&reply).as_str()), (413, "body-too-large"));
    }
}

#[test]
fn a_body_is_kept_up_to_the_limit_read_whole_when_its_declared_length_fits_and_a_broken_one_is_incomplete() {
    let world = World::new(&[("IDEMPOTENCY_MAX_BODY_BYTES", "16")]);
    let declared = |n: &str| RequestHead {
        headers: vec![("content-type".into(), "application/json".into()), ("content-length".into(), n.into())],
        ..keyed("k1")
    };
    let start = |head| Exchange::start(Rc::clone(&world.config), head, 0);
    assert_eq!(start(declared("14")).1, Action::ReadBody { whole: true });
    assert_eq!(start(declared(" 16 ")).1, Action::ReadBody { whole: true });
    assert_eq!(start(declared("17")).1, Action::ReadBody { whole: false });
    assert_eq!(start(declared("x")).1, Action::ReadBody { whole: false });
    // In two chunks, exactly the limit: kept, and the request goes on.
    let (mut exchange, _) = start(keyed("k1"));
    assert!(exchange.body_chunk(br#"{"item":"#) && exchange.body_chunk(br#""tea"}  "#));
    assert!(matches!(exchange.body_ended(false, 1), Action::Detach));
    // A declared length that lied: the bytes read decide.
    let (mut exchange, _) = start(declared("14"));
    exchange.body_chunk(&[b' '; 17]);
    let Action::Respond(reply) = exchange.body_ended(false, 1) else { panic!() };
    assert_eq!(code(&reply), "body-too-large");
    // A stream that breaks off: the client's error, not a 500.
    let (mut exchange, _) = start(keyed("k1"));
    exchange.body_chunk(b"{");
    let Action::Respond(reply) = exchange.body_ended(true, 1) else { panic!() };
    assert_eq!((reply.status, code(&reply).as_str()), (400, "body-incomplete"));
}

#[test]
fn an_undecodable_store_reply_is_a_failed_call() {
    let world = World::new(&[("IDEMPOTENCY_KV_REPLAY", "off")]);
    let (mut exchange, _) = Exchange::start(Rc::clone(&world.config), keyed("k1"), 0);
    exchange.body_read(order(), 1);
    let Action::Store { call: StoreCall::Begin { reservation, .. }, .. } = exchange.detached(2) else { panic!() };
    let Action::Respond(reply) = exchange.store_answered(Ok(vec![0xff, 0, 1]), 3) else { panic!("answered") };
    assert_eq!((reply.status, code(&reply).as_str()), (503, "store-unavailable"));
    let Action::Log(line) = exchange.responded(4) else { panic!("the log line") };
    assert!(line.contains("undecodable reply"), "{line}");
    // The call may have reserved the key: it is given back.
    let Action::Store { call: StoreCall::Abandon { reservation: given_back, .. }, .. } = exchange.logged(5) else {
        panic!("abandon")
    };
    assert_eq!(given_back, reservation);
    assert_eq!(exchange.store_answered(Ok(vec![1]), 6), Action::Done);
}
