//! What a user writes (docs/rust.md): their own
//! handler wrapped by the layer, and the coordinator class re-exported so
//! the Durable Object binding `IDEMPOTENCY_DO` finds it in this worker.
//! scripts/test-crate.sh builds it for wasm32 and checks both exports.

pub use oncekey::edge::IdempotencyCoordinator;

use oncekey::edge::{Idempotency, OriginError, problem_response};
use worker::{Context, Env, Request, Response, Result, event};

#[event(fetch)]
async fn fetch(req: Request, env: Env, ctx: Context) -> Result<Response> {
    let layer = match Idempotency::from_env(&env) {
        Ok(layer) => layer,
        Err(problem) => return problem_response(&problem),
    };
    layer.handle(req, &env, &ctx, |req| async move { create_order(req).await }).await
}

/// The user's own handler: says which attempt of the key it is running
/// (`Idempotency-Attempt`, set by the layer; `null` without a key).
async fn create_order(req: Request) -> std::result::Result<Response, OriginError> {
    let attempt = req
        .headers()
        .get("Idempotency-Attempt")
        .map_err(|e| OriginError::NotSent(e.to_string()))?
        .and_then(|value| value.parse::<u64>().ok());
    let attempt = attempt.map_or_else(|| "null".to_owned(), |n| n.to_string());
    let body = format!(r#"{{"created":true,"attempt":{attempt}}}"#);
    let res = Response::builder()
        .with_status(201)
        .with_header("content-type", "application/json")
        .map_err(|e| OriginError::NotSent(e.to_string()))?;
    Ok(res.fixed(body.into_bytes()))
}
