//! The exchange's state machine: one method per result a host reports,
//! each returning the next [`Action`].

use std::collections::VecDeque;
use std::rc::Rc;

use super::action::{Action, BodyRead, HeaderEdit, OriginResult};
use super::head::RequestHead;
use super::log::{DecisionLog, FinishResult, Tier, Timing, Verdict};
use super::reply::{FormRewrite, Reply, ReplyBody};
use crate::core::output::form_keys::{LONGEST_TAG_BYTES, edit_headers, gets_form_keys, may_hold_a_long_tag};
use crate::core::request::form_field::{FieldKey, KEY_FIELD, is_form, take_key_field};
use crate::core::request::key_source::KeySource;
use crate::core::{
    AdminRequest, Ambiguity, CanonicalPath, Completed, Config, Consistency, Decision, DotSegment, EdgeAnswer,
    Fingerprint, Finished, IdempotencyKey, KeyLookup, KeyRule, Outcome, Problem, Provenance, Record, RecordName,
    StoreCall, StoredAnswer, StoredResponse, Write, begin_holding, cookie_jar, decode_decision, decode_finished,
    decode_inspected, decode_released, finish, replay_from_copy,
};

/// Pauses before each repeat of a `finish` the store failed, in ms. An
/// outcome that is known but not recorded would hold the key for a whole
/// lease; repeating is safe, since once one call has landed a repeat finds
/// no attempt in flight and writes nothing.
pub const FINISH_RETRY_PAUSES_MS: [u64; 2] = [100, 400];

/// How long Workers keeps `waitUntil` work running after the caller has
/// gone: about 30 s (Workers' limits: "When the client disconnects, all
/// tasks associated with that client's request are proactively canceled. If
/// the Worker passed a promise to `waitUntil()`, cancellation will be delayed
/// until the promise has completed or until an additional 30 seconds have
/// elapsed").
pub const AFTER_DISCONNECT_MS: u64 = 30_000;

/// An oversized request body is read up to four times the limit, and at
/// least this far, before the 413 ([`Exchange::body_chunk`]).
const DRAIN_AT_LEAST_BYTES: usize = 1 << 20;

/// One request's exchange. Created by [`Exchange::start`]; each method
/// takes the result of the action it names and returns the next one. A
/// method called out of turn (a host bug) ends the exchange with
/// [`Action::Done`].
#[derive(Clone)]
pub struct Exchange {
    pub(super) config: Rc<Config>,
    /// The request's canonical path (SPEC §13): every rule that reads where
    /// the request goes reads this, never the path as sent.
    pub(super) target: CanonicalPath,
    /// The place in [`Config::routes`] of the route the request follows
    /// (SPEC §13), found once when it starts; `None`: the variables apply.
    pub(super) route: Option<usize>,
    /// The request's `Origin`, if any: a stored answer's CORS headers are
    /// kept with it and replayed to it only (SPEC §3).
    pub(super) origin: Option<String>,
    /// The allowed cross-origin caller of this request, if any.
    pub(super) cors: Option<String>,
    /// The requesting browser's cookie jar, when the request comes from the
    /// page's own site (SPEC §3, §8): an answer's `set-cookie` is kept with
    /// it and replayed to it only. `None`: kept for no one.
    pub(super) cookie_jar: Option<String>,
    pub(super) log: DecisionLog,
    pub(super) timing: Timing,
    /// When the pending I/O action started, on the host's clock.
    pub(super) since: u64,
    pub(super) stage: Stage,
    /// What follows an answer: its log line, a KV copy.
    pub(super) after: VecDeque<Action>,
    /// Whether this request's `begin` waits inside the store for a running
    /// attempt (it does so once; how long it waited goes in the log).
    pub(super) waiting: bool,
    /// Whether each decision's data point is written (`IDEMPOTENCY_METRICS`).
    pub(super) metrics: bool,
    /// Whether this request's line is logged if its decision is routine
    /// (`IDEMPOTENCY_LOG_SAMPLE`, drawn once when it starts).
    pub(super) routine_logged: bool,
    /// KV-only mode: the reservation `begin` made, held in this request's
    /// memory (KV cannot hold one), for `finish`.
    pub(super) reserved: Option<Record>,
    /// The page's own origin when an HTML answer's forms get keys
    /// (`IDEMPOTENCY_FORMS=inject`, and a request whose answer has a body).
    pub(super) form_keys: Option<String>,
}

/// Every field but the configuration, which every exchange of a Worker
/// shares (and which is long).
impl std::fmt::Debug for Exchange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Exchange")
            .field("route", &self.route)
            .field("origin", &self.origin)
            .field("cors", &self.cors)
            .field("cookie_jar", &self.cookie_jar)
            .field("log", &self.log)
            .field("timing", &self.timing)
            .field("since", &self.since)
            .field("stage", &self.stage)
            .field("after", &self.after)
            .field("waiting", &self.waiting)
            .field("metrics", &self.metrics)
            .field("routine_logged", &self.routine_logged)
            .field("reserved", &self.reserved)
            .field("form_keys", &self.form_keys)
            .finish_non_exhaustive()
    }
}

impl Exchange {
    /// What decides the exchange's next steps, for the model checker's
    /// deduplication: everything but the log line being built and its
    /// timings (a queued log line is named, not spelled out).
    #[cfg(any(test, feature = "model"))]
    pub fn protocol_state(&self) -> String {
        let after: Vec<String> = self
            .after
            .iter()
            .map(|action| match action {
                Action::Log(_) => "log".to_owned(),
                other => format!("{other:?}"),
            })
            .collect();
        format!(
            "{:?}|{:?}|{:?}|{:?}|{after:?}|{}|{:?}|{:?}",
            self.route, self.stage, self.cors, self.cookie_jar, self.waiting, self.reserved, self.log.outcome
        )
    }
}

