//! The Rust host's driver and performer: runs one request's
//! [`Exchange`] to its end, doing the I/O each action names — the body, the
//! handler or origin, the coordinator, KV, timers — and reporting each
//! result back. Every decision is the core's. The request and response side
//! is [`super::http`]; `pkg/src/worker/host.js` is the same for the
//! JavaScript host.

use std::future::Future;
use std::rc::Rc;

use futures_channel::oneshot;
use futures_util::future::{Either, select};
use worker::{AnalyticsEngineDataPointBuilder, Context, Env, Request, Response, Result};

use crate::core::{
    Action, AnswerRead, COORDINATOR_BINDING, Config, DataPoint, Exchange, HeaderEdit, HostText, KV_BINDING,
    METRICS_BINDING, OriginResult, RecordName, Reply, RequestHead,
};

use super::deadline::within;
use super::disconnect::CallerGone;
use super::durable_store::{DurableStore, StoreError};
use super::form_keys;
use super::http::{self, now_ms};
use super::kv_replay::KvReplay;
use super::origin::{OriginError, carry_cf, with_timeout};

/// The origin handler [`Idempotency::handle`](crate::edge::Idempotency::handle) takes, named once for the
/// code that passes it along: called at most once, with the request to
/// forward.
pub(super) trait OriginCall: 'static {
    type Answer: Future<Output = std::result::Result<Response, OriginError>> + 'static;
    fn call(self, req: Request) -> Self::Answer;
}

impl<F, Fut> OriginCall for F
where
    F: FnOnce(Request) -> Fut + 'static,
    Fut: Future<Output = std::result::Result<Response, OriginError>> + 'static,
{
    type Answer = Fut;
    fn call(self, req: Request) -> Fut {
        self(req)
    }
}

/// Whose handler the origin call is, and what its request carries.
#[derive(Clone, Copy, Debug)]
pub(super) struct Handling {
    /// Whether the origin is the proxy's own call
    /// ([`Idempotency::proxying`](crate::edge::Idempotency::proxying)).
    pub proxying: bool,
    /// Whether the handler's request carries the client's `cf`
    /// ([`Idempotency::proxying_to`](crate::edge::Idempotency::proxying_to)).
    pub keeps_cf: bool,
}

/// Runs the exchange for the request with `head` to its end: the caller's
/// answer as soon as there is one. From its `Detach` on, the rest runs
/// under `waitUntil`, so a caller that goes away does not leave the key in
/// flight.
pub(super) async fn drive<O: OriginCall>(
    config: Rc<Config>,
    head: RequestHead,
    req: Request,
    env: &Env,
    ctx: &Context,
    origin: O,
    handling: Handling,
) -> Result<Response> {
    // A panic in the handler must leave nothing that keeps its caller waiting.
    super::deadline::clear_on_panic();
    let (mut exchange, mut action) = Exchange::start(Rc::clone(&config), head, now_ms());
    let mut host =
        Host { config, env: env.clone(), req, origin: Some(origin), kept: None, store: None, handling, escaped: None };
    let mut answer = None;
    loop {
        action = match action {
            Action::Detach => break,
            Action::Respond(reply) => {
                answer = Some(host.response(reply));
                exchange.responded(now_ms())
            }
            Action::Done => {
                return answer.unwrap_or_else(|| Err(unanswered()));
            }
            other => host.perform(other, &mut exchange).await,
        };
        // The handler's own error on a request the layer does not cover.
        if let Some(error) = host.escaped.take() {
            return Err(error);
        }
    }
    // Detached: the rest runs to its end whatever the caller does; the
    // answer comes back through a channel, the KV copy after it.
    let (reply, answered) = oneshot::channel::<Result<Response>>();
    ctx.wait_until(async move {
        let mut reply = Some(reply);
        let mut action = exchange.detached(now_ms());
        loop {
            action = match action {
                Action::Respond(answer) => {
                    if let Some(reply) = reply.take() {
                        let _ = reply.send(host.response(answer));
                    }
                    exchange.responded(now_ms())
                }
                Action::Done => break,
                other => host.perform(other, &mut exchange).await,
            };
        }
    });
    answered.await.unwrap_or_else(|_| Err(unanswered()))
}

/// An exchange that ended without an answer: a host bug (a result reported
/// out of turn), surfaced as an error as the JavaScript host rejects,
/// never dressed as one of the layer's answers.
fn unanswered() -> worker::Error {
    worker::Error::RustError(HostText::Unanswered.to_string())
}

/// What performs an exchange's actions for one request.
struct Host<O> {
    config: Rc<Config>,
    env: Env,
    /// The client's request: its head, and its body until read or forwarded.
    req: Request,
    /// The origin handler, until called.
    origin: Option<O>,
    /// The response of an unprotected forward, for a reply that streams it.
    kept: Option<Response>,
    /// The store, once the exchange asks for it.
    store: Option<std::result::Result<DurableStore, String>>,
    /// Whose handler the origin is, and whether its request carries `cf`.
    handling: Handling,
    /// The user handler's error on a pass-through, for the runtime.
    escaped: Option<worker::Error>,
}

