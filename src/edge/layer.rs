//! The library API: [`Idempotency`] wraps any async handler with the
//! protection of SPEC §1–5, configured from code or the worker's variables
//! and bindings. Every decision is the core's
//! [`Exchange`](crate::core::Exchange); [`super::host`] performs its
//! actions on the Workers runtime (as `pkg/src/worker.js` and
//! `worker/host.js` split the same jobs).

use std::future::Future;
use std::rc::Rc;

use worker::{Context, Env, Request, Response, Result};

use crate::core::{BindingKind, COORDINATOR_BINDING, Config, ConfigError, KV_BINDING, METRICS_BINDING, Problem};
use crate::shared::variable_value::{env_string, env_variables};

use super::host::{Handling, drive};
use super::http;
use super::origin::{OriginError, ProxyOrigin};

/// The idempotency layer, configured once.
///
/// ```no_run
/// use oncekey::edge::{Idempotency, OriginError};
/// use worker::*;
///
/// #[event(fetch)]
/// async fn fetch(req: Request, env: Env, ctx: Context) -> Result<Response> {
///     let layer = match Idempotency::from_env(&env) {
///         Ok(layer) => layer,
///         Err(problem) => return oncekey::edge::problem_response(&problem),
///     };
///     // The handler may hold what it needs: `env` cloned in (it is cheap).
///     let orders = env.clone();
///     layer.handle(req, &env, &ctx, move |req| create_order(req, orders)).await
/// }
///
/// /// Your handler: `Ok` is stored and replayed; `Err(NotSent)` frees the
/// /// key, `Err(NoAnswer)` holds it until the lease ends.
/// async fn create_order(_req: Request, _env: Env) -> std::result::Result<Response, OriginError> {
///     Response::ok("created").map_err(|e| OriginError::NotSent(e.to_string()))
/// }
/// # fn main() {}
/// ```
#[derive(Clone, Debug)]
pub struct Idempotency {
    config: Rc<Config>,
    /// Whose handler `origin` is, and whether its request carries the
    /// client's `cf`.
    handling: Handling,
}

impl Idempotency {
    /// A layer with a configuration built in code. A webhook route's
    /// secrets must be read into it first
    /// ([`Config::bind_webhook_secrets`]): without them its deliveries are
    /// answered `500 misconfigured`, never checked against nothing.
    pub fn new(config: Config) -> Self {
        Self { config: Rc::new(config), handling: Handling { proxying: false, keeps_cf: true } }
    }

    /// The layer in front of the proxy's own origin call: a request it does
    /// not cover whose origin fails is answered `502 origin-unreachable`,
    /// since calling the origin is the layer's job. Without it (a worker's
    /// own handler), such a request runs the handler exactly as without
    /// oncekey: its error reaches the runtime (SPEC §11).
    pub fn proxying(mut self) -> Self {
        self.handling.proxying = true;
        self
    }

    /// [`proxying`](Idempotency::proxying) in front of `origin`: its
    /// request carries the client's `cf` only when `origin` is a Worker,
    /// which may read it. A URL has no use for it (the edge reads a
    /// subrequest's `cf` as settings), and copying it costs a JSON round
    /// trip per request.
    pub fn proxying_to(mut self, origin: &ProxyOrigin) -> Self {
        self.handling = Handling { proxying: true, keeps_cf: origin.reads_cf() };
        self
    }

    /// A layer configured from the worker's variables (SPEC §6), its
    /// bindings checked (SPEC §11), each webhook route's secrets read from
    /// the secret the route names (SPEC §13).
    ///
    /// # Errors
    /// [`Problem::Misconfigured`] naming the first variable with a bad
    /// value, an `IDEMPOTENCY_*` variable the layer does not know (a typo),
    /// or a binding it needs that is missing or of the wrong kind. A route
    /// that is misconfigured (its policy, or its webhook secret not bound or
    /// not in its sender's form) fails alone: its requests are answered
    /// `500 misconfigured` naming the route, never a secret's value.
    pub fn from_env(env: &Env) -> std::result::Result<Self, Problem> {
        let mut config = config_from_env(env)?;
        let js_env: &worker::wasm_bindgen::JsValue = env.as_ref();
        config.bind_webhook_secrets(|name| env_string(js_env, name));
        if let Some(problem) = env_problem(env, &config) {
            return Err(Problem::Misconfigured(problem));
        }
        Ok(Self::new(config))
    }