/// What the exchange waits for.
#[derive(Clone, Debug)]
pub(super) enum Stage {
    /// The body of a keyed request, or of a form post whose key may be in
    /// its `idempotency_key` field (`key` is then `None`): what is kept of
    /// it, and how many bytes were read.
    Body { key: Option<IdempotencyKey>, head: RequestHead, body: Vec<u8>, read: usize },
    /// A KV copy read before the object (`read-first`).
    ReadFirst(Keyed),
    /// The go-ahead to run detached.
    Detaching(Keyed),
    /// The store's `begin`.
    Beginning(Keyed),
    /// KV-only mode: the copy `begin` decides on.
    KvBeginning(Keyed),
    /// A KV copy read after the store failed (`fallback`).
    Fallback { keyed: Keyed, error: String },
    /// The origin's answer to attempt `attempt`.
    Calling { keyed: Keyed, attempt: u32 },
    /// The store's `finish`, or the pause before repeating it.
    Finishing(Finishing),
    /// An unprotected forward's answer.
    Forwarding { outcome: Verdict, error: Option<String> },
    /// The store's answer to an admin path's call (or, with KV as the
    /// store, the KV copy).
    Admin(AdminRequest),
    /// A sealed answer being opened for a replay (SPEC §4).
    Opening(super::seal::Opening),
    /// The queued actions after the answer.
    Answered,
}

/// A keyed request once its body is read.
#[derive(Clone, Debug)]
pub(super) struct Keyed {
    key: IdempotencyKey,
    reservation: u64,
    name: RecordName,
    /// The fingerprint a new record keeps: keyed under the sealing key when
    /// sealing is on (SPEC §13).
    fingerprint: Fingerprint,
    /// The request's fingerprint under each other seal key, in order: what
    /// a record begun before the last rotation keeps. Tried, one `begin`
    /// each, only on a mismatch, so a retry across a rotation replays.
    older: Vec<Fingerprint>,
    /// The body, until it goes to the origin.
    body: Vec<u8>,
    /// Whether the key field was taken out of the body: its length is no
    /// longer the one the client declared.
    body_edited: bool,
}

impl Keyed {
    /// Of the request's fingerprints, the one `found` keeps, if any; else
    /// the one a new record keeps.
    fn matching(&self, found: Option<&Record>) -> Fingerprint {
        let kept = found.and_then(Record::fingerprint);
        kept.filter(|fp| self.older.contains(fp)).unwrap_or(self.fingerprint)
    }
}

/// An attempt whose outcome is being recorded.
#[derive(Clone, Debug)]
pub(super) struct Finishing {
    pub(super) name: RecordName,
    attempt: u32,
    /// The reservation that began the attempt: its `finish` counts for it
    /// only.
    reservation: u64,
    pub(super) outcome: Outcome,
    /// The caller's answer while it waits for the outcome to be recorded
    /// (KV-only mode, where the copy is the only record); `None` once the
    /// caller has it (SPEC §4: the answer goes first).
    reply: Option<Reply>,
    /// When the first `finish` call went out, on the host's clock.
    started: u64,
    /// Failed `finish` calls so far.
    failures: usize,
    /// The answer's parts being sealed before `finish` carries it (SPEC §4).
    pub(super) sealing: Option<super::seal::Sealing>,
}

impl Exchange {
    /// Starts the exchange for a request with head `head` at `now_ms`.
    pub fn start(config: Rc<Config>, head: RequestHead, now_ms: u64) -> (Self, Action) {
        let cors = head.origin.clone().filter(|origin| config.allows_origin(origin));
        let form_keys =
            (config.inject_forms && !head.method.eq_ignore_ascii_case("HEAD")).then(|| head.own_origin.clone());
        let cookie_jar = head.is_from_own_origin().then(|| cookie_jar(head.header("cookie")));
        // SPEC §13: a path servers read apart (`;`, `%3B`, `%2F`, `%5C`)
        // or a method an override names is held to a rule only if every
        // reading a rule governs has that one; a dot segment in any reading
        // is a climb out of a rule. Either is refused, before anything else.
        let overrides = head.method_overrides();
        let overrides: Vec<&str> = overrides.iter().map(String::as_str).collect();
        let (target, ambiguous) = match CanonicalPath::readings(&head.path) {
            Err(DotSegment) => (CanonicalPath::of(&head.path), Some(Ambiguity::DotSegment)),
            Ok(readings) => match config.governed(&head.method, &overrides, &readings) {
                Some(target) => (target.clone(), None),
                None if overrides.is_empty() || readings.len() > 1 => (readings[0].clone(), Some(Ambiguity::Readings)),
                None => (readings[0].clone(), Some(Ambiguity::Method)),
            },
        };
        // SPEC §13: a webhook route's path, or the first route that
        // matches; none, the variables apply.
        let route = config.route_place(&head.method, &target);
        let routine_logged = config.log_sample.keeps(head.reservation);
        let mut exchange = Self {
            config,
            target,
            route,
            origin: head.origin.clone(),
            cors,
            cookie_jar,
            log: DecisionLog::default(),
            timing: Timing::default(),
            since: now_ms,
            stage: Stage::Answered,
            after: VecDeque::new(),
            waiting: false,
            metrics: head.metrics,
            routine_logged,
            reserved: None,
            form_keys,
        };
        // The line names the request by method and path, never its query.
        exchange.log.method.clone_from(&head.method);
        exchange.log.path.clone_from(&head.path);
        exchange.log.route = exchange.route().map(ToString::to_string);
        let action = exchange.first_action(head, ambiguous);
        (exchange, action)
    }

