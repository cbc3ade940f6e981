//! An axum Worker with oncekey as a tower layer on its router (docs/rust.md,
//! "With axum"): workers-rs's `http` feature on, as every axum Worker has
//! it. scripts/test-crate.sh builds it with worker-build, and
//! tests/crate/axum-worker.test.mjs runs it in workerd.

pub use oncekey::edge::IdempotencyCoordinator;

use std::cell::Cell;

use axum::Router;
use axum::body::Body;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::{get, post};
use oncekey::edge::{Idempotency, IdempotencyLayer, problem_response};
use tower_service::Service;
use worker::{Context, Env, HttpRequest, HttpResponse, Result, event};

thread_local! {
    /// How many times `create_order` ran in this isolate.
    static RUNS: Cell<u64> = const { Cell::new(0) };
}

/// The user's own handler: which attempt of the key it runs as.
async fn create_order(headers: HeaderMap, body: String) -> (StatusCode, String) {
    RUNS.with(|runs| runs.set(runs.get() + 1));
    let attempt = headers.get("idempotency-attempt").and_then(|v| v.to_str().ok()).unwrap_or("null");
    (StatusCode::CREATED, format!(r#"{{"created":true,"attempt":{attempt},"bytes":{}}}"#, body.len()))
}

#[event(fetch)]
async fn fetch(req: HttpRequest, env: Env, ctx: Context) -> Result<axum::http::Response<Body>> {
    let layer = match Idempotency::from_env(&env) {
        Ok(layer) => layer,
        Err(problem) => return Ok(HttpResponse::try_from(problem_response(&problem)?)?.map(Body::new)),
    };
    let mut router = Router::new()
        .route("/orders", post(create_order))
        .layer(IdempotencyLayer::new(layer, env, ctx))
        // Outside the layer: not a request it sees.
        .route("/runs", get(|| async { RUNS.with(Cell::get).to_string() }));
    let Ok(answer) = router.call(req).await;
    Ok(answer)
}
