//! The Durable Object that makes decisions atomic (binding
//! `IDEMPOTENCY_DO`, class `IdempotencyCoordinator`): one object per record
//! name, holding at most one record.
//!
//! Every decision is the core's [`Coordinator`] (the coordinator's
//! protocol): this class loads the record once, hands each call in, and
//! performs what comes back — the write, the alarm, the replies, and one
//! timer per parked call. Each step is one synchronous call into the core:
//! no `.await` sits between the record it reads and the write it returns, so
//! two calls can never decide on one reading (the JavaScript host's class,
//! `pkg/src/worker/coordinator.js`, does the same). The object's own clock
//! decides leases and expiry; an alarm deletes the record when it expires.
//!
//! A duplicate of a running attempt waits here (SPEC §3,
//! `IDEMPOTENCY_IN_FLIGHT_WAIT_MS`): parked in the core until a write
//! decides it or its timer fires. Parked, it awaits no storage, so the input
//! gate stays open: other calls and the first attempt's `finish` go on.
//!
//! The class is exported with `wasm_bindgen` directly rather than through
//! `#[durable_object]`: that glue turns every call's request into a
//! `worker::Request` (reading its URL, headers and `cf` across the
//! boundary) and every answer into a `worker::Response`, while a store call
//! needs only its body and answers bytes (bench/RESULTS.md has the A/B).

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::rc::Rc;
use std::time::Duration;

use futures_channel::oneshot;
use futures_util::future::{Either, select};

use wasm_bindgen::prelude::wasm_bindgen;
use worker::wasm_bindgen::{JsCast, JsValue};
use worker::wasm_bindgen_futures::JsFuture;
use worker::worker_sys::DurableObjectState;
use worker::{State, js_sys, web_sys};

use crate::core::{CallId, Coordinator, Effects, RECORD_KEY};

use super::http::now_ms;

/// A reply as delivered to the call it answers: its bytes (shared by every
/// call given the same reply), and the write it must wait for.
struct Delivery {
    bytes: Rc<Vec<u8>>,
    written: Option<js_sys::Promise>,
}

/// The coordinator object. A `GET` answers what tests look at: how many
/// store calls this instance has served (a replay from KV must not touch
/// it), whether a record is stored, and when the alarm is set to run.
#[wasm_bindgen]
pub struct IdempotencyCoordinator {
    state: State,
    core: RefCell<Coordinator>,
    calls: Cell<u64>,
    next_id: Cell<CallId>,
    /// Each call handed to the core and not yet answered.
    pending: RefCell<HashMap<CallId, oneshot::Sender<Delivery>>>,
}

#[wasm_bindgen(wasm_bindgen_futures = worker::wasm_bindgen_futures)]
impl IdempotencyCoordinator {
    /// Called by the runtime when the object starts.
    #[wasm_bindgen(constructor)]
    pub fn new(state: DurableObjectState, _env: JsValue) -> Self {
        Self {
            state: State::from(state),
            core: RefCell::new(Coordinator::new()),
            calls: Cell::new(0),
            next_id: Cell::new(1),
            pending: RefCell::new(HashMap::new()),
        }
    }

    /// One call: a store call (`POST`, the encoded
    /// [`StoreCall`](crate::core::StoreCall) in, the encoded reply out), a
    /// consumer's counters, or the `GET` above.
    pub async fn fetch(&self, req: web_sys::Request) -> Result<web_sys::Response, JsValue> {
        // A queue consumer's counters live in an object of this namespace.
        if req.url().ends_with(super::queue_counters::COUNTERS_PATH) {
            let res = super::queue_counters::serve(&self.state, req.into()).await?;
            return Ok(res.into());
        }
        if req.method() == "GET" {
            return self.describe().await;
        }
        self.calls.set(self.calls.get() + 1);
        let body = js_sys::Uint8Array::new(&JsFuture::from(req.array_buffer()?).await?).to_vec();
        self.loaded().await?;
        let id = self.next_id.replace(self.next_id.get() + 1);
        let (answer, mut answered) = oneshot::channel();
        self.pending.borrow_mut().insert(id, answer);
        let step = self.core.borrow_mut().call(id, &body, now_ms());
        let Ok(effects) = step else {
            self.pending.borrow_mut().remove(&id);
            let init = web_sys::ResponseInit::new();
            init.set_status(400);
            return web_sys::Response::new_with_opt_str_and_init(Some("not a store call"), &init);
        };
        self.perform(effects).await;
        // Parked: sleep until the core's deadline for this call, unless a
        // write answers it first; then let the core look again.
        let delivery = loop {
            let deadline = self.core.borrow().deadline_of(id);
            let Some(at) = deadline else { break (&mut answered).await };
            let timer = worker::Delay::from(Duration::from_millis(at.saturating_sub(now_ms())));
            match select(&mut answered, timer).await {
                Either::Left((delivery, _)) => break delivery,
                Either::Right(_) => {
                    self.loaded().await?;
                    let effects = self.core.borrow_mut().wake(now_ms());
                    self.perform(effects).await;
                }
            }
        };
        let delivery = delivery.map_err(|_| JsValue::from_str("the coordinator dropped a call"))?;
        if let Some(written) = delivery.written {
            JsFuture::from(written).await.inspect_err(|_| self.core.borrow_mut().forget())?;
        }
        let reply = js_sys::Uint8Array::from(delivery.bytes.as_slice());
        web_sys::Response::new_with_opt_buffer_source(Some(&reply))
    }

