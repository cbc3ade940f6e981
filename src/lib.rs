//! # oncekey — exactly-once mutations for the web
//!
//! A request carrying an `Idempotency-Key` runs at most once; retries get
//! the stored answer; a duplicate that arrives while the first is still
//! running waits for it (up to `IDEMPOTENCY_IN_FLIGHT_WAIT_MS`) and gets its
//! answer, or a `409` once the wait is over.
//!
//! In a Rust Worker (workers-rs, feature `edge`), wrap your handler and
//! export the coordinator class the `IDEMPOTENCY_DO` binding names
//! (docs/rust.md has the whole `wrangler.toml`):
//!
#![cfg_attr(feature = "edge", doc = "```no_run")]
#![cfg_attr(not(feature = "edge"), doc = "```ignore")]
//! pub use oncekey::edge::IdempotencyCoordinator;
//! use oncekey::edge::{Idempotency, OriginError, problem_response};
//! use worker::*;
//!
//! #[event(fetch)]
//! async fn fetch(req: Request, env: Env, ctx: Context) -> Result<Response> {
//!     let layer = match Idempotency::from_env(&env) {
//!         Ok(layer) => layer,
//!         Err(problem) => return problem_response(&problem),
//!     };
//!     layer.handle(req, &env, &ctx, |req| async move {
//!         // Ok is stored and replayed; Err(NotSent) frees the key.
//!         Response::ok("order created").map_err(|e| OriginError::NotSent(e.to_string()))
//!     })
//!     .await
//! }
//! # fn main() {}
//! ```
//!
//! Four parts share this crate:
//!
//! - [`core`]: the sans-IO state machine every host runs (always built);
//! - `edge`: the Cloudflare Worker adapter for Rust Workers (feature `edge`);
//! - `browser`: the wasm-bindgen client (feature `browser`);
//! - `js`: the JavaScript edge host's bindings (feature `js`).
//!
//! The core decides without any I/O:
//!
//! ```
//! use oncekey::core::{begin, Decision, Fingerprint, RecordPolicy};
//! let fp = Fingerprint::of("POST", "/api/orders", Some("application/json"), br#"{"item":"tea"}"#);
//! let first = begin(None, fp, 0, &RecordPolicy::default());
//! assert_eq!(first.answer, Decision::Execute { attempt: 1, reclaimed: false });
//! ```

#![deny(missing_docs)]

#[cfg(all(feature = "model", target_arch = "wasm32"))]
compile_error!("the feature `model` holds the model checker's mutants: never in a build that ships");

pub mod core;
#[cfg(feature = "edge")]
pub mod edge;

#[cfg(all(feature = "browser", target_arch = "wasm32"))]
pub mod browser;
#[cfg(all(feature = "js", target_arch = "wasm32"))]
pub mod js;
#[cfg(any(feature = "edge", all(feature = "js", target_arch = "wasm32")))]
mod shared;
