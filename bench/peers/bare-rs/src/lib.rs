//! tests/consumer's handler served bare: what a Rust Worker weighs before
//! oncekey is added (bench/rust-size.sh).

use std::cell::Cell;

use worker::{Context, Env, Method, Request, Response, Result, event};

thread_local! {
    static RUNS: Cell<u64> = const { Cell::new(0) };
}

#[event(fetch)]
async fn fetch(req: Request, _env: Env, _ctx: Context) -> Result<Response> {
    if req.method() == Method::Get && req.path() == "/runs" {
        return Response::ok(RUNS.with(Cell::get).to_string());
    }
    create_order(req).await
}

/// tests/consumer's `create_order`, its errors as the runtime's.
async fn create_order(mut req: Request) -> Result<Response> {
    let body = req.text().await?;
    RUNS.with(|runs| runs.set(runs.get() + 1));
    assert!(req.path() != "/panic", "a bug in the handler, after reading {} bytes", body.len());
    let attempt = req.headers().get("Idempotency-Attempt")?.and_then(|value| value.parse::<u64>().ok());
    let attempt = attempt.map_or_else(|| "null".to_owned(), |n| n.to_string());
    let body = format!(r#"{{"created":true,"attempt":{attempt}}}"#);
    let res = Response::builder().with_status(201).with_header("content-type", "application/json")?;
    Ok(res.fixed(body.into_bytes()))
}