    fn first_action(&mut self, head: RequestHead, ambiguous: Option<Ambiguity>) -> Action {
        let config = Rc::clone(&self.config);
        let authorization = head.header("authorization");
        if let Some(admin) = AdminRequest::of(
            config.admin_token.as_ref(),
            &head.method,
            &self.target,
            head.query.as_deref(),
            authorization,
        ) {
            // An operator's call, never a browser's: no CORS.
            self.cors = None;
            return match admin {
                Ok(request) => self.admin(request),
                Err(refusal) => self.refuse(refusal.into()),
            };
        }
        // SPEC §13: a request servers read two ways is refused; SPEC §6: a
        // route that is misconfigured fails alone, closed.
        let refused = match ambiguous {
            Some(why) => Some(Problem::AmbiguousRequest(why)),
            None => self
                .route()
                .and_then(|route| route.problem.as_ref())
                .map(|problem| Problem::Misconfigured(format!("{}: {problem}", crate::core::ROUTES))),
        };
        if let Some(problem) = refused {
            self.cors = None;
            return self.refuse(problem);
        }
        // SPEC §13: a webhook route takes deliveries, which are POSTs;
        // anything else at its path is refused, never passed through.
        if self.route().is_some_and(|route| route.webhook.is_some() && !route.takes_method(&head.method)) {
            self.cors = None;
            return self.refuse(Problem::MethodNotAllowed { allow: "POST" });
        }
        // A route's requests are covered whatever IDEMPOTENCY_METHODS and
        // IDEMPOTENCY_PATHS say (SPEC §13).
        let target = &self.target;
        let covered = |method: &str| {
            config.key_rule(method, target) != KeyRule::Uncovered || config.route(method, target).is_some()
        };
        let is_preflight =
            head.method.eq_ignore_ascii_case("OPTIONS") && head.preflight_method.as_deref().is_some_and(covered);
        if let Some(origin) = self.cors.clone().filter(|_| is_preflight) {
            self.log.outcome = Verdict::Preflight;
            return self.respond(Reply::preflight(&config, &origin, head.preflight_headers.as_deref()));
        }
        // A covered form post with no key in its head may carry it in a field.
        let field_may_key =
            config.inject_forms && self.key_rule(&head) != KeyRule::Uncovered && is_form(head.header("content-type"));
        match self.key_in_head(&head) {
            // A route's body source comes next, or a webhook delivery's id.
            Ok(KeyLookup::NeedsBody) => self.read_body(None, head),
            Ok(KeyLookup::Absent) | Err(Problem::MissingKey) if field_may_key => self.read_body(None, head),
            Ok(KeyLookup::Absent) => self.forward(Verdict::PassThrough, None, head.has_attempt_header, None, false),
            Err(problem) => self.refuse(problem),
            Ok(KeyLookup::Found(key)) => self.read_body(Some(key), head),
        }
    }

    fn read_body(&mut self, key: Option<IdempotencyKey>, head: RequestHead) -> Action {
        let declared = head.header("content-length").and_then(|n| n.trim().parse::<u64>().ok());
        let whole = declared.is_some_and(|n| n <= self.policy().max_body_bytes as u64);
        self.stage = Stage::Body { key, head, body: Vec::new(), read: 0 };
        Action::ReadBody { whole }
    }

    /// A chunk of the keyed request's body was read: whether to read on.
    /// Bytes within `IDEMPOTENCY_MAX_BODY_BYTES` (or the route's
    /// `maxBodyBytes`) are kept; past it the rest
    /// is read and dropped up to four times the limit (at least 1 MiB), so a
    /// client still sending gets its 413 rather than a reset, then reading
    /// stops.
    pub fn body_chunk(&mut self, chunk: &[u8]) -> bool {
        let limit = self.policy().max_body_bytes;
        let Stage::Body { body, read, .. } = &mut self.stage else { return false };
        *read = read.saturating_add(chunk.len());
        if *read <= limit {
            body.extend_from_slice(chunk);
            return true;
        }
        *read <= limit.saturating_mul(4).max(DRAIN_AT_LEAST_BYTES)
    }

    /// The body's reading ended: `broken` when the stream failed (a
    /// truncated body is the client's error, not a 500).
    pub fn body_ended(&mut self, broken: bool, now_ms: u64) -> Action {
        let limit = self.policy().max_body_bytes;
        let Stage::Body { body, read, .. } = &mut self.stage else { return Action::Done };
        let result = if broken {
            BodyRead::Incomplete
        } else if *read > limit {
            BodyRead::TooLarge
        } else {
            BodyRead::Complete(std::mem::take(body))
        };
        self.body_read(result, now_ms)
    }

    /// The keyed request's body was read (as [`Exchange::body_chunk`] and
    /// [`Exchange::body_ended`] decide).
    pub fn body_read(&mut self, read: BodyRead, now_ms: u64) -> Action {
        let Stage::Body { key, head, .. } = std::mem::replace(&mut self.stage, Stage::Answered) else {
            return Action::Done;
        };
        let mut body = match read {
            BodyRead::Complete(body) => body,
            BodyRead::TooLarge => return self.refuse(Problem::BodyTooLarge { limit: self.policy().max_body_bytes }),
            BodyRead::Incomplete => return self.refuse(Problem::BodyIncomplete),
        };
        // SPEC §13: a webhook delivery's signature is checked over the whole
        // body before anything else happens, and its body goes on untouched
        // (the receiver may check it again).
        if self.is_delivery() {
            let checked = self.delivery_key(&head, &body, now_ms);
            self.log.delivery = self.delivery_log(&head, &body, checked.is_ok());
            return match checked {
                Ok(key) => self.keyed(key, &head, body, false, now_ms),
                Err(problem) => self.refuse(problem),
            };
        }
        // A route's body sources, read before the form field is taken out.
        let from_route = match key {
            Some(_) => None,
            None => self.key_in_body(&head, &body).transpose(),
        };
        // SPEC §8: the field is the origin's to never see; a header wins over it.
        let field = match self.config.inject_forms {
            true => take_key_field(head.header("content-type"), &mut body),
            false => FieldKey::Absent,
        };
        let body_edited = field != FieldKey::Absent;
        // The key, with where it came from (SPEC §13): the first found decides.
        let found = match (key, from_route, field) {
            (Some(key), ..) => Some((Ok(key), Provenance::Header)),
            (None, Some(key), _) => Some((key, Provenance::BodyField)),
            (None, None, FieldKey::One(raw)) => Some((
                IdempotencyKey::parse_bytes(&raw).map_err(|e| Problem::InvalidKey(format!("{KEY_FIELD} field: {e}"))),
                Provenance::FormKeyField,
            )),
            (None, None, FieldKey::Repeated) => Some((
                Err(Problem::InvalidKey(format!("the {KEY_FIELD} field is sent more than once"))),
                Provenance::FormKeyField,
            )),
            (None, None, FieldKey::Absent) => None,
        };
        let key = match found {
            // Each source's rule, in this one place: a key read from a body
            // keys only a request from the page's own origin. Another site's
            // post (a forgery riding the victim's cookies) goes on unkeyed,
            // its field taken out: it can neither plant an answer under a
            // key nor read one.
            Some((_, provenance)) if !provenance.admits(head.is_from_own_origin()) => {
                if self.key_rule(&head) == KeyRule::Required {
                    return self.refuse(Problem::MissingKey);
                }
                let why = format!("a request from another origin: its key in {provenance} was not used");
                return self.forward(Verdict::PassThrough, Some(why), head.has_attempt_header, Some(body), body_edited);
            }
            Some((Ok(key), _)) => key,
            Some((Err(problem), _)) => return self.refuse(problem),
            None => {
                if self.key_rule(&head) == KeyRule::Required {
                    return self.refuse(Problem::MissingKey);
                }
                return self.forward(Verdict::PassThrough, None, head.has_attempt_header, Some(body), body_edited);
            }
        };
        self.keyed(key, &head, body, body_edited, now_ms)
    }

