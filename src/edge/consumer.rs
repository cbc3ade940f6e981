//! The queue consumer wrapper: a Cloudflare Queues handler runs at most
//! once per event key while the key is remembered, on the same state
//! machine and the same Durable Object as the HTTP layer.
//!
//! It does not use the KV replay tier: an event has no answer to replay,
//! only "done", and a KV read before every message would add a round trip
//! to every first run to save one on the rare duplicate.
//!
//! For each message of a batch: name it by its key (the message id, a
//! content hash, or the user's function), `begin` it in the key's object,
//! and do what the core says — run the handler under a lease, acknowledge a
//! duplicate without running it, or retry later when another consumer holds
//! the key. After the handler, `finish` stores the key as done (success) or
//! releases it (failure), and the message is acknowledged or retried with
//! backoff. A consumer that dies mid-handler finishes nothing: its lease
//! runs out and the next delivery reclaims the key.
//!
//! The counters of each batch are added to an object of the coordinator's
//! namespace (one per consumer name), so they survive isolates;
//! [`Consumer::stats`] reads them. With an Analytics Engine dataset bound
//! as `IDEMPOTENCY_METRICS`, each batch's counts are also written there as
//! one data point ([`ConsumerStats::data_point`]).

use std::fmt::Display;
use std::future::Future;
use std::rc::Rc;

use worker::wasm_bindgen::{JsCast, JsValue};
use worker::{
    Env, MessageBatch, MessageExt, Method, QueueRetryOptionsBuilder, RawMessage, Request, RequestInit, js_sys,
};

use crate::core::{
    ConsumerStats, Delivery, EVENT_FINGERPRINT, EventKeyStrategy, Finished, HandlerRun, METRICS_BINDING, Problem,
    RecordName, RecordPolicy, Settle, Store, default_origin_timeout_ms, event_record_name, handler_outcome, settle,
};

use super::consumer_counters::{COUNTERS_PATH, object_name};
use super::deadline::within;
use super::durable_store::DurableStore;
use super::host::write_data_point;
use super::http::now_ms;
use super::layer::COORDINATOR_BINDING;

/// Longest delay asked of the queue by default, in seconds.
const DEFAULT_MAX_RETRY_DELAY_SECS: u32 = 300;

/// One message, as the handler sees it.
#[derive(Clone, Debug)]
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

/// A user's key function: message id and body in, key out.
type KeyFn = Rc<dyn Fn(&str, &[u8]) -> String>;

/// An exactly-once wrapper around a queue handler.
///
/// ```ignore
/// use oncekey::edge::Consumer;
/// use worker::*;
///
/// #[event(queue)]
/// async fn queue(batch: MessageBatch<serde_json::Value>, env: Env, _ctx: Context) -> Result<()> {
///     let consumer = Consumer::from_env(&env, "loyalty")
///         .map_err(|p| Error::RustError(p.detail()))?
///         .content_hash(&["publishedAt"]);
///     consumer.consume(&batch, &env, |event| award_points(event, env.clone())).await;
///     Ok(())
/// }
/// ```
#[derive(Clone)]
pub struct Consumer {
    name: String,
    strategy: EventKeyStrategy,
    key_fn: Option<KeyFn>,
    policy: RecordPolicy,
    store_timeout_ms: u64,
    handler_timeout_ms: u64,
    max_retry_delay_secs: u32,
}

impl std::fmt::Debug for Consumer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Consumer").field("name", &self.name).field("strategy", &self.strategy).finish_non_exhaustive()
    }
}

impl Consumer {
    /// A consumer named `name` (its records and counters are kept apart from
    /// every other consumer's), keyed by message id, with `policy`'s lease
    /// and TTL, and a 5 s store timeout. The handler is given the default
    /// origin time limit for that lease ([`default_origin_timeout_ms`]).
    pub fn new(name: &str, policy: RecordPolicy) -> Self {
        Self {
            name: name.to_owned(),
            strategy: EventKeyStrategy::MessageId,
            key_fn: None,
            handler_timeout_ms: default_origin_timeout_ms(policy.lease_ms),
            policy,
            store_timeout_ms: 5000,
            max_retry_delay_secs: DEFAULT_MAX_RETRY_DELAY_SECS,
        }
    }

