//! The Durable Object that makes decisions atomic (binding
//! `IDEMPOTENCY_DO`, class `IdempotencyCoordinator`): one object per record
//! name, holding at most one record.
//!
//! Each call runs the core's pure step on the record and applies its write
//! with no await other than storage between the read and the write (the
//! runtime's input gate holds other events during storage operations, and
//! the cached copy is updated before the write is issued). The object's own
//! clock decides leases and expiry; an alarm deletes the record when it
//! expires.
//!
//! A duplicate of a running attempt waits here (SPEC §3,
//! `IDEMPOTENCY_IN_FLIGHT_WAIT_MS`): its `begin` parks on a channel that the
//! next write of the record wakes, or on a timer, and then runs. Parked, it
//! awaits no storage, so the input gate stays open: other keys' calls and
//! the first attempt's `finish` go on. No storage is polled.
//!
//! The class is exported with `wasm_bindgen` directly rather than through
//! `#[durable_object]`: that glue turns every call's request into a
//! `worker::Request` (reading its URL, headers and `cf` across the
//! boundary) and every answer into a `worker::Response`, while a store call
//! needs only its body and answers bytes (bench/RESULTS.md has the A/B).

use std::cell::{Cell, RefCell};
use std::time::Duration;

use futures_channel::oneshot;
use futures_util::future::select;

use wasm_bindgen::prelude::wasm_bindgen;
use worker::wasm_bindgen::{JsCast, JsValue};
use worker::wasm_bindgen_futures::JsFuture;
use worker::worker_sys::DurableObjectState;
use worker::{State, js_sys, web_sys};

use crate::core::{Expiry, Record, StoreCall, Write, on_alarm};

use super::http::now_ms;

/// Storage key of the record.
const RECORD: &str = "record";

/// The coordinator object. A `GET` answers what tests look at: how many
/// store calls this instance has served (a replay from KV must not touch
/// it), whether a record is stored, and when the alarm is set to run.
#[wasm_bindgen]
pub struct IdempotencyCoordinator {
    state: State,
    /// The record as last read or written: `None` until first loaded.
    cached: RefCell<Option<Option<Record>>>,
    /// Whether this instance has set the expiry alarm.
    alarm_set: Cell<bool>,
    calls: Cell<u64>,
    /// Duplicates waiting for the record to change.
    waiters: RefCell<Vec<oneshot::Sender<()>>>,
}

#[wasm_bindgen(wasm_bindgen_futures = worker::wasm_bindgen_futures)]
impl IdempotencyCoordinator {
    /// Called by the runtime when the object starts.
    #[wasm_bindgen(constructor)]
    pub fn new(state: DurableObjectState, _env: JsValue) -> Self {
        Self {
            state: State::from(state),
            cached: RefCell::new(None),
            alarm_set: Cell::new(false),
            calls: Cell::new(0),
            waiters: RefCell::new(Vec::new()),
        }
    }

    /// One call: a store call (`POST`, the encoded [`StoreCall`] in, the
    /// encoded answer out), a consumer's counters, or the `GET` above.
    pub async fn fetch(&self, req: web_sys::Request) -> Result<web_sys::Response, JsValue> {
        // A queue consumer's counters live in an object of this namespace.
        if req.url().ends_with(super::consumer_counters::COUNTERS_PATH) {
            let res = super::consumer_counters::serve(&self.state, req.into()).await?;
            return Ok(res.into());
        }
        if req.method() == "GET" {
            return self.describe().await;
        }
        self.calls.set(self.calls.get() + 1);
        let body = js_sys::Uint8Array::new(&JsFuture::from(req.array_buffer()?).await?).to_vec();
        let Ok(call) = StoreCall::decode(&body) else {
            let init = web_sys::ResponseInit::new();
            init.set_status(400);
            return web_sys::Response::new_with_opt_str_and_init(Some("not a store call"), &init);
        };
        let called_at = now_ms();
        let found = loop {
            let found = self.load().await?;
            let now = now_ms();
            match call.wait_deadline(found.as_ref(), now, called_at) {
                Some(deadline) => self.wait_for_change(deadline - now).await,
                None => break found,
            }
        };
        let mut step = call.run(found, now_ms());
        if let Write::Put(record) = step.write {
            self.save(record).await?;
            // Every waiting duplicate looks again at the record as it is now.
            for waiter in self.waiters.take() {
                let _ = waiter.send(());
            }
        }
        web_sys::Response::new_with_opt_u8_array(Some(&mut step.answer))
    }

