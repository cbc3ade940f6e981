//! The delivery exchange: one message from its `begin` to its ack or retry.

use crate::core::FINISH_RETRY_PAUSES_MS;
use crate::core::config::log_sample::LogSample;
use crate::core::config::variables::{Config, DEFAULT_STORE_TIMEOUT_MS, default_origin_timeout_ms};
use crate::core::coordinator::wire::{StoreCall, decode_decision, decode_finished};
use crate::core::delivery::event::{
    ConsumerStats, Delivery, EVENT_FINGERPRINT, EventKeyStrategy, HandlerRun, MessageBody, Settle,
    conflict_backoff_secs, event_record_name, handler_outcome, settle,
};
use crate::core::record::decision::{Decision, Finished};
use crate::core::record::policy::RecordPolicy;
use crate::core::request::key::IdempotencyKey;
use crate::core::request::scope::RecordName;
use crate::core::text::json_line::JsonObject;

/// Longest delay asked of the queue by default, in seconds.
pub const DEFAULT_MAX_RETRY_DELAY_SECS: u32 = 300;

/// How a consumer handles every message: its name (its records and
/// counters are kept apart from every other consumer's), how messages are
/// keyed, the records' lease and TTL, and its time limits.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConsumerConfig {
    /// The consumer's name.
    pub name: String,
    /// How a message is named for deduplication.
    pub strategy: EventKeyStrategy,
    /// Lease, TTL and release set of the event records.
    pub policy: RecordPolicy,
    /// The store's time limit per call, in ms.
    pub store_timeout_ms: u64,
    /// The handler's time limit, in ms, below the lease: a handler still
    /// running then is no longer waited for, and its key stays leased.
    pub handler_timeout_ms: u64,
    /// The longest delay asked of the queue, in seconds.
    pub max_retry_delay_secs: u32,
    /// How many of a batch's messages run at once (at least 1): one key's
    /// deliveries never do ([`batch_lanes`]).
    pub concurrency: usize,
    /// The share of routine lines written (`IDEMPOTENCY_LOG_SAMPLE`, SPEC
    /// §5): a message run once and acknowledged, or acknowledged as a
    /// duplicate, with no error; every other line is always written.
    pub log_sample: LogSample,
}

/// The most messages of a batch a consumer runs at once.
pub const MAX_CONCURRENCY: usize = 100;

/// A batch's lanes (SPEC §11): the indexes of its messages, grouped so that
/// the deliveries of one record (one key) run one after another, in the
/// batch's order; a message with no record (no key) is a lane of its own.
/// The lanes may run at once, up to the consumer's `concurrency`.
///
/// ```
/// use oncekey::core::{batch_lanes, RecordName};
/// let (a, b) = (Some(RecordName([1; 32])), Some(RecordName([2; 32])));
/// assert_eq!(batch_lanes(&[a, b, a, None]), vec![vec![0, 2], vec![1], vec![3]]);
/// ```
pub fn batch_lanes<R: PartialEq>(records: &[Option<R>]) -> Vec<Vec<usize>> {
    let mut lanes: Vec<Vec<usize>> = Vec::new();
    for (i, record) in records.iter().enumerate() {
        let same = |lane: &&mut Vec<usize>| record.is_some() && records[lane[0]] == *record;
        match lanes.iter_mut().find(same) {
            Some(lane) => lane.push(i),
            None => lanes.push(vec![i]),
        }
    }
    lanes
}

impl ConsumerConfig {
    /// A consumer named `name`, keyed by message id, with `policy`'s lease
    /// and TTL, the default store limit, and the default origin time limit
    /// for that lease as the handler's.
    pub fn new(name: &str, policy: RecordPolicy) -> Self {
        Self {
            name: name.to_owned(),
            strategy: EventKeyStrategy::MessageId,
            handler_timeout_ms: default_origin_timeout_ms(policy.lease_ms),
            policy,
            store_timeout_ms: DEFAULT_STORE_TIMEOUT_MS,
            max_retry_delay_secs: DEFAULT_MAX_RETRY_DELAY_SECS,
            concurrency: 1,
            log_sample: LogSample::default(),
        }
    }

