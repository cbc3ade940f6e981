//! Configuration (SPEC §6, §10): wrangler's `[vars]` read once into typed
//! values ([`Config`]), and where a protected request is sent
//! ([`Origin`]).
//!
//! - `variables.rs`: every variable, its rules and its error;
//! - `builder.rs`: a configuration built in code, by the same rules;
//! - `log_sample.rs`: the share of routine decisions logged;
//! - `bindings.rs`: the bindings' default names, their kinds, and what is
//!   wrong when one is missing or of another kind;
//! - `origin.rs`: the origin: a bound Worker, a URL, or the request's own;
//! - `policy.rs`: the policies a route may set, read and checked as one;
//! - `routes.rs`: `IDEMPOTENCY_ROUTES`, each route's match, policy, key
//!   sources, fingerprint selection and webhook;
//! - `seal_keys.rs`: the keys stored answers are sealed with, and their ids.

pub(super) mod bindings;
pub(super) mod builder;
pub(super) mod log_sample;
pub(super) mod origin;
pub(super) mod policy;
pub(super) mod routes;
pub(super) mod seal_keys;
pub(super) mod variables;

pub use bindings::{BindingFound, BindingKind, COORDINATOR_BINDING, KV_BINDING, METRICS_BINDING, ORIGIN_BINDING};
pub use builder::ConfigBuilder;
pub use log_sample::LogSample;
pub use origin::{Origin, OriginUrl};
pub use policy::{POLICY_OPTIONS, Policy};
pub use routes::{ROUTES, Route, WEBHOOK_RELEASE_ON, Webhook};
pub use seal_keys::{SealKey, SealKeys};
pub use variables::{
    Config, ConfigError, Consistency, DEFAULT_STORE_TIMEOUT_MS, KvReplayMode, MAX_RESPONSE_BYTES_LIMIT, VARIABLES,
    default_origin_timeout_ms, finish_time_ms, origin_timeout_within, unknown_variable, unknown_variables,
};
