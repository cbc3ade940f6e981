//! Conversions between `worker` types and the core's values, and the
//! layer's own answers: problems, replays, preflights, `Server-Timing` and
//! CORS headers.

use futures_util::StreamExt;
use worker::wasm_bindgen_futures::JsFuture;
use worker::{ByteStream, Headers, Request, Response, ResponseBody, ResponseBuilder, Result, js_sys, web_sys};

use crate::core::{Completed, Config, KeyRule, PROBLEM_CONTENT_TYPE, Problem, preflight_allow_headers};

/// Headers a cross-origin caller may read on the layer's answers.
const EXPOSED: &str = "Idempotent-Replayed, Idempotent-Body-Omitted, Retry-After, Server-Timing";

/// Milliseconds since the Unix epoch (the isolate's clock, which in
/// Workers advances with I/O).
pub(crate) fn now_ms() -> u64 {
    worker::Date::now().as_millis()
}

/// Durations of the tiers a request touched, for `Server-Timing`.
#[derive(Clone, Copy, Debug, Default)]
pub struct Timing {
    /// Time spent reading the KV replay tier, in ms.
    pub kv: Option<u64>,
    /// Time spent in Durable Object calls (begin and finish), in ms.
    pub durable: Option<u64>,
    /// Time spent waiting for the origin, in ms.
    pub origin: Option<u64>,
}

impl Timing {
    /// Adds `ms` to a tier, counting it as touched.
    pub(crate) fn add(slot: &mut Option<u64>, ms: u64) {
        *slot = Some(slot.unwrap_or(0) + ms);
    }

    /// The `Server-Timing` value, or `None` if no tier was touched.
    pub fn header_value(&self) -> Option<String> {
        let parts: Vec<String> = [("kv", self.kv), ("do", self.durable), ("origin", self.origin)]
            .into_iter()
            .filter_map(|(name, ms)| ms.map(|ms| format!("{name};dur={ms}")))
            .collect();
        (!parts.is_empty()).then(|| parts.join(", "))
    }
}

/// The allowed cross-origin caller of this request, if any.
pub(crate) fn cors_origin(req: &Request, config: &Config) -> Option<String> {
    let origin = req.headers().get("Origin").ok().flatten()?;
    config.allows_origin(&origin).then_some(origin)
}

/// Headers every answer that passed through the layer gets: timing, and
/// the CORS headers when the caller's origin is allowed.
pub(crate) fn decorate(headers: &Headers, timing: &Timing, cors: Option<&str>) -> Result<()> {
    if let Some(value) = timing.header_value() {
        headers.append("Server-Timing", &value)?;
    }
    if let Some(origin) = cors {
        if !headers.has("Access-Control-Allow-Origin")? {
            headers.set("Access-Control-Allow-Origin", origin)?;
            headers.append("Vary", "Origin")?;
        }
        headers.set("Access-Control-Expose-Headers", EXPOSED)?;
    }
    Ok(())
}

/// A problem+json answer with `Cache-Control: no-store` (and `Retry-After`
/// for the problems that have one).
pub fn problem_response(problem: &Problem) -> Result<Response> {
    let headers = Headers::new();
    headers.set("Content-Type", PROBLEM_CONTENT_TYPE)?;
    headers.set("Cache-Control", "no-store")?;
    if let Some(secs) = problem.retry_after_secs() {
        headers.set("Retry-After", &secs.to_string())?;
    }
    Ok(ResponseBuilder::new()
        .with_status(problem.status())
        .with_headers(headers)
        .fixed(problem.to_json().into_bytes()))
}

/// The answer while the worker's configuration is bad: 500 `misconfigured`
/// naming the variable, with one log line.
///
/// # Errors
/// Only if the runtime fails to build the response.
pub fn misconfigured_response(problem: &Problem) -> Result<Response> {
    let log = super::log::DecisionLog {
        outcome: "misconfigured",
        tier: "layer",
        status: problem.status(),
        error: Some(problem.detail()),
        ..Default::default()
    };
    log.emit(&Timing::default());
    problem_response(problem)
}

/// The stored answer, replayed: its status, headers and body (or an empty
/// body and `Idempotent-Body-Omitted: true`), marked as a replay.
pub(crate) fn replay_response(completed: &Completed) -> Result<Response> {
    let response = &completed.response;
    let headers = Headers::new();
    for (name, value) in &response.headers {
        headers.append(name, value)?;
    }
    headers.set("Idempotent-Replayed", "true")?;
    headers.set("Cache-Control", "no-store")?;
    if response.body_omitted() {
        headers.set("Idempotent-Body-Omitted", "true")?;
    }
    let body = response.body.clone().unwrap_or_default();
    Ok(with_body(ResponseBuilder::new().with_status(response.status).with_headers(headers), body))
}

/// A response with `body`, or none at all when it is empty (statuses such as
/// 204 must not carry even an empty body).
pub(crate) fn with_body(builder: ResponseBuilder, body: Vec<u8>) -> Response {
    if body.is_empty() { builder.empty() } else { builder.fixed(body) }
}

