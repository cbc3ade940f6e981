//! Calling the origin: the proxy to `ORIGIN_URL`, the time limit, and how a
//! failed call maps to the core's [`Outcome`](crate::core::Outcome).

use std::future::Future;
use worker::{Fetch, Request, RequestInit, Response};

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
        .unwrap_or_else(|| Err(OriginError::NoAnswer(format!("no answer within {timeout_ms} ms"))))
}

/// Forwards `req` to `origin` (scheme and host, no trailing slash), keeping
/// its method, path, query, headers and body.
///
/// A fetch that fails is reported as [`OriginError::NoAnswer`]: the runtime
/// does not say whether the request left, so the safe reading is "maybe".
///
/// # Errors
/// [`OriginError`] when no response came back.
pub async fn proxy(origin: String, req: Request) -> Result<Response, OriginError> {
    let url = req.url().map_err(|e| OriginError::NotSent(e.to_string()))?;
    let target = match url.query() {
        Some(query) => format!("{origin}{}?{query}", url.path()),
        None => format!("{origin}{}", url.path()),
    };
    let mut init = RequestInit::new();
    init.with_method(req.method())
        .with_headers(req.headers().clone())
        .with_body(req.inner().body().map(Into::into))
        .with_redirect(worker::RequestRedirect::Manual);
    let outgoing = Request::new_with_init(&target, &init).map_err(|e| OriginError::NotSent(e.to_string()))?;
    Fetch::Request(outgoing).send().await.map_err(|e| OriginError::NoAnswer(e.to_string()))
}