    /// The request is keyed by `key`, its `body` read (`body_edited`: the key
    /// field was taken out of it): its fingerprint and record, then the
    /// store.
    fn keyed(
        &mut self,
        key: IdempotencyKey,
        head: &RequestHead,
        body: Vec<u8>,
        body_edited: bool,
        now_ms: u64,
    ) -> Action {
        let mut older = self.config.seal_keys.fingerprints(self.fingerprint(head, &body));
        let fingerprint = older.remove(0);
        let name = self.record_name(head, &key, &body);
        self.log.record = Some(name.to_hex());
        let keyed = Keyed { key, reservation: head.reservation, name, fingerprint, older, body, body_edited };
        if self.config.consistency == Consistency::Durable && self.config.kv_replay.reads_first() {
            self.since = now_ms;
            self.stage = Stage::ReadFirst(keyed);
            return Action::ReadCopy { name, timeout_ms: self.policy().store_timeout_ms };
        }
        self.stage = Stage::Detaching(keyed);
        Action::Detach
    }

    /// A KV copy was read (`None`: no copy; `Err`: the read failed).
    pub fn copy_read(&mut self, found: Result<Option<Record>, String>, now_ms: u64) -> Action {
        if let Stage::KvBeginning(_) = self.stage {
            return self.kv_begun(found, now_ms);
        }
        Timing::add(&mut self.timing.kv, now_ms.saturating_sub(self.since));
        let (keyed, store_error) = match std::mem::replace(&mut self.stage, Stage::Answered) {
            Stage::ReadFirst(keyed) => (keyed, None),
            Stage::Fallback { keyed, error } => (keyed, Some(error)),
            Stage::Admin(request) => return self.admin_from_copy(request, found, now_ms),
            _ => return Action::Done,
        };
        let (found, kv_error) = match found {
            Ok(found) => (found, None),
            Err(e) => (None, Some(format!("kv read: {e}"))),
        };
        if let Some(completed) = replay_from_copy(found.clone(), keyed.matching(found.as_ref()), now_ms) {
            self.log.tier = Tier::Kv;
            let name = keyed.name;
            // Read first, the object is still to be asked: a sealed copy that
            // does not open is no answer there (the object decides).
            let object_next = store_error.is_none().then_some(keyed);
            self.log.error = store_error.map(|e| format!("store: {e}"));
            return self.replay(name, &completed, object_next);
        }
        match store_error {
            None => {
                self.log.error = kv_error;
                self.stage = Stage::Detaching(keyed);
                Action::Detach
            }
            Some(error) => {
                let error = kv_error.map_or_else(|| error.clone(), |kv| format!("{error}; {kv}"));
                self.store_failed(error, keyed)
            }
        }
    }

    /// The host runs the rest detached.
    pub fn detached(&mut self, now_ms: u64) -> Action {
        let Stage::Detaching(keyed) = std::mem::replace(&mut self.stage, Stage::Answered) else {
            return Action::Done;
        };
        self.since = now_ms;
        if self.config.consistency == Consistency::Kv {
            // KV is the store: `begin` decides here, on the copy it holds.
            let action = Action::ReadCopy { name: keyed.name, timeout_ms: self.policy().store_timeout_ms };
            self.stage = Stage::KvBeginning(keyed);
            return action;
        }
        let action = self.begin_call(&keyed, 0);
        self.stage = Stage::Beginning(keyed);
        action
    }

    /// KV-only mode: `begin` on the copy KV returned (a failed read is a
    /// failed store). The reservation stays in this exchange: KV has no
    /// compare-and-set, so concurrent duplicates can both run (SPEC §4).
    fn kv_begun(&mut self, found: Result<Option<Record>, String>, now_ms: u64) -> Action {
        let Stage::KvBeginning(keyed) = std::mem::replace(&mut self.stage, Stage::Answered) else {
            return Action::Done;
        };
        let records = self.policy().records.clone();
        let open_keys = self.config.seal_keys.ids();
        let decision = found.map(|found| {
            let found = found.and_then(|r| r.live(now_ms));
            let fingerprint = keyed.matching(found.as_ref());
            let step = begin_holding(found, fingerprint, now_ms, &records, Some(&open_keys));
            // Only a reservation is held; a replay's mark (its copy asked
            // for) means nothing here, where the copy is the record.
            if let Write::Put(record @ Record::InFlight(_)) = step.write {
                self.reserved = Some(record);
            }
            step.answer
        });
        self.stage = Stage::Beginning(keyed);
        self.begun(decision.map_err(|e| format!("kv read: {e}")), now_ms)
    }

    /// The coordinator answered the pending [`Action::Store`]: its reply's
    /// bytes, or why none came (it failed or timed out). Decoded here by
    /// what the call was; an undecodable reply is a failed call.
    pub fn store_answered(&mut self, reply: Result<Vec<u8>, String>, now_ms: u64) -> Action {
        fn decoded<T, E: std::fmt::Display>(
            reply: Result<Vec<u8>, String>,
            decode: impl Fn(&[u8]) -> Result<T, E>,
        ) -> Result<T, String> {
            reply.and_then(|bytes| decode(&bytes).map_err(|e| format!("undecodable reply: {e}")))
        }
        match &self.stage {
            Stage::Beginning(_) => self.begun(decoded(reply, decode_decision), now_ms),
            Stage::Finishing(_) => self.finished(decoded(reply, decode_finished), now_ms),
            Stage::Admin(AdminRequest::Inspect(_)) => self.inspected(decoded(reply, decode_inspected), now_ms),
            Stage::Admin(AdminRequest::Release { .. }) => self.released(decoded(reply, decode_released), now_ms),
            // An `abandon`, after the answer: its result changes nothing.
            _ => self.abandoned(now_ms),
        }
    }

