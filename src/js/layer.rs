//! `Layer`: the configuration, validated once, that starts exchanges.

use std::rc::Rc;

use wasm_bindgen::prelude::*;

use super::exchange::JsExchange;
use super::options::BindingNames;
use super::packed::unpack_head;
use crate::core::{BindingKind, Config, Exchange, Origin, RequestHead};
use crate::shared::variable_value::{binding_found, env_names};

/// The kind of the proxy's origin, as `proxyOrigin` gives it
/// (`OriginKind.Service`, ...).
#[wasm_bindgen]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OriginKind {
    /// Another Worker, bound under `bindings.origin`: the request goes to it.
    Service = 0,
    /// `ORIGIN_URL`: the request goes to `originTarget`'s URL.
    Url = 1,
    /// `ORIGIN_URL=request`: the request goes to its own URL.
    SameUrl = 2,
}

/// The layer for one options object and `env`.
#[wasm_bindgen]
pub struct Layer {
    config: Rc<Config>,
    bindings: BindingNames,
    /// The proxy's origin, once [`Layer::proxy_origin`] has chosen it.
    origin: Option<Origin>,
}

#[wasm_bindgen]
impl Layer {
    /// Validates `options` (§6 in camelCase, and `bindings`) over `env`
    /// (the worker's), and `env` for them (SPEC §11): a variable named
    /// like the layer's that is not one, or a binding missing or of the
    /// wrong kind.
    ///
    /// # Errors
    /// An `Error` naming the option and the variable with a bad value, or
    /// the variable or binding `env` gets wrong: the reason of a
    /// `misconfigured` answer.
    #[wasm_bindgen(constructor)]
    pub fn new(options: JsValue, env: JsValue) -> Result<Layer, JsError> {
        let config = super::options::config(&options, &env).map_err(|e| JsError::new(&e))?;
        let bindings = BindingNames::of(&options).map_err(|e| JsError::new(&e))?;
        let layer = Self { config: Rc::new(config), bindings, origin: None };
        match layer.env_problem(&env) {
            Some(problem) => Err(JsError::new(&problem)),
            None => Ok(layer),
        }
    }

    /// The names the layer finds its bindings under in `env`:
    /// `{coordinator, kv, metrics, origin}`.
    #[wasm_bindgen(getter)]
    pub fn bindings(&self) -> JsValue {
        self.bindings.object()
    }

    /// Chooses the proxy's origin (SPEC §6, §10), once per layer: the
    /// Worker bound as `bindings.origin` in `env` when there is one, else
    /// `ORIGIN_URL` / `originUrl`, or the request's own URL for `request`.
    ///
    /// # Errors
    /// An `Error` naming `ORIGIN_URL` when no origin is configured.
    #[wasm_bindgen(js_name = proxyOrigin)]
    pub fn proxy_origin(&mut self, env: JsValue) -> Result<OriginKind, JsError> {
        let bound = js_sys::Reflect::get(&env, &JsValue::from_str(&self.bindings.origin))
            .is_ok_and(|service| !service.is_undefined());
        let origin =
            Origin::choose(bound, self.config.origin_url.as_ref()).map_err(|e| JsError::new(&e.to_string()))?;
        let kind = match origin {
            Origin::Service => OriginKind::Service,
            Origin::Url(_) => OriginKind::Url,
            Origin::SameUrl => OriginKind::SameUrl,
        };
        self.origin = Some(origin);
        Ok(kind)
    }

    /// Whether the chosen origin's request carries the client's `cf` (the
    /// core's rule, `Origin::reads_client_cf`); `false` before one is
    /// chosen.
    #[wasm_bindgen(getter, js_name = originReadsCf)]
    pub fn origin_reads_cf(&self) -> bool {
        self.origin.as_ref().is_some_and(Origin::reads_client_cf)
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

    /// Starts the exchange for a request at `now_ms`, from its head packed
    /// as [`unpack_head`] reads it: `head` its fields, `flags` the
    /// [`HeadFlag`](super::packed::HeadFlag)s of the parts that came.
    pub fn start(&self, head: &str, flags: u32, now_ms: f64) -> JsExchange {
        let head = unpack_head(head, flags, RequestHead::reservation_number(js_sys::Math::random()));
        let now = now_ms as u64;
        let (exchange, action) = Exchange::start(Rc::clone(&self.config), head, now);
        JsExchange::new(exchange, action, now)
    }
}

impl Layer {
    /// What is wrong with the worker's `env` for this layer, probed as the
    /// Rust host probes its own: a variable named like the layer's that is
    /// none of them, or a binding missing or of the wrong kind.
    fn env_problem(&self, env: &JsValue) -> Option<String> {
        let names = env_names(env);
        let BindingNames { coordinator, kv, metrics, .. } = &self.bindings;
        let bindings = [coordinator.as_str(), kv.as_str(), metrics.as_str()];
        self.config.unknown_variable(names.iter().map(String::as_str), &bindings).or_else(|| {
            self.config.binding_problem(
                (coordinator, binding_found(env, coordinator, BindingKind::DurableObjects)),
                (kv, binding_found(env, kv, BindingKind::Kv)),
            )
        })
    }
}