    /// The expiry alarm: deletes an expired record, or re-arms for a
    /// record that now lives longer (the core decides which).
    pub async fn alarm(&self) -> Result<JsValue, JsValue> {
        self.loaded().await?;
        let effects = self.core.borrow_mut().alarm(now_ms());
        if let Some(written) = self.perform(effects).await {
            JsFuture::from(written).await?;
        }
        Ok(JsValue::UNDEFINED)
    }
}

impl IdempotencyCoordinator {
    /// Reads the record into the core, the first time only.
    async fn loaded(&self) -> Result<(), JsValue> {
        if !self.core.borrow().needs_load() {
            return Ok(());
        }
        let raw = JsFuture::from(self.state.storage().as_raw().get(RECORD_KEY)?).await?;
        let stored = raw.dyn_into::<js_sys::Uint8Array>().ok().map(|bytes| bytes.to_vec());
        self.core.borrow_mut().load(stored.as_deref());
        Ok(())
    }

    /// Performs a step's effects: issues the write and the alarm, hands
    /// each reply to the call it answers (which waits for the write before
    /// answering), then waits for the alarm — a failed alarm is logged and
    /// set again on the next write; it holds no reply back. Returns the
    /// write's promise.
    async fn perform(&self, effects: Effects) -> Option<js_sys::Promise> {
        let storage = self.state.storage();
        let raw = storage.as_raw();
        let written = if effects.delete_all {
            Some(raw.delete_all())
        } else if let Some(record) = &effects.put {
            let bytes = js_sys::Uint8Array::from(record.encode().as_slice());
            Some(raw.put(RECORD_KEY, bytes.into()))
        } else {
            None
        };
        // A write refused outright fails its replies as a failed one does.
        let written = written.map(|issued| issued.unwrap_or_else(|error| js_sys::Promise::reject(&error)));
        let alarm = effects.set_alarm.map(|at| {
            let at = js_sys::Date::new(&JsValue::from_f64(at as f64));
            raw.set_alarm(at, JsValue::NULL.into())
        });
        for reply in effects.replies {
            let bytes = Rc::new(reply.bytes);
            for id in reply.to {
                if let Some(answer) = self.pending.borrow_mut().remove(&id) {
                    let _ = answer.send(Delivery { bytes: Rc::clone(&bytes), written: written.clone() });
                }
            }
        }
        if let Some(alarm) = alarm {
            let set = match alarm {
                Ok(promise) => JsFuture::from(promise).await.map(drop),
                Err(error) => Err(error),
            };
            if let Err(error) = set {
                self.core.borrow_mut().alarm_failed();
                worker::console_error!(
                    "oncekey: setting the expiry alarm failed ({error:?}); the next write sets it again"
                );
            }
        }
        written
    }

    /// `{"calls", "stored", "alarm"}`: calls served by this instance,
    /// whether a record is stored, the alarm's time in ms (or `null`).
    async fn describe(&self) -> Result<web_sys::Response, JsValue> {
        let storage = self.state.storage();
        let stored = !JsFuture::from(storage.as_raw().get(RECORD_KEY)?).await?.is_undefined();
        let alarm = JsFuture::from(storage.as_raw().get_alarm(JsValue::NULL.into())?).await?.as_f64();
        let body = serde_json::json!({ "calls": self.calls.get(), "stored": stored, "alarm": alarm }).to_string();
        web_sys::Response::new_with_opt_str(Some(&body))
    }
}
