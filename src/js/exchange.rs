//! `Exchange` for JavaScript: the core's exchange, its results taken back
//! as JavaScript values. Each action crosses as a number (its
//! [`ActionKind`]); the host reads the fields it needs through getters
//! named for what they hold, so nothing is built for a field it does not
//! read and no object is built at all.

use wasm_bindgen::prelude::*;

use super::packed::{pack_edits, pack_headers, unpack_headers};
use super::values::point_object;
use crate::core::{
    Action, AnswerRead, CipherCall, CipherOp, DataPoint, Exchange, HeaderEdit, OriginResult, Record, RecordName, Reply,
    ReplyBody, copy_ttl_secs,
};

/// The kind of the pending action, as `kind` and every result method give
/// it: the host switches on these (`ActionKind.Respond`, ...), exported from
/// this module, so no number is kept in sync by hand.
#[wasm_bindgen]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ActionKind {
    Done = 0,
    Respond = 1,
    Log = 2,
    Metric = 3,
    Detach = 4,
    ReadBody = 5,
    Forward = 6,
    ReadCopy = 7,
    Store = 8,
    CallOrigin = 9,
    Pause = 10,
    WriteCopy = 11,
    Cipher = 12,
}

/// Why an origin call brought no answer, as the host reports it to
/// `originFailed` (`OriginFailure.NotSent`, ...).
#[wasm_bindgen]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OriginFailure {
    /// The request was never sent, or the handler threw `NotSentError`: it
    /// cannot have acted.
    NotSent = 0,
    /// The origin may have got the request; no answer came.
    NoAnswer = 1,
    /// The worker's own handler threw: it may have acted.
    HandlerThrew = 2,
}

/// The pending action, as the host performs it; its fields reach the host
/// through getters named for what they hold.
enum Pending {
    Done,
    /// Status, headers, body (none: the kept response's).
    Respond(Reply),
    Log(String),
    Metric(DataPoint),
    Detach,
    /// Limit, and how far to read past it.
    ReadBody {
        whole: bool,
    },
    /// Edits, body (none: the request's own), time limit.
    Forward(Vec<HeaderEdit>, Option<Vec<u8>>, u64),
    /// A KV read of the record (`read-copy`), its time limit.
    Read(RecordName, f64),
    /// A call to the record's coordinator: its bytes, time limit (`begin`,
    /// `finish`, `inspect`, `release`, `abandon`).
    Store(RecordName, Vec<u8>, f64),
    CallOrigin {
        edits: Vec<HeaderEdit>,
        body: Vec<u8>,
        timeout_ms: u64,
        answer: AnswerRead,
    },
    Pause(u64),
    /// The record's KV copy: its bytes, time to live in seconds.
    WriteCopy(RecordName, Vec<u8>, u64),
    /// Seal or open one part of a stored answer.
    Cipher(CipherCall),
}

/// One request's exchange. `kind` is what to do now; each method reports
/// a result and returns the next action's kind.
#[wasm_bindgen(js_name = Exchange)]
pub struct JsExchange {
    inner: Exchange,
    kind: ActionKind,
    pending: Pending,
}

#[wasm_bindgen(js_class = Exchange)]
impl JsExchange {
    /// The pending action's kind.
    #[wasm_bindgen(getter)]
    pub fn kind(&self) -> ActionKind {
        self.kind
    }

    /// The time limit in ms of `forward`, `readCopy`, `callOrigin` and
    /// `store`.
    #[wasm_bindgen(getter, js_name = timeoutMs)]
    pub fn timeout_ms(&self) -> f64 {
        match &self.pending {
            Pending::Forward(_, _, ms) | Pending::CallOrigin { timeout_ms: ms, .. } => *ms as f64,
            Pending::Read(_, ms) | Pending::Store(_, _, ms) => *ms,
            _ => 0.0,
        }
    }

    /// `pause`: how long, in ms.
    #[wasm_bindgen(getter, js_name = pauseMs)]
    pub fn pause_ms(&self) -> f64 {
        let Pending::Pause(ms) = &self.pending else { return 0.0 };
        *ms as f64
    }

    /// `writeCopy`: the copy's time to live, in seconds.
    #[wasm_bindgen(getter, js_name = ttlSeconds)]
    pub fn ttl_seconds(&self) -> f64 {
        let Pending::WriteCopy(_, _, secs) = &self.pending else { return 0.0 };
        *secs as f64
    }

    /// The record's name in hex: the KV key of `readCopy` and `writeCopy`,
    /// the object of `store`.
    #[wasm_bindgen(getter)]
    pub fn record(&self) -> String {
        match &self.pending {
            Pending::Read(name, _) | Pending::Store(name, _, _) | Pending::WriteCopy(name, _, _) => name.to_hex(),
            _ => String::new(),
        }
    }

