//! The deployable worker (feature `demo`): the layer in front of
//! `ORIGIN_URL`, or in front of the embedded demo origin of SPEC §7 when it
//! is unset. The page in `www/` is served by Workers static assets before
//! this code runs.
//!
//! The queue consumer (loyalty points, [`loyalty`]) sits next to [`shop`]:
//! the order handler is the one place that knows an order was created.

mod loyalty;
mod orders;
mod shop;

pub use orders::Orders;

use worker::{Context, Env, MessageBatch, Request, Response, Result, event};

#[event(queue)]
async fn queue(batch: MessageBatch<serde_json::Value>, env: Env, _ctx: Context) -> Result<()> {
    loyalty::consume(batch, env).await
}

use super::{Idempotency, problem_response, proxy};

thread_local! {
    /// The layer as configured by the first request of this isolate: the
    /// variables are fixed for an isolate's life (a new deployment starts
    /// new isolates), so they are read and checked once, not per request.
    static LAYER: std::cell::OnceCell<Idempotency> = const { std::cell::OnceCell::new() };
}

#[event(fetch)]
async fn fetch(req: Request, env: Env, ctx: Context) -> Result<Response> {
    let configured = LAYER.with(|layer| layer.get().cloned()).map_or_else(|| Idempotency::from_env(&env), Ok);
    let layer = match configured {
        Ok(layer) => LAYER.with(|cached| cached.get_or_init(|| layer).clone()),
        Err(problem) => {
            let line = serde_json::json!({ "oncekey": "misconfigured", "status": 500, "error": problem.detail() });
            worker::console_error!("{line}");
            return problem_response(&problem);
        }
    };
    match layer.config().origin_url.clone() {
        Some(origin) => layer.handle(req, &env, &ctx, move |req| proxy(origin, req)).await,
        None => {
            let origin_env = env.clone();
            layer.handle(req, &env, &ctx, move |req| shop::serve(req, origin_env)).await
        }
    }
}