    /// A store call for the object of `name`, within the store's limit.
    pub(super) fn store(&self, name: RecordName, call: StoreCall) -> Action {
        let wait_ms = match &call {
            StoreCall::Begin { wait_ms, .. } => *wait_ms,
            _ => 0,
        };
        Action::Store { name, call, timeout_ms: self.policy().store_timeout_ms.saturating_add(wait_ms) }
    }

    /// `begin` for a keyed request, waiting up to `wait_ms` inside the
    /// object for a running attempt.
    fn begin_call(&self, keyed: &Keyed, wait_ms: u64) -> Action {
        let call = StoreCall::Begin {
            policy: self.policy().records.clone(),
            fingerprint: keyed.fingerprint,
            wait_ms,
            reservation: keyed.reservation,
            open_keys: Some(self.config.seal_keys.ids()),
        };
        self.store(keyed.name, call)
    }

    /// `finish` for the attempt being recorded.
    fn finish_call(&self) -> Action {
        let Stage::Finishing(finishing) = &self.stage else { return Action::Done };
        let call = StoreCall::Finish {
            policy: self.policy().records.clone(),
            attempt: finishing.attempt,
            reservation: finishing.reservation,
            outcome: finishing.outcome.clone(),
        };
        self.store(finishing.name, call)
    }

    /// The store's `begin` answered (`Err`: it failed or timed out).
    pub fn begun(&mut self, decision: Result<Decision, String>, now_ms: u64) -> Action {
        let Stage::Beginning(mut keyed) = std::mem::replace(&mut self.stage, Stage::Answered) else {
            return Action::Done;
        };
        let durable = self.config.consistency == Consistency::Durable;
        let spent = now_ms.saturating_sub(self.since);
        if self.waiting {
            self.log.waited_ms = Some(spent);
        }
        if durable {
            self.log.tier = Tier::Durable;
            Timing::add(&mut self.timing.durable, spent);
        } else {
            self.log.tier = Tier::Kv;
            Timing::add(&mut self.timing.kv, spent);
        }
        if decision.is_err() && durable {
            // The call may have landed and reserved the key though its reply
            // was lost: give the reservation back once the caller has an
            // answer, so a 503 does not hold the key for a lease.
            let call = StoreCall::Abandon { policy: self.policy().records.clone(), reservation: keyed.reservation };
            self.after.push_back(self.store(keyed.name, call));
        }
        match decision {
            Err(error) if durable && self.config.kv_replay.falls_back() => {
                self.since = now_ms;
                let action = Action::ReadCopy { name: keyed.name, timeout_ms: self.policy().store_timeout_ms };
                self.stage = Stage::Fallback { keyed, error };
                action
            }
            Err(error) => self.store_failed(error, keyed),
            // A duplicate of a running attempt waits for it inside the store
            // (SPEC §3), once; the wait's outcome is the answer.
            Ok(Decision::InFlight { outcome_unknown: false, .. })
                if durable && self.policy().in_flight_wait_ms > 0 && !self.waiting =>
            {
                self.waiting = true;
                self.since = now_ms;
                let action = self.begin_call(&keyed, self.policy().in_flight_wait_ms);
                self.stage = Stage::Beginning(keyed);
                action
            }
            Ok(Decision::InFlight { retry_after_secs, outcome_unknown, attempt }) => {
                self.log.outcome = if outcome_unknown { Verdict::InFlightUnknown } else { Verdict::InFlight };
                self.log.attempt = (attempt > 0).then_some(attempt);
                self.refuse(Problem::KeyInFlight { retry_after_secs, outcome_unknown })
            }
            // A record begun before the last seal key rotation keeps the
            // fingerprint keyed under an older key: ask again with that one.
            Ok(Decision::Mismatch) if durable && !keyed.older.is_empty() => {
                keyed.fingerprint = keyed.older.remove(0);
                self.since = now_ms;
                let action = self.begin_call(&keyed, 0);
                self.stage = Stage::Beginning(keyed);
                action
            }
            Ok(Decision::Mismatch) => self.refuse(Problem::KeyReused),
            Ok(Decision::Unreadable) => self.refuse(Problem::RecordUnreadable),
            Ok(Decision::Replay(completed)) => {
                let action = self.replay(keyed.name, &completed, None);
                // SPEC §4: the key is asked for again, so its KV copy is
                // written now, once (the object marks it), unless it was
                // written at completion (`IDEMPOTENCY_KV_COPY=always`). Read
                // first and still here: the copy is missing (written late,
                // or evicted), so put it back.
                let first_retry = !completed.copied && !self.config.kv_copy_always;
                let kv = self.config.kv_replay;
                if durable && kv.writes_copies() && (first_retry || kv.reads_first()) {
                    self.after.push_back(copy_of(keyed.name, completed));
                }
                action
            }
            Ok(Decision::Execute { attempt, reclaimed }) => {
                self.log.outcome = if reclaimed && durable { Verdict::ExecuteReclaimed } else { Verdict::Execute };
                self.log.attempt = Some(attempt);
                self.since = now_ms;
                let mut edits = vec![
                    HeaderEdit::Set("Idempotency-Key", keyed.key.as_str().to_owned()),
                    HeaderEdit::Set("Idempotency-Attempt", attempt.to_string()),
                ];
                if keyed.body_edited {
                    edits.push(HeaderEdit::Remove("Content-Length"));
                }
                let action = Action::CallOrigin {
                    attempt,
                    edits,
                    body: std::mem::take(&mut keyed.body),
                    timeout_ms: self.policy().origin_timeout_ms,
                    answer: super::AnswerRead::new(self.policy().max_response_bytes),
                };
                self.stage = Stage::Calling { keyed, attempt };
                action
            }
        }
    }

