//! A configuration variable's value as the runtime hands it over, read the
//! same way by both edge hosts (and for `withIdempotency`'s options).
//! wrangler gives a `[vars]` entry written as a TOML string as a string, and
//! one written as a number, a boolean or an array as that JSON value
//! (`IDEMPOTENCY_REQUIRED = true`); each is the text the core parses, so
//! none is silently ignored.

use js_sys::{Array, Number, Reflect};
use wasm_bindgen::{JsCast, JsValue};

#[cfg(any(feature = "edge", feature = "js-queue"))]
use crate::core::Config;
use crate::core::{BindingFound, BindingKind, ConfigError, ROUTES, VARIABLES};

/// `value` as a variable would be written: a string as it is, a number in
/// decimal (as JavaScript writes it), a boolean as `true`/`false`, a list
/// of those comma-separated. None for anything else.
pub(crate) fn variable_text(value: &JsValue) -> Option<String> {
    if let Some(text) = value.as_string() {
        return Some(text);
    }
    if let Some(number) = number_text(value) {
        return Some(number);
    }
    if let Some(flag) = value.as_bool() {
        return Some(flag.to_string());
    }
    let list: &Array = value.dyn_ref()?;
    let items: Option<Vec<String>> = list.iter().map(|item| item.as_string().or_else(|| number_text(&item))).collect();
    Some(items?.join(","))
}

/// `value` as variable `name`'s text: [`variable_text`], but
/// `IDEMPOTENCY_ROUTES` given as a list of objects — the `routes` option,
/// or a TOML array of tables in wrangler's `[vars]`, which the runtime
/// hands over as that value — is its JSON.
pub(crate) fn text_of(name: &str, value: &JsValue) -> Option<String> {
    if name == ROUTES && value.is_object() {
        return js_sys::JSON::stringify(value).ok().map(String::from);
    }
    variable_text(value)
}

/// The string `env` holds under `name` — a secret (`wrangler secret put`),
/// or a plain-text variable — or `None`: not bound, or not a string. How
/// each webhook route's secret is read (SPEC §13).
pub(crate) fn env_string(env: &JsValue, name: &str) -> Option<String> {
    Reflect::get(env, &JsValue::from_str(name)).ok()?.as_string()
}

/// A number as JavaScript writes it (`String(n)`), by the runtime: Rust's
/// float formatting would add kilobytes to the wasm for this one use.
fn number_text(value: &JsValue) -> Option<String> {
    value.as_f64()?;
    Number::from(value.clone()).to_string_with_radix(10).ok().map(String::from)
}

/// The core's variables that `env` sets, each as its text, but those
/// `skipped` (an option gives them).
///
/// # Errors
/// As [`env_variable`], for the first such variable.
pub(crate) fn env_variables(
    env: &JsValue,
    skipped: impl Fn(&str) -> bool,
) -> Result<Vec<(&'static str, String)>, ConfigError> {
    let mut set = Vec::new();
    for name in VARIABLES {
        if !skipped(name)
            && let Some(text) = env_variable(env, name)?
        {
            set.push((name, text));
        }
    }
    Ok(set)
}

/// Variable `name` of `env`: its text, or None when it is not set.
///
/// # Errors
/// The name is bound to something that is not a value (a JSON object, a
/// binding): a configuration error naming it, never an unset variable.
fn env_variable(env: &JsValue, name: &'static str) -> Result<Option<String>, ConfigError> {
    let value = Reflect::get(env, &JsValue::from_str(name)).unwrap_or(JsValue::UNDEFINED);
    if value.is_undefined() || value.is_null() {
        return Ok(None);
    }
    text_of(name, &value).map(Some).ok_or_else(|| ConfigError {
        variable: name,
        reason: "not a value: write it in [vars] as a string (or a number, a boolean or a list of them)".into(),
    })
}

/// How `env` binds `name`, probed the same way by both hosts: nothing, a
/// binding of `kind` (one with the method its kind has,
/// [`BindingKind::method`]), or a binding of another kind.
pub(crate) fn binding_found(env: &JsValue, name: &str, kind: BindingKind) -> BindingFound {
    let binding = Reflect::get(env, &JsValue::from_str(name)).unwrap_or(JsValue::UNDEFINED);
    if binding.is_undefined() || binding.is_null() {
        return BindingFound::Absent;
    }
    let has = Reflect::get(&binding, &JsValue::from_str(kind.method())).is_ok_and(|m| m.is_function());
    if has { BindingFound::Bound } else { BindingFound::WrongKind }
}

/// The names `env` holds.
pub(crate) fn env_names(env: &JsValue) -> Vec<String> {
    if !env.is_object() {
        return Vec::new();
    }
    js_sys::Object::keys(env.unchecked_ref::<js_sys::Object>()).iter().filter_map(|k| k.as_string()).collect()
}

/// What is wrong with `env` for a queue consumer (SPEC §11), checked alike
/// by both hosts: an `IDEMPOTENCY_*` variable the layer, configured as
/// `config`, does not know (a typo: `bindings` and its webhook routes'
/// secrets aside), or no coordinator namespace bound as `coordinator`. A
/// consumer needs no KV binding.
#[cfg(any(feature = "edge", feature = "js-queue"))]
pub(crate) fn consumer_env_problem(
    env: &JsValue,
    config: &Config,
    coordinator: &str,
    bindings: &[&str],
) -> Option<String> {
    let names = env_names(env);
    config.unknown_variable(names.iter().map(String::as_str), bindings).or_else(|| {
        Config::consumer_binding_problem((coordinator, binding_found(env, coordinator, BindingKind::DurableObjects)))
    })
}
