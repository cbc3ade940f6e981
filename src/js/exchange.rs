//! `Exchange` for JavaScript: the core's exchange, its actions as plain
//! objects, its results taken back as JavaScript values.

use std::rc::Rc;

use wasm_bindgen::prelude::*;

use super::values::{Object, edit_list, header_pairs, respond};
use crate::core::{
    Action, BodyRead, Config, Consistency, Exchange, Finished, Fingerprint, OriginResult, Record, RecordName, StoreCall,
    Write, begin, copy_ttl_secs, decode_decision, decode_finished, decode_inspected, decode_released, finish,
};

/// One request's exchange. `action` is what to do now; each method reports
/// a result and returns the next action.
#[wasm_bindgen(js_name = Exchange)]
pub struct JsExchange {
    inner: Exchange,
    config: Rc<Config>,
    action: JsValue,
    /// KV-only mode: the `begin` waiting for the record KV holds.
    kv_begin: Option<(RecordName, Fingerprint)>,
    /// KV-only mode: the reservation `begin` made, for `finish`.
    reserved: Option<Record>,
    /// KV-only mode: a finished attempt whose answer is being written to KV.
    stored: Option<Finished>,
}

#[wasm_bindgen(js_class = Exchange)]
impl JsExchange {
    /// The pending action.
    #[wasm_bindgen(getter)]
    pub fn action(&self) -> JsValue {
        self.action.clone()
    }

    /// The body was read: `kind` is `complete` (with `bytes`), `too-large`
    /// or `incomplete`.
    #[wasm_bindgen(js_name = bodyRead)]
    pub fn body_read(&mut self, kind: &str, bytes: Option<Vec<u8>>, now_ms: f64) -> JsValue {
        let read = match kind {
            "complete" => BodyRead::Complete(bytes.unwrap_or_default()),
            "too-large" => BodyRead::TooLarge,
            _ => BodyRead::Incomplete,
        };
        let action = self.inner.body_read(read, now_ms as u64);
        self.present(action, now_ms)
    }

    /// A KV copy was read: its bytes (undefined when absent), or the error.
    #[wasm_bindgen(js_name = copyRead)]
    pub fn copy_read(&mut self, bytes: Option<Vec<u8>>, error: Option<String>, now_ms: f64) -> JsValue {
        let found = match error {
            Some(error) => Err(error),
            None => Ok(bytes.and_then(|b| Record::decode(&b).ok())),
        };
        let action = self.inner.copy_read(found, now_ms as u64);
        self.present(action, now_ms)
    }

    /// The rest now runs under `waitUntil`.
    pub fn detached(&mut self, now_ms: f64) -> JsValue {
        let action = self.inner.detached(now_ms as u64);
        self.present(action, now_ms)
    }

    /// The coordinator's reply to `begin` (its bytes), or the error.
    pub fn begun(&mut self, reply: Option<Vec<u8>>, error: Option<String>, now_ms: f64) -> JsValue {
        let decision = reply_of(reply, error, |bytes| decode_decision(bytes).map_err(|e| e.to_string()));
        let action = self.inner.begun(decision, now_ms as u64);
        self.present(action, now_ms)
    }

    /// KV-only mode: the record KV holds (its bytes, or undefined), or the
    /// error, for `begin`.
    #[wasm_bindgen(js_name = kvBegun)]
    pub fn kv_begun(&mut self, bytes: Option<Vec<u8>>, error: Option<String>, now_ms: f64) -> JsValue {
        let now = now_ms as u64;
        let decision = match (self.kv_begin.take(), error) {
            (_, Some(error)) => Err(error),
            (None, None) => Err("no begin was asked for".to_owned()),
            (Some((_, fingerprint)), None) => {
                let found = bytes.and_then(|b| Record::decode(&b).ok()).and_then(|r| r.live(now));
                let step = begin(found, fingerprint, now, &self.config.records);
                if let Write::Put(record) = step.write {
                    self.reserved = Some(record);
                }
                Ok(step.answer)
            }
        };
        let action = self.inner.begun(decision, now);
        self.present(action, now_ms)
    }

    /// The origin answered in full: status, `[[name, value], ...]`, body.
    #[wasm_bindgen(js_name = originAnswered)]
    pub fn origin_answered(&mut self, status: u16, headers: JsValue, body: Vec<u8>, now_ms: f64) -> JsValue {
        let result = OriginResult::Answered { status, headers: header_pairs(&headers), body };
        let action = self.inner.origin_answered(result, now_ms as u64);
        self.present(action, now_ms)
    }

