//! The core's [`page_form_keys`](crate::core::page_form_keys) as
//! `withFormKeys` (src/shared/form_keys.js) calls it, for both hosts: the
//! JavaScript host's wasm exports it as `pageFormKeys` (feature `js`), the
//! Rust host hands it over as a closure.

use js_sys::Uint8Array;

use crate::core::Placement;

/// What the rewriter places for the forms it reports: `page_origin` the
/// page's own origin, `base` its first `<base href>`, `forms_json` the
/// forms (see [`page_form_keys`](crate::core::page_form_keys)),
/// `placement` `form-end`, `page-end` or `page-cut`, the clock, random
/// bytes (10 per form). Nothing for a placement it does not know.
#[cfg_attr(all(feature = "js", target_arch = "wasm32"), wasm_bindgen::prelude::wasm_bindgen(js_name = pageFormKeys))]
pub fn page_form_keys_of(
    page_origin: &str,
    base: Option<String>,
    forms_json: &str,
    placement: &str,
    now_ms: f64,
    random: &Uint8Array,
) -> Option<String> {
    let placement = Placement::named(placement)?;
    crate::core::page_form_keys(page_origin, base.as_deref(), forms_json, placement, now_ms as u64, &random.to_vec())
}
