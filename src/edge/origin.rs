//! Calling the origin: the proxy's origin (a Worker, a URL or the
//! request's own URL), the time limit, and how a failed call maps to the
//! core's [`Outcome`](crate::core::Outcome).

use std::future::Future;
use worker::wasm_bindgen::JsCast;
use worker::wasm_bindgen_futures::JsFuture;
use worker::{Env, Fetch, Fetcher, Request, Response, web_sys};

use crate::core::{Config, HostText, ORIGIN_BINDING, Origin, Problem};

use super::deadline::within;

/// Why the origin gave no answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OriginError {
    /// The request was never sent (for example the connection was refused):
    /// the origin cannot have acted, so the key is released.
    #[error("not sent: {0}")]
    NotSent(String),
    /// The request may have reached the origin but no answer came back
    /// (reset, timeout): the outcome is unknown, the lease is kept.
    #[error("no answer: {0}")]
    NoAnswer(String),
}

/// Runs an origin call (and whatever reads its answer) with a time limit;
/// past it the outcome is unknown.
pub async fn with_timeout<T, F>(call: F, timeout_ms: u64) -> Result<T, OriginError>
where
    F: Future<Output = Result<T, OriginError>>,
{
    within(timeout_ms, call)
        .await
        .unwrap_or_else(|| Err(OriginError::NoAnswer(HostText::NoAnswerWithin { ms: timeout_ms }.to_string())))
}

/// The proxy's origin: the core's choice ([`Origin::choose`]) with the
/// binding it names. What the production proxy forwards to; a worker that
/// wraps its own handler does not need it.
#[derive(Clone, Debug)]
pub struct ProxyOrigin {
    origin: Origin,
    service: Option<Fetcher>,
}

impl ProxyOrigin {
    /// The origin configured for this worker: the service binding `ORIGIN`
    /// when bound, else `ORIGIN_URL` (a URL, or `request`).
    ///
    /// # Errors
    /// [`Problem::Misconfigured`] naming `ORIGIN_URL` when neither is set.
    pub fn from_env(env: &Env, config: &Config) -> Result<Self, Problem> {
        let service = env.service(ORIGIN_BINDING).ok();
        let origin = Origin::choose(service.is_some(), config.origin_url.as_ref())
            .map_err(|e| Problem::Misconfigured(e.to_string()))?;
        Ok(Self { origin, service })
    }

    /// Whether this origin's request carries the client's `cf`
    /// ([`Origin::reads_client_cf`]).
    pub(super) fn reads_cf(&self) -> bool {
        self.origin.reads_client_cf()
    }

    /// Which kind of origin this is.
    pub fn origin(&self) -> &Origin {
        &self.origin
    }

    /// Forwards `req` with its method, headers and body: to the bound
    /// Worker, to `ORIGIN_URL` with the request's path and query, or to the
    /// request's own URL. Redirects are handed back to the caller, not
    /// followed.
    ///
    /// A fetch that fails is reported as [`OriginError::NoAnswer`]: the
    /// runtime does not say whether the request left, so the safe reading
    /// is "maybe".
    ///
    /// # Errors
    /// [`OriginError`] when no response came back.
    pub async fn forward(self, req: Request) -> Result<Response, OriginError> {
        let not_sent = |e: worker::Error| OriginError::NotSent(e.to_string());
        let url = req.inner().url();
        let target = self.origin.target(&url).unwrap_or(url);
        // The method as sent (`worker::Method` reads PROPFIND, QUERY or PURGE
        // as GET), so built on the runtime's own request type.
        let init = web_sys::RequestInit::new();
        init.set_method(&req.inner().method());
        init.set_headers(&req.inner().headers());
        if let Some(body) = req.inner().body() {
            init.set_body(&body);
        }
        init.set_redirect(web_sys::RequestRedirect::Manual);
        if self.reads_cf() {
            carry_cf(req.inner(), &init);
        }
        let outgoing = web_sys::Request::new_with_str_and_init(&target, &init)
            .map(Request::from)
            .map_err(|e| not_sent(e.into()))?;
        let answer = match &self.service {
            Some(worker) => call_service(worker, &outgoing).await,
            None => Fetch::Request(outgoing).send().await,
        };
        answer.map_err(|e| OriginError::NoAnswer(e.to_string()))
    }
}

/// `request` sent to the Worker behind `service`, its answer as the
/// runtime gives it. Not `Fetcher::fetch_request`: with workers-rs's `http`
/// feature on (every axum Worker, and Cargo unifies features) that returns
/// an `http::Response`; this answers the same type under any feature set.
async fn call_service(service: &Fetcher, request: &Request) -> worker::Result<Response> {
    let service: worker::worker_sys::Fetcher = service.clone().into_rpc();
    let answer = JsFuture::from(service.fetch(request.inner())?).await?;
    Ok(Response::from(answer.dyn_into::<web_sys::Response>()?))
}

/// Sets `init`'s `cf` to `from`'s, when it has one: the request made from
/// `init` carries the client's `cf` on to a handler or Worker that may read
/// it (the runtime copies it, as JSON, once).
pub(super) fn carry_cf(from: &web_sys::Request, init: &web_sys::RequestInit) {
    let key = worker::wasm_bindgen::JsValue::from_str("cf");
    if let Ok(cf) = worker::js_sys::Reflect::get(from, &key)
        && cf.is_object()
    {
        // Setting a property on a plain object cannot fail.
        let _ = worker::js_sys::Reflect::set(init, &key, &cf);
    }
}