    /// A consumer configured from the worker's variables: the lease
    /// (`IDEMPOTENCY_LEASE_SECONDS`), the TTL, the store timeout, and the
    /// handler's time limit (`IDEMPOTENCY_ORIGIN_TIMEOUT_SECONDS`, below the
    /// lease). A handler still running at the limit is no longer waited for:
    /// its key stays leased until the lease ends and the message is retried,
    /// as for a consumer that crashed. The work it started may still finish.
    ///
    /// # Errors
    /// [`Problem::Misconfigured`] naming the first variable with a bad value.
    pub fn from_env(env: &Env, name: &str) -> Result<Self, Problem> {
        // Through the layer's reader: one copy of the variable parser.
        let layer = super::Idempotency::from_env(env)?;
        let config = layer.config();
        let mut consumer = Self::new(name, config.records.clone());
        consumer.store_timeout_ms = config.store_timeout_ms;
        consumer.handler_timeout_ms = config.origin_timeout_ms;
        Ok(consumer)
    }

    /// Keys messages by the queue's message id (the default): a redelivery
    /// is a duplicate, the same event sent twice is not.
    #[must_use]
    pub fn message_id(mut self) -> Self {
        self.strategy = EventKeyStrategy::MessageId;
        self.key_fn = None;
        self
    }

    /// Keys messages by a SHA-256 of their JSON body with the named
    /// top-level fields left out (timestamps, event ids): the same content
    /// sent twice is one event.
    #[must_use]
    pub fn content_hash(mut self, ignore_fields: &[&str]) -> Self {
        self.strategy =
            EventKeyStrategy::ContentHash { ignore_fields: ignore_fields.iter().map(|f| (*f).to_owned()).collect() };
        self.key_fn = None;
        self
    }

    /// Keys messages by a function of their id and body, for example the
    /// business id they carry (`"OrderPlaced:" + orderId`).
    #[must_use]
    pub fn key_fn(mut self, key: impl Fn(&str, &[u8]) -> String + 'static) -> Self {
        self.strategy = EventKeyStrategy::Custom;
        self.key_fn = Some(Rc::new(key));
        self
    }

    /// Caps the delays asked of the queue (default 300 s; Cloudflare allows
    /// up to 43200).
    #[must_use]
    pub fn max_retry_delay_secs(mut self, secs: u32) -> Self {
        self.max_retry_delay_secs = secs.max(1);
        self
    }

    /// The consumer's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The key strategy in force.
    pub fn strategy(&self) -> &EventKeyStrategy {
        &self.strategy
    }

    /// Handles a batch: every message is acknowledged or retried explicitly
    /// (never left to the batch's default), one after another so that two
    /// copies in one batch settle as one run and one duplicate. Returns the
    /// batch's counts, which are also added to the consumer's counters.
    ///
    /// The handler returns `Err` for a failure worth retrying; it must
    /// tolerate running again after a failure or a crash (see the README's
    /// handler-side patterns), because those are exactly the runs this
    /// wrapper cannot rule out.
    pub async fn consume<T, F, Fut, E>(&self, batch: &MessageBatch<T>, env: &Env, handler: F) -> ConsumerStats
    where
        F: Fn(Event) -> Fut,
        Fut: Future<Output = Result<(), E>>,
        E: Display,
    {
        let store = env
            .durable_object(COORDINATOR_BINDING)
            .map(|ns| DurableStore::new(ns, self.policy.clone(), self.store_timeout_ms));
        let mut stats = ConsumerStats::default();
        for message in batch.raw_iter() {
            let mut log = EventLog::default();
            match &store {
                Ok(store) => self.one(&message, store, &handler, &mut stats, &mut log).await,
                Err(e) => {
                    log.error = Some(format!("no {COORDINATOR_BINDING}: {e}"));
                    self.retry(&message, 1, &mut log);
                }
            }
            log.emit(&self.name);
        }
        if !stats.is_empty()
            && let Err(e) = self.add_to_counters(env, &stats).await
        {
            worker::console_warn!("oncekey: consumer {} counters not saved: {e}", self.name);
        }
        // With a dataset bound, the batch's counts as one data point too.
        if env.analytics_engine(METRICS_BINDING).is_ok()
            && let Err(e) = write_data_point(env, stats.data_point(&self.name))
        {
            worker::console_warn!("oncekey: consumer {} data point not written: {e}", self.name);
        }
        stats
    }

