//! The demo worker (SPEC §7, `make dev`): oncekey's layer in front of the
//! embedded coffee shop ([`shop`]), whatever `ORIGIN_URL` says; the page in
//! `www/` is served by Workers static assets before this code runs. Its own
//! crate and config (`workers/demo/wrangler.toml`), so nothing of it is in
//! the production proxy.
//!
//! The queue consumer (loyalty points, [`loyalty`]) sits next to [`shop`]:
//! the order handler is the one place that knows an order was created.

mod classic;
mod loyalty;
mod orders;
mod shop;

pub use oncekey::edge::IdempotencyCoordinator;
pub use orders::Orders;

use oncekey::edge::{Idempotency, misconfigured_response};
use worker::{Context, Env, MessageBatch, Request, Response, Result, event};

#[event(queue)]
async fn queue(batch: MessageBatch<serde_json::Value>, env: Env, _ctx: Context) -> Result<()> {
    loyalty::consume(batch, env).await
}

#[event(fetch)]
async fn fetch(req: Request, env: Env, ctx: Context) -> Result<Response> {
    let layer = match Idempotency::for_isolate(&env) {
        Ok(layer) => layer,
        Err(problem) => return misconfigured_response(&problem),
    };
    let origin_env = env.clone();
    layer.handle(req, &env, &ctx, move |req| shop::serve(req, origin_env)).await
}