    /// The origin call of an attempt ended.
    pub fn origin_answered(&mut self, result: OriginResult, now_ms: u64) -> Action {
        let Stage::Calling { keyed, attempt } = std::mem::replace(&mut self.stage, Stage::Answered) else {
            return Action::Done;
        };
        Timing::add(&mut self.timing.origin, now_ms.saturating_sub(self.since));
        // Cloudflare's own answer for an origin it could not use is never
        // stored as the origin's (SPEC §3).
        // Nor is an interim status (`1xx`) taken for the final answer: what
        // the origin did is unknown (SPEC §3), and no runtime builds a
        // response with it.
        let edge = match &result {
            OriginResult::Answered { status, headers, .. } | OriginResult::Streaming { status, headers } => {
                match not_final(*status) {
                    Some(why) => Some((EdgeAnswer::NoUsableAnswer, why)),
                    None => EdgeAnswer::of(*status, headers).map(|edge| (edge, edge.describe(*status))),
                }
            }
            _ => None,
        };
        let result = match edge {
            Some((EdgeAnswer::NotReached, why)) => OriginResult::NotSent(why),
            Some((EdgeAnswer::NoUsableAnswer, why)) => OriginResult::NoAnswer(why),
            None => result,
        };
        let (outcome, reply) = match result {
            OriginResult::Answered { status, headers, body } => {
                let max = self.policy().max_response_bytes;
                let (origin, jar) = (self.origin.as_deref(), self.cookie_jar.as_deref());
                let stored = StoredResponse::capture(status, headers.clone(), Vec::new(), max, origin, jar);
                let stored = StoredResponse { body: (body.len() <= max).then(|| body.clone()), ..stored };
                (Outcome::Answered(stored.into()), Reply::new(status, headers, ReplyBody::Bytes(body)))
            }
            OriginResult::Streaming { status, headers } => {
                let (origin, jar) = (self.origin.as_deref(), self.cookie_jar.as_deref());
                let stored = StoredResponse::capture(status, headers.clone(), Vec::new(), 0, origin, jar);
                let stored = StoredResponse { body: None, ..stored };
                (Outcome::Answered(stored.into()), Reply::new(status, headers, ReplyBody::Origin))
            }
            OriginResult::NotSent(e) => {
                self.log.error = Some(e);
                (Outcome::NotSent, Reply::problem(&Problem::NotCarriedOut))
            }
            OriginResult::NoAnswer(e) => {
                self.log.error = Some(e);
                (Outcome::Unknown, Reply::problem(&Problem::OriginUnreachable))
            }
            OriginResult::HandlerThrew(e) => {
                self.log.error = Some(format!("the handler threw: {e}"));
                (Outcome::Unknown, Reply::problem(&Problem::HandlerFailed))
            }
        };
        self.since = now_ms;
        if self.config.consistency == Consistency::Kv {
            // The answer waits for its outcome to be recorded: in KV, the
            // copy is the only record ([`Exchange::kv_finish`]); sealed first
            // when sealing is on.
            self.stage = Stage::Finishing(Finishing {
                name: keyed.name,
                attempt,
                reservation: keyed.reservation,
                outcome,
                reply: Some(reply),
                started: now_ms,
                failures: 0,
                sealing: None,
            });
            return self.next_seal().unwrap_or_else(|| self.kv_finish(now_ms));
        }
        let finishing = Finishing {
            name: keyed.name,
            attempt,
            reservation: keyed.reservation,
            outcome,
            reply: None,
            started: now_ms,
            failures: 0,
            sealing: None,
        };
        // SPEC §4: the answer goes first; `finish` runs after it (a
        // duplicate arriving in between waits in the object for it). The
        // log line and data point wait for `finish`, to say how it ended.
        self.timing.finish_after_answer = true;
        let reply = self.dressed(reply);
        self.log.status = reply.status;
        self.stage = Stage::Finishing(finishing);
        Action::Respond(reply)
    }

    /// The caller went away (the host saw its request's signal abort) at
    /// `now_ms`. While an origin call is under way, what is left of it must
    /// fit in what Workers allows after a disconnect
    /// ([`AFTER_DISCONNECT_MS`]) with the attempt's `finish` after it
    /// ([`finish_time_ms`](crate::core::finish_time_ms)): the ms the host
    /// still gives the origin call, which it then ends as no answer — so the
    /// record says the outcome is unknown instead of "running" with nobody
    /// left to finish it (SPEC §3). `None` when no origin call is under way.
    pub fn caller_gone(&mut self, now_ms: u64) -> Option<u64> {
        let Stage::Calling { .. } = &self.stage else { return None };
        let after = AFTER_DISCONNECT_MS.saturating_sub(crate::core::finish_time_ms(self.policy().store_timeout_ms));
        let origin_left = self.since.saturating_add(self.policy().origin_timeout_ms).saturating_sub(now_ms);
        Some(after.min(origin_left))
    }

    /// The store's `finish` answered (`Err`: it failed or timed out).
    pub fn finished(&mut self, result: Result<Finished, String>, now_ms: u64) -> Action {
        let Stage::Finishing(mut finishing) = std::mem::replace(&mut self.stage, Stage::Answered) else {
            return Action::Done;
        };
        let durable = self.config.consistency == Consistency::Durable;
        if durable {
            Timing::add(&mut self.timing.durable, now_ms.saturating_sub(self.since));
        }
        if let (Err(_), Some(&ms)) = (&result, FINISH_RETRY_PAUSES_MS.get(finishing.failures)) {
            finishing.failures += 1;
            self.stage = Stage::Finishing(finishing);
            return Action::Pause { ms };
        }
        let (result, copy) = match result {
            Ok(finished) => finish_result(finished),
            Err(e) => {
                self.log.error = Some(e);
                (FinishResult::StoreFailed, None)
            }
        };
        if finishing.reply.is_none() {
            self.log.after_answer_ms = Some(now_ms.saturating_sub(finishing.started));
        }
        let name = finishing.name;
        let action = self.recorded(finishing, result);
        // A copy at completion only when asked for: most keys are never retried.
        let at_completion = durable && self.config.kv_replay.writes_copies() && self.config.kv_copy_always;
        if let Some(completed) = copy.filter(|_| at_completion) {
            self.after.push_back(copy_of(name, completed));
        }
        action
    }

    /// The attempt's outcome is recorded (`result`): the caller's answer if
    /// it was waiting for that (KV-only mode), else the log line and data
    /// point, which wait for `finish` to say how it ended.
    fn recorded(&mut self, finishing: Finishing, result: FinishResult) -> Action {
        self.log.finish = Some(result);
        self.stage = Stage::Answered;
        match finishing.reply {
            Some(reply) => self.respond(reply),
            None => {
                self.log_decision();
                self.next_after()
            }
        }
    }

    /// The pause before a `finish` (after the answer, or before repeating
    /// one the store failed) is over.
    pub fn paused(&mut self, now_ms: u64) -> Action {
        self.since = now_ms;
        self.next_seal().unwrap_or_else(|| self.finish_call())
    }