impl<O: OriginCall> Host<O> {
    /// Performs one I/O, log or copy action and reports its result.
    async fn perform(&mut self, action: Action, exchange: &mut Exchange) -> Action {
        match action {
            Action::ReadBody { whole } => http::read_body(&self.req, whole, exchange).await,
            Action::ReadCopy { name, timeout_ms } => {
                let found = self.read_copy(&name, timeout_ms).await;
                exchange.copy_read(found, now_ms())
            }
            Action::Store { name, call, timeout_ms } => {
                let reply = match self.store() {
                    Ok(store) => store.send(&name, &call.encode(), timeout_ms).await.map_err(|e| e.to_string()),
                    Err(e) => Err(e),
                };
                exchange.store_answered(reply, now_ms())
            }
            Action::CallOrigin { edits, body, timeout_ms, answer, .. } => {
                let result = self.call_origin(&edits, body, timeout_ms, answer, exchange).await;
                exchange.origin_answered(result, now_ms())
            }
            Action::Pause { ms } => {
                super::deadline::sleep(ms).await;
                exchange.paused(now_ms())
            }
            Action::Forward { edits, body, timeout_ms } => {
                let result = self.forward(&edits, body, timeout_ms).await;
                exchange.forwarded(result, now_ms())
            }
            Action::Log(line) => {
                super::decision_line::write(&line);
                exchange.logged(now_ms())
            }
            Action::Metric(point) => {
                // `writeDataPoint` only queues the point: no await, and a
                // failure changes nothing for the caller.
                if let Err(e) = write_data_point(&self.env, point) {
                    worker::console_warn!("{}", HostText::DataPointNotWritten { error: &e.to_string() });
                }
                exchange.metric_written(now_ms())
            }
            Action::WriteCopy { name, completed } => {
                if let Some(kv) = self.kv() {
                    // A KV error never fails the request: the object holds the answer.
                    let _ = kv.write(&name, &completed, now_ms()).await;
                }
                exchange.copy_written(now_ms())
            }
            Action::Cipher(call) => {
                let result = super::seal::run(&call).await;
                exchange.ciphered(result, now_ms())
            }
            // Handled by the driver loop; never performed here.
            Action::Detach | Action::Respond(_) | Action::Done => Action::Done,
        }
    }

    fn kv(&self) -> Option<KvReplay> {
        self.env.kv(KV_BINDING).ok().map(KvReplay::new)
    }

    /// The key's coordinator objects, reached once made (KV-only mode
    /// makes no store call: the exchange decides on KV copies).
    fn store(&mut self) -> std::result::Result<&DurableStore, String> {
        let config = &self.config;
        let env = &self.env;
        let store = self.store.get_or_insert_with(|| {
            env.durable_object(COORDINATOR_BINDING)
                .map(|ns| DurableStore::new(ns, config.policy.records.clone(), config.policy.store_timeout_ms))
                .map_err(|e| StoreError::Failed(e.to_string()).to_string())
        });
        store.as_ref().map_err(Clone::clone)
    }

    async fn read_copy(
        &self,
        name: &RecordName,
        timeout_ms: u64,
    ) -> std::result::Result<Option<crate::core::Record>, String> {
        let Some(kv) = self.kv() else { return Err(HostText::NoKvBound { binding: KV_BINDING }.to_string()) };
        match within(timeout_ms, kv.read(name, now_ms())).await {
            Some(found) => found.map_err(|e| e.to_string()),
            None => Err(HostText::NoAnswerWithin { ms: timeout_ms }.to_string()),
        }
    }

    /// The client's request with `edits`, and `body` (or its own).
    fn outgoing(&self, edits: &[HeaderEdit], body: Option<Vec<u8>>) -> Result<Request> {
        let headers = http::copy_headers(self.req.headers())?;
        for edit in edits {
            match edit {
                HeaderEdit::Set(name, value) => headers.set(name, value)?,
                HeaderEdit::Remove(name) => headers.delete(name)?,
            }
        }
        // The method as sent, from the runtime's own request: `worker::Method`
        // reads one it does not name (PROPFIND, QUERY, PURGE) as GET.
        let init = worker::web_sys::RequestInit::new();
        init.set_method(&self.req.inner().method());
        init.set_headers(&headers.0);
        if self.handling.keeps_cf {
            carry_cf(self.req.inner(), &init);
        }
        match body {
            Some(body) if !body.is_empty() => init.set_body(&worker::js_sys::Uint8Array::from(body.as_slice())),
            Some(_) => {}
            None => {
                if let Some(stream) = self.req.inner().body() {
                    init.set_body(&stream);
                }
            }
        }
        Ok(Request::from(worker::web_sys::Request::new_with_str_and_init(&self.req.inner().url(), &init)?))
    }

