//! The policies a route may set (SPEC §6, §13) — lease, TTL, time limits,
//! release statuses, whether a key is required, body limits — read and
//! checked as one, with the rules that tie them together, by the same code
//! for the variables and for each route.

use crate::core::config::variables::{
    ConfigError, DEFAULT_STORE_TIMEOUT_MS, MAX_RESPONSE_BYTES_LIMIT, Vars, origin_timeout_within,
};
use crate::core::record::policy::RecordPolicy;

/// What a request is held to: the variables' values, or a route's
/// ([`Route::policy`](crate::core::Route)), each checked against its range
/// and against the others (the origin call and a `finish` fit inside the
/// lease; the TTL outlasts the lease; the wait is at most the lease).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Policy {
    /// Lease, TTL and release set (`leaseSeconds`, `ttlSeconds`,
    /// `releaseOn`).
    pub records: RecordPolicy,
    /// The origin's time limit, in ms (`originTimeoutSeconds`).
    pub origin_timeout_ms: u64,
    /// How long a duplicate waits for a running first attempt, in ms
    /// (`inFlightWaitMs`).
    pub in_flight_wait_ms: u64,
    /// One store call's time limit, in ms: `IDEMPOTENCY_STORE_TIMEOUT_MS`,
    /// or, unset, what the lease leaves (no route sets it).
    pub store_timeout_ms: u64,
    /// Whether a request with no key is a 400 `missing-key` (`required`).
    pub required: bool,
    /// The largest keyed request body (`maxBodyBytes`).
    pub max_body_bytes: usize,
    /// The largest stored response body (`maxResponseBytes`).
    pub max_response_bytes: usize,
}

/// Each policy a route may set, by its option name (SPEC §11), and the
/// variable whose value it replaces for that route.
pub const POLICY_OPTIONS: [(&str, &str); 8] = [
    ("ttlSeconds", "IDEMPOTENCY_TTL_SECONDS"),
    ("leaseSeconds", "IDEMPOTENCY_LEASE_SECONDS"),
    ("originTimeoutSeconds", "IDEMPOTENCY_ORIGIN_TIMEOUT_SECONDS"),
    ("inFlightWaitMs", "IDEMPOTENCY_IN_FLIGHT_WAIT_MS"),
    ("releaseOn", "IDEMPOTENCY_RELEASE_ON"),
    ("required", "IDEMPOTENCY_REQUIRED"),
    ("maxBodyBytes", "IDEMPOTENCY_MAX_BODY_BYTES"),
    ("maxResponseBytes", "IDEMPOTENCY_MAX_RESPONSE_BYTES"),
];

impl Policy {
    /// Reads the policy variables through `vars` (a route's reader gives
    /// its own values first) and checks them.
    ///
    /// # Errors
    /// The first [`ConfigError`] found, naming its variable.
    pub(super) fn read(vars: &Vars<'_>) -> Result<Self, ConfigError> {
        let lease_ms = vars.int("IDEMPOTENCY_LEASE_SECONDS", 120, 1, 900)? * 1000;
        let store_timeout = match vars.get("IDEMPOTENCY_STORE_TIMEOUT_MS") {
            None => None,
            Some(_) => Some(vars.int("IDEMPOTENCY_STORE_TIMEOUT_MS", 5000, 1, 60_000)?),
        };
        let origin_timeout_ms = match vars.get("IDEMPOTENCY_ORIGIN_TIMEOUT_SECONDS") {
            None => origin_timeout_within(lease_ms, store_timeout.unwrap_or(DEFAULT_STORE_TIMEOUT_MS)),
            Some(_) => vars.int("IDEMPOTENCY_ORIGIN_TIMEOUT_SECONDS", 100, 1, 899)? * 1000,
        };
        if origin_timeout_ms >= lease_ms {
            return Err(ConfigError {
                variable: "IDEMPOTENCY_ORIGIN_TIMEOUT_SECONDS",
                reason: "must be below IDEMPOTENCY_LEASE_SECONDS: the lease covers the origin call and its finish. \
                         A shorter lease needs a shorter origin timeout too (the root wrangler.toml sets it to \
                         100 s); see docs/configuration.md"
                    .into(),
            });
        }
        // The lease covers the origin call and `finish` (SPEC §3): what the
        // origin call leaves of it must hold at least one whole `finish` try.
        let finish_room_ms = lease_ms - origin_timeout_ms;
        let store_timeout_ms = store_timeout.unwrap_or(DEFAULT_STORE_TIMEOUT_MS.min(finish_room_ms));
        if store_timeout_ms > finish_room_ms {
            return Err(ConfigError {
                variable: "IDEMPOTENCY_STORE_TIMEOUT_MS",
                reason: "leaves no room for the attempt's finish inside the lease: a finish may take the whole \
                         store time limit, and IDEMPOTENCY_LEASE_SECONDS less IDEMPOTENCY_ORIGIN_TIMEOUT_SECONDS \
                         is less than that; lengthen the lease or shorten one of the two"
                    .into(),
            });
        }
        let ttl_ms = vars.int("IDEMPOTENCY_TTL_SECONDS", 86_400, 60, 2_592_000)? * 1000;
        if ttl_ms < lease_ms {
            // SPEC §3: a record's end keeps its last attempt number until no
            // attempt that held the key can still finish.
            return Err(ConfigError {
                variable: "IDEMPOTENCY_TTL_SECONDS",
                reason: "must be at least IDEMPOTENCY_LEASE_SECONDS: a released key keeps its last attempt \
                         number for the TTL, and an attempt may still finish until its lease ends"
                    .into(),
            });
        }
        Ok(Self {
            records: RecordPolicy {
                lease_ms,
                ttl_ms,
                release_on: vars.statuses("IDEMPOTENCY_RELEASE_ON", "408,425,429,503")?,
            },
            origin_timeout_ms,
            in_flight_wait_ms: vars.int("IDEMPOTENCY_IN_FLIGHT_WAIT_MS", 10_000.min(lease_ms), 0, lease_ms)?,
            store_timeout_ms,
            required: vars.flag("IDEMPOTENCY_REQUIRED", false)?,
            max_body_bytes: vars.int("IDEMPOTENCY_MAX_BODY_BYTES", 1_048_576, 0, 104_857_600)? as usize,
            max_response_bytes: vars.int(
                "IDEMPOTENCY_MAX_RESPONSE_BYTES",
                1_048_576,
                0,
                MAX_RESPONSE_BYTES_LIMIT as u64,
            )? as usize,
        })
    }
}
