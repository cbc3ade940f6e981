//! Configuration (SPEC §6, §10): wrangler's `[vars]` read once into typed
//! values ([`Config`]), and where a protected request is sent
//! ([`Origin`]).
//!
//! - `variables.rs`: every variable, its rules and its error;
//! - `origin.rs`: the origin: a bound Worker, a URL, or the request's own.

pub(super) mod origin;
pub(super) mod variables;

pub use origin::{ORIGIN_BINDING, Origin, OriginUrl};
pub use variables::{
    BindingFound, Config, ConfigError, Consistency, DEFAULT_STORE_TIMEOUT_MS, KvReplayMode, MAX_RESPONSE_BYTES_LIMIT,
    VARIABLES, default_origin_timeout_ms, finish_time_ms, origin_timeout_within, unknown_variable,
};
