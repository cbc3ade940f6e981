//! `Consumer` and `Delivery` for JavaScript: the core's queue consumer
//! configuration and its [`DeliveryExchange`], for `withQueueIdempotency`
//! (SPEC §11). As for the request's exchange, each action crosses as a kind
//! and the host reads the fields it needs through getters named for what
//! they hold; the counts cross as the 40 bytes the counters object stores.

use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::*;

use super::options::{BindingNames, CONSUMER_OPTIONS, config_of};
use super::values::{Object, point_object};
use crate::core::{
    Config, ConsumerConfig, ConsumerSetting, ConsumerStats, DeliveryAction, DeliveryExchange, EventKeyStrategy,
    HandlerRun, KV_BINDING, METRICS_BINDING, Message, batch_lanes,
};

/// Options of `withQueueIdempotency` that are not variables.
const OWN_OPTIONS: [&str; 5] = ["name", "key", "maxRetryDelaySeconds", "concurrency", "bindings"];

/// The kind of a delivery's pending action (`DeliveryKind.Store`, ...).
#[wasm_bindgen]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeliveryKind {
    /// Nothing more for this message.
    Done = 0,
    /// A call to the record's coordinator (`record`, `call`, `timeoutMs`).
    Store = 1,
    /// The handler's run (`run`, `timeoutMs`).
    RunHandler = 2,
    /// Acknowledge the message.
    Ack = 3,
    /// Retry the message after `delaySeconds`.
    Retry = 4,
    /// Write `line`.
    Log = 5,
    /// Wait `pauseMs`, then `paused()` (before repeating a failed finish).
    Pause = 6,
}

/// How the handler's run ended, as the host reports it.
#[wasm_bindgen]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HandlerEnd {
    /// It returned (or its promise resolved).
    Done = 0,
    /// It threw (or its promise rejected).
    Failed = 1,
    /// It was still running at the time limit.
    StillRunning = 2,
}

/// A queue consumer's configuration, validated once.
#[wasm_bindgen(js_name = Consumer)]
pub struct JsConsumer {
    config: ConsumerConfig,
    bindings: BindingNames,
    /// The counts of the deliveries since the last `takeCounts`.
    counts: ConsumerStats,
}

#[wasm_bindgen(js_class = Consumer)]
impl JsConsumer {
    /// Validates `options` over `vars` (the worker's `env`); `queue` names
    /// the consumer when the options do not.
    ///
    /// # Errors
    /// An `Error` naming the option (and variable) with a bad value.
    #[wasm_bindgen(constructor)]
    pub fn new(options: JsValue, vars: JsValue, queue: &str) -> Result<JsConsumer, JsError> {
        let layer = config_of(&options, &vars, &CONSUMER_OPTIONS, &OWN_OPTIONS).map_err(|e| JsError::new(&e))?;
        let config = consumer_config(&options, &layer, queue).map_err(|e| JsError::new(&e))?;
        let bindings = BindingNames::of(&options).map_err(|e| JsError::new(&e))?;
        // The same checks as the Rust consumer's (SPEC §11): a typo'd
        // variable, the coordinator binding (under its configured name).
        let coordinator = bindings.coordinator.as_str();
        let known = [coordinator, KV_BINDING, METRICS_BINDING];
        if let Some(problem) = crate::shared::variable_value::consumer_env_problem(&vars, &layer, coordinator, &known) {
            return Err(JsError::new(&problem));
        }
        Ok(Self { config, bindings, counts: ConsumerStats::default() })
    }

    /// The names the consumer finds its bindings under in `env`:
    /// `{coordinator, kv, metrics, origin}`.
    #[wasm_bindgen(getter)]
    pub fn bindings(&self) -> JsValue {
        self.bindings.object()
    }

    /// The consumer's name: its records and counters are kept under it.
    #[wasm_bindgen(getter)]
    pub fn name(&self) -> String {
        self.config.name.clone()
    }

    /// Whether messages are keyed by the user's function (the host calls it
    /// and hands its result to `start`).
    #[wasm_bindgen(getter, js_name = keyedByFunction)]
    pub fn keyed_by_function(&self) -> bool {
        self.config.strategy == EventKeyStrategy::Custom
    }

    /// Starts one message's delivery: its id, body (as the queue gives it),
    /// timestamp, and what the user's function gave it: `key` (a string, as
    /// returned) or `keyError` (why it gave none: what it threw, or what it
    /// returned instead of a string); both undefined without a function.
    pub fn start(
        &self,
        id: String,
        body: JsValue,
        timestamp_ms: f64,
        key: Option<String>,
        key_error: Option<String>,
    ) -> JsDelivery {
        let body = crate::shared::message_body::message_body_bytes(&body);
        let message = Message { id, body, timestamp_ms: timestamp_ms as u64 };
        let given = match (key, key_error) {
            (_, Some(error)) => Some(Err(error)),
            (Some(key), None) => Some(Ok(key)),
            (None, None) => None,
        };
        let (inner, action) = DeliveryExchange::start(&self.config, message, given);
        let mut delivery = JsDelivery { inner, kind: DeliveryKind::Done, pending: DeliveryAction::Done };
        delivery.present(action);
        delivery
    }