    /// One call of the origin handler, its answer read within the limit as
    /// `answer` takes it (a response whose body streams is kept for the
    /// reply).
    async fn call_origin(
        &mut self,
        edits: &[HeaderEdit],
        body: Vec<u8>,
        timeout_ms: u64,
        mut answer: AnswerRead,
        exchange: &mut Exchange,
    ) -> OriginResult {
        let Some(origin) = self.origin.take() else {
            return OriginResult::NotSent("the origin was already called".into());
        };
        let req = match self.outgoing(edits, Some(body)) {
            Ok(req) => req,
            Err(e) => return OriginResult::NotSent(e.to_string()),
        };
        // A Worker's own handler that returns `NoAnswer` failed: worded as
        // the handler's failure, not as an origin out of reach (SPEC §11).
        let threw = std::cell::Cell::new(false);
        let ended = {
            // The time limit covers the whole answer, body included: a finish
            // must come while the attempt can still own the key.
            let call = async {
                let response = origin.call(req).await.inspect_err(|e| {
                    threw.set(!self.handling.proxying && matches!(e, OriginError::NoAnswer(_)));
                })?;
                http::read_answer(response, &mut answer).await.map_err(OriginError::NoAnswer)
            };
            let call = with_timeout(call, timeout_ms);
            let mut call = std::pin::pin!(call);
            // When the caller goes away, the core bounds the rest of the call
            // to what Workers allows after a disconnect (SPEC §3).
            match select(call.as_mut(), CallerGone::of(self.req.inner())).await {
                Either::Left((ended, _)) => ended,
                Either::Right(((), _)) => match exchange.caller_gone(now_ms()) {
                    Some(ms) => within(ms, call).await.unwrap_or_else(|| {
                        Err(OriginError::NoAnswer(HostText::CallerGone { left_ms: ms }.to_string()))
                    }),
                    None => call.await,
                },
            }
        };
        match ended {
            Ok(streaming) => {
                self.kept = streaming;
                answer.ended()
            }
            Err(OriginError::NotSent(e)) => OriginResult::NotSent(e),
            Err(OriginError::NoAnswer(e)) if threw.get() => OriginResult::HandlerThrew(e),
            Err(OriginError::NoAnswer(e)) => OriginResult::NoAnswer(e),
        }
    }

    /// An unprotected forward; its response is kept for the reply.
    async fn forward(
        &mut self,
        edits: &[HeaderEdit],
        body: Option<Vec<u8>>,
        timeout_ms: u64,
    ) -> std::result::Result<(u16, Vec<(String, String)>), String> {
        let Some(origin) = self.origin.take() else { return Err("the origin was already called".into()) };
        let req = if edits.is_empty() && body.is_none() {
            // The client's request as it is: the same runtime object, body unread.
            Request::from(<worker::web_sys::Request as Clone>::clone(self.req.inner()))
        } else {
            self.outgoing(edits, body).map_err(|e| e.to_string())?
        };
        // The user's handler on a request the layer does not cover: as if
        // oncekey were not there — no time limit, its error for the runtime.
        let response = if self.handling.proxying {
            with_timeout(origin.call(req), timeout_ms).await.map_err(|e| e.to_string())?
        } else {
            match origin.call(req).await {
                Ok(response) => response,
                Err(error) => {
                    self.escaped = Some(worker::Error::RustError(error.to_string()));
                    return Err(error.to_string());
                }
            }
        };
        // A `101` the runtime can hand on carries a WebSocket; one without
        // (a broken origin) cannot be built into the caller's response.
        let response = if response.status_code() == 101 {
            let headers = response.headers().clone();
            let Some(socket) = response.websocket() else {
                return Err("the origin answered 101 with no WebSocket".into());
            };
            Response::from_websocket(socket).map_err(|e| e.to_string())?.with_headers(headers)
        } else {
            response
        };
        let head = (response.status_code(), http::header_pairs(response.headers()));
        self.kept = Some(response);
        Ok(head)
    }

    /// The runtime's response for a reply.
    /// The caller's response for `reply`, an HTML body's forms given keys
    /// as it streams when the reply says so (SPEC §8).
    fn response(&mut self, reply: Reply) -> Result<Response> {
        let form_keys = reply.form_keys.clone();
        let response = http::reply_response(reply, self.kept.take())?;
        Ok(match form_keys {
            Some(forms) => form_keys::with_keys(response, &forms.page_origin, forms.longest_tag),
            None => response,
        })
    }
}

/// Writes one data point to the dataset bound as `IDEMPOTENCY_METRICS`.
pub(crate) fn write_data_point(env: &Env, point: DataPoint) -> Result<()> {
    let dataset = env.analytics_engine(METRICS_BINDING)?;
    let indexes: Vec<&str> = point.indexes.iter().map(String::as_str).collect();
    AnalyticsEngineDataPointBuilder::new().indexes(indexes).blobs(point.blobs).doubles(point.doubles).write_to(&dataset)
}
