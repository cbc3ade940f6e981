//! The core's [`key_input`](crate::core::key_input) for `withFormKeys`
//! (src/form_keys.js), which reports each form of an HTML answer as it
//! streams (SPEC §8).

use js_sys::{Array, Uint8Array};
use wasm_bindgen::prelude::wasm_bindgen;

/// What goes before a form's end tag: the hidden key field, or undefined
/// (see [`key_input`](crate::core::key_input)). `submitters`: the
/// `formmethod` of each control; `random`: 10 fresh random bytes.
#[wasm_bindgen(js_name = keyInput)]
pub fn key_input(
    method: Option<String>,
    submitters: &Array,
    has_field: bool,
    now_ms: f64,
    random: &Uint8Array,
) -> Option<String> {
    crate::form_key_input::key_input_of(method, submitters, has_field, now_ms, random)
}