    /// A consumer named `name` configured from the worker's variables as
    /// the layer reads them (SPEC §11): the records' lease, TTL and release
    /// set, the store's time limit, and the origin's time limit
    /// (`IDEMPOTENCY_ORIGIN_TIMEOUT_SECONDS`, below the lease) as the
    /// handler's.
    ///
    /// ```
    /// use oncekey::core::{Config, ConsumerConfig};
    /// let config = Config::from_vars(|n| (n == "IDEMPOTENCY_STORE_TIMEOUT_MS").then(|| "900".into())).unwrap();
    /// let consumer = ConsumerConfig::from_layer("loyalty", &config);
    /// assert_eq!((consumer.store_timeout_ms, consumer.handler_timeout_ms), (900, config.policy.origin_timeout_ms));
    /// ```
    pub fn from_layer(name: &str, config: &Config) -> Self {
        Self {
            store_timeout_ms: config.policy.store_timeout_ms,
            handler_timeout_ms: config.policy.origin_timeout_ms,
            log_sample: config.log_sample,
            ..Self::new(name, config.policy.records.clone())
        }
    }
}

/// A whole-number setting of a consumer and the values it may take, one
/// rule for both hosts: the Rust `Consumer`'s builder brings a value within
/// it ([`clamp`](Self::clamp)), `withQueueIdempotency`'s options refuse one
/// outside it ([`check`](Self::check)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConsumerSetting {
    /// The least value.
    pub min: u32,
    /// The greatest value.
    pub max: u32,
    /// What the number counts, for the rule's text (`" of seconds"`).
    unit: &'static str,
}

impl ConsumerSetting {
    /// The longest delay asked of the queue on a retry
    /// ([`ConsumerConfig::max_retry_delay_secs`]): 1 second to 12 hours,
    /// the longest delay Cloudflare Queues accepts.
    pub const MAX_RETRY_DELAY_SECS: Self = Self { min: 1, max: 43_200, unit: " of seconds" };

    /// How many of a batch's messages run at once
    /// ([`ConsumerConfig::concurrency`]): 1 to [`MAX_CONCURRENCY`].
    pub const CONCURRENCY: Self = Self { min: 1, max: MAX_CONCURRENCY as u32, unit: "" };

    /// `value` brought within the setting's bounds.
    ///
    /// ```
    /// use oncekey::core::ConsumerSetting;
    /// assert_eq!(ConsumerSetting::MAX_RETRY_DELAY_SECS.clamp(86_400), 43_200);
    /// ```
    pub fn clamp(self, value: u32) -> u32 {
        value.clamp(self.min, self.max)
    }

    /// `value` (a number as JavaScript gives it) when it is a whole number
    /// within the setting's bounds.
    ///
    /// ```
    /// use oncekey::core::ConsumerSetting;
    /// assert_eq!(ConsumerSetting::CONCURRENCY.check(4.0), Ok(4));
    /// assert_eq!(ConsumerSetting::CONCURRENCY.check(0.5).unwrap_err(), "a whole number from 1 to 100");
    /// ```
    ///
    /// # Errors
    /// The rule, as text (`a whole number of seconds from 1 to 43200`),
    /// for a value that is not a whole number or is out of bounds.
    pub fn check(self, value: f64) -> Result<u32, String> {
        let within = value.fract() == 0.0 && (f64::from(self.min)..=f64::from(self.max)).contains(&value);
        if within { Ok(value as u32) } else { Err(self.rule()) }
    }

    /// The rule as text: `a whole number of seconds from 1 to 43200`.
    pub fn rule(self) -> String {
        format!("a whole number{} from {} to {}", self.unit, self.min, self.max)
    }
}

