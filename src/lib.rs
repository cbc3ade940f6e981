//! # oncekey — exactly-once mutations for the web
//!
//! A request carrying an `Idempotency-Key` runs at most once; retries get
//! the stored answer; a duplicate that arrives while the first is still
//! running gets a 409 and waits. Three parts share this crate:
//!
//! - [`core`]: the sans-IO state machine (always built);
//! - `edge`: the Cloudflare Worker adapter (feature `edge`);
//! - `browser`: the wasm-bindgen client (feature `browser`);
//! - `js`: the JavaScript edge host's bindings (feature `js`).
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
