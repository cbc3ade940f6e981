//! `Layer`: the configuration, validated once, that starts exchanges.

use std::rc::Rc;

use wasm_bindgen::prelude::*;

use super::exchange::JsExchange;
use super::values::pairs_of;
use crate::core::{Config, Exchange, Origin, RequestHead};

/// The layer for one options object and `env`.
#[wasm_bindgen]
pub struct Layer {
    config: Rc<Config>,
    /// The proxy's origin, once [`Layer::proxy_origin`] has chosen it.
    origin: Option<Origin>,
}

#[wasm_bindgen]
impl Layer {
    /// Validates `options` (§6 in camelCase) over `vars` (the worker's
    /// `env`).
    ///
    /// # Errors
    /// An `Error` naming the option and the variable with a bad value.
    #[wasm_bindgen(constructor)]
    pub fn new(options: JsValue, vars: JsValue) -> Result<Layer, JsError> {
        let config = super::options::config(&options, &vars).map_err(|e| JsError::new(&e))?;
        Ok(Self { config: Rc::new(config), origin: None })
    }

    /// What is wrong with the worker's `env` for this layer (SPEC §11), as
    /// the reason of a `misconfigured` answer: a variable named like the
    /// layer's that is not one (`names`: the keys of `env`; `bindings`: the
    /// layer's binding names), or a binding missing or of the wrong kind
    /// (`coordinator` and `kv`: 0 absent, 1 another kind, 2 bound, for
    /// `bindings[0]` and `bindings[1]`). Undefined when all is well.
    #[wasm_bindgen(js_name = envProblem)]
    pub fn env_problem(&self, names: Vec<String>, bindings: Vec<String>, coordinator: u8, kv: u8) -> Option<String> {
        use crate::core::BindingFound;
        let found = |n: u8| match n {
            0 => BindingFound::Absent,
            1 => BindingFound::WrongKind,
            _ => BindingFound::Bound,
        };
        let binding_names: Vec<&str> = bindings.iter().map(String::as_str).collect();
        crate::core::unknown_variable(names.iter().map(String::as_str), &binding_names).or_else(|| {
            let name = |i: usize| binding_names.get(i).copied().unwrap_or_default();
            self.config.binding_problem((name(0), found(coordinator)), (name(1), found(kv)))
        })
    }

    /// Chooses the proxy's origin (SPEC §6, §10), once per layer, and gives
    /// its kind: `"service"` when a Worker is bound as the origin
    /// (`service_bound`), else `"url"` for `ORIGIN_URL` / `originUrl`, or
    /// `"same-url"` for `request`.
    ///
    /// # Errors
    /// An `Error` naming `ORIGIN_URL` when no origin is configured.
    #[wasm_bindgen(js_name = proxyOrigin)]
    pub fn proxy_origin(&mut self, service_bound: bool) -> Result<String, JsError> {
        let origin =
            Origin::choose(service_bound, self.config.origin_url.as_ref()).map_err(|e| JsError::new(&e.to_string()))?;
        let kind = match origin {
            Origin::Service => "service",
            Origin::Url(_) => "url",
            Origin::SameUrl => "same-url",
        };
        self.origin = Some(origin);
        Ok(kind.to_owned())
    }

    /// The URL a proxied request sent to `url` goes to when the chosen
    /// origin is `ORIGIN_URL` (SPEC §10: the request's path and query
    /// appended to it); `undefined` for the other kinds, which keep the
    /// request's own URL, and before one is chosen.
    #[wasm_bindgen(js_name = originTarget)]
    pub fn origin_target(&self, url: &str) -> Option<String> {
        self.origin.as_ref()?.target(url)
    }

    /// The request headers the exchange reads (lower-case names).
    #[wasm_bindgen(js_name = headersRead)]
    pub fn headers_read(&self) -> Vec<String> {
        RequestHead::headers_read(&self.config).into_iter().map(str::to_owned).collect()
    }

    /// Starts the exchange for a request at `now_ms`, from its head as
    /// one string of `\n`-ended fields (none holds a line break): the
    /// method, the URL as the runtime serialises it (the core splits it
    /// into host, path and query), the `Idempotency-Key`, `Origin`,
    /// `Access-Control-Request-Method` and `Access-Control-Request-Headers`
    /// headers (each empty when absent), then name and value of each header
    /// `headersRead` names that is present. `flags`: which of the four
    /// optional headers are present (bits 0–3, from the key on), whether
    /// an `Idempotency-Attempt` header came (bit 4), whether an Analytics
    /// Engine dataset is bound (bit 5).
    pub fn start(&self, head: &str, flags: u32, now_ms: f64) -> JsExchange {
        let mut fields = head.split_terminator('\n');
        let mut next = || fields.next().unwrap_or_default().to_owned();
        let (method, url) = (next(), next());
        let mut optional = |bit: u32| {
            let field = next();
            (flags & 1 << bit != 0).then_some(field)
        };
        let (key, origin) = (optional(0), optional(1));
        let (preflight_method, preflight_headers) = (optional(2), optional(3));
        let (host, path, query) = RequestHead::url_parts(&url);
        let head = RequestHead {
            method,
            host: host.to_owned(),
            path: path.to_owned(),
            query: query.map(str::to_owned),
            key: key.map(String::into_bytes),
            origin,
            own_origin: RequestHead::url_origin(&url),
            preflight_method,
            preflight_headers,
            has_attempt_header: flags & 1 << 4 != 0,
            headers: pairs_of(fields),
            reservation: RequestHead::reservation_number(js_sys::Math::random()),
            metrics: flags & 1 << 5 != 0,
        };
        let now = now_ms as u64;
        let (exchange, action) = Exchange::start(Rc::clone(&self.config), head, now);
        JsExchange::new(exchange, action, now)
    }
}
