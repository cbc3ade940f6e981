//! The layer as a tower [`Layer`](tower_layer::Layer) (feature `tower`): an
//! axum `Router` on workers-rs — or any tower service over `http` types —
//! behind oncekey with `Router::layer(IdempotencyLayer::new(..))`.
//!
//! The service it wraps is the request's handler: called at most once per
//! key, its answer stored and replayed. Its request body is read whole
//! first (the fingerprint needs it), and its answer's body is read whole
//! before it is handed on, so a streamed answer arrives in one piece.

use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context as TaskContext, Poll};

use bytes::Bytes;
use worker::send::{SendFuture, SendWrapper};
use worker::{Context, Env, Headers, Method, Request, RequestInit, Response, ResponseBuilder};

use super::{Idempotency, OriginError, problem_response};
use crate::core::Problem;

/// What every request of one Worker invocation shares: the layer, the
/// Worker's `env` and its `ctx` (whose `waitUntil` records an answer after
/// the caller has it).
struct Shared {
    layer: Idempotency,
    env: Env,
    ctx: Context,
}

/// A tower layer that puts oncekey in front of the service it wraps.
///
/// ```no_run
/// pub use oncekey::edge::IdempotencyCoordinator;
/// use axum::{Router, body::Body, http::StatusCode, routing::post};
/// use oncekey::edge::{Idempotency, IdempotencyLayer, problem_response};
/// use tower_service::Service;
/// use worker::*;
///
/// #[event(fetch)]
/// async fn fetch(req: HttpRequest, env: Env, ctx: Context) -> Result<axum::http::Response<Body>> {
///     let layer = match Idempotency::from_env(&env) {
///         Ok(layer) => layer,
///         Err(problem) => return Ok(HttpResponse::try_from(problem_response(&problem)?)?.map(Body::new)),
///     };
///     let mut router = Router::new()
///         .route("/orders", post(|| async { (StatusCode::CREATED, "created") }))
///         .layer(IdempotencyLayer::new(layer, env, ctx));
///     let Ok(answer) = router.call(req).await;
///     Ok(answer)
/// }
/// # fn main() {}
/// ```
#[derive(Clone)]
pub struct IdempotencyLayer {
    shared: SendWrapper<Rc<Shared>>,
}

impl IdempotencyLayer {
    /// The layer for one invocation of the Worker: `layer` (from
    /// [`Idempotency::from_env`] or [`Idempotency::for_isolate`]), and the
    /// invocation's `env` and `ctx`.
    pub fn new(layer: Idempotency, env: Env, ctx: Context) -> Self {
        Self { shared: SendWrapper::new(Rc::new(Shared { layer, env, ctx })) }
    }
}

impl<S> tower_layer::Layer<S> for IdempotencyLayer {
    type Service = IdempotencyService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        IdempotencyService { shared: self.shared.clone(), inner }
    }
}

/// The service [`IdempotencyLayer`] makes of the one it wraps.
#[derive(Clone)]
pub struct IdempotencyService<S> {
    shared: SendWrapper<Rc<Shared>>,
    inner: S,
}

/// The answer of a service call: never an error of its own, since every
/// failure of the layer is answered as problem+json.
type Answer<B, E> = SendFuture<Pin<Box<dyn Future<Output = Result<http::Response<B>, E>>>>>;

impl<S, ReqBody, ResBody> tower_service::Service<http::Request<ReqBody>> for IdempotencyService<S>
where
    S: tower_service::Service<http::Request<ReqBody>, Response = http::Response<ResBody>> + Clone + 'static,
    S::Future: 'static,
    S::Error: 'static,
    ReqBody: http_body::Body<Data = Bytes> + From<Bytes> + 'static,
    ResBody: http_body::Body<Data = Bytes> + From<Bytes> + 'static,
{
    type Response = http::Response<ResBody>;
    type Error = S::Error;
    type Future = Answer<ResBody, S::Error>;

    fn poll_ready(&mut self, cx: &mut TaskContext<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: http::Request<ReqBody>) -> Self::Future {
        let shared = Rc::clone(&self.shared);
        // The service made ready is the one that runs; a clone waits its turn.
        let ready = self.inner.clone();
        let inner = std::mem::replace(&mut self.inner, ready);
        SendFuture::new(Box::pin(async move { Ok(answer(&shared, inner, req).await) }))
    }
}

