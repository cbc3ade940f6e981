//! The Cloudflare Worker adapter (feature `edge`): the core's state machine
//! in front of an origin, decided in a Durable Object, replayed from KV.
//!
//! - [`Idempotency`] wraps any async handler (the library API);
//! - [`IdempotencyCoordinator`] is the Durable Object class to bind as
//!   `IDEMPOTENCY_DO` (export it from your worker: it is exported by this
//!   crate's wasm module as soon as the feature is on);
//! - [`ProxyOrigin`] forwards to the proxy's origin: another Worker bound
//!   as `ORIGIN`, `ORIGIN_URL`, or the request's own URL;
//! - [`Consumer`] wraps a Cloudflare Queues handler on the same stores
//!   (its counters live in the coordinator's namespace too).
//!
//! The entry points live in the crates that deploy: `workers/proxy` (the
//! production proxy) and `workers/demo`.
//!
//! The adapter holds no decisions of its own: it reads the request into the
//! core's [`Exchange`](crate::core::Exchange), performs each action it
//! returns (a store call, the origin, an answer, a log line, a KV copy) and
//! reports the result back.

mod coordinator;
mod deadline;
mod decision_line;
mod disconnect;
mod durable_store;
mod form_keys;
mod host;
mod http;
mod kv_replay;
mod layer;
mod origin;
mod queue;
mod queue_counters;
mod seal;
#[cfg(feature = "tower")]
mod tower;

pub use crate::core::{COORDINATOR_BINDING, DecisionLog, KV_BINDING, Timing, VARIABLES};
pub use coordinator::IdempotencyCoordinator;
pub use durable_store::{DurableStore, StoreError};
pub use http::{misconfigured_response, problem_response};
pub use kv_replay::KvReplay;
pub use layer::Idempotency;
pub use origin::{OriginError, ProxyOrigin, with_timeout};
pub use queue::{Consumer, Event};
#[cfg(feature = "tower")]
pub use tower::{IdempotencyLayer, IdempotencyService};
