//! An axum Worker with oncekey in front of its router (docs/rust.md, "With
//! axum"): workers-rs's `http` feature on, as every axum Worker has it.
//! scripts/test-crate.sh builds it for wasm32.

pub use oncekey::edge::IdempotencyCoordinator;

use axum::Router;
use axum::http::StatusCode;
use axum::routing::post;
use oncekey::edge::{Idempotency, OriginError, problem_response};
use tower_service::Service;
use worker::{Context, Env, HttpRequest, Request, Response, Result, event};

fn router() -> Router {
    Router::new().route("/orders", post(|| async { (StatusCode::CREATED, r#"{"created":true}"#) }))
}

#[event(fetch)]
async fn fetch(req: HttpRequest, env: Env, ctx: Context) -> Result<Response> {
    let layer = match Idempotency::from_env(&env) {
        Ok(layer) => layer,
        Err(problem) => return problem_response(&problem),
    };
    let req = Request::try_from(req)?;
    layer
        .handle(req, &env, &ctx, |req| async move {
            let req = HttpRequest::try_from(req).map_err(|e| OriginError::NotSent(e.to_string()))?;
            let Ok(answer) = router().call(req).await;
            Response::try_from(answer).map_err(|e| OriginError::NoAnswer(e.to_string()))
        })
        .await
}