/// The answer to an allowed CORS preflight for a covered method.
pub(crate) fn preflight_response(req: &Request, config: &Config, origin: &str) -> Result<Response> {
    let headers = Headers::new();
    headers.set("Access-Control-Allow-Origin", origin)?;
    headers.set("Vary", "Origin")?;
    let mut methods = config.methods.clone();
    methods.extend(["GET", "HEAD", "OPTIONS"].map(String::from));
    headers.set("Access-Control-Allow-Methods", &methods.join(", "))?;
    let requested = req.headers().get("Access-Control-Request-Headers")?;
    headers.set("Access-Control-Allow-Headers", &preflight_allow_headers(requested.as_deref()))?;
    headers.set("Access-Control-Max-Age", "600")?;
    headers.set("Cache-Control", "no-store")?;
    Ok(ResponseBuilder::new().with_status(204).with_headers(headers).empty())
}

/// Whether this is a CORS preflight for a covered request: the method it
/// asks for, on its path.
pub(crate) fn is_preflight_for_covered(req: &Request, config: &Config) -> bool {
    req.method() == worker::Method::Options
        && req
            .headers()
            .get("Access-Control-Request-Method")
            .ok()
            .flatten()
            .is_some_and(|m| config.key_rule(&m, &req.path()) != KeyRule::Uncovered)
}

/// How much of an oversized body is read and dropped before the 413.
const DRAIN_BYTES: usize = 1 << 20;

/// Reads a request body, counting the bytes actually read (not
/// `Content-Length`): `Ok(Err(..))` once it passes `limit` (after draining
/// up to `max(4 × limit, 1 MiB)` of it), or when the stream breaks off (a
/// truncated body is the client's error, not a 500).
///
/// # Errors
/// None today; the outer `Result` is kept for runtime failures.
pub(crate) async fn read_body(req: &Request, limit: usize) -> Result<std::result::Result<Vec<u8>, Problem>> {
    // A declared length within the limit: the runtime frames the body to
    // it, so read it whole in one call instead of chunk by chunk across the
    // wasm boundary. The count is still checked on the bytes read.
    let declared = req.headers().get("Content-Length").ok().flatten().and_then(|n| n.trim().parse::<usize>().ok());
    if declared.is_some_and(|n| n <= limit) {
        let whole = match req.inner().array_buffer() {
            Ok(promise) => JsFuture::from(promise).await.map(|buffer| js_sys::Uint8Array::new(&buffer).to_vec()),
            Err(e) => Err(e),
        };
        return Ok(match whole {
            Ok(body) if body.len() <= limit => Ok(body),
            Ok(_) => Err(Problem::BodyTooLarge { limit }),
            Err(_) => Err(Problem::BodyIncomplete),
        });
    }
    let Some(stream) = req.inner().body() else { return Ok(Ok(Vec::new())) };
    let mut chunks = ByteStream::from(stream);
    let mut body = Vec::new();
    let mut read = 0usize;
    while let Some(chunk) = chunks.next().await {
        let Ok(chunk) = chunk else { return Ok(Err(Problem::BodyIncomplete)) };
        read = read.saturating_add(chunk.len());
        if read > limit {
            // Read on (and drop) a little more, so a client still sending
            // gets its 413 rather than a reset connection; give up on a
            // body far over the limit.
            if read > limit.saturating_mul(4).max(DRAIN_BYTES) {
                break;
            }
            continue;
        }
        body.extend_from_slice(&chunk);
    }
    if read > limit {
        return Ok(Err(Problem::BodyTooLarge { limit }));
    }
    Ok(Ok(body))
}

/// A stream read to its end by the runtime (`arrayBuffer()`): two crossings
/// of the wasm boundary, whatever the number of chunks.
async fn whole_stream(stream: &web_sys::ReadableStream) -> Result<Vec<u8>> {
    let whole = web_sys::Response::new_with_opt_readable_stream(Some(stream))?;
    let buffer = JsFuture::from(whole.array_buffer()?).await?;
    Ok(js_sys::Uint8Array::new(&buffer).to_vec())
}

/// A response's body in full (a fetched one is read by the runtime in one
/// call, see [`whole_stream`]).
///
/// # Errors
/// The body broke off.
pub(crate) async fn response_bytes(response: &Response) -> Result<Vec<u8>> {
    match response.body() {
        ResponseBody::Empty => Ok(Vec::new()),
        ResponseBody::Body(bytes) => Ok(bytes.clone()),
        ResponseBody::Stream(stream) => whole_stream(stream).await,
    }
}

/// The named headers that are present, as name/value pairs (names as
/// given, lower-case): one lookup each instead of walking every header.
pub(crate) fn headers_named(headers: &Headers, names: &[&str]) -> Vec<(String, String)> {
    names.iter().filter_map(|name| Some((name.to_string(), headers.get(name).ok().flatten()?))).collect()
}

/// All headers as lower-case name/value pairs.
pub(crate) fn header_pairs(headers: &Headers) -> Vec<(String, String)> {
    headers.entries().map(|(name, value)| (name.to_ascii_lowercase(), value)).collect()
}

/// A mutable copy of `headers` (those of a fetched response are immutable).
pub(crate) fn copy_headers(headers: &Headers) -> Result<Headers> {
    let copy = Headers::new();
    for (name, value) in headers.entries() {
        copy.append(&name, &value)?;
    }
    Ok(copy)
}
