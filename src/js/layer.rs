//! `Layer`: the configuration, validated once, that starts exchanges.

use std::rc::Rc;

use wasm_bindgen::prelude::*;

use super::exchange::JsExchange;
use super::values::{Object, header_pairs, string};
use crate::core::{Config, Exchange, Origin, RequestHead};

/// The layer for one options object and `env`.
#[wasm_bindgen]
pub struct Layer {
    config: Rc<Config>,
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
        Ok(Self { config: Rc::new(config) })
    }

    /// The proxy's origin (SPEC §6, §10): `{kind: "service"}` when a Worker
    /// is bound as the origin (`service_bound`), else `{kind: "url", base}`
    /// from `ORIGIN_URL` / `originUrl`, or `{kind: "same-url"}` for
    /// `request`.
    ///
    /// # Errors
    /// An `Error` naming `ORIGIN_URL` when no origin is configured.
    #[wasm_bindgen(js_name = proxyOrigin)]
    pub fn proxy_origin(&self, service_bound: bool) -> Result<JsValue, JsError> {
        Ok(match Origin::choose(service_bound, self.config.origin_url.as_ref()).map_err(|e| JsError::new(&e.to_string()))? {
            Origin::Service => Object::new("service").done(),
            Origin::Url(base) => Object::new("url").set("base", base).done(),
            Origin::SameUrl => Object::new("same-url").done(),
        })
    }

    /// The URL a proxied request for `path` and `query` (without its `?`)
    /// goes to when the origin is `ORIGIN_URL` (SPEC §10: the request's path
    /// and query appended to it); `undefined` for the other kinds, which
    /// keep the request's own URL.
    #[wasm_bindgen(js_name = originTarget)]
    pub fn origin_target(&self, path: &str, query: Option<String>) -> Option<String> {
        let origin = Origin::choose(false, self.config.origin_url.as_ref()).ok()?;
        origin.target(path, query.as_deref())
    }

    /// The request headers the exchange reads (lower-case names).
    #[wasm_bindgen(js_name = headersRead)]
    pub fn headers_read(&self) -> Vec<String> {
        RequestHead::headers_read(&self.config).into_iter().map(str::to_owned).collect()
    }

    /// Starts the exchange for a request head (`{method, host, path, query,
    /// key, origin, preflightMethod, preflightHeaders, hasAttemptHeader,
    /// headers, metrics}`; `metrics`: whether an Analytics Engine dataset is
    /// bound) at `now_ms`.
    pub fn start(&self, head: JsValue, now_ms: f64) -> JsExchange {
        let flag = |name: &str| {
            js_sys::Reflect::get(&head, &JsValue::from_str(name)).ok().and_then(|v| v.as_bool()).unwrap_or(false)
        };
        let has_attempt = flag("hasAttemptHeader");
        let metrics = flag("metrics");
        let head = RequestHead {
            method: string(&head, "method").unwrap_or_default(),
            host: string(&head, "host").unwrap_or_default(),
            path: string(&head, "path").unwrap_or_else(|| "/".to_owned()),
            query: string(&head, "query"),
            key: string(&head, "key").map(String::into_bytes),
            origin: string(&head, "origin"),
            preflight_method: string(&head, "preflightMethod"),
            preflight_headers: string(&head, "preflightHeaders"),
            has_attempt_header: has_attempt,
            headers: header_pairs(&js_sys::Reflect::get(&head, &JsValue::from_str("headers")).unwrap_or_default()),
            // Never 0: 53 random bits tell one request's reservation from another's.
            reservation: (js_sys::Math::random() * 9_007_199_254_740_992.0) as u64 | 1,
            metrics,
        };
        let now = now_ms as u64;
        let (exchange, action) = Exchange::start(Rc::clone(&self.config), head, now);
        JsExchange::new(exchange, Rc::clone(&self.config), action, now)
    }
}