/// `req` through the layer, `inner` its handler: the layer's answer, read
/// whole.
async fn answer<S, ReqBody, ResBody>(shared: &Shared, inner: S, req: http::Request<ReqBody>) -> http::Response<ResBody>
where
    S: tower_service::Service<http::Request<ReqBody>, Response = http::Response<ResBody>> + 'static,
    S::Future: 'static,
    ReqBody: http_body::Body<Data = Bytes> + From<Bytes> + 'static,
    ResBody: http_body::Body<Data = Bytes> + From<Bytes> + 'static,
{
    let handled = match runtime_request(req).await {
        Ok(req) => shared.layer.handle(req, &shared.env, &shared.ctx, move |req| handler(inner, req)).await,
        Err(e) => Err(e),
    };
    let answered = match handled {
        Ok(response) => read_whole(response).await,
        Err(e) => Err(e),
    };
    match answered {
        Ok(answer) => answer,
        // The runtime failed to carry the request or its answer (a body
        // that broke): the handler's outcome is unknown to the caller, as a
        // problem, like every failure the layer answers.
        Err(e) => {
            worker::console_warn!("oncekey: the answer could not be carried: {e}");
            let whole = match problem_response(&Problem::HandlerFailed) {
                Ok(response) => read_whole(response).await.ok(),
                Err(_) => None,
            };
            whole.unwrap_or_else(|| {
                let mut fallback = http::Response::new(ResBody::from(Bytes::new()));
                *fallback.status_mut() = http::StatusCode::INTERNAL_SERVER_ERROR;
                fallback
            })
        }
    }
}

/// The wrapped service as the layer's handler: called with the request the
/// layer hands it, its body read whole, and its answer read whole too.
async fn handler<S, ReqBody, ResBody>(mut inner: S, mut req: Request) -> Result<Response, OriginError>
where
    S: tower_service::Service<http::Request<ReqBody>, Response = http::Response<ResBody>>,
    ReqBody: From<Bytes>,
    ResBody: http_body::Body<Data = Bytes> + 'static,
{
    let not_sent = |e: String| OriginError::NotSent(e);
    let body = req.bytes().await.map_err(|e| not_sent(e.to_string()))?;
    // Built from the runtime request's parts: converting it whole would
    // hand the service the runtime's (already read) body stream.
    let url = req.url().map_err(|e| not_sent(e.to_string()))?;
    let mut builder = http::Request::builder().method(req.method().as_ref()).uri(url.as_str());
    for (name, value) in req.headers() {
        builder = builder.header(name, value);
    }
    let req = builder.body(ReqBody::from(Bytes::from(body))).map_err(|e| not_sent(e.to_string()))?;
    let ready = std::future::poll_fn(|cx| inner.poll_ready(cx)).await;
    let answer = match ready {
        Ok(()) => inner.call(req).await,
        Err(e) => Err(e),
    };
    // Which error it was is the service's to log: its outcome is unknown.
    let answer = answer.map_err(|_| OriginError::NoAnswer("the service failed".to_owned()))?;
    let (parts, body) = answer.into_parts();
    let body = collect(body).await.map_err(OriginError::NoAnswer)?;
    let headers = Headers::new();
    for (name, value) in &parts.headers {
        let value = value.to_str().map_err(|e| OriginError::NoAnswer(e.to_string()))?;
        headers.append(name.as_str(), value).map_err(|e| OriginError::NoAnswer(e.to_string()))?;
    }
    let builder = ResponseBuilder::new().with_status(parts.status.as_u16()).with_headers(headers);
    Ok(if body.is_empty() { builder.empty() } else { builder.fixed(body) })
}

/// `req` as the runtime's request, its body read here first: handing the
/// runtime a body it must pull from Rust, while Rust waits on the runtime
/// to read it, hangs the request.
async fn runtime_request<B: http_body::Body<Data = Bytes>>(req: http::Request<B>) -> worker::Result<Request> {
    let (parts, body) = req.into_parts();
    let body = collect(body).await.map_err(worker::Error::RustError)?;
    let headers = Headers::new();
    for (name, value) in &parts.headers {
        headers.append(name.as_str(), value.to_str().map_err(|e| worker::Error::RustError(e.to_string()))?)?;
    }
    let mut init = RequestInit::new();
    init.with_method(Method::from(parts.method.as_str().to_owned())).with_headers(headers);
    if !body.is_empty() {
        init.with_body(Some(worker::js_sys::Uint8Array::from(body.as_slice()).into()));
    }
    Request::new_with_init(&parts.uri.to_string(), &init)
}

/// Every byte of `body`.
async fn collect<B: http_body::Body<Data = Bytes>>(body: B) -> Result<Vec<u8>, String> {
    let mut body = std::pin::pin!(body);
    let mut whole = Vec::new();
    while let Some(frame) = std::future::poll_fn(|cx| body.as_mut().poll_frame(cx)).await {
        let frame = frame.map_err(|_| "the body broke off".to_owned())?;
        if let Ok(data) = frame.into_data() {
            whole.extend_from_slice(&data);
        }
    }
    Ok(whole)
}

/// `response` as an `http` response whose body is read whole.
async fn read_whole<B: From<Bytes>>(mut response: Response) -> worker::Result<http::Response<B>> {
    let mut builder = http::Response::builder().status(response.status_code());
    for (name, value) in response.headers() {
        builder = builder.header(name, value);
    }
    let body = response.bytes().await?;
    builder.body(B::from(Bytes::from(body))).map_err(|e| worker::Error::RustError(e.to_string()))
}