    /// KV-only mode: `finish` on the reservation this exchange holds; a
    /// stored answer is written to KV before the caller has it: the copy
    /// is the only record, and a sequential retry must find it. A failed
    /// write leaves later retries unprotected, as a missed KV propagation
    /// would.
    pub(super) fn kv_finish(&mut self, now_ms: u64) -> Action {
        let Stage::Finishing(finishing) = std::mem::replace(&mut self.stage, Stage::Answered) else {
            return Action::Done;
        };
        let reserved = self.reserved.take();
        let step = finish(reserved, finishing.attempt, finishing.outcome.clone(), now_ms, &self.policy().records);
        match step.answer {
            // The answer waits in `Finishing` for its copy ([`Exchange::copy_written`]).
            Finished::Stored(completed) => {
                let name = finishing.name;
                self.stage = Stage::Finishing(finishing);
                copy_of(name, completed)
            }
            other => self.recorded(finishing, finish_result(other).0),
        }
    }

    /// An unprotected forward ended: the origin's status and headers (its
    /// body stays with the host), or why no answer came.
    pub fn forwarded(&mut self, result: Result<(u16, Vec<(String, String)>), String>, now_ms: u64) -> Action {
        let Stage::Forwarding { outcome, error } = std::mem::replace(&mut self.stage, Stage::Answered) else {
            return Action::Done;
        };
        Timing::add(&mut self.timing.origin, now_ms.saturating_sub(self.since));
        if outcome == Verdict::PassThrough {
            // SPEC §5: what the layer only passes through reaches the browser
            // as the origin sent it; the layer never widens the API's CORS.
            self.cors = None;
        }
        let (method, path) = (std::mem::take(&mut self.log.method), std::mem::take(&mut self.log.path));
        self.log = DecisionLog { outcome, tier: Tier::Origin, error, method, path, ..DecisionLog::default() };
        // A WebSocket upgrade's `101` passes through; another interim status
        // is no answer the caller could be given.
        let result = result.and_then(|(status, headers)| match not_final(status).filter(|_| status != 101) {
            Some(why) => Err(why),
            None => Ok((status, headers)),
        });
        let reply = match result {
            Ok((status, headers)) => Reply::new(status, headers, ReplyBody::Origin),
            Err(e) => {
                self.log.error = Some(e);
                Reply::problem(&Problem::OriginUnreachable)
            }
        };
        // The baseline path logs (and counts) only failures and fail-open
        // forwards.
        let quiet = outcome == Verdict::PassThrough && self.log.error.is_none();
        self.answer(reply, !quiet)
    }

    /// The answer was handed to the caller: an attempt's outcome is
    /// recorded next, anything else queued after the answer runs now.
    ///
    /// Before the `finish`, a pause of 0 ms: the host hands its thread back
    /// to the runtime once, so the answer's bytes go out before the work
    /// after it (encoding the `finish`, its round trip, the KV copy, the log
    /// line) runs on the same thread. An isolate's first request pays there
    /// for compiling that code, which would otherwise come before the
    /// answer leaves (docs/performance.md).
    pub fn responded(&mut self, now_ms: u64) -> Action {
        let Stage::Finishing(finishing) = &mut self.stage else { return self.next_after() };
        finishing.started = now_ms;
        Action::Pause { ms: 0 }
    }

    /// A step the host performed threw instead of reporting a result (a
    /// fault of the host or the runtime: a response it could not build, a
    /// call that threw where it should have failed): the exchange goes on
    /// as the stage it was in allows. Once the origin has answered, the
    /// attempt's `finish` is never skipped (SPEC §8: no failure after the
    /// origin answered may leave a key "running"): a throw while answering
    /// or finishing counts as a failed `finish` try, repeated as those are.
    /// During the origin call it is no answer (the outcome is unknown);
    /// during a store or KV call, that call failed; reading the body, the
    /// body broke. Anything queued after the answer goes on.
    pub fn step_failed(&mut self, error: String, now_ms: u64) -> Action {
        match &self.stage {
            Stage::Body { .. } => self.body_ended(true, now_ms),
            Stage::ReadFirst(_) | Stage::Fallback { .. } | Stage::KvBeginning(_) => self.copy_read(Err(error), now_ms),
            Stage::Detaching(_) => self.detached(now_ms),
            Stage::Beginning(_) | Stage::Admin(_) => self.store_answered(Err(error), now_ms),
            Stage::Calling { .. } => self.origin_answered(OriginResult::NoAnswer(error), now_ms),
            Stage::Finishing(finishing) if finishing.sealing.is_some() => self.ciphered(Err(error), now_ms),
            Stage::Opening(_) => self.ciphered(Err(error), now_ms),
            Stage::Finishing(_) => self.finished(Err(error), now_ms),
            Stage::Forwarding { .. } => self.forwarded(Err(error), now_ms),
            Stage::Answered => {
                self.log.error.get_or_insert(error);
                self.next_after()
            }
        }
    }

    /// The log line was written.
    pub fn logged(&mut self, _now_ms: u64) -> Action {
        self.next_after()
    }

    /// The data point was written (or failed to be: nothing depends on it).
    pub fn metric_written(&mut self, _now_ms: u64) -> Action {
        self.next_after()
    }

    /// The abandon call ended (its result changes nothing).
    pub fn abandoned(&mut self, _now_ms: u64) -> Action {
        self.next_after()
    }

    /// The KV copy was written (or failed to be: nothing depends on it).
    pub fn copy_written(&mut self, now_ms: u64) -> Action {
        // KV-only mode: the answer was waiting in `Finishing` for its copy.
        let Stage::Finishing(finishing) = std::mem::replace(&mut self.stage, Stage::Answered) else {
            return self.next_after();
        };
        Timing::add(&mut self.timing.kv, now_ms.saturating_sub(self.since));
        self.recorded(finishing, FinishResult::Stored)
    }

    /// The decision so far (complete once the answer is out).
    pub fn log(&self) -> &DecisionLog {
        &self.log
    }

    fn next_after(&mut self) -> Action {
        self.after.pop_front().unwrap_or(Action::Done)
    }

    /// A stored answer, replayed — opened first when it is sealed. A KV
    /// copy read before the object comes with the request (`object_next`):
    /// if it does not open, the object is asked instead.
    fn replay(&mut self, name: RecordName, completed: &Completed, object_next: Option<Keyed>) -> Action {
        self.log.attempt = Some(completed.attempt);
        match &completed.response {
            StoredAnswer::Plain(response) => self.replay_answer(response),
            StoredAnswer::Sealed(sealed) => self.open(name, sealed, object_next),
        }
    }