/// A message as the queue delivered it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Message {
    /// The queue's message id.
    pub id: String,
    /// The body: a string as its UTF-8 bytes, bytes as they are, any other
    /// value as JSON, each with its form; or why it has no bytes that stand
    /// for it (a `Map`, a `BigInt`, a cycle), which only matters to a
    /// strategy that hashes it.
    pub body: Result<MessageBody, String>,
    /// When it was first sent, in ms since the Unix epoch.
    pub timestamp_ms: u64,
}

/// One message, as the handler sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Event {
    /// The queue's message id.
    pub id: String,
    /// The key the message was deduplicated under.
    pub key: String,
    /// The body: a string body as its UTF-8 bytes, bytes as they are, any
    /// other value as JSON.
    pub body: Vec<u8>,
    /// The attempt number under this key (1 on a first run; higher after a
    /// failure or a reclaimed lease).
    pub attempt: u32,
    /// Whether this run took over an expired lease: an earlier run may have
    /// done part of the work, so the handler must tolerate it.
    pub reclaimed: bool,
}

impl Event {
    /// The body read as JSON into the handler's own type: what a producer
    /// sent as an object (or a string of JSON text) comes back typed.
    ///
    /// ```
    /// # use oncekey::core::Event;
    /// #[derive(serde::Deserialize)]
    /// struct OrderPlaced { order_id: String }
    /// let event = Event { id: "m1".into(), key: "k".into(), body: br#"{"order_id":"o1"}"#.to_vec(), attempt: 1, reclaimed: false };
    /// let order: OrderPlaced = event.json().unwrap();
    /// assert_eq!(order.order_id, "o1");
    /// ```
    ///
    /// # Errors
    /// The body is not JSON of that shape (the handler's `Err` retries it).
    pub fn json<T: serde::de::DeserializeOwned>(&self) -> Result<T, serde_json::Error> {
        serde_json::from_slice(&self.body)
    }
}

/// What the host does next for a message; each is reported back with the
/// [`DeliveryExchange`] method its doc names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DeliveryAction {
    /// Send `call` to the coordinator of record `name`, within `timeout_ms`;
    /// report with [`DeliveryExchange::store_answered`].
    Store {
        /// The record's name: which object.
        name: RecordName,
        /// The call (`begin` or `finish`).
        call: StoreCall,
        /// The call's time limit, in ms.
        timeout_ms: u64,
    },
    /// Run the handler on `event`, waiting at most `timeout_ms`; report with
    /// [`DeliveryExchange::handler_ended`].
    RunHandler {
        /// The message as the handler sees it.
        event: Event,
        /// How long to wait for it, in ms.
        timeout_ms: u64,
    },
    /// Acknowledge the message; then [`DeliveryExchange::settled`].
    Ack,
    /// Ask the queue to deliver the message again after `delay_secs`; then
    /// [`DeliveryExchange::settled`].
    Retry {
        /// Seconds before the queue redelivers it.
        delay_secs: u32,
    },
    /// Wait `ms` before repeating a `finish` the store failed; then
    /// [`DeliveryExchange::paused`].
    Pause {
        /// How long, in ms.
        ms: u64,
    },
    /// Write one log line (JSON); then [`DeliveryExchange::logged`].
    Log(String),
    /// Nothing more for this message.
    Done,
}

/// Where a delivery is.
#[derive(Clone, Debug)]
enum Stage {
    /// The store's `begin`; the event waits for a run.
    Beginning(Event),
    /// The handler runs attempt `attempt`.
    Running { attempt: u32 },
    /// The store's `finish` of how the handler's run ended, after
    /// `failures` failed tries.
    Finishing { attempt: u32, run: HandlerRun, failures: usize },
    /// Acked or retried; the log line is next.
    Settling,
    /// The log line is written.
    Logged,
}

/// One message's delivery, from its `begin` to its log line.
#[derive(Clone, Debug)]
pub struct DeliveryExchange {
    name: RecordName,
    policy: RecordPolicy,
    store_timeout_ms: u64,
    handler_timeout_ms: u64,
    max_retry_delay_secs: u32,
    timestamp_ms: u64,
    stage: Stage,
    stats: ConsumerStats,
    log: EventLog,
    /// The consumer's share of routine lines written.
    log_sample: LogSample,
}

