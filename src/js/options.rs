//! The options object of `withIdempotency` (SPEC §11): the variables of §6
//! in camelCase, turned into the variable values the core's
//! [`Config::from_vars`] validates. `env` vars fill what options leave out.

use wasm_bindgen::{JsCast, JsValue};

use crate::core::{COORDINATOR_BINDING, Config, KV_BINDING, METRICS_BINDING, ORIGIN_BINDING};
use crate::shared::variable_value::{env_string, env_variables, text_of};

use super::values::Object;

/// Each option and the variable it sets.
const OPTIONS: [(&str, &str); 25] = [
    ("originUrl", "ORIGIN_URL"),
    ("ttlSeconds", "IDEMPOTENCY_TTL_SECONDS"),
    ("leaseSeconds", "IDEMPOTENCY_LEASE_SECONDS"),
    ("originTimeoutSeconds", "IDEMPOTENCY_ORIGIN_TIMEOUT_SECONDS"),
    ("inFlightWaitMs", "IDEMPOTENCY_IN_FLIGHT_WAIT_MS"),
    ("methods", "IDEMPOTENCY_METHODS"),
    ("paths", "IDEMPOTENCY_PATHS"),
    ("required", "IDEMPOTENCY_REQUIRED"),
    ("requiredPaths", "IDEMPOTENCY_REQUIRED_PATHS"),
    ("scope", "IDEMPOTENCY_SCOPE"),
    ("maxBodyBytes", "IDEMPOTENCY_MAX_BODY_BYTES"),
    ("maxResponseBytes", "IDEMPOTENCY_MAX_RESPONSE_BYTES"),
    ("releaseOn", "IDEMPOTENCY_RELEASE_ON"),
    ("consistency", "IDEMPOTENCY_CONSISTENCY"),
    ("kvReplay", "IDEMPOTENCY_KV_REPLAY"),
    ("kvCopy", "IDEMPOTENCY_KV_COPY"),
    ("storeTimeoutMs", "IDEMPOTENCY_STORE_TIMEOUT_MS"),
    ("failOpen", "IDEMPOTENCY_FAIL_OPEN"),
    ("corsOrigins", "IDEMPOTENCY_CORS_ORIGINS"),
    ("corsCredentials", "IDEMPOTENCY_CORS_CREDENTIALS"),
    ("forms", "IDEMPOTENCY_FORMS"),
    ("adminToken", "IDEMPOTENCY_ADMIN_TOKEN"),
    ("sealKeys", "IDEMPOTENCY_SEAL_KEYS"),
    ("routes", "IDEMPOTENCY_ROUTES"),
    ("logSample", "IDEMPOTENCY_LOG_SAMPLE"),
];

/// Options read by the JavaScript glue itself, not the core.
const GLUE_OPTIONS: [&str; 1] = ["bindings"];

#[cfg(feature = "js-queue")]
/// The options of `withQueueIdempotency` that are variables too: the same
/// names as the HTTP options where they mean the same; the handler's time
/// limit is the origin's variable (SPEC §11).
pub(crate) const CONSUMER_OPTIONS: [(&str, &str); 4] = [
    ("ttlSeconds", "IDEMPOTENCY_TTL_SECONDS"),
    ("leaseSeconds", "IDEMPOTENCY_LEASE_SECONDS"),
    ("handlerTimeoutSeconds", "IDEMPOTENCY_ORIGIN_TIMEOUT_SECONDS"),
    ("storeTimeoutMs", "IDEMPOTENCY_STORE_TIMEOUT_MS"),
];

/// The configuration from `options` (an object, or undefined) and `vars`
/// (the worker's `env`): an option wins over its variable. Each webhook
/// route's secrets are read from `vars` by the name the route gives
/// (SPEC §13).
///
/// # Errors
/// An unknown option, an option of the wrong type, or a bad value, named
/// by option and variable. A route that is misconfigured fails alone, when
/// a request is its.
pub(crate) fn config(options: &JsValue, vars: &JsValue) -> Result<Config, String> {
    let mut config = config_of(options, vars, &OPTIONS, &GLUE_OPTIONS)?;
    // A route whose secret is not bound fails alone (SPEC §6).
    config.bind_webhook_secrets(|name| env_string(vars, name));
    Ok(config)
}

