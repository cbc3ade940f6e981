//! A [`Config`] built in code (SPEC §6): each setting is one of the
//! variables, and [`ConfigBuilder::build`] reads them with the variables'
//! own rules, so nothing set in code escapes a rule a `[vars]` entry is
//! held to.

use std::time::Duration;

use super::variables::{Config, ConfigError, VARIABLES};

/// Settings for a [`Config`], by the variables they stand for.
///
/// ```
/// use std::time::Duration;
/// use oncekey::core::Config;
/// let config = Config::builder()
///     .ttl(Duration::from_secs(3600))
///     .paths(&["/api/*"])
///     .var("IDEMPOTENCY_SCOPE", "cookie:session")
///     .build()
///     .unwrap();
/// assert_eq!(config.policy.records.ttl_ms, 3_600_000);
/// // The variables' rules: a lease longer than the TTL is refused, naming it.
/// let err = Config::builder().ttl(Duration::from_secs(60)).build().unwrap_err();
/// assert_eq!(err.variable, "IDEMPOTENCY_TTL_SECONDS");
/// ```
#[derive(Clone, Debug, Default)]
pub struct ConfigBuilder {
    /// Each variable set, in order (a later one of a name wins).
    vars: Vec<(&'static str, String)>,
}

impl Config {
    /// Settings to build a configuration from in code; unset ones keep
    /// their defaults (SPEC §6).
    pub fn builder() -> ConfigBuilder {
        ConfigBuilder::default()
    }
}

impl ConfigBuilder {
    /// Any variable by its name (docs/configuration.md), its value as the
    /// `[vars]` entry would be written.
    pub fn var(mut self, name: &'static str, value: impl Into<String>) -> Self {
        self.vars.push((name, value.into()));
        self
    }

    /// `IDEMPOTENCY_TTL_SECONDS`: how long an answer is kept (whole seconds).
    pub fn ttl(self, ttl: Duration) -> Self {
        self.var("IDEMPOTENCY_TTL_SECONDS", ttl.as_secs().to_string())
    }

    /// `IDEMPOTENCY_LEASE_SECONDS`: how long an attempt holds its key (whole seconds).
    pub fn lease(self, lease: Duration) -> Self {
        self.var("IDEMPOTENCY_LEASE_SECONDS", lease.as_secs().to_string())
    }

    /// `IDEMPOTENCY_ORIGIN_TIMEOUT_SECONDS`: the handler's time limit (whole seconds).
    pub fn origin_timeout(self, limit: Duration) -> Self {
        self.var("IDEMPOTENCY_ORIGIN_TIMEOUT_SECONDS", limit.as_secs().to_string())
    }

    /// `IDEMPOTENCY_IN_FLIGHT_WAIT_MS`: how long a duplicate waits for the first.
    pub fn in_flight_wait(self, wait: Duration) -> Self {
        self.var("IDEMPOTENCY_IN_FLIGHT_WAIT_MS", wait.as_millis().to_string())
    }

    /// `IDEMPOTENCY_METHODS`: the methods a key protects.
    pub fn methods(self, methods: &[&str]) -> Self {
        self.var("IDEMPOTENCY_METHODS", methods.join(","))
    }

    /// `IDEMPOTENCY_PATHS`: the paths a key protects (`*` at the end matches the rest).
    pub fn paths(self, paths: &[&str]) -> Self {
        self.var("IDEMPOTENCY_PATHS", paths.join(","))
    }

    /// `IDEMPOTENCY_REQUIRED`: whether a covered request without a key is refused.
    pub fn required(self, required: bool) -> Self {
        self.var("IDEMPOTENCY_REQUIRED", if required { "true" } else { "false" })
    }

    /// `IDEMPOTENCY_ROUTES`: per-route policies, as their JSON.
    pub fn routes(self, json: impl Into<String>) -> Self {
        self.var("IDEMPOTENCY_ROUTES", json)
    }

    /// The configuration, every variable read and checked as from `[vars]`.
    ///
    /// # Errors
    /// [`ConfigError`] naming the first variable with a bad value, or a name
    /// given to [`var`](ConfigBuilder::var) that is none of the variables.
    pub fn build(self) -> Result<Config, ConfigError> {
        if let Some((name, _)) = self.vars.iter().find(|(name, _)| !VARIABLES.contains(name)) {
            return Err(ConfigError { variable: name, reason: "is not one of the layer's variables".into() });
        }
        Config::from_vars(|name| self.vars.iter().rev().find(|(n, _)| *n == name).map(|(_, value)| value.clone()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    #[test]
    fn each_setting_is_its_variable_and_held_to_its_rules() {
        let config = Config::builder()
            .lease(Duration::from_secs(30))
            .origin_timeout(Duration::from_secs(20))
            .in_flight_wait(Duration::from_millis(2500))
            .methods(&["POST"])
            .required(true)
            .build()
            .unwrap();
        let from_vars = Config::from_vars(|name| match name {
            "IDEMPOTENCY_LEASE_SECONDS" => Some("30".into()),
            "IDEMPOTENCY_ORIGIN_TIMEOUT_SECONDS" => Some("20".into()),
            "IDEMPOTENCY_IN_FLIGHT_WAIT_MS" => Some("2500".into()),
            "IDEMPOTENCY_METHODS" => Some("POST".into()),
            "IDEMPOTENCY_REQUIRED" => Some("true".into()),
            _ => None,
        })
        .unwrap();
        assert_eq!(format!("{config:?}"), format!("{from_vars:?}"), "the same as the same [vars]");
        let late = Config::builder().ttl(Duration::from_secs(10)).ttl(Duration::from_secs(7200)).build().unwrap();
        assert_eq!(late.policy.records.ttl_ms, 7_200_000, "a later setting wins");
        let typo = Config::builder().var("IDEMPOTENCY_TTL", "60").build().unwrap_err();
        assert_eq!(typo.variable, "IDEMPOTENCY_TTL", "a name that is no variable is refused, not ignored");
        let bad = Config::builder().in_flight_wait(Duration::from_secs(600)).build();
        assert!(bad.is_err_and(|e| e.variable == "IDEMPOTENCY_IN_FLIGHT_WAIT_MS"), "at most the lease");
        let size = Config::builder().var("IDEMPOTENCY_MAX_BODY_BYTES", "lots").build();
        assert!(size.is_err_and(|e| e.variable == "IDEMPOTENCY_MAX_BODY_BYTES"));
        let route = Config::builder().routes("not json").build().unwrap_err();
        assert_eq!(route.variable, "IDEMPOTENCY_ROUTES");
    }
}