#[cfg(any(test, feature = "model"))]
impl DeliveryExchange {
    /// What decides the delivery's next steps, for the model checker's
    /// deduplication: its record and stage, not its counters or log line.
    pub fn protocol_state(&self) -> String {
        format!("{:?}|{:?}", self.name, self.stage)
    }
}

impl DeliveryExchange {
    /// Starts the delivery of `message` under `config`. `custom_key` is
    /// what the user's function gave the message, for a
    /// [`EventKeyStrategy::Custom`] consumer: its key, or why there is none
    /// (it threw, or returned no string).
    ///
    /// An event is never taken for another (SPEC §11): a message with no
    /// key of §1's form — the function failed or gave an empty, too long or
    /// non-ASCII key, or the content hash cannot read the body — is retried
    /// alone, its log line naming the message and why; never acked as a
    /// duplicate, never merged with other events.
    pub fn start(
        config: &ConsumerConfig,
        message: Message,
        custom_key: Option<Result<String, String>>,
    ) -> (Self, DeliveryAction) {
        let Message { id, body, timestamp_ms } = message;
        let key = match (&config.strategy, custom_key, &body) {
            (EventKeyStrategy::Custom, Some(Ok(key)), _) => IdempotencyKey::from_chars(&key)
                .map(|key| key.as_str().to_owned())
                .map_err(|e| format!("the key function's key is not a key: {e}")),
            (EventKeyStrategy::Custom, Some(Err(why)), _) => Err(format!("the key function gave no key: {why}")),
            (EventKeyStrategy::Custom, None, _) => Err("the key function was not called".to_owned()),
            (EventKeyStrategy::ContentHash { .. }, _, Err(why)) => Err(format!("the body cannot be hashed: {why}")),
            (strategy, _, Ok(body)) => Ok(strategy.key(&id, body).unwrap_or_else(|| id.clone())),
            (_, _, Err(_)) => Ok(id.clone()),
        };
        let mut delivery = Self {
            name: RecordName([0; 32]),
            policy: config.policy.clone(),
            store_timeout_ms: config.store_timeout_ms,
            handler_timeout_ms: config.handler_timeout_ms,
            max_retry_delay_secs: config.max_retry_delay_secs,
            timestamp_ms,
            stage: Stage::Settling,
            stats: ConsumerStats::default(),
            log: EventLog { consumer: config.name.clone(), ..EventLog::default() },
            log_sample: config.log_sample,
        };
        let key = match key {
            Ok(key) => key,
            Err(why) => {
                delivery.log.delivery = "no-key";
                delivery.log.error = Some(format!("message {id}: {why}"));
                let action = delivery.retry(delivery.conflict_delay(1, 0));
                return (delivery, action);
            }
        };
        let name = event_record_name(&config.name, &key);
        delivery.name = name;
        delivery.log.record = name.to_hex();
        let fingerprint = body.as_ref().map_or(EVENT_FINGERPRINT, |body| config.strategy.fingerprint(body));
        let body = body.map(MessageBody::into_bytes).unwrap_or_default();
        let call = StoreCall::Begin {
            policy: config.policy.clone(),
            fingerprint,
            wait_ms: 0,
            reservation: 0,
            open_keys: Some(Vec::new()),
        };
        delivery.stage = Stage::Beginning(Event { id, key, body, attempt: 0, reclaimed: false });
        let action = delivery.store(call);
        (delivery, action)
    }