/// [`config`] with the options `table` names and `elsewhere` (options read
/// by other code, skipped here).
///
/// # Errors
/// As [`config`].
pub(crate) fn config_of(
    options: &JsValue,
    vars: &JsValue,
    table: &[(&'static str, &'static str)],
    elsewhere: &[&str],
) -> Result<Config, String> {
    let mut given: Vec<(&'static str, &'static str, String)> = Vec::new();
    if !options.is_undefined() && !options.is_null() {
        let object: &js_sys::Object = options.dyn_ref().ok_or("the options must be an object")?;
        for name in js_sys::Object::keys(object).iter() {
            let name = name.as_string().unwrap_or_default();
            if elsewhere.contains(&name.as_str()) {
                continue;
            }
            let Some(&(option, variable)) = table.iter().find(|(option, _)| *option == name) else {
                let known: Vec<&str> = table.iter().map(|(o, _)| *o).chain(elsewhere.iter().copied()).collect();
                return Err(format!("unknown option `{name}` (known: {})", known.join(", ")));
            };
            let value = js_sys::Reflect::get(object, &JsValue::from_str(option)).unwrap_or(JsValue::UNDEFINED);
            if value.is_undefined() {
                continue;
            }
            let text = text_of(variable, &value)
                .ok_or_else(|| format!("option `{option}` must be a string, a number, a boolean or a list of them"))?;
            given.push((option, variable, text));
        }
    }
    // What the options leave out, from `env`: a number or a boolean in
    // [vars] counts, as its text.
    let from_env = env_variables(vars, |name| given.iter().any(|(_, variable, _)| *variable == name))
        .map_err(|e| e.to_string())?;
    let var = |name: &str| -> Option<String> {
        let given = given.iter().find(|(_, variable, _)| *variable == name).map(|(_, _, text)| text);
        given.or_else(|| from_env.iter().find(|(variable, _)| *variable == name).map(|(_, text)| text)).cloned()
    };
    Config::from_vars(var).map_err(|e| match given.iter().find(|(_, variable, _)| *variable == e.variable) {
        Some((option, _, _)) => format!("option `{option}` ({e})"),
        None => e.to_string(),
    })
}

/// The names of the bindings the layer uses, from `options.bindings`
/// (SPEC §11), each the core's default when not given.
pub(crate) struct BindingNames {
    /// The coordinator's Durable Object namespace.
    pub(crate) coordinator: String,
    /// The KV namespace.
    pub(crate) kv: String,
    /// The Analytics Engine dataset.
    pub(crate) metrics: String,
    /// The proxy's origin, a service binding.
    pub(crate) origin: String,
}

impl BindingNames {
    /// The names `options` (an object, or undefined) gives.
    ///
    /// # Errors
    /// A name given that is not a string, naming its option.
    pub(crate) fn of(options: &JsValue) -> Result<Self, String> {
        let given = js_sys::Reflect::get(options, &JsValue::from_str("bindings")).unwrap_or(JsValue::UNDEFINED);
        let name = |which: &str, default: &str| -> Result<String, String> {
            let value = js_sys::Reflect::get(&given, &JsValue::from_str(which)).unwrap_or(JsValue::UNDEFINED);
            if value.is_undefined() || value.is_null() {
                return Ok(default.to_owned());
            }
            value.as_string().ok_or_else(|| format!("option `bindings.{which}` must be a binding's name, a string"))
        };
        Ok(Self {
            coordinator: name("coordinator", COORDINATOR_BINDING)?,
            kv: name("kv", KV_BINDING)?,
            metrics: name("metrics", METRICS_BINDING)?,
            origin: name("origin", ORIGIN_BINDING)?,
        })
    }

    /// `{coordinator, kv, metrics, origin}`, for the host to find each in
    /// `env`.
    pub(crate) fn object(&self) -> JsValue {
        Object::empty()
            .set("coordinator", self.coordinator.as_str())
            .set("kv", self.kv.as_str())
            .set("metrics", self.metrics.as_str())
            .set("origin", self.origin.as_str())
            .done()
    }
}
