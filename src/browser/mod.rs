//! The browser client's bindings (feature `browser`, wasm32 only).
//!
//! Thin wasm-bindgen wrappers over the core: they turn JavaScript values
//! into core inputs and back, and decide nothing themselves. The npm
//! package in `pkg/` is JavaScript glue around these exports: it reads the
//! clock and performs `fetch`; the key layout, retry policy, backoff,
//! `Retry-After` parsing, which answers are replays or in flight, and the
//! payload fingerprint all come from here.
//!
//! Export names are camelCase and prefixed as the glue expects; they are
//! not the package's public API (SPEC §8 is, in `pkg/src/`). The package's
//! wasm is built by `pkg/wasm`, which adds the allocator.

mod answer;
mod fingerprint;
mod key;
mod retry;

pub use answer::{Answer, answer_kind, answer_reads_body, answer_replayed};
pub use fingerprint::payload_fingerprint;
pub use key::{KeySource, key_refusal};
pub use retry::{RetryPlan, retry_after_ms};