    /// The store answered the pending call (its reply's bytes), or failed.
    pub fn store_answered(&mut self, reply: Result<Vec<u8>, String>, now_ms: u64) -> DeliveryAction {
        match std::mem::replace(&mut self.stage, Stage::Settling) {
            Stage::Beginning(event) => {
                let decision = reply.and_then(|bytes| decode_decision(&bytes).map_err(|e| e.to_string()));
                self.begun(event, decision, now_ms)
            }
            Stage::Finishing { attempt, run, failures } => {
                let finished = reply.and_then(|bytes| decode_finished(&bytes).map_err(|e| e.to_string()));
                // A failed finish is repeated as the HTTP one is: an outcome
                // known but not recorded would hold the key for a lease.
                if let (Err(_), Some(&ms)) = (&finished, FINISH_RETRY_PAUSES_MS.get(failures)) {
                    self.stage = Stage::Finishing { attempt, run, failures: failures + 1 };
                    return DeliveryAction::Pause { ms };
                }
                self.finished(attempt, run, finished)
            }
            stage => {
                self.stage = stage;
                DeliveryAction::Done
            }
        }
    }

    /// The handler's run ended as `run` (`error`: what it said, or why it
    /// was no longer waited for).
    pub fn handler_ended(&mut self, run: HandlerRun, error: Option<String>) -> DeliveryAction {
        let Stage::Running { attempt } = self.stage else { return DeliveryAction::Done };
        self.log.error = match (run, error) {
            (HandlerRun::StillRunning, _) => {
                Some(format!("handler still running after {} ms", self.handler_timeout_ms))
            }
            (HandlerRun::Failed, error) => Some(format!("handler: {}", error.unwrap_or_default())),
            (HandlerRun::Done, _) => None,
        };
        self.stage = Stage::Finishing { attempt, run, failures: 0 };
        self.finish_call()
    }

    /// The pause before repeating a failed `finish` is over.
    pub fn paused(&mut self) -> DeliveryAction {
        self.finish_call()
    }

    fn finish_call(&self) -> DeliveryAction {
        let Stage::Finishing { attempt, run, .. } = self.stage else { return DeliveryAction::Done };
        // A delivery's `begin` reserves with no number: its attempt alone
        // names it.
        let call =
            StoreCall::Finish { policy: self.policy.clone(), attempt, reservation: 0, outcome: handler_outcome(run) };
        self.store(call)
    }

    /// The message was acknowledged or retried.
    pub fn settled(&mut self) -> DeliveryAction {
        if !matches!(self.stage, Stage::Settling) {
            return DeliveryAction::Done;
        }
        self.stage = Stage::Logged;
        // A routine line is sampled (SPEC §5), drawn from the event's record
        // name: every copy of one event is logged alike.
        let draw = self.name.0.iter().take(8).fold(0u64, |n, byte| n << 8 | u64::from(*byte)) | 1;
        if self.log.is_routine() && !self.log_sample.keeps(draw) {
            return DeliveryAction::Done;
        }
        DeliveryAction::Log(self.log.to_json())
    }

    /// The log line was written.
    pub fn logged(&mut self) -> DeliveryAction {
        DeliveryAction::Done
    }

    /// The record this message is delivered under; `None` for a message
    /// with no key (retried alone).
    pub fn record(&self) -> Option<RecordName> {
        (!self.log.record.is_empty()).then_some(self.name)
    }

    /// This message's counts, for the consumer's counters.
    pub fn stats(&self) -> ConsumerStats {
        self.stats
    }

    fn store(&self, call: StoreCall) -> DeliveryAction {
        DeliveryAction::Store { name: self.name, call, timeout_ms: self.store_timeout_ms }
    }