    /// `store`: the call's bytes.
    #[wasm_bindgen(getter)]
    pub fn call(&self) -> Option<Vec<u8>> {
        let Pending::Store(_, bytes, _) = &self.pending else { return None };
        Some(bytes.clone())
    }

    /// `writeCopy`: the record's bytes.
    #[wasm_bindgen(getter)]
    pub fn copy(&self) -> Option<Vec<u8>> {
        let Pending::WriteCopy(_, bytes, _) = &self.pending else { return None };
        Some(bytes.clone())
    }

    /// `respond`: the status.
    #[wasm_bindgen(getter)]
    pub fn status(&self) -> u16 {
        let Pending::Respond(reply) = &self.pending else { return 0 };
        reply.status
    }

    /// `respond`: the headers, packed (`name\nvalue\n...`).
    #[wasm_bindgen(getter)]
    pub fn headers(&self) -> String {
        let Pending::Respond(reply) = &self.pending else { return String::new() };
        pack_headers(&reply.headers)
    }

    /// `respond`: the page's own origin when the body's forms get keys as
    /// it streams (`withFormKeys`, with
    /// [`page_form_keys`](crate::core::page_form_keys)); undefined when
    /// they do not.
    #[wasm_bindgen(getter, js_name = formPage)]
    pub fn form_page(&self) -> Option<String> {
        let Pending::Respond(reply) = &self.pending else { return None };
        reply.form_keys.as_ref().map(|forms| forms.page_origin.clone())
    }

    /// `respond` with `formPage`: the longest tag the rewriter may be
    /// handed, or 0 when the body cannot hold a longer one.
    #[wasm_bindgen(getter, js_name = longestTag)]
    pub fn longest_tag(&self) -> u32 {
        match &self.pending {
            Pending::Respond(reply) => reply.form_keys.as_ref().map_or(0, |forms| forms.longest_tag),
            _ => 0,
        }
    }

    /// The header edits of `forward` and `callOrigin`, packed
    /// (`op\nname\nvalue\n...`, `op` an [`EditOp`](super::packed::EditOp));
    /// undefined when there are none: the request goes with its own headers.
    #[wasm_bindgen(getter)]
    pub fn edits(&self) -> Option<String> {
        let (Pending::Forward(edits, _, _) | Pending::CallOrigin { edits, .. }) = &self.pending else {
            return None;
        };
        (!edits.is_empty()).then(|| pack_edits(edits))
    }

    /// The body of `forward` (undefined: the request's own), `callOrigin`
    /// and `respond` (undefined: the kept response's); what `cipher` seals
    /// or opens.
    #[wasm_bindgen(getter)]
    pub fn body(&self) -> Option<Vec<u8>> {
        match &self.pending {
            Pending::Forward(_, body, _) => body.clone(),
            Pending::CallOrigin { body, .. } => Some(body.clone()),
            Pending::Respond(Reply { body: ReplyBody::Bytes(body), .. }) => Some(body.clone()),
            Pending::Cipher(call) => Some(call.data.clone()),
            _ => None,
        }
    }

    /// `cipher`: whether it seals (else it opens).
    #[wasm_bindgen(getter)]
    pub fn seals(&self) -> bool {
        matches!(&self.pending, Pending::Cipher(CipherCall { op: CipherOp::Seal, .. }))
    }

    /// `cipher`: the AES-256-GCM key's 32 bytes.
    #[wasm_bindgen(getter, js_name = cipherKey)]
    pub fn cipher_key(&self) -> Option<Vec<u8>> {
        let Pending::Cipher(call) = &self.pending else { return None };
        Some(call.key.bytes().to_vec())
    }

    /// `cipher`: the associated data.
    #[wasm_bindgen(getter)]
    pub fn aad(&self) -> Option<Vec<u8>> {
        let Pending::Cipher(call) = &self.pending else { return None };
        Some(call.aad.clone())
    }

    /// `log`: the line.
    #[wasm_bindgen(getter)]
    pub fn line(&self) -> String {
        let Pending::Log(line) = &self.pending else { return String::new() };
        line.clone()
    }

    /// `metric`: the data point, `{blobs, doubles, indexes}`.
    #[wasm_bindgen(getter)]
    pub fn point(&self) -> JsValue {
        let Pending::Metric(point) = &self.pending else { return JsValue::UNDEFINED };
        point_object(point)
    }

    /// `readBody`: whether the body may be read in one call (its declared
    /// length fits the limit).
    #[wasm_bindgen(getter, js_name = wholeBody)]
    pub fn whole_body(&self) -> bool {
        matches!(self.pending, Pending::ReadBody { whole: true })
    }

    /// A chunk of the request body was read (or all of it, in one call):
    /// whether to read on; when not, the host cancels the stream.
    #[wasm_bindgen(js_name = bodyChunk)]
    pub fn body_chunk(&mut self, chunk: &[u8]) -> bool {
        self.inner.body_chunk(chunk)
    }