    /// The layer configured from the worker's variables, read and checked
    /// once per isolate: variables are fixed for an isolate's life (a new
    /// deployment starts new isolates). For a worker with one configuration,
    /// such as the proxy; [`Idempotency::from_env`] reads them every time.
    ///
    /// # Errors
    /// As [`Idempotency::from_env`]; a bad configuration is checked again on
    /// the next request.
    pub fn for_isolate(env: &Env) -> std::result::Result<Self, Problem> {
        thread_local! {
            static LAYER: std::cell::OnceCell<Idempotency> = const { std::cell::OnceCell::new() };
        }
        if let Some(layer) = LAYER.with(|layer| layer.get().cloned()) {
            return Ok(layer);
        }
        let layer = Self::from_env(env)?;
        Ok(LAYER.with(|cached| cached.get_or_init(|| layer).clone()))
    }

    /// The configuration in force.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Protects one request: `origin` is called at most once per key while
    /// the key is remembered. From the first store call on, the exchange runs
    /// under `waitUntil`, so a client that goes away does not leave the key
    /// in flight; the caller gets its answer as soon as there is one.
    ///
    /// # Errors
    /// For failures of the runtime itself (building a response), and the
    /// handler's own error on a request the layer does not cover (unless
    /// [`proxying`](Idempotency::proxying)), as if oncekey were not there;
    /// every failure of the protocol is answered as problem+json.
    pub async fn handle<F, Fut>(&self, req: Request, env: &Env, ctx: &Context, origin: F) -> Result<Response>
    where
        F: FnOnce(Request) -> Fut + 'static,
        Fut: Future<Output = std::result::Result<Response, OriginError>> + 'static,
    {
        let metrics = env.analytics_engine(METRICS_BINDING).is_ok();
        let head = http::request_head(&req, &self.config, metrics)?;
        drive(Rc::clone(&self.config), head, req, env, ctx, origin, self.handling).await
    }
}

/// What is wrong with the worker's `env` for `config`: a variable named
/// like the layer's that is none of them, or a binding missing or of the
/// wrong kind (the core decides; this only looks at the bindings).
/// The configuration the worker's variables give (SPEC §6), its bindings
/// not yet checked.
///
/// # Errors
/// [`Problem::Misconfigured`] naming the first variable with a bad value.
pub(crate) fn config_from_env(env: &Env) -> std::result::Result<Config, Problem> {
    let misconfigured = |e: ConfigError| Problem::Misconfigured(e.to_string());
    // A number or a boolean in [vars] counts, as its text.
    let vars = env_variables(env, |_| false).map_err(misconfigured)?;
    Config::from_vars(|name| vars.iter().find(|(n, _)| *n == name).map(|(_, text)| text.clone())).map_err(misconfigured)
}

fn env_problem(env: &Env, config: &Config) -> Option<String> {
    use crate::shared::variable_value::{binding_found, env_names};
    let env: &worker::wasm_bindgen::JsValue = env.as_ref();
    let names = env_names(env);
    let bindings = [COORDINATOR_BINDING, KV_BINDING, METRICS_BINDING];
    config.unknown_variable(names.iter().map(String::as_str), &bindings).or_else(|| {
        config.binding_problem(
            (COORDINATOR_BINDING, binding_found(env, COORDINATOR_BINDING, BindingKind::DurableObjects)),
            (KV_BINDING, binding_found(env, KV_BINDING, BindingKind::Kv)),
        )
    })
}
