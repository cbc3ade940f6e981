//! The production proxy (SPEC §10): oncekey's layer in front of one origin —
//! another Worker bound as `ORIGIN`, `ORIGIN_URL`, or each request's own URL
//! (`ORIGIN_URL=request`) — and the coordinator class it needs. Nothing else:
//! no page, no demo origin, no queue. Deployed by the root `wrangler.toml`.

// The Durable Object class bound as IDEMPOTENCY_DO is exported by the
// library's wasm-bindgen glue; this names it so the dependency is explicit.
pub use oncekey::edge::IdempotencyCoordinator;

use oncekey::edge::{Idempotency, ProxyOrigin, misconfigured_response};
use worker::{Context, Env, Request, Response, Result, event};

#[event(fetch)]
async fn fetch(req: Request, env: Env, ctx: Context) -> Result<Response> {
    let configured = Idempotency::for_isolate(&env)
        .and_then(|layer| ProxyOrigin::from_env(&env, layer.config()).map(|origin| (layer, origin)));
    match configured {
        Ok((layer, origin)) => layer.proxying_to(&origin).handle(req, &env, &ctx, move |req| origin.forward(req)).await,
        Err(problem) => misconfigured_response(&problem),
    }
}