    /// How many of a batch's messages run at once (`concurrency`).
    #[wasm_bindgen(getter)]
    pub fn concurrency(&self) -> usize {
        self.config.concurrency
    }

    /// The batch's lanes ([`batch_lanes`]): arrays of indexes into
    /// `records` (each delivery's `record`, `""` for a message with no
    /// key), one key's deliveries in one lane, in order.
    pub fn lanes(&self, records: Vec<String>) -> JsValue {
        let records: Vec<Option<&str>> = records.iter().map(|r| Some(r.as_str()).filter(|r| !r.is_empty())).collect();
        let lanes = js_sys::Array::new();
        for lane in batch_lanes(&records) {
            lanes.push(&lane.into_iter().map(|i| JsValue::from_f64(i as f64)).collect::<js_sys::Array>());
        }
        lanes.into()
    }

    /// Adds a finished delivery's counts to the batch's.
    pub fn count(&mut self, delivery: &JsDelivery) {
        self.counts.add(&delivery.inner.stats());
    }

    /// The batch's counts as one Analytics Engine data point,
    /// `{blobs, doubles, indexes}`, for the dataset bound as
    /// `IDEMPOTENCY_METRICS` (`counts`: what `takeCounts` gave).
    #[wasm_bindgen(js_name = dataPoint)]
    pub fn data_point(&self, counts: &[u8]) -> JsValue {
        point_object(&ConsumerStats::decode(counts).unwrap_or_default().data_point(&self.config.name))
    }

    /// The batch's counts (encoded), reset; undefined when nothing was
    /// counted.
    #[wasm_bindgen(js_name = takeCounts)]
    pub fn take_counts(&mut self) -> Option<Vec<u8>> {
        let counts = std::mem::take(&mut self.counts);
        (!counts.is_empty()).then(|| counts.encode())
    }
}

/// One message's delivery.
#[wasm_bindgen(js_name = Delivery)]
pub struct JsDelivery {
    inner: DeliveryExchange,
    kind: DeliveryKind,
    pending: DeliveryAction,
}

#[wasm_bindgen(js_class = Delivery)]
impl JsDelivery {
    /// The pending action's kind.
    #[wasm_bindgen(getter)]
    pub fn kind(&self) -> DeliveryKind {
        self.kind
    }

    /// `store`: the record's name in hex (the object).
    #[wasm_bindgen(getter)]
    pub fn record(&self) -> String {
        let DeliveryAction::Store { name, .. } = &self.pending else { return String::new() };
        name.to_hex()
    }

    /// `store`: the call's bytes.
    #[wasm_bindgen(getter)]
    pub fn call(&self) -> Option<Vec<u8>> {
        let DeliveryAction::Store { call, .. } = &self.pending else { return None };
        Some(call.encode())
    }

    /// The time limit in ms of `store` and `runHandler`.
    #[wasm_bindgen(getter, js_name = timeoutMs)]
    pub fn timeout_ms(&self) -> f64 {
        match &self.pending {
            DeliveryAction::Store { timeout_ms, .. } | DeliveryAction::RunHandler { timeout_ms, .. } => {
                *timeout_ms as f64
            }
            _ => 0.0,
        }
    }

    /// `runHandler`: what the handler is told, `{key, attempt, reclaimed}`.
    #[wasm_bindgen(getter)]
    pub fn run(&self) -> JsValue {
        let DeliveryAction::RunHandler { event, .. } = &self.pending else { return JsValue::UNDEFINED };
        Object::empty()
            .set("key", event.key.as_str())
            .set("attempt", event.attempt)
            .set("reclaimed", event.reclaimed)
            .done()
    }

    /// `retry`: the delay to ask of the queue, in seconds.
    #[wasm_bindgen(getter, js_name = delaySeconds)]
    pub fn delay_seconds(&self) -> u32 {
        let DeliveryAction::Retry { delay_secs } = &self.pending else { return 0 };
        *delay_secs
    }

    /// `pause`: how long, in ms.
    #[wasm_bindgen(getter, js_name = pauseMs)]
    pub fn pause_ms(&self) -> f64 {
        let DeliveryAction::Pause { ms } = &self.pending else { return 0.0 };
        *ms as f64
    }

    /// `log`: the line.
    #[wasm_bindgen(getter)]
    pub fn line(&self) -> String {
        let DeliveryAction::Log(line) = &self.pending else { return String::new() };
        line.clone()
    }

    /// The store answered the pending call (its reply's bytes), or failed.
    #[wasm_bindgen(js_name = storeAnswered)]
    pub fn store_answered(&mut self, reply: Option<Vec<u8>>, error: Option<String>, now_ms: f64) -> DeliveryKind {
        let reply = match (reply, error) {
            (_, Some(error)) => Err(error),
            (Some(bytes), None) => Ok(bytes),
            (None, None) => Err("no reply".to_owned()),
        };
        let action = self.inner.store_answered(reply, now_ms as u64);
        self.present(action)
    }