    /// The origin answered with a body over `keepAtMost`: its status and
    /// headers, while the host streams the body to the caller.
    #[wasm_bindgen(js_name = originStreaming)]
    pub fn origin_streaming(&mut self, status: u16, headers: JsValue, now_ms: f64) -> JsValue {
        let result = OriginResult::Streaming { status, headers: header_pairs(&headers) };
        let action = self.inner.origin_answered(result, now_ms as u64);
        self.present(action, now_ms)
    }

    /// The origin gave no answer: `kind` is `not-sent` (it cannot have
    /// acted) or `no-answer` (it may have).
    #[wasm_bindgen(js_name = originFailed)]
    pub fn origin_failed(&mut self, kind: &str, message: String, now_ms: f64) -> JsValue {
        let result = match kind {
            "not-sent" => OriginResult::NotSent(message),
            _ => OriginResult::NoAnswer(message),
        };
        let action = self.inner.origin_answered(result, now_ms as u64);
        self.present(action, now_ms)
    }

    /// The coordinator's reply to `finish` (its bytes), or the error.
    pub fn finished(&mut self, reply: Option<Vec<u8>>, error: Option<String>, now_ms: f64) -> JsValue {
        let finished = reply_of(reply, error, |bytes| decode_finished(bytes).map_err(|e| e.to_string()));
        let action = self.inner.finished(finished, now_ms as u64);
        self.present(action, now_ms)
    }

    /// The coordinator's reply to an admin path's `inspect` (its bytes), or
    /// the error.
    pub fn inspected(&mut self, reply: Option<Vec<u8>>, error: Option<String>, now_ms: f64) -> JsValue {
        let state = reply_of(reply, error, |bytes| decode_inspected(bytes).map_err(|e| e.to_string()));
        let action = self.inner.inspected(state, now_ms as u64);
        self.present(action, now_ms)
    }

    /// The coordinator's reply to an admin path's `release` (its bytes), or
    /// the error.
    pub fn released(&mut self, reply: Option<Vec<u8>>, error: Option<String>, now_ms: f64) -> JsValue {
        let answer = reply_of(reply, error, |bytes| decode_released(bytes).map_err(|e| e.to_string()));
        let action = self.inner.released(answer, now_ms as u64);
        self.present(action, now_ms)
    }

    /// The abandon call ended (its result changes nothing).
    pub fn abandoned(&mut self, now_ms: f64) -> JsValue {
        let action = self.inner.abandoned(now_ms as u64);
        self.present(action, now_ms)
    }

    /// The pause is over.
    pub fn paused(&mut self, now_ms: f64) -> JsValue {
        let action = self.inner.paused(now_ms as u64);
        self.present(action, now_ms)
    }

    /// An unprotected forward ended: its status and headers, or the error.
    pub fn forwarded(&mut self, status: Option<u16>, headers: JsValue, error: Option<String>, now_ms: f64) -> JsValue {
        let result = match (status, error) {
            (Some(status), None) => Ok((status, header_pairs(&headers))),
            (_, error) => Err(error.unwrap_or_else(|| "no answer".to_owned())),
        };
        let action = self.inner.forwarded(result, now_ms as u64);
        self.present(action, now_ms)
    }

    /// The answer was handed to the caller.
    pub fn responded(&mut self, now_ms: f64) -> JsValue {
        let action = self.inner.responded(now_ms as u64);
        self.present(action, now_ms)
    }

    /// The log line was written.
    pub fn logged(&mut self, now_ms: f64) -> JsValue {
        let action = self.inner.logged(now_ms as u64);
        self.present(action, now_ms)
    }

    /// The data point was written (or not: nothing depends on it).
    #[wasm_bindgen(js_name = metricWritten)]
    pub fn metric_written(&mut self, now_ms: f64) -> JsValue {
        let action = self.inner.metric_written(now_ms as u64);
        self.present(action, now_ms)
    }

    /// The KV copy was written (or not: nothing depends on it).
    #[wasm_bindgen(js_name = copyWritten)]
    pub fn copy_written(&mut self, now_ms: f64) -> JsValue {
        let action = match self.stored.take() {
            Some(finished) => self.inner.finished(Ok(finished), now_ms as u64),
            None => self.inner.copy_written(now_ms as u64),
        };
        self.present(action, now_ms)
    }
}

impl JsExchange {
    pub(crate) fn new(inner: Exchange, config: Rc<Config>, first: Action, now: u64) -> Self {
        let mut exchange =
            Self { inner, config, action: JsValue::UNDEFINED, kv_begin: None, reserved: None, stored: None };
        exchange.present(first, now as f64);
        exchange
    }

