//! `configProblems`: every problem the core finds in a worker's
//! configuration, offline (SPEC §10), for `oncekey check`: the rules are
//! the ones the layer applies on its first request, so a bad value fails
//! in CI instead of answering the first caller `500 misconfigured`.

use wasm_bindgen::prelude::*;

use crate::core::{
    BindingFound, BindingKind, COORDINATOR_BINDING, Config, ConfigError, KV_BINDING, METRICS_BINDING, ORIGIN_BINDING,
    Origin,
};
use crate::shared::variable_value::{binding_found, env_names, env_string, env_variables};

/// The kind of a binding, for a stand-in of it (`bindingMethod`).
#[wasm_bindgen(js_name = BindingKind)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JsBindingKind {
    /// A Durable Object namespace.
    DurableObjects = 0,
    /// A KV namespace.
    Kv = 1,
    /// A service (another Worker).
    Service = 2,
}

/// The method the core looks for on a binding of `kind` to tell it from
/// another kind: what a stand-in of such a binding must have.
#[wasm_bindgen(js_name = bindingMethod)]
pub fn binding_method(kind: JsBindingKind) -> String {
    let kind = match kind {
        JsBindingKind::DurableObjects => BindingKind::DurableObjects,
        JsBindingKind::Kv => BindingKind::Kv,
        JsBindingKind::Service => BindingKind::Service,
    };
    kind.method().to_owned()
}

/// Every problem with `env` (a worker's variables, and its bindings as
/// objects with their kind's method, [`binding_method`]) as the layer would
/// meet them, one message each, naming the variable or binding: the
/// variables' values (each bad one named, the rest still checked),
/// variables the layer does not know, each webhook route's secret (bound,
/// in its sender's form), the coordinator's and the KV
/// namespace's bindings (under their default names) missing or of the
/// wrong kind, and, for the proxy (`proxy`), an origin. Empty when the
/// configuration is sound.
#[wasm_bindgen(js_name = configProblems)]
pub fn config_problems(env: JsValue, proxy: bool) -> Vec<String> {
    let mut problems = Vec::new();
    let mut dropped: Vec<&'static str> = Vec::new();
    let vars = loop {
        match env_variables(&env, |name| dropped.contains(&name)) {
            Ok(vars) => break vars,
            Err(e) => {
                problems.push(e.to_string());
                dropped.push(e.variable);
            }
        }
    };
    // One bad value at a time: each is named, then left out so the rest are
    // checked too (a rule between two variables names one of them).
    let config = loop {
        let set = |name: &str| {
            (!dropped.contains(&name)).then(|| vars.iter().find(|(n, _)| *n == name).map(|(_, v)| v.clone())).flatten()
        };
        match Config::from_vars(set) {
            Ok(config) => break config,
            Err(ConfigError { variable, .. }) if dropped.contains(&variable) => break Config::default(),
            Err(e) => {
                problems.push(e.to_string());
                dropped.push(e.variable);
            }
        }
    };
    // Each route that fails alone (SPEC §6), then each webhook route's
    // secret, by the name the route gives: bound, and (when its value is
    // known) in its sender's form.
    problems.extend(config.route_problems());
    for route in config.routes.iter().filter(|route| route.problem.is_none()) {
        if let Some(webhook) = &route.webhook
            && let Err(e) = route.secrets(env_string(&env, &webhook.secret).as_deref())
        {
            problems.push(e.to_string());
        }
    }
    let names = env_names(&env);
    let bindings = [COORDINATOR_BINDING, KV_BINDING, METRICS_BINDING];
    problems.extend(config.unknown_variables(names.iter().map(String::as_str), &bindings));
    let coordinator = (COORDINATOR_BINDING, binding_found(&env, COORDINATOR_BINDING, BindingKind::DurableObjects));
    let kv = (KV_BINDING, binding_found(&env, KV_BINDING, BindingKind::Kv));
    problems.extend(config.binding_problem(coordinator, kv));
    // The proxy needs an origin; a bad ORIGIN_URL is named above already.
    if proxy && !dropped.contains(&"ORIGIN_URL") {
        let service = binding_found(&env, ORIGIN_BINDING, BindingKind::Service) == BindingFound::Bound;
        if let Err(e) = Origin::choose(service, config.origin_url.as_ref()) {
            problems.push(e.to_string());
        }
    }
    problems
}
