//! The core's [`page_form_keys`](crate::core::page_form_keys) as
//! `withFormKeys` (src/shared/form_keys.js) calls it, for both hosts: the
//! JavaScript host's wasm exports it as `pageFormKeys` (feature `js`), the
//! Rust host hands it over as a closure.

use js_sys::Uint8Array;

use crate::core::Placement;

/// What the rewriter places for the page it reports: `page_origin` the
/// page's own origin, `report` what it saw (see
/// [`page_form_keys`](crate::core::page_form_keys)), `placement`
/// `form-end`, `page-end` or `page-cut`, the clock, random bytes (10 per
/// form). Nothing for a placement it does not know.
#[cfg_attr(all(feature = "js", target_arch = "wasm32"), wasm_bindgen::prelude::wasm_bindgen(js_name = pageFormKeys))]
pub fn page_form_keys_of(
    page_origin: &str,
    report: &str,
    placement: &str,
    now_ms: f64,
    random: &Uint8Array,
) -> Option<String> {
    let placement = Placement::named(placement)?;
    crate::core::page_form_keys(page_origin, report, placement, now_ms as u64, &random.to_vec())
}