    /// A KV copy read before the object did not open (`why`): the request
    /// goes on to the object, as for a miss.
    pub(super) fn copy_unopened(&mut self, keyed: Keyed, why: String) -> Action {
        self.log.attempt = None;
        self.log.error = Some(format!("kv copy: {why}"));
        self.stage = Stage::Detaching(keyed);
        Action::Detach
    }

    /// An answer (opened, if it was sealed) replayed to this caller.
    pub(super) fn replay_answer(&mut self, response: &StoredResponse) -> Action {
        self.log.outcome = Verdict::Replay;
        self.respond(Reply::replay(response, self.origin.as_deref(), self.cookie_jar.as_deref()))
    }

    /// One of the layer's own errors; its log line says why (SPEC §12).
    pub(super) fn refuse(&mut self, problem: Problem) -> Action {
        // A route that takes its key from elsewhere says where (SPEC §13).
        let problem = match (problem, self.route()) {
            (Problem::MissingKey, Some(route)) if !route.key.iter().all(KeySource::is_default) => {
                let sources: Vec<String> = route.key.iter().map(ToString::to_string).collect();
                Problem::MissingKeyFrom(sources.join(" or "))
            }
            (problem, _) => problem,
        };
        if self.log.outcome == Verdict::Undecided {
            self.log.outcome = Verdict::Refused(problem.code());
        }
        self.log.reason = Some(problem.detail());
        self.respond(Reply::problem(&problem))
    }

    /// The store failed: 503, or the request forwarded unprotected when
    /// failing open.
    fn store_failed(&mut self, error: String, keyed: Keyed) -> Action {
        if self.config.fail_open {
            return self.forward(Verdict::FailOpen, Some(error), true, Some(keyed.body), keyed.body_edited);
        }
        self.log.error = Some(error);
        self.refuse(Problem::StoreUnavailable)
    }

    /// Forwards the request unprotected, without a client-sent
    /// `Idempotency-Attempt` when `strip`, and without the client's
    /// `Content-Length` when `body_edited` (the key field is out of it).
    fn forward(
        &mut self,
        outcome: Verdict,
        error: Option<String>,
        strip: bool,
        body: Option<Vec<u8>>,
        body_edited: bool,
    ) -> Action {
        self.stage = Stage::Forwarding { outcome, error };
        let mut edits = if strip { vec![HeaderEdit::Remove("Idempotency-Attempt")] } else { Vec::new() };
        if body_edited {
            edits.push(HeaderEdit::Remove("Content-Length"));
        }
        Action::Forward { edits, body, timeout_ms: self.policy().origin_timeout_ms }
    }

    /// Answers the caller: the reply with its `Server-Timing` and CORS
    /// headers (a preflight carries its own), then the log line and, when
    /// the dataset is bound, the data point — after the answer, off the
    /// caller's path.
    pub(super) fn respond(&mut self, reply: Reply) -> Action {
        self.answer(reply, true)
    }

    /// [`Exchange::respond`], with the log line and data point only when
    /// `logged`.
    fn answer(&mut self, reply: Reply, logged: bool) -> Action {
        let reply = if self.log.outcome == Verdict::Preflight { reply } else { self.dressed(reply) };
        self.log.status = reply.status;
        self.stage = Stage::Answered;
        if logged {
            self.log_decision();
        }
        Action::Respond(reply)
    }

    /// What every answer that passed through the layer gets: its
    /// `Server-Timing` and CORS headers, and an HTML answer's forms their
    /// keys (SPEC §8).
    fn dressed(&self, reply: Reply) -> Reply {
        let mut reply = reply.decorated(&self.timing, self.cors.as_deref(), self.config.cors_credentials);
        let page_origin = self.form_keys.as_ref().filter(|_| gets_form_keys(reply.status, &reply.headers));
        if let Some(page_origin) = page_origin {
            // Before the length goes: a body known to be short cannot hold a
            // tag the rewriter would choke on, and skips the guard's cost.
            let known_len = match &reply.body {
                ReplyBody::Bytes(bytes) => Some(bytes.len() as u64),
                ReplyBody::Origin => reply
                    .headers
                    .iter()
                    .find(|(name, _)| name.eq_ignore_ascii_case("content-length"))
                    .and_then(|(_, value)| value.trim().parse().ok()),
            };
            let longest_tag = if may_hold_a_long_tag(known_len) { LONGEST_TAG_BYTES } else { 0 };
            edit_headers(&mut reply.headers);
            reply.form_keys = Some(FormRewrite { page_origin: page_origin.clone(), longest_tag });
        }
        reply
    }

    /// Queues the log line — unless the decision is routine and this
    /// request was not drawn to log one (SPEC §5) — and, when the dataset
    /// is bound, the data point, never sampled; ahead of anything else
    /// queued.
    fn log_decision(&mut self) {
        if self.metrics {
            self.after.push_front(Action::Metric(self.log.data_point(&self.timing)));
        }
        if self.routine_logged || !self.log.is_routine() {
            self.after.push_front(Action::Log(self.log.to_json(&self.timing)));
        }
    }
}

/// Why an origin's answer with `status` is not a final answer (outside 200
/// to 599: an interim `1xx`, which workerd's `fetch` can hand back as the
/// response), or `None` for a final one.
fn not_final(status: u16) -> Option<String> {
    (!(200..=599).contains(&status)).then(|| format!("the origin answered {status}, not a final status (200 to 599)"))
}

/// The KV copy of `completed`, for record `name`: without the cookies only
/// the object may keep (SPEC §3).
fn copy_of(name: RecordName, completed: Completed) -> Action {
    let response = completed.response.without_cookies();
    Action::WriteCopy { name, completed: Completed { response, ..completed } }
}

/// How a `finish` ended, for the log, and the answer it stored.
fn finish_result(finished: Finished) -> (FinishResult, Option<Completed>) {
    match finished {
        Finished::Stored(completed) => (FinishResult::Stored, Some(completed)),
        Finished::Released => (FinishResult::Released, None),
        Finished::LeaseKept => (FinishResult::LeaseKept, None),
        Finished::Stale => (FinishResult::Stale, None),
    }
}
