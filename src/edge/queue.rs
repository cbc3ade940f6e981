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

use worker::{
    Env, MessageBatch, MessageExt, Method, QueueRetryOptionsBuilder, RawMessage, Request, RequestInit, js_sys,
};

pub use crate::core::Event;
use futures_util::StreamExt;

use crate::core::{
    COORDINATOR_BINDING, ConsumerConfig, ConsumerSetting, ConsumerStats, DeliveryAction, DeliveryExchange,
    EventKeyStrategy, HandlerRun, HostText, KV_BINDING, METRICS_BINDING, Message, Problem, RecordPolicy, batch_lanes,
};

use super::deadline::within;
use super::durable_store::DurableStore;
use super::host::write_data_point;
use super::http::now_ms;
use super::queue_counters::COUNTERS_PATH;

/// A user's key function: message id and body in, key out.
type KeyFn = Rc<dyn Fn(&str, &[u8]) -> String>;

/// An exactly-once wrapper around a queue handler.
///
/// ```no_run
/// use oncekey::edge::{Consumer, Event};
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
///
/// /// Your handler: `Err` retries the message, `Ok` acknowledges it.
/// async fn award_points(event: Event, _env: Env) -> std::result::Result<(), String> {
///     let _order: serde_json::Value = serde_json::from_slice(&event.body).map_err(|e| e.to_string())?;
///     Ok(())
/// }
/// # fn main() {}
/// ```
#[derive(Clone)]
pub struct Consumer {
    /// Everything the core's delivery exchange needs.
    config: ConsumerConfig,
    key_fn: Option<KeyFn>,
}

impl std::fmt::Debug for Consumer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Consumer")
            .field("name", &self.config.name)
            .field("strategy", &self.config.strategy)
            .finish_non_exhaustive()
    }
}

impl Consumer {
    /// A consumer named `name` (its records and counters are kept apart from
    /// every other consumer's), keyed by message id, with `policy`'s lease
    /// and TTL, and a 5 s store timeout. The handler is given the default
    /// origin time limit for that lease ([`default_origin_timeout_ms`](crate::core::default_origin_timeout_ms)).
    pub fn new(name: &str, policy: RecordPolicy) -> Self {
        Self { config: ConsumerConfig::new(name, policy), key_fn: None }
    }

    /// A consumer configured from the worker's variables: the lease
    /// (`IDEMPOTENCY_LEASE_SECONDS`), the TTL, the store timeout, and the
    /// handler's time limit (`IDEMPOTENCY_ORIGIN_TIMEOUT_SECONDS`, below the
    /// lease). A handler still running at the limit is no longer waited for:
    /// its key stays leased until the lease ends and the message is retried,
    /// as for a consumer that crashed. The work it started may still finish.
    ///
    /// # Errors
    /// [`Problem::Misconfigured`] naming the first variable with a bad value,
    /// an `IDEMPOTENCY_*` variable the layer does not know (a typo), or no
    /// coordinator namespace bound as `IDEMPOTENCY_DO`.
    pub fn from_env(env: &Env, name: &str) -> Result<Self, Problem> {
        // Through the layer's reader: one copy of the variable parser. The
        // bindings checked are the consumer's own: no KV (SPEC §11).
        let config = super::layer::config_from_env(env)?;
        let bindings = [COORDINATOR_BINDING, KV_BINDING, METRICS_BINDING];
        if let Some(problem) =
            crate::shared::variable_value::consumer_env_problem(env, &config, COORDINATOR_BINDING, &bindings)
        {
            return Err(Problem::Misconfigured(problem));
        }
        Ok(Self { config: ConsumerConfig::from_layer(name, &config), key_fn: None })
    }

    /// Keys messages by the queue's message id (the default): a redelivery
    /// is a duplicate, the same event sent twice is not.
    #[must_use]
    pub fn message_id(mut self) -> Self {
        self.config.strategy = EventKeyStrategy::MessageId;
        self.key_fn = None;
        self
    }