    /// The body's reading ended; `broken` when the stream failed.
    #[wasm_bindgen(js_name = bodyEnded)]
    pub fn body_ended(&mut self, broken: bool, now_ms: f64) -> ActionKind {
        let action = self.inner.body_ended(broken, now_ms as u64);
        self.present(action, now_ms)
    }

    /// A KV copy was read: its bytes (undefined when absent), or the error.
    #[wasm_bindgen(js_name = copyRead)]
    pub fn copy_read(&mut self, bytes: Option<Vec<u8>>, error: Option<String>, now_ms: f64) -> ActionKind {
        let found = match error {
            Some(error) => Err(error),
            None => Ok(bytes.and_then(|b| Record::decode(&b).ok())),
        };
        let action = self.inner.copy_read(found, now_ms as u64);
        self.present(action, now_ms)
    }

    /// The rest now runs under `waitUntil`.
    pub fn detached(&mut self, now_ms: f64) -> ActionKind {
        let action = self.inner.detached(now_ms as u64);
        self.present(action, now_ms)
    }

    /// The coordinator's reply to the pending store call (its bytes), or
    /// why none came.
    #[wasm_bindgen(js_name = storeAnswered)]
    pub fn store_answered(&mut self, reply: Option<Vec<u8>>, error: Option<String>, now_ms: f64) -> ActionKind {
        let reply = match (reply, error) {
            (_, Some(error)) => Err(error),
            (Some(bytes), None) => Ok(bytes),
            (None, None) => Err("no reply".to_owned()),
        };
        let action = self.inner.store_answered(reply, now_ms as u64);
        self.present(action, now_ms)
    }

    /// `callOrigin`: the answer's head arrived (its headers packed,
    /// `name\nvalue\n...`);
    /// whether to read its body whole, in one call, rather than part by
    /// part. Either way each part goes to `answerChunk`.
    #[wasm_bindgen(js_name = answerHead)]
    pub fn answer_head(&mut self, status: u16, headers: &str) -> bool {
        let Pending::CallOrigin { answer, .. } = &mut self.pending else { return false };
        answer.head(status, unpack_headers(headers))
    }

    /// `callOrigin`: one part of the answer's body; whether it is kept.
    /// When not, the answer streams: the host sends the bytes
    /// `answerStreams` gives back, this part and the rest as the caller
    /// reads them.
    #[wasm_bindgen(js_name = answerChunk)]
    pub fn answer_chunk(&mut self, chunk: &[u8]) -> bool {
        let Pending::CallOrigin { answer, .. } = &mut self.pending else { return false };
        answer.chunk(chunk)
    }

    /// `callOrigin`: the answer streams; the body bytes read so far.
    #[wasm_bindgen(js_name = answerStreams)]
    pub fn answer_streams(&mut self) -> Vec<u8> {
        let Pending::CallOrigin { answer, .. } = &mut self.pending else { return Vec::new() };
        answer.streams()
    }

    /// `callOrigin`: the answer's body was read to its end, or streams.
    #[wasm_bindgen(js_name = answerEnded)]
    pub fn answer_ended(&mut self, now_ms: f64) -> ActionKind {
        let result = match std::mem::replace(&mut self.pending, Pending::Done) {
            Pending::CallOrigin { answer, .. } => answer.ended(),
            _ => OriginResult::NotSent("no origin call under way".to_owned()),
        };
        let action = self.inner.origin_answered(result, now_ms as u64);
        self.present(action, now_ms)
    }

    /// The origin gave no answer, for the reason `failure` names.
    #[wasm_bindgen(js_name = originFailed)]
    pub fn origin_failed(&mut self, failure: OriginFailure, message: String, now_ms: f64) -> ActionKind {
        let result = match failure {
            OriginFailure::NotSent => OriginResult::NotSent(message),
            OriginFailure::NoAnswer => OriginResult::NoAnswer(message),
            OriginFailure::HandlerThrew => OriginResult::HandlerThrew(message),
        };
        let action = self.inner.origin_answered(result, now_ms as u64);
        self.present(action, now_ms)
    }

    /// The caller went away (its request's signal aborted) at `now_ms`: how
    /// long the origin call under way may still take, in ms (the host then
    /// ends it as `no-answer`), or undefined when none is under way.
    #[wasm_bindgen(js_name = callerGone)]
    pub fn caller_gone(&mut self, now_ms: f64) -> Option<f64> {
        self.inner.caller_gone(now_ms as u64).map(|ms| ms as f64)
    }

