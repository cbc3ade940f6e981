//! A queue message's body as bytes, for both hosts' consumers (the Rust
//! `Consumer` and `withQueueIdempotency`): one rule, so a content hash is
//! the same whichever host consumed the message.

use wasm_bindgen::{JsCast, JsValue};

use crate::core::MessageBody;

/// `body` as bytes, with its form: a string as its UTF-8, an `ArrayBuffer`
/// or any view of one (a `Uint8Array`, a `DataView`) as its bytes, any other
/// value as its JSON text. The form keeps a string apart from the object
/// its text spells (SPEC §11).
///
/// # Errors
/// A value whose JSON would not stand for it, so that two different events
/// would hash alike (SPEC §11): a `Map` or a `Set` anywhere in it (JSON
/// writes `{}`), `NaN` or an infinity (JSON writes `null`), an `undefined`,
/// function or symbol member (JSON leaves it out, or writes `null` in an
/// array), an object that is not plain — a `RegExp`, an `Error`, a class
/// instance (JSON writes its own fields, or `{}`) — a `BigInt` or a cycle
/// (JSON throws), and `undefined`, a function or a symbol as the body (no
/// JSON at all).
pub(crate) fn message_body_bytes(body: &JsValue) -> Result<MessageBody, String> {
    if let Some(text) = body.as_string() {
        return Ok(MessageBody::Text(text.into_bytes()));
    }
    if let Some(buffer) = body.dyn_ref::<js_sys::ArrayBuffer>() {
        return Ok(MessageBody::Bytes(js_sys::Uint8Array::new(buffer).to_vec()));
    }
    if js_sys::ArrayBuffer::is_view(body) {
        // `buffer`, `byteOffset` and `byteLength` are read as properties,
        // which every view has.
        let view: &js_sys::Uint8Array = body.unchecked_ref();
        return Ok(MessageBody::Bytes(
            js_sys::Uint8Array::new_with_byte_offset_and_length(&view.buffer(), view.byte_offset(), view.byte_length())
                .to_vec(),
        ));
    }
    REFUSE_COLLECTIONS.with(|replacer| {
        let text = js_sys::JSON::stringify_with_replacer(body, replacer.as_ref())
            .map_err(|e| format!("its JSON failed: {}", error_text(&e)))?;
        text.as_string()
            .map(|text| MessageBody::Value(text.into_bytes()))
            .ok_or_else(|| "it has no JSON (undefined, a function or a symbol)".to_owned())
    })
}

thread_local! {
    /// A `JSON.stringify` replacer that refuses what JSON would change
    /// silently (see [`message_body_bytes`]): made once for the isolate.
    /// It sees each value after its `toJSON` (a `Date` is its string).
    static REFUSE_COLLECTIONS: wasm_bindgen::closure::Closure<dyn FnMut(JsValue, JsValue) -> Result<JsValue, JsValue>> = {
        let plain = js_sys::Object::get_prototype_of(&js_sys::Object::new());
        wasm_bindgen::closure::Closure::new(move |key: JsValue, value: JsValue| {
            let refuse = |why: &str| Err(js_sys::Error::new(why).into());
            let member = key.as_string().is_some_and(|key| !key.is_empty());
            if value.is_instance_of::<js_sys::Map>() || value.is_instance_of::<js_sys::Set>() {
                return refuse("it holds a Map or a Set, which JSON writes as {}");
            }
            if value.as_f64().is_some_and(|n| !n.is_finite()) {
                return refuse("it holds NaN or an infinity, which JSON writes as null");
            }
            if member && (value.is_undefined() || value.is_function() || value.is_symbol()) {
                return refuse("it holds an undefined, function or symbol member, which JSON leaves out");
            }
            if value.is_object() && !value.is_function() && !js_sys::Array::is_array(&value) {
                let proto = js_sys::Object::get_prototype_of(&value);
                if !proto.is_null() && JsValue::from(proto) != JsValue::from(plain.clone()) {
                    return refuse("it holds an object that is not plain (a RegExp, an Error, a class instance)");
                }
            }
            Ok(value)
        })
    };
}

/// What a thrown value says.
fn error_text(error: &JsValue) -> String {
    error
        .dyn_ref::<js_sys::Error>()
        .map(|e| String::from(e.message()))
        .or_else(|| error.as_string())
        .unwrap_or_else(|| "it threw".to_owned())
}