    /// One message, start to settle.
    async fn one<F, Fut, E>(
        &self,
        message: &RawMessage,
        store: &DurableStore,
        handler: &F,
        stats: &mut ConsumerStats,
        log: &mut EventLog,
    ) where
        F: Fn(Event) -> Fut,
        Fut: Future<Output = Result<(), E>>,
        E: Display,
    {
        let id = message.id();
        let body = body_bytes(&message.body());
        let key = match (&self.strategy, &self.key_fn) {
            (EventKeyStrategy::Custom, Some(key_fn)) => key_fn(&id, &body),
            (strategy, _) => strategy.key(&id, &body).unwrap_or_else(|| id.clone()),
        };
        let name = event_record_name(&self.name, &key);
        log.record = Some(name.to_hex());

        let decision = match store.begin(&name, EVENT_FINGERPRINT, now_ms()).await {
            Ok(decision) => decision,
            Err(e) => {
                // Fail closed: an unprotected run could be a second run.
                log.delivery = "store-unavailable";
                log.error = Some(e.to_string());
                let age_ms = now_ms().saturating_sub(message.timestamp().as_millis());
                let delivery = Delivery::RetryLater { delay_secs: 1 }.with_conflict_backoff(
                    age_ms,
                    self.policy.lease_ms,
                    self.max_retry_delay_secs,
                );
                let Delivery::RetryLater { delay_secs } = delivery else { unreachable!("backoff keeps a retry") };
                return self.retry(message, delay_secs, log);
            }
        };
        let age_ms = now_ms().saturating_sub(message.timestamp().as_millis());
        let delivery = Delivery::from_decision(&decision).with_conflict_backoff(
            age_ms,
            self.policy.lease_ms,
            self.max_retry_delay_secs,
        );
        stats.count_delivery(delivery);
        match delivery {
            Delivery::AckDuplicate => {
                log.delivery = "duplicate";
                self.ack(message, log)
            }
            Delivery::RetryLater { delay_secs } => {
                log.delivery = "in-flight";
                self.retry(message, delay_secs, log)
            }
            Delivery::Run { attempt, reclaimed } => {
                log.delivery = if reclaimed { "run-reclaimed" } else { "run" };
                log.attempt = Some(attempt);
                let event = Event { id, key, body, attempt, reclaimed };
                // Like the origin's, the handler's time limit is below the
                // lease: its finish comes while it can still own the key.
                let run = match within(self.handler_timeout_ms, handler(event)).await {
                    Some(Ok(_)) => HandlerRun::Done,
                    Some(Err(e)) => {
                        log.error = Some(format!("handler: {e}"));
                        HandlerRun::Failed
                    }
                    None => {
                        log.error = Some(format!("handler still running after {} ms", self.handler_timeout_ms));
                        HandlerRun::StillRunning
                    }
                };
                self.settle(message, store, &name, attempt, run, stats, log).await;
            }
        }
    }

    /// Records how the handler's run ended, then acknowledges or retries.
    #[allow(clippy::too_many_arguments)]
    async fn settle(
        &self,
        message: &RawMessage,
        store: &DurableStore,
        name: &RecordName,
        attempt: u32,
        run: HandlerRun,
        stats: &mut ConsumerStats,
        log: &mut EventLog,
    ) {
        let finished = store.finish(name, attempt, handler_outcome(run), now_ms()).await;
        let finished = match finished {
            Ok(finished) => {
                stats.count_finish(&finished);
                log.finish = finished_name(&finished);
                Some(finished)
            }
            Err(e) => {
                log.finish = "store-failed";
                log.error = Some(e.to_string());
                None
            }
        };
        match settle(finished.as_ref(), run == HandlerRun::Done, attempt, self.max_retry_delay_secs) {
            Settle::Ack => self.ack(message, log),
            Settle::Retry { delay_secs } => self.retry(message, delay_secs, log),
        }
    }