    /// The expiry alarm: deletes an expired record, or re-arms for a
    /// record that now lives longer.
    pub async fn alarm(&self) -> Result<JsValue, JsValue> {
        self.alarm_set.set(false);
        match on_alarm(self.load().await?.as_ref(), now_ms()) {
            Expiry::Rearm { at_ms } => {
                self.alarm_set.set(true);
                self.set_alarm(at_ms).await?;
            }
            Expiry::Delete => {
                *self.cached.borrow_mut() = Some(None);
                JsFuture::from(self.state.storage().as_raw().delete_all()?).await?;
            }
            Expiry::Idle => {}
        }
        Ok(JsValue::UNDEFINED)
    }
}

impl IdempotencyCoordinator {
    /// Parks until the record is next written or `ms` pass, whichever is
    /// first.
    async fn wait_for_change(&self, ms: u64) {
        let (wake, woken) = oneshot::channel();
        self.waiters.borrow_mut().push(wake);
        let timer = worker::Delay::from(Duration::from_millis(ms));
        let _ = select(woken, timer).await;
    }

    /// The record, from the cache or storage (undecodable bytes read as absent).
    async fn load(&self) -> Result<Option<Record>, JsValue> {
        if let Some(record) = self.cached.borrow().as_ref() {
            return Ok(record.clone());
        }
        let raw = JsFuture::from(self.state.storage().as_raw().get(RECORD)?).await?;
        let record = raw
            .dyn_into::<js_sys::Uint8Array>()
            .ok()
            .and_then(|bytes| Record::decode(&bytes.to_vec()).ok());
        *self.cached.borrow_mut() = Some(record.clone());
        Ok(record)
    }

    /// Writes the record, and sets the expiry alarm if this instance has
    /// not. The alarm is not moved on every write: it re-arms itself for a
    /// record that lives longer, and one that expired earlier already reads
    /// as absent, so deletion is late by at most a lease. That saves a
    /// storage operation on each `finish`.
    async fn save(&self, record: Record) -> Result<(), JsValue> {
        let bytes = js_sys::Uint8Array::from(record.encode().as_slice());
        let expires_at = record.expires_at();
        *self.cached.borrow_mut() = Some(Some(record));
        let put = JsFuture::from(self.state.storage().as_raw().put(RECORD, bytes.into())?);
        if self.alarm_set.replace(true) {
            put.await.map(drop)
        } else {
            let (put, alarm) = futures_util::future::join(put, self.set_alarm(expires_at)).await;
            put.and(alarm).map(drop)
        }
    }

    /// Sets the alarm to run at `at_ms` (milliseconds since the epoch).
    async fn set_alarm(&self, at_ms: u64) -> Result<(), JsValue> {
        let at = js_sys::Date::new(&JsValue::from_f64(at_ms as f64));
        JsFuture::from(self.state.storage().as_raw().set_alarm(at, JsValue::NULL.into())?).await.map(drop)
    }

    /// `{"calls", "stored", "alarm"}`: calls served by this instance,
    /// whether a record is stored, the alarm's time in ms (or `null`).
    async fn describe(&self) -> Result<web_sys::Response, JsValue> {
        let storage = self.state.storage();
        let stored = !JsFuture::from(storage.as_raw().get(RECORD)?).await?.is_undefined();
        let alarm = JsFuture::from(storage.as_raw().get_alarm(JsValue::NULL.into())?).await?.as_f64();
        let body = serde_json::json!({ "calls": self.calls.get(), "stored": stored, "alarm": alarm }).to_string();
        web_sys::Response::new_with_opt_str(Some(&body))
    }
}