    /// Keys messages by a SHA-256 of their JSON body with the named
    /// top-level fields left out (timestamps, event ids): the same content
    /// sent twice is one event.
    #[must_use]
    pub fn content_hash(mut self, ignore_fields: &[&str]) -> Self {
        self.config.strategy =
            EventKeyStrategy::ContentHash { ignore_fields: ignore_fields.iter().map(|f| (*f).to_owned()).collect() };
        self.key_fn = None;
        self
    }

    /// Keys messages by a function of their id and body, for example the
    /// business id they carry (`"OrderPlaced:" + orderId`).
    #[must_use]
    pub fn key_fn(mut self, key: impl Fn(&str, &[u8]) -> String + 'static) -> Self {
        self.config.strategy = EventKeyStrategy::Custom;
        self.key_fn = Some(Rc::new(key));
        self
    }

    /// Caps the delays asked of the queue (default 300 s), from 1 s up to
    /// the 43200 s (12 hours) Cloudflare Queues accepts: a cap outside that
    /// is brought within it ([`ConsumerSetting::MAX_RETRY_DELAY_SECS`]).
    #[must_use]
    pub fn max_retry_delay_secs(mut self, secs: u32) -> Self {
        self.config.max_retry_delay_secs = ConsumerSetting::MAX_RETRY_DELAY_SECS.clamp(secs);
        self
    }

    /// The consumer's name.
    pub fn name(&self) -> &str {
        &self.config.name
    }

    /// The key strategy in force.
    pub fn strategy(&self) -> &EventKeyStrategy {
        &self.config.strategy
    }

    /// Runs up to `n` of a batch's messages at once (default 1; at most
    /// [`MAX_CONCURRENCY`](crate::core::MAX_CONCURRENCY), a number outside
    /// that brought within it): one key's messages still run one after
    /// another ([`batch_lanes`]), so two copies in one batch settle as one
    /// run and one duplicate.
    #[must_use]
    pub fn concurrency(mut self, n: usize) -> Self {
        let n = u32::try_from(n).unwrap_or(u32::MAX);
        self.config.concurrency = ConsumerSetting::CONCURRENCY.clamp(n) as usize;
        self
    }

    /// Handles a batch: every message is acknowledged or retried explicitly
    /// (never left to the batch's default), the batch's lanes up to
    /// [`Consumer::concurrency`] at once and one key's messages one after
    /// another, so that two copies in one batch settle as one run and one
    /// duplicate. Returns the batch's counts, which are also added to the
    /// consumer's counters.
    ///
    /// The handler returns `Err` for a failure worth retrying; it must
    /// tolerate running again after a failure or a crash (see docs/queues.md's
    /// handler-side patterns), because those are exactly the runs this
    /// wrapper cannot rule out.
    pub async fn consume<T, F, Fut, E>(&self, batch: &MessageBatch<T>, env: &Env, handler: F) -> ConsumerStats
    where
        F: Fn(Event) -> Fut,
        Fut: Future<Output = Result<(), E>>,
        E: Display,
    {
        // A panicking handler must leave nothing that keeps the batch waiting.
        super::deadline::clear_on_panic();
        let store = env
            .durable_object(COORDINATOR_BINDING)
            .map(|ns| DurableStore::new(ns, self.config.policy.clone(), self.config.store_timeout_ms))
            .map_err(|e| format!("no {COORDINATOR_BINDING}: {e}"));
        let messages: Vec<RawMessage> = batch.raw_iter().collect();
        let mut started: Vec<Option<(DeliveryExchange, DeliveryAction)>> =
            messages.iter().map(|message| Some(self.start(message))).collect();
        let records: Vec<_> = started.iter().map(|s| s.as_ref().and_then(|(delivery, _)| delivery.record())).collect();
        let lanes: Vec<Vec<_>> = batch_lanes(&records)
            .into_iter()
            .map(|lane| lane.into_iter().filter_map(|i| started[i].take().map(|s| (&messages[i], s))).collect())
            .collect();
        let stats = std::cell::RefCell::new(ConsumerStats::default());
        futures_util::stream::iter(lanes)
            .for_each_concurrent(self.config.concurrency, |lane| async {
                for (message, (delivery, action)) in lane {
                    let counted = self.one(message, delivery, action, &store, &handler).await;
                    stats.borrow_mut().add(&counted);
                }
            })
            .await;
        let stats = stats.into_inner();
        let name = &self.config.name;
        if !stats.is_empty()
            && let Err(e) = self.add_to_counters(env, &stats).await
        {
            worker::console_warn!("{}", HostText::CountersNotSaved { consumer: name, error: &e.to_string() });
        }
        // With a dataset bound, the batch's counts as one data point too.
        if env.analytics_engine(METRICS_BINDING).is_ok()
            && let Err(e) = write_data_point(env, stats.data_point(name))
        {
            worker::console_warn!(
                "{}",
                HostText::ConsumerDataPointNotWritten { consumer: name, error: &e.to_string() }
            );
        }
        stats
    }