    fn ack(&self, message: &RawMessage, log: &mut EventLog) {
        message.ack();
        log.settle = "ack";
    }

    fn retry(&self, message: &RawMessage, delay_secs: u32, log: &mut EventLog) {
        message.retry_with_options(&QueueRetryOptionsBuilder::new().with_delay_seconds(delay_secs).build());
        log.settle = "retry";
        log.delay_secs = Some(delay_secs);
    }

    async fn add_to_counters(&self, env: &Env, stats: &ConsumerStats) -> worker::Result<()> {
        let stub = env.durable_object(COORDINATOR_BINDING)?.get_by_name(&object_name(&self.name))?;
        let mut init = RequestInit::new();
        let body = js_sys::Uint8Array::from(stats.encode().as_slice());
        init.with_method(Method::Post).with_body(Some(body.into()));
        let req = Request::new_with_init(&format!("https://oncekey.counters{COUNTERS_PATH}"), &init)?;
        let res = stub.fetch_with_request(req).await?;
        match res.status_code() {
            200 => Ok(()),
            status => Err(worker::Error::RustError(format!("counters answered {status}"))),
        }
    }

    /// The counters of consumer `name`, summed over every batch and isolate
    /// since its counter object was created.
    ///
    /// # Errors
    /// `IDEMPOTENCY_DO` is not bound, or the object failed.
    pub async fn stats(env: &Env, name: &str) -> worker::Result<ConsumerStats> {
        let stub = env.durable_object(COORDINATOR_BINDING)?.get_by_name(&object_name(name))?;
        let mut res = stub.fetch_with_str(&format!("https://oncekey.counters{COUNTERS_PATH}")).await?;
        ConsumerStats::decode(&res.bytes().await?)
            .ok_or_else(|| worker::Error::RustError("counters: not a ConsumerStats".into()))
    }
}

/// A message body as bytes: strings as UTF-8, byte arrays as they are,
/// anything else as its JSON text.
fn body_bytes(body: &JsValue) -> Vec<u8> {
    if let Some(text) = body.as_string() {
        return text.into_bytes();
    }
    if let Some(buffer) = body.dyn_ref::<js_sys::ArrayBuffer>() {
        return js_sys::Uint8Array::new(buffer).to_vec();
    }
    if let Some(bytes) = body.dyn_ref::<js_sys::Uint8Array>() {
        return bytes.to_vec();
    }
    js_sys::JSON::stringify(body).ok().and_then(|s| s.as_string()).unwrap_or_default().into_bytes()
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
#[derive(Debug, Default)]
struct EventLog {
    delivery: &'static str,
    attempt: Option<u32>,
    record: Option<String>,
    finish: &'static str,
    settle: &'static str,
    delay_secs: Option<u32>,
    error: Option<String>,
}

impl EventLog {
    fn emit(&self, consumer: &str) {
        // Written out rather than built as a `Value`: a smaller wasm.
        let json = |s: &str| serde_json::Value::from(s).to_string();
        let number = |n: Option<u32>| n.map_or_else(|| "null".to_owned(), |n| n.to_string());
        worker::console_log!(
            r#"{{"oncekey":"event","consumer":{},"delivery":"{}","attempt":{},"record":{},"finish":"{}","settle":"{}","delay_s":{},"error":{}}}"#,
            json(consumer),
            self.delivery,
            number(self.attempt),
            self.record.as_deref().map_or_else(|| "null".to_owned(), json),
            self.finish,
            self.settle,
            number(self.delay_secs),
            self.error.as_deref().map_or_else(|| "null".to_owned(), json),
        );
    }
}
