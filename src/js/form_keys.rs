//! The core's [`key_input`] for `withFormKeys` (src/form_keys.js), which
//! reports each form of an HTML answer as it streams (SPEC §8).

use wasm_bindgen::prelude::wasm_bindgen;

use crate::core::key_input as core_key_input;

/// What goes before a form's end tag: the hidden key field, or undefined
/// (see [`key_input`](crate::core::key_input)). `random`: 10 fresh random
/// bytes (fewer are padded with zeros).
#[wasm_bindgen(js_name = keyInput)]
pub fn key_input(
    method: Option<String>,
    submitters: Vec<String>,
    has_field: bool,
    now_ms: f64,
    random: &[u8],
) -> Option<String> {
    let mut bytes = [0; 10];
    bytes.iter_mut().zip(random).for_each(|(b, r)| *b = *r);
    core_key_input(method.as_deref(), &submitters, has_field, now_ms as u64, bytes)
}
