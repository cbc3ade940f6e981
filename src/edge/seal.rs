//! Stored answers sealed at rest (SPEC §4, `IDEMPOTENCY_SEAL_KEYS`), for
//! the Rust host: the same Web Crypto glue as the JavaScript host
//! (src/shared/seal.js), bound here. The runtime's native AES-GCM, not a
//! cipher compiled into the wasm (docs/performance.md measures both).

use wasm_bindgen::prelude::wasm_bindgen;
use worker::js_sys::{Promise, Uint8Array};
use worker::wasm_bindgen_futures::JsFuture;

use crate::core::{CipherCall, CipherOp};

#[wasm_bindgen(module = "/src/shared/seal.js")]
extern "C" {
    // `catch`: a throw comes back as an error, never unwinds through the wasm.
    #[wasm_bindgen(catch)]
    fn cipher(seal: bool, key: &[u8], aad: &[u8], data: &[u8]) -> Result<Promise, wasm_bindgen::JsValue>;
}

/// Runs `call`: the sealed or opened bytes, or why there are none.
pub(super) async fn run(call: &CipherCall) -> Result<Vec<u8>, String> {
    let seal = call.op == CipherOp::Seal;
    let promise = cipher(seal, call.key.bytes(), &call.aad, &call.data).map_err(|e| describe(&e))?;
    let bytes = JsFuture::from(promise).await.map_err(|e| describe(&e))?;
    Ok(Uint8Array::new(&bytes).to_vec())
}

/// An error as the log line says it: its name and message.
fn describe(error: &wasm_bindgen::JsValue) -> String {
    let error = worker::js_sys::Error::from(error.clone());
    format!("{}: {}", String::from(error.name()), String::from(error.message()))
}
