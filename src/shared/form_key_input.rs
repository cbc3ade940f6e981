//! The core's [`key_input`](crate::core::key_input) as `withFormKeys`
//! (src/shared/form_keys.js) calls it, for both hosts: the JavaScript host's wasm
//! exports it as `keyInput` (feature `js`), the Rust host hands it over as a
//! closure.

use js_sys::{Array, Uint8Array};

/// What goes before a form's end tag, from what the rewriter saw of the
/// form: its `method`, its controls' `formmethod`s (strings), its `enctype`
/// and its controls' `formenctype`s (strings), whether it has the key
/// field, the clock, random bytes (the first 10 are used; fewer are padded
/// with zeros).
#[cfg_attr(all(feature = "js", target_arch = "wasm32"), wasm_bindgen::prelude::wasm_bindgen(js_name = keyInput))]
pub fn key_input_of(
    method: Option<String>,
    submitters: &Array,
    enctypes: &Array,
    has_field: bool,
    now_ms: f64,
    random: &Uint8Array,
) -> Option<String> {
    let strings = |list: &Array| -> Vec<String> { list.iter().filter_map(|s| s.as_string()).collect() };
    let mut bytes = [0; 10];
    let len = (random.length() as usize).min(bytes.len());
    random.subarray(0, len as u32).copy_to(&mut bytes[..len]);
    crate::core::key_input(method.as_deref(), &strings(submitters), &strings(enctypes), has_field, now_ms as u64, bytes)
}
