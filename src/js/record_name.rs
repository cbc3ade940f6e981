//! `recordName`: a record's name computed with the core's own function, for
//! the operator's command `oncekey-record` (SPEC §12), who has a key from a
//! support ticket and needs the name the admin paths and log lines use.

use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::*;

use crate::core::{CanonicalPath, Config, IdempotencyKey, RecordName};

/// The name (64 lower-case hex digits) of the record for `key` (the
/// `Idempotency-Key` header as sent, quoted or bare) sent to `host` by the
/// caller whose identity `headers` (`[[name, value], ...]`) carry, under the
/// scope `scope` (an `IDEMPOTENCY_SCOPE` value; undefined for the default
/// `header:authorization`). `host` is the request's host as the runtime
/// serialises it: lower-case, punycode, no port.
///
/// # Errors
/// An `Error` for a key oncekey would refuse (400 `invalid-key`), or a bad
/// scope, naming `IDEMPOTENCY_SCOPE`.
#[wasm_bindgen(js_name = recordName)]
pub fn record_name(host: &str, scope: Option<String>, headers: JsValue, key: &str) -> Result<String, JsError> {
    let config = Config::from_vars(|name| if name == "IDEMPOTENCY_SCOPE" { scope.clone() } else { None })
        .map_err(|e| JsError::new(&e.to_string()))?;
    let key = IdempotencyKey::parse(key).map_err(|e| JsError::new(&format!("not a valid Idempotency-Key: {e}")))?;
    let headers = list_pairs(&headers);
    let header = |name: &str| headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str());
    Ok(RecordName::new(host, &config.scope, header, &key).to_hex())
}

/// The name of the record a webhook route keeps for the delivery `id` (the
/// sender's delivery or event id, the route's key) sent to `path`: a
/// delivery's record is named by its endpoint's canonical path, not by a
/// caller's identity nor the host, so one event sent to two endpoints is
/// handled once at each, and once whatever hostname carried it. `body` is
/// the delivery's body, for a GitHub or Shopify route, whose signature
/// leaves the id out ([`RecordName::of_delivery`]); `undefined` for the
/// others.
///
/// # Errors
/// An `Error` for an id oncekey would refuse as a key, or a path that does
/// not begin with `/`.
#[wasm_bindgen(js_name = deliveryRecordName)]
pub fn delivery_record_name(path: &str, id: &str, body: Option<Vec<u8>>) -> Result<String, JsError> {
    if !path.starts_with('/') {
        return Err(JsError::new("the path must begin with /"));
    }
    let id = IdempotencyKey::from_chars(id).map_err(|e| JsError::new(&format!("not a valid delivery id: {e}")))?;
    Ok(RecordName::of_delivery(&CanonicalPath::of(path), &id, body.as_deref()).to_hex())
}

/// `[[name, value], ...]` as pairs, names lower-case; anything else is
/// skipped.
fn list_pairs(list: &JsValue) -> Vec<(String, String)> {
    let Some(list) = list.dyn_ref::<js_sys::Array>() else { return Vec::new() };
    list.iter()
        .filter_map(|pair| {
            let pair: js_sys::Array = pair.dyn_into().ok()?;
            Some((pair.get(0).as_string()?.to_ascii_lowercase(), pair.get(1).as_string()?))
        })
        .collect()
}
