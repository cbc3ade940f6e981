//! Conversions between `worker` types and the core's values: the request's
//! head, its body, the origin's answer, and the core's replies as runtime
//! responses.

use futures_util::StreamExt;
use futures_util::stream::{self, LocalBoxStream};
use worker::wasm_bindgen_futures::JsFuture;
use worker::{ByteStream, Headers, Request, Response, ResponseBody, ResponseBuilder, Result, js_sys, web_sys};

use crate::core::{Action, AnswerRead, Config, DecisionLog, Exchange, Problem, Reply, ReplyBody, RequestHead};

/// Milliseconds since the Unix epoch (the isolate's clock, which in
/// Workers advances with I/O).
pub(crate) fn now_ms() -> u64 {
    worker::Date::now().as_millis()
}

/// The request's head as the core's exchange reads it; `metrics` says
/// whether an Analytics Engine dataset is bound.
///
/// # Errors
/// The runtime could not hand over a header.
pub(crate) fn request_head(req: &Request, config: &Config, metrics: bool) -> Result<RequestHead> {
    let url = req.inner().url();
    let (host, path, query) = RequestHead::url_parts(&url);
    let headers = req.headers();
    let get = |name: &str| headers.get(name).ok().flatten();
    Ok(RequestHead {
        method: req.method().to_string(),
        host: host.to_owned(),
        path: path.to_owned(),
        query: query.map(str::to_owned),
        key: get("Idempotency-Key").map(String::into_bytes),
        origin: get("Origin"),
        own_origin: RequestHead::url_origin(&url),
        preflight_method: get("Access-Control-Request-Method"),
        preflight_headers: get("Access-Control-Request-Headers"),
        has_attempt_header: headers.has("Idempotency-Attempt")?,
        // Only the headers the fingerprint and the record name read, not
        // all of them across the boundary.
        headers: RequestHead::headers_read(config)
            .into_iter()
            .filter_map(|name| Some((name.to_owned(), get(name)?)))
            .collect(),
        reservation: RequestHead::reservation_number(js_sys::Math::random()),
        metrics,
    })
}

/// The runtime's response for one of the exchange's replies; `kept` is the
/// origin response whose body a [`ReplyBody::Origin`] reply streams.
///
/// # Errors
/// The runtime refused a header.
pub(crate) fn reply_response(reply: Reply, kept: Option<Response>) -> Result<Response> {
    let headers = Headers::new();
    for (name, value) in &reply.headers {
        headers.append(name, value)?;
    }
    Ok(match (reply.body, kept) {
        (ReplyBody::Origin, Some(origin)) => origin.with_headers(headers).with_status(reply.status),
        (ReplyBody::Origin, None) => ResponseBuilder::new().with_status(reply.status).with_headers(headers).empty(),
        (ReplyBody::Bytes(body), _) => {
            with_body(ResponseBuilder::new().with_status(reply.status).with_headers(headers), body)
        }
    })
}

/// A problem+json answer with `Cache-Control: no-store` (and `Retry-After`
/// for the problems that have one).
pub fn problem_response(problem: &Problem) -> Result<Response> {
    reply_response(Reply::problem(problem), None)
}

/// The answer while the worker's configuration is bad: 500 `misconfigured`
/// naming the variable, with one log line.
///
/// # Errors
/// Only if the runtime fails to build the response.
pub fn misconfigured_response(problem: &Problem) -> Result<Response> {
    worker::console_error!("{}", DecisionLog::misconfigured(problem.detail()));
    problem_response(problem)
}

/// A response with `body`, or none at all when it is empty (statuses such as
/// 204 must not carry even an empty body).
pub(crate) fn with_body(builder: ResponseBuilder, body: Vec<u8>) -> Response {
    if body.is_empty() { builder.empty() } else { builder.fixed(body) }
}

/// Reads the request body into `exchange` as its [`Action::ReadBody`]
/// asks: in one call when `whole` (the runtime frames a declared length),
/// else chunk by chunk until the exchange says to stop; then reports the
/// end. The rule is the exchange's ([`Exchange::body_chunk`]); this only
/// moves bytes.
pub(crate) async fn read_body(req: &Request, whole: bool, exchange: &mut Exchange) -> Action {
    let broken = if whole {
        let read = match req.inner().array_buffer() {
            Ok(promise) => JsFuture::from(promise).await.map(|buffer| js_sys::Uint8Array::new(&buffer).to_vec()),
            Err(e) => Err(e),
        };
        read.map(|body| exchange.body_chunk(&body)).is_err()
    } else if let Some(stream) = req.inner().body() {
        let mut chunks = ByteStream::from(stream);
        let mut broken = false;
        while let Some(chunk) = chunks.next().await {
            let Ok(chunk) = chunk else {
                broken = true;
                break;
            };
            if !exchange.body_chunk(&chunk) {
                break;
            }
        }
        broken
    } else {
        false
    };
    exchange.body_ended(broken, now_ms())
}

/// Reads the origin's answer as `answer` takes it: a body whose declared
/// length fits is read whole, in one call; any other part by part, until it
/// ends or `answer` says it streams — then the response comes back, its
/// body streaming the bytes read so far and then the rest as the caller
/// reads it (`Ok(None)`: `answer` holds it all).
///
/// # Errors
/// The body broke off: there is no complete answer.
pub(crate) async fn read_answer(
    mut response: Response,
    answer: &mut AnswerRead,
) -> std::result::Result<Option<Response>, String> {
    let failed = |e: worker::Error| format!("origin body failed: {e}");
    let status = response.status_code();
    let whole = answer.head(status, header_pairs(response.headers()));
    let mut chunks: LocalBoxStream<'static, Result<Vec<u8>>> =
        if whole || !matches!(response.body(), ResponseBody::Stream(_)) {
            // Already in memory, or framed by the runtime to a length that fits.
            let body = response_bytes(&response).await.map_err(failed)?;
            stream::iter([Ok(body)]).boxed_local()
        } else {
            response.stream().map_err(failed)?.boxed_local()
        };
    while let Some(chunk) = chunks.next().await {
        let chunk = chunk.map_err(failed)?;
        if !answer.chunk(&chunk) {
            let read = stream::iter([Ok(answer.streams()), Ok(chunk)]);
            let headers = copy_headers(response.headers()).map_err(failed)?;
            let streamed =
                ResponseBuilder::new().with_status(status).with_headers(headers).from_stream(read.chain(chunks));
            return streamed.map(Some).map_err(failed);
        }
    }
    Ok(None)
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