    /// One message's delivery, started: the core's exchange and its first
    /// action.
    fn start(&self, message: &RawMessage) -> (DeliveryExchange, DeliveryAction) {
        let id = message.id();
        let body = crate::shared::message_body::message_body_bytes(&message.body());
        // The key function reads the body's bytes: with none that stand for
        // the body, it cannot key the message.
        let custom_key = self.key_fn.as_ref().map(|key_fn| match &body {
            Ok(body) => Ok(key_fn(&id, body.bytes())),
            Err(why) => Err(format!("the body cannot be read as bytes: {why}")),
        });
        let message_info = Message { id, body, timestamp_ms: message.timestamp().as_millis() };
        DeliveryExchange::start(&self.config, message_info, custom_key)
    }

    /// One message, started to settled: performs what the core's delivery
    /// exchange decides; its counts.
    async fn one<F, Fut, E>(
        &self,
        message: &RawMessage,
        mut delivery: DeliveryExchange,
        mut action: DeliveryAction,
        store: &Result<DurableStore, String>,
        handler: &F,
    ) -> ConsumerStats
    where
        F: Fn(Event) -> Fut,
        Fut: Future<Output = Result<(), E>>,
        E: Display,
    {
        loop {
            action = match action {
                DeliveryAction::Store { name, call, timeout_ms } => {
                    let reply = match store {
                        Ok(store) => store.send(&name, &call.encode(), timeout_ms).await.map_err(|e| e.to_string()),
                        Err(e) => Err(e.clone()),
                    };
                    delivery.store_answered(reply, now_ms())
                }
                DeliveryAction::RunHandler { event, timeout_ms } => match within(timeout_ms, handler(event)).await {
                    Some(Ok(())) => delivery.handler_ended(HandlerRun::Done, None),
                    Some(Err(e)) => delivery.handler_ended(HandlerRun::Failed, Some(e.to_string())),
                    None => delivery.handler_ended(HandlerRun::StillRunning, None),
                },
                DeliveryAction::Ack => {
                    message.ack();
                    delivery.settled()
                }
                DeliveryAction::Retry { delay_secs } => {
                    message.retry_with_options(&QueueRetryOptionsBuilder::new().with_delay_seconds(delay_secs).build());
                    delivery.settled()
                }
                DeliveryAction::Pause { ms } => {
                    super::deadline::sleep(ms).await;
                    delivery.paused()
                }
                DeliveryAction::Log(line) => {
                    super::decision_line::write(&line);
                    delivery.logged()
                }
                DeliveryAction::Done => return delivery.stats(),
            };
        }
    }

    async fn add_to_counters(&self, env: &Env, stats: &ConsumerStats) -> worker::Result<()> {
        let stub =
            env.durable_object(COORDINATOR_BINDING)?.get_by_name(&ConsumerStats::object_name(&self.config.name))?;
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
        let stub = env.durable_object(COORDINATOR_BINDING)?.get_by_name(&ConsumerStats::object_name(name))?;
        let mut res = stub.fetch_with_str(&format!("https://oncekey.counters{COUNTERS_PATH}")).await?;
        ConsumerStats::decode(&res.bytes().await?)
            .ok_or_else(|| worker::Error::RustError("counters: not a ConsumerStats".into()))
    }
}