    /// The step the host was performing threw `message` instead of
    /// reporting its result; the exchange goes on as
    /// [`Exchange::step_failed`](crate::core::Exchange::step_failed) says (an
    /// attempt's `finish` is never skipped).
    #[wasm_bindgen(js_name = stepFailed)]
    pub fn step_failed(&mut self, message: String, now_ms: f64) -> ActionKind {
        let action = self.inner.step_failed(message, now_ms as u64);
        self.present(action, now_ms)
    }

    /// The pause is over.
    pub fn paused(&mut self, now_ms: f64) -> ActionKind {
        let action = self.inner.paused(now_ms as u64);
        self.present(action, now_ms)
    }

    /// An unprotected forward ended: its status and headers (packed,
    /// `name\nvalue\n...`), or the error.
    pub fn forwarded(&mut self, status: Option<u16>, headers: &str, error: Option<String>, now_ms: f64) -> ActionKind {
        let result = match (status, error) {
            (Some(status), None) => Ok((status, unpack_headers(headers))),
            (_, error) => Err(error.unwrap_or_else(|| "no answer".to_owned())),
        };
        let action = self.inner.forwarded(result, now_ms as u64);
        self.present(action, now_ms)
    }

    /// The answer was handed to the caller.
    pub fn responded(&mut self, now_ms: f64) -> ActionKind {
        let action = self.inner.responded(now_ms as u64);
        self.present(action, now_ms)
    }

    /// The log line was written.
    pub fn logged(&mut self, now_ms: f64) -> ActionKind {
        let action = self.inner.logged(now_ms as u64);
        self.present(action, now_ms)
    }

    /// The data point was written (or not: nothing depends on it).
    #[wasm_bindgen(js_name = metricWritten)]
    pub fn metric_written(&mut self, now_ms: f64) -> ActionKind {
        let action = self.inner.metric_written(now_ms as u64);
        self.present(action, now_ms)
    }

    /// `cipher` ran: its bytes, or why none came.
    pub fn ciphered(&mut self, bytes: Option<Vec<u8>>, error: Option<String>, now_ms: f64) -> ActionKind {
        let result = match (bytes, error) {
            (Some(bytes), None) => Ok(bytes),
            (_, error) => Err(error.unwrap_or_else(|| "no bytes".to_owned())),
        };
        let action = self.inner.ciphered(result, now_ms as u64);
        self.present(action, now_ms)
    }

    /// The KV copy was written (or not: nothing depends on it).
    #[wasm_bindgen(js_name = copyWritten)]
    pub fn copy_written(&mut self, now_ms: f64) -> ActionKind {
        let action = self.inner.copy_written(now_ms as u64);
        self.present(action, now_ms)
    }
}

impl JsExchange {
    pub(crate) fn new(inner: Exchange, first: Action, now: u64) -> Self {
        let mut exchange = Self { inner, kind: ActionKind::Done, pending: Pending::Done };
        exchange.present(first, now as f64);
        exchange
    }

    /// Makes `action` the pending one; its kind.
    fn present(&mut self, action: Action, now_ms: f64) -> ActionKind {
        let now = now_ms as u64;
        let (kind, pending) = match action {
            Action::ReadBody { whole } => (ActionKind::ReadBody, Pending::ReadBody { whole }),
            Action::Forward { edits, body, timeout_ms } => {
                (ActionKind::Forward, Pending::Forward(edits, body, timeout_ms))
            }
            Action::ReadCopy { name, timeout_ms } => (ActionKind::ReadCopy, Pending::Read(name, timeout_ms as f64)),
            Action::Detach => (ActionKind::Detach, Pending::Detach),
            Action::Store { name, call, timeout_ms } => {
                (ActionKind::Store, Pending::Store(name, call.encode(), timeout_ms as f64))
            }
            Action::CallOrigin { edits, body, timeout_ms, answer, .. } => {
                (ActionKind::CallOrigin, Pending::CallOrigin { edits, body, timeout_ms, answer })
            }
            Action::Pause { ms } => (ActionKind::Pause, Pending::Pause(ms)),
            Action::Respond(reply) => (ActionKind::Respond, Pending::Respond(reply)),
            Action::Log(line) => (ActionKind::Log, Pending::Log(line)),
            Action::Metric(point) => (ActionKind::Metric, Pending::Metric(point)),
            Action::WriteCopy { name, completed } => (
                ActionKind::WriteCopy,
                write_copy(name, &Record::Completed(completed.clone()), completed.expires_at, now),
            ),
            Action::Cipher(call) => (ActionKind::Cipher, Pending::Cipher(call)),
            Action::Done => (ActionKind::Done, Pending::Done),
        };
        self.kind = kind;
        self.pending = pending;
        kind
    }
}

/// A KV write of `record`.
fn write_copy(name: RecordName, record: &Record, expires_at: u64, now: u64) -> Pending {
    Pending::WriteCopy(name, record.encode(), copy_ttl_secs(expires_at, now))
}
