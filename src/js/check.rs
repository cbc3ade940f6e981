//! `configProblems`: every problem the core finds in a worker's
//! configuration, offline (SPEC §10), for `oncekey check`: the rules are
//! the ones the layer applies on its first request, so a bad value fails
//! in CI instead of answering the first caller `500 misconfigured`.

use wasm_bindgen::prelude::*;

use crate::core::{Config, ConfigError, ORIGIN_BINDING, Origin, unknown_variable};
use crate::shared::variable_value::{binding_found, env_names, env_variables};

/// Every problem with `env` (a worker's variables, and its bindings as
/// objects with their kind's method: `idFromName` for a Durable Object
/// namespace, `put` for KV, `fetch` for a service) as the layer would meet
/// them, one message each, naming the variable or binding: the variables'
/// values (each bad one named, the rest still checked), variables the layer
/// does not know, `bindings` (the coordinator's and the KV namespace's
/// names) missing or of the wrong kind, and, for the proxy (`proxy`), an
/// origin. Empty when the configuration is sound.
#[wasm_bindgen(js_name = configProblems)]
pub fn config_problems(env: JsValue, bindings: Vec<String>, proxy: bool) -> Vec<String> {
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
    let names = env_names(&env);
    let binding_names: Vec<&str> = bindings.iter().map(String::as_str).collect();
    let mut unknown: Vec<&str> = names.iter().map(String::as_str).collect();
    while let Some(problem) = unknown_variable(unknown.iter().copied(), &binding_names) {
        let name = problem.split(':').next().unwrap_or_default().to_owned();
        unknown.retain(|n| *n != name);
        problems.push(problem);
    }
    let name = |i: usize| binding_names.get(i).copied().unwrap_or_default();
    let coordinator = (name(0), binding_found(&env, name(0), "idFromName"));
    let kv = (name(1), binding_found(&env, name(1), "put"));
    problems.extend(config.binding_problem(coordinator, kv));
    // The proxy needs an origin; a bad ORIGIN_URL is named above already.
    if proxy && !dropped.contains(&"ORIGIN_URL") {
        let service = binding_found(&env, ORIGIN_BINDING, "fetch") == crate::core::BindingFound::Bound;
        if let Err(e) = Origin::choose(service, config.origin_url.as_ref()) {
            problems.push(e.to_string());
        }
    }
    problems
}