    /// The action as a plain object (remembered as `action`). In KV-only
    /// mode the store's steps run here, on the reservation, and only their
    /// KV reads and writes go out.
    fn present(&mut self, mut action: Action, now_ms: f64) -> JsValue {
        let now = now_ms as u64;
        let kv_only = self.config.consistency == Consistency::Kv;
        let timeout = self.config.store_timeout_ms as f64;
        let value = loop {
            break match action {
                Action::ReadBody { limit, drain_until } => {
                    Object::new("read-body").set("limit", limit as f64).set("drainUntil", drain_until as f64).done()
                }
                Action::Forward { edits, body, timeout_ms } => {
                    let object = Object::new("forward").set("edits", edit_list(&edits)).set("timeoutMs", timeout_ms as f64);
                    match body {
                        Some(body) => object.bytes("body", &body),
                        None => object.set("body", JsValue::NULL),
                    }
                    .done()
                }
                Action::ReadCopy { name, timeout_ms } => {
                    Object::new("read-copy").set("key", name.to_hex()).set("timeoutMs", timeout_ms as f64).done()
                }
                Action::Detach => Object::new("detach").done(),
                Action::Begin { name, fingerprint, .. } if kv_only => {
                    self.kv_begin = Some((name, fingerprint));
                    Object::new("kv-begin").set("key", name.to_hex()).set("timeoutMs", timeout).done()
                }
                Action::Begin { name, fingerprint, wait_ms, reservation } => {
                    let call = StoreCall::Begin { policy: self.config.records.clone(), fingerprint, wait_ms, reservation };
                    store_call("begin", &name, &call, timeout + wait_ms as f64)
                }
                Action::Abandon { name, reservation } => {
                    let call = StoreCall::Abandon { policy: self.config.records.clone(), reservation };
                    store_call("abandon", &name, &call, timeout)
                }
                Action::Inspect { name } => store_call("inspect", &name, &StoreCall::Inspect, timeout),
                Action::Release { name } => {
                    store_call("release", &name, &StoreCall::Release { policy: self.config.records.clone() }, timeout)
                }
                Action::CallOrigin { attempt, edits, body, timeout_ms, keep_at_most } => Object::new("call-origin")
                    .set("attempt", attempt)
                    .set("edits", edit_list(&edits))
                    .bytes("body", &body)
                    .set("timeoutMs", timeout_ms as f64)
                    .set("keepAtMost", keep_at_most as f64)
                    .done(),
                Action::Finish { name, attempt, outcome } if kv_only => {
                    let step = finish(self.reserved.take(), attempt, outcome, now, &self.config.records);
                    match step.answer {
                        Finished::Stored(completed) => {
                            let value = write_copy(&name, &Record::Completed(completed.clone()), completed.expires_at, now);
                            self.stored = Some(Finished::Stored(completed));
                            value
                        }
                        other => {
                            action = self.inner.finished(Ok(other), now);
                            continue;
                        }
                    }
                }
                Action::Finish { name, attempt, outcome } => {
                    let call = StoreCall::Finish { policy: self.config.records.clone(), attempt, outcome };
                    store_call("finish", &name, &call, timeout)
                }
                Action::Pause { ms } => Object::new("pause").set("ms", ms as f64).done(),
                Action::Respond(reply) => respond(&reply),
                Action::Log(line) => Object::new("log").set("line", line).done(),
                Action::Metric(point) => Object::new("metric")
                    .set("blobs", point.blobs.iter().map(JsValue::from).collect::<js_sys::Array>())
                    .set("doubles", point.doubles.iter().map(|&n| JsValue::from_f64(n)).collect::<js_sys::Array>())
                    .set("indexes", point.indexes.iter().map(JsValue::from).collect::<js_sys::Array>())
                    .done(),
                Action::WriteCopy { name, completed } => {
                    write_copy(&name, &Record::Completed(completed.clone()), completed.expires_at, now)
                }
                Action::Done => Object::new("done").done(),
            };
        };
        self.action = value.clone();
        value
    }
}

/// A call to the record's coordinator: `{kind, object, call, timeoutMs}`.
fn store_call(kind: &str, name: &RecordName, call: &StoreCall, timeout: f64) -> JsValue {
    Object::new(kind).set("object", name.to_hex()).bytes("call", &call.encode()).set("timeoutMs", timeout).done()
}

/// A KV write of `record`: `{kind: "write-copy", key, value, ttlSeconds}`.
fn write_copy(name: &RecordName, record: &Record, expires_at: u64, now: u64) -> JsValue {
    Object::new("write-copy")
        .set("key", name.to_hex())
        .bytes("value", &record.encode())
        .set("ttlSeconds", copy_ttl_secs(expires_at, now) as f64)
        .done()
}

/// A store reply decoded, or the error the host reported.
fn reply_of<T>(reply: Option<Vec<u8>>, error: Option<String>, decode: impl Fn(&[u8]) -> Result<T, String>) -> Result<T, String> {
    match (reply, error) {
        (_, Some(error)) => Err(error),
        (Some(bytes), None) => decode(&bytes),
        (None, None) => Err("no reply".to_owned()),
    }
}
