//! What a user writes (docs/rust.md): their own
//! handler wrapped by the layer, and the coordinator class re-exported so
//! the Durable Object binding `IDEMPOTENCY_DO` finds it in this worker.
//! scripts/test-crate.sh builds it for wasm32 and checks both exports;
//! tests/edge/rust-worker.test.mjs runs it in workerd (`make test-crate`
//! builds it with worker-build, as `wrangler dev` would).

pub use oncekey::edge::IdempotencyCoordinator;

use std::cell::Cell;

use oncekey::edge::{Idempotency, OriginError, problem_response};
use worker::{Context, Env, Method, Request, Response, Result, event};

thread_local! {
    /// How many times `create_order` ran in this isolate (the test's count
    /// of executions; Miniflare runs one isolate).
    static RUNS: Cell<u64> = const { Cell::new(0) };
}

#[event(fetch)]
async fn fetch(req: Request, env: Env, ctx: Context) -> Result<Response> {
    // With TRACE_DECISIONS set, the Worker's own `tracing` subscriber takes
    // the layer's decision lines (feature `tracing`; docs/rust.md).
    if env.var("TRACE_DECISIONS").is_ok() {
        let _ = tracing::subscriber::set_global_default(ConsoleSubscriber);
    }
    if req.method() == Method::Get && req.path() == "/runs" {
        return Response::ok(RUNS.with(Cell::get).to_string());
    }
    let layer = match Idempotency::from_env(&env) {
        Ok(layer) => layer,
        Err(problem) => return problem_response(&problem),
    };
    layer.handle(req, &env, &ctx, |req| async move { create_order(req).await }).await
}

/// The user's own handler: says which attempt of the key it is running
/// (`Idempotency-Attempt`, set by the layer; `null` without a key). At
/// `/panic` it panics after reading the body, as a bug in a handler would;
/// at `/fails` it fails with the outcome unknown.
async fn create_order(mut req: Request) -> std::result::Result<Response, OriginError> {
    let body = req.text().await.map_err(|e| OriginError::NotSent(e.to_string()))?;
    RUNS.with(|runs| runs.set(runs.get() + 1));
    assert!(req.path() != "/panic", "a bug in the handler, after reading {} bytes", body.len());
    if req.path() == "/fails" {
        return Err(OriginError::NoAnswer("the order service timed out".into()));
    }
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

/// A Worker's own `tracing` subscriber, as small as one can be: each event's
/// level, target and message to the console.
struct ConsoleSubscriber;

impl tracing::Subscriber for ConsoleSubscriber {
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, event: &tracing::Event<'_>) {
        struct Message(String);
        impl tracing::field::Visit for Message {
            fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
                if field.name() == "message" {
                    self.0 = format!("{value:?}");
                }
            }
        }
        let mut message = Message(String::new());
        event.record(&mut message);
        let meta = event.metadata();
        worker::console_log!("traced {} {}: {}", meta.level(), meta.target(), message.0);
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}
