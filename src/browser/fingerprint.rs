//! The payload fingerprint a protected form remembers its pending key by.

use wasm_bindgen::prelude::*;

use crate::core::Fingerprint;

/// The core's request [`Fingerprint`] (the one the edge compares, so "the
/// same submission" means the same thing on both sides), as hex.
#[wasm_bindgen(js_name = payloadFingerprint)]
pub fn payload_fingerprint(method: &str, target: &str, content_type: Option<String>, body: &[u8]) -> String {
    Fingerprint::of(method, target, content_type.as_deref(), body).to_hex()
}
