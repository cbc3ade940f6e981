//! The coordinator's protocol for a JavaScript Durable Object: the core's
//! [`Coordinator`], its [`Effects`] handed back as plain values. The object
//! loads the record once, hands each call in, and performs what comes back;
//! every decision, and the waiting, is the core's.

use wasm_bindgen::prelude::*;

use super::values::{Object, respond};
use crate::core::{ConsumerStats, Coordinator, DecisionLog, Effects, Problem, RECORD_KEY, Reply};

/// One Durable Object's coordinator state (`CoordinatorCore` in
/// JavaScript). Every method is synchronous: nothing can run between the
/// record a step reads and the write it returns.
#[wasm_bindgen(js_name = CoordinatorCore)]
#[derive(Default)]
pub struct JsCoordinator(Coordinator);

#[wasm_bindgen(js_class = CoordinatorCore)]
impl JsCoordinator {
    /// A coordinator that has not read its record yet.
    #[wasm_bindgen(constructor)]
    pub fn new() -> Self {
        Self::default()
    }

    /// The storage key the object keeps its record under, the Rust host's
    /// too ([`RECORD_KEY`]).
    #[wasm_bindgen(getter, js_name = recordKey)]
    pub fn record_key() -> JsValue {
        // A JavaScript string made here: less glue than a `String` return.
        JsValue::from_str(RECORD_KEY)
    }

    /// The storage key a consumer's counters object keeps their total
    /// under, the Rust host's too ([`ConsumerStats::STORAGE_KEY`]).
    #[wasm_bindgen(getter, js_name = countsKey)]
    pub fn counts_key() -> JsValue {
        JsValue::from_str(ConsumerStats::STORAGE_KEY)
    }

    /// Whether the record must be loaded before the next step.
    #[wasm_bindgen(getter, js_name = needsLoad)]
    pub fn needs_load(&self) -> bool {
        self.0.needs_load()
    }

    /// The stored record's bytes (undefined: none); ignored once loaded.
    pub fn load(&mut self, stored: Option<Vec<u8>>) {
        self.0.load(stored.as_deref());
    }

    /// A write failed: read the record again before the next step.
    pub fn forget(&mut self) {
        self.0.forget();
    }

    /// Hands in store call `id` (its bytes) at `now_ms`: the effects.
    ///
    /// # Errors
    /// `call` is not a store call.
    pub fn call(&mut self, id: f64, call: &[u8], now_ms: f64) -> Result<JsValue, JsError> {
        let effects =
            self.0.call(id as u64, call, now_ms as u64).map_err(|e| JsError::new(&format!("not a store call: {e}")))?;
        Ok(effects_value(effects))
    }

    /// A parked call's timer fired at `now_ms`: the effects.
    pub fn wake(&mut self, now_ms: f64) -> JsValue {
        effects_value(self.0.wake(now_ms as u64))
    }

    /// When parked call `id` must be woken; undefined once answered.
    #[wasm_bindgen(js_name = deadlineOf)]
    pub fn deadline_of(&self, id: f64) -> Option<f64> {
        self.0.deadline_of(id as u64).map(|at| at as f64)
    }

    /// The expiry alarm ran at `now_ms`: the effects.
    pub fn alarm(&mut self, now_ms: f64) -> JsValue {
        effects_value(self.0.alarm(now_ms as u64))
    }

    /// Setting the alarm failed: the next write sets it again.
    #[wasm_bindgen(js_name = alarmFailed)]
    pub fn alarm_failed(&mut self) {
        self.0.alarm_failed();
    }
}

/// `{put?: Uint8Array, deleteAll: boolean, alarmAt?: number, replies:
/// [ids: number[], bytes: Uint8Array][]}`.
fn effects_value(effects: Effects) -> JsValue {
    let replies = js_sys::Array::new();
    for reply in effects.replies {
        let to: js_sys::Array = reply.to.iter().map(|&id| JsValue::from_f64(id as f64)).collect();
        replies.push(&js_sys::Array::of2(&to, &js_sys::Uint8Array::from(reply.bytes.as_slice())));
    }
    let mut value = Object::empty().set("deleteAll", effects.delete_all).set("replies", replies);
    if let Some(record) = effects.put {
        value = value.bytes("put", &record.encode());
    }
    if let Some(at) = effects.set_alarm {
        value = value.set("alarmAt", at as f64);
    }
    value.done()
}

/// The answer while the configuration is bad: 500 `misconfigured`, as a
/// `respond` action.
#[wasm_bindgen(js_name = misconfiguredReply)]
pub fn misconfigured_reply(message: String) -> JsValue {
    let problem = Problem::Misconfigured(message);
    let reply = respond(&Reply::problem(&problem));
    // The log line to write with it, as the Rust host writes it.
    let _ = js_sys::Reflect::set(&reply, &"line".into(), &DecisionLog::misconfigured(problem.detail()).into());
    reply
}