    /// The handler's run ended (`error`: what it threw).
    #[wasm_bindgen(js_name = handlerEnded)]
    pub fn handler_ended(&mut self, end: HandlerEnd, error: Option<String>) -> DeliveryKind {
        let run = match end {
            HandlerEnd::Done => HandlerRun::Done,
            HandlerEnd::Failed => HandlerRun::Failed,
            HandlerEnd::StillRunning => HandlerRun::StillRunning,
        };
        let action = self.inner.handler_ended(run, error);
        self.present(action)
    }

    /// The message was acknowledged or retried.
    pub fn settled(&mut self) -> DeliveryKind {
        let action = self.inner.settled();
        self.present(action)
    }

    /// The log line was written.
    pub fn logged(&mut self) -> DeliveryKind {
        let action = self.inner.logged();
        self.present(action)
    }

    /// The pause is over.
    pub fn paused(&mut self) -> DeliveryKind {
        let action = self.inner.paused();
        self.present(action)
    }
}

impl JsDelivery {
    fn present(&mut self, action: DeliveryAction) -> DeliveryKind {
        self.kind = match &action {
            DeliveryAction::Store { .. } => DeliveryKind::Store,
            DeliveryAction::RunHandler { .. } => DeliveryKind::RunHandler,
            DeliveryAction::Ack => DeliveryKind::Ack,
            DeliveryAction::Retry { .. } => DeliveryKind::Retry,
            DeliveryAction::Log(_) => DeliveryKind::Log,
            DeliveryAction::Pause { .. } => DeliveryKind::Pause,
            DeliveryAction::Done => DeliveryKind::Done,
        };
        self.pending = action;
        self.kind
    }
}

/// The consumer's configuration from its options over `config`, the
/// layer's (its options over the worker's `env`).
fn consumer_config(options: &JsValue, config: &Config, queue: &str) -> Result<ConsumerConfig, String> {
    let get = |name: &str| {
        let object = options.dyn_ref::<js_sys::Object>()?;
        let value = js_sys::Reflect::get(object, &JsValue::from_str(name)).ok()?;
        (!value.is_undefined()).then_some(value)
    };
    let name = match get("name") {
        None => queue.to_owned(),
        Some(name) => name.as_string().filter(|n| !n.is_empty()).ok_or("option `name` must be a non-empty string")?,
    };
    let mut consumer = ConsumerConfig::from_layer(&name, config);
    consumer.strategy = match get("key") {
        None => EventKeyStrategy::MessageId,
        Some(key) => strategy(&key)?,
    };
    // Whole numbers within the core's bounds, as the Rust builder's.
    let setting = |name: &str, setting: ConsumerSetting| {
        let value = get(name).map(|v| v.as_f64().unwrap_or(f64::NAN));
        value.map(|v| setting.check(v).map_err(|rule| format!("option `{name}` must be {rule}"))).transpose()
    };
    if let Some(secs) = setting("maxRetryDelaySeconds", ConsumerSetting::MAX_RETRY_DELAY_SECS)? {
        consumer.max_retry_delay_secs = secs;
    }
    if let Some(n) = setting("concurrency", ConsumerSetting::CONCURRENCY)? {
        consumer.concurrency = n as usize;
    }
    Ok(consumer)
}

/// The `key` option: `"message-id"`, `{ contentHash: { ignore: [fields] } }`
/// or a function of the message.
fn strategy(key: &JsValue) -> Result<EventKeyStrategy, String> {
    const EXPECTED: &str =
        "option `key` must be \"message-id\", { contentHash: { ignore: [field, ...] } } or a function of the message";
    if key.is_function() {
        return Ok(EventKeyStrategy::Custom);
    }
    if key.as_string().as_deref() == Some("message-id") {
        return Ok(EventKeyStrategy::MessageId);
    }
    let object = key.dyn_ref::<js_sys::Object>().filter(|_| !js_sys::Array::is_array(key)).ok_or(EXPECTED)?;
    let hash = js_sys::Reflect::get(object, &JsValue::from_str("contentHash")).map_err(|_| EXPECTED)?;
    if hash.is_undefined() || js_sys::Object::keys(object).length() != 1 {
        return Err(EXPECTED.to_owned());
    }
    let ignore = match hash.dyn_ref::<js_sys::Object>() {
        Some(hash) => js_sys::Reflect::get(hash, &JsValue::from_str("ignore")).map_err(|_| EXPECTED)?,
        None => return Err(EXPECTED.to_owned()),
    };
    let ignore_fields = if ignore.is_undefined() {
        Vec::new()
    } else {
        let list = ignore.dyn_ref::<js_sys::Array>().ok_or(EXPECTED)?;
        list.iter().map(|field| field.as_string().ok_or(EXPECTED)).collect::<Result<Vec<_>, _>>()?
    };
    Ok(EventKeyStrategy::ContentHash { ignore_fields })
}
