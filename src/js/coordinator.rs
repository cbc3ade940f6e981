//! The coordinator's atomic step and expiry alarm, for a JavaScript
//! Durable Object: it reads the record, calls one of these, and writes what
//! it says with no other await in between.

use wasm_bindgen::prelude::*;

use super::values::{Object, respond};
use crate::core::{DecisionLog, Expiry, Problem, Record, Reply, StoreCall, Write, on_alarm};

/// One encoded store call on the stored record (its bytes, or undefined)
/// at `now_ms`, for a call made at `called_at_ms`: the deadline in ms (a
/// number) when it must first wait — the object waits until the record
/// changes or the deadline passes, then asks again
/// ([`StoreCall::wait_deadline`]) — else the step run: the reply's bytes,
/// or `[reply, record, expiresAt]` when there is a record to put.
///
/// # Errors
/// `call` is not a store call.
#[wasm_bindgen(js_name = coordinatorCall)]
pub fn coordinator_call(call: &[u8], record: Option<Vec<u8>>, now_ms: f64, called_at_ms: f64) -> Result<JsValue, JsError> {
    let call = StoreCall::decode(call).map_err(|e| JsError::new(&format!("not a store call: {e}")))?;
    let found = record.and_then(|bytes| Record::decode(&bytes).ok());
    let now = now_ms as u64;
    if let Some(deadline) = call.wait_deadline(found.as_ref(), now, called_at_ms as u64) {
        return Ok(JsValue::from_f64(deadline as f64));
    }
    let step = call.run(found, now);
    let reply = js_sys::Uint8Array::from(step.answer.as_slice());
    Ok(match step.write {
        Write::Put(record) => js_sys::Array::of3(
            &reply,
            &js_sys::Uint8Array::from(record.encode().as_slice()),
            &JsValue::from_f64(record.expires_at() as f64),
        )
        .into(),
        Write::Keep => reply.into(),
    })
}

/// The expiry alarm's step for the stored record: `{kind: "rearm", at}`,
/// `{kind: "delete"}` or `{kind: "idle"}`.
#[wasm_bindgen(js_name = alarmStep)]
pub fn alarm_step(record: Option<Vec<u8>>, now_ms: f64) -> JsValue {
    let found = record.and_then(|bytes| Record::decode(&bytes).ok());
    match on_alarm(found.as_ref(), now_ms as u64) {
        Expiry::Rearm { at_ms } => Object::new("rearm").set("at", at_ms as f64).done(),
        Expiry::Delete => Object::new("delete").done(),
        Expiry::Idle => Object::new("idle").done(),
    }
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
