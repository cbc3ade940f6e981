//! A queue message's body as bytes, for both hosts' consumers (the Rust
//! `Consumer` and `withQueueIdempotency`): one rule, so a content hash is
//! the same whichever host consumed the message.

use wasm_bindgen::{JsCast, JsValue};

/// `body` as bytes: a string as its UTF-8, an `ArrayBuffer` or any view of
/// one (a `Uint8Array`, a `DataView`) as its bytes, any other value as its
/// JSON text.
pub(crate) fn message_body_bytes(body: &JsValue) -> Vec<u8> {
    if let Some(text) = body.as_string() {
        return text.into_bytes();
    }
    if let Some(buffer) = body.dyn_ref::<js_sys::ArrayBuffer>() {
        return js_sys::Uint8Array::new(buffer).to_vec();
    }
    if js_sys::ArrayBuffer::is_view(body) {
        // `buffer`, `byteOffset` and `byteLength` are read as properties,
        // which every view has.
        let view: &js_sys::Uint8Array = body.unchecked_ref();
        return js_sys::Uint8Array::new_with_byte_offset_and_length(
            &view.buffer(),
            view.byte_offset(),
            view.byte_length(),
        )
        .to_vec();
    }
    js_sys::JSON::stringify(body).ok().and_then(|s| s.as_string()).unwrap_or_default().into_bytes()
}