    fn begun(&mut self, event: Event, decision: Result<Decision, String>, now_ms: u64) -> DeliveryAction {
        let age_ms = now_ms.saturating_sub(self.timestamp_ms);
        let decision = match decision {
            Ok(decision) => decision,
            Err(error) => {
                // Fail closed: an unprotected run could be a second run.
                self.log.delivery = "store-unavailable";
                self.log.error = Some(error);
                return self.retry(self.conflict_delay(1, age_ms));
            }
        };
        let delivery = match Delivery::from_decision(&decision) {
            Delivery::RetryLater { delay_secs } => {
                Delivery::RetryLater { delay_secs: self.conflict_delay(delay_secs, age_ms) }
            }
            other => other,
        };
        self.stats.count_delivery(delivery);
        match delivery {
            Delivery::AckDuplicate => {
                self.log.delivery = "duplicate";
                self.ack()
            }
            Delivery::RetryLater { delay_secs } => {
                self.log.delivery = "in-flight";
                self.retry(delay_secs)
            }
            Delivery::KeyReused => {
                self.log.delivery = "key-reused";
                self.log.error = Some(format!(
                    "message {}: its key was handled for an event with other content; retried until it dead-letters, \
                     never acknowledged as that event's duplicate",
                    event.id
                ));
                self.retry(self.conflict_delay(1, age_ms))
            }
            Delivery::Run { attempt, reclaimed } => {
                self.log.delivery = if reclaimed { "run-reclaimed" } else { "run" };
                self.log.attempt = Some(attempt);
                self.stage = Stage::Running { attempt };
                // Like the origin's, the handler's time limit is below the
                // lease: its finish comes while it can still own the key.
                DeliveryAction::RunHandler {
                    event: Event { attempt, reclaimed, ..event },
                    timeout_ms: self.handler_timeout_ms,
                }
            }
        }
    }

    fn finished(&mut self, attempt: u32, run: HandlerRun, finished: Result<Finished, String>) -> DeliveryAction {
        let finished = match finished {
            Ok(finished) => {
                self.stats.count_finish(&finished);
                self.log.finish = finished_name(&finished);
                Some(finished)
            }
            Err(error) => {
                self.log.finish = "store-failed";
                self.log.error = Some(error);
                None
            }
        };
        match settle(finished.as_ref(), run == HandlerRun::Done, attempt, self.max_retry_delay_secs) {
            Settle::Ack => self.ack(),
            Settle::Retry { delay_secs } => self.retry(delay_secs),
        }
    }

    /// The delay for a message whose key is held (or whose store is down),
    /// growing with the message's age ([`Delivery::with_conflict_backoff`]).
    fn conflict_delay(&self, at_least_secs: u32, age_ms: u64) -> u32 {
        conflict_backoff_secs(at_least_secs, age_ms, self.policy.lease_ms, self.max_retry_delay_secs)
    }

    fn ack(&mut self) -> DeliveryAction {
        self.stage = Stage::Settling;
        self.log.settle = "ack";
        DeliveryAction::Ack
    }

    fn retry(&mut self, delay_secs: u32) -> DeliveryAction {
        self.stage = Stage::Settling;
        self.log.settle = "retry";
        self.log.delay_secs = Some(delay_secs);
        DeliveryAction::Retry { delay_secs }
    }
}

fn finished_name(finished: &Finished) -> &'static str {
    match finished {
        Finished::Stored(_) => "stored",
        Finished::Released => "released",
        Finished::LeaseKept => "lease-kept",
        Finished::Stale => "stale",
    }
}

/// One log line per message: what was decided and how it settled. Names
/// the record by its hash (64 hex digits), never by the key or the body.
#[derive(Clone, Debug, Default)]
struct EventLog {
    consumer: String,
    delivery: &'static str,
    attempt: Option<u32>,
    record: String,
    finish: &'static str,
    settle: &'static str,
    delay_secs: Option<u32>,
    error: Option<String>,
}

impl EventLog {
    /// A message run once and acknowledged, or acknowledged as a duplicate,
    /// with no error: what `IDEMPOTENCY_LOG_SAMPLE` samples.
    fn is_routine(&self) -> bool {
        matches!(self.delivery, "run" | "duplicate") && self.settle == "ack" && self.error.is_none()
    }

    fn to_json(&self) -> String {
        JsonObject::new()
            .string("oncekey", "event")
            .string("consumer", &self.consumer)
            .string("delivery", self.delivery)
            .number("attempt", self.attempt.map(u64::from))
            .string_or_null("record", Some(self.record.as_str()).filter(|r| !r.is_empty()))
            .string("finish", self.finish)
            .string("settle", self.settle)
            .number("delay_s", self.delay_secs.map(u64::from))
            .string_or_null("error", self.error.as_deref())
            .end()
    }
}
