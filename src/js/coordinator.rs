//! The coordinator's atomic step and expiry alarm, for a JavaScript
//! Durable Object: it reads the record, calls one of these, and writes what
//! it says with no other await in between.

use wasm_bindgen::prelude::*;

use super::values::{Object, respond};
use crate::core::{DecisionLog, Expiry, Problem, Record, Reply, StoreCall, Write, on_alarm};

/// Runs one encoded store call on the stored record (its bytes, or
/// undefined) at `now_ms`: `{reply, record?, expiresAt?}` — the reply's
/// bytes, and the record to put (with its expiry) when there is one.
///
/// # Errors
/// `call` is not a store call.
#[wasm_bindgen(js_name = coordinatorStep)]
pub fn coordinator_step(call: &[u8], record: Option<Vec<u8>>, now_ms: f64) -> Result<JsValue, JsError> {
    let call = StoreCall::decode(call).map_err(|e| JsError::new(&format!("not a store call: {e}")))?;
    let found = record.and_then(|bytes| Record::decode(&bytes).ok());
    let step = call.run(found, now_ms as u64);
    let out = Object::empty().bytes("reply", &step.answer);
    Ok(match step.write {
        Write::Put(record) => out.bytes("record", &record.encode()).set("expiresAt", record.expires_at() as f64),
        Write::Keep => out,
    }
    .done())
}

/// How long an encoded store call must wait before it runs, for the record
/// stored now (bytes, or undefined): the deadline in ms, or undefined to run
/// it now. The object waits until the record changes or the deadline
/// passes, then asks again ([`StoreCall::wait_deadline`]).
///
/// # Errors
/// `call` is not a store call.
#[wasm_bindgen(js_name = coordinatorWait)]
pub fn coordinator_wait(call: &[u8], record: Option<Vec<u8>>, now_ms: f64, called_at_ms: f64) -> Result<Option<f64>, JsError> {
    let call = StoreCall::decode(call).map_err(|e| JsError::new(&format!("not a store call: {e}")))?;
    let found = record.and_then(|bytes| Record::decode(&bytes).ok());
    Ok(call.wait_deadline(found.as_ref(), now_ms as u64, called_at_ms as u64).map(|at| at as f64))
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
