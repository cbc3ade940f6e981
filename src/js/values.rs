//! Plain JavaScript values to and from the core's: objects built with
//! `Reflect.set`, header lists as `[[name, value], ...]`.

use wasm_bindgen::{JsCast, JsValue};

use crate::core::{HeaderEdit, Reply, ReplyBody};

/// An object being built, field by field.
pub(crate) struct Object(js_sys::Object);

impl Object {
    pub(crate) fn new(kind: &str) -> Self {
        Self(js_sys::Object::new()).set("kind", kind)
    }

    pub(crate) fn empty() -> Self {
        Self(js_sys::Object::new())
    }

    pub(crate) fn set(self, name: &str, value: impl Into<JsValue>) -> Self {
        // Setting a property on a plain object cannot fail.
        let _ = js_sys::Reflect::set(&self.0, &JsValue::from_str(name), &value.into());
        self
    }

    pub(crate) fn bytes(self, name: &str, bytes: &[u8]) -> Self {
        self.set(name, js_sys::Uint8Array::from(bytes))
    }

    pub(crate) fn done(self) -> JsValue {
        self.0.into()
    }
}

/// A field of a JavaScript object, if it is a string.
pub(crate) fn string(object: &JsValue, name: &str) -> Option<String> {
    js_sys::Reflect::get(object, &JsValue::from_str(name)).ok()?.as_string()
}

/// `[[name, value], ...]` as pairs, names lower-case; anything else is
/// skipped.
pub(crate) fn header_pairs(list: &JsValue) -> Vec<(String, String)> {
    let Some(list) = list.dyn_ref::<js_sys::Array>() else { return Vec::new() };
    list.iter()
        .filter_map(|pair| {
            let pair: js_sys::Array = pair.dyn_into().ok()?;
            Some((pair.get(0).as_string()?.to_ascii_lowercase(), pair.get(1).as_string()?))
        })
        .collect()
}

/// Pairs as `[[name, value], ...]`.
pub(crate) fn header_list(pairs: &[(String, String)]) -> js_sys::Array {
    pairs.iter().map(|(name, value)| js_sys::Array::of2(&name.into(), &value.into())).collect()
}

/// Header edits as `[["set", name, value] | ["remove", name], ...]`.
pub(crate) fn edit_list(edits: &[HeaderEdit]) -> js_sys::Array {
    edits
        .iter()
        .map(|edit| match edit {
            HeaderEdit::Set(name, value) => js_sys::Array::of3(&"set".into(), &(*name).into(), &value.into()),
            HeaderEdit::Remove(name) => js_sys::Array::of2(&"remove".into(), &(*name).into()),
        })
        .collect()
}

/// A reply as `{kind: "respond", status, headers, body}`; `body` is `null`
/// for the kept origin response's own body.
pub(crate) fn respond(reply: &Reply) -> JsValue {
    let object = Object::new("respond").set("status", reply.status).set("headers", header_list(&reply.headers));
    match &reply.body {
        ReplyBody::Bytes(body) => object.bytes("body", body),
        ReplyBody::Origin => object.set("body", JsValue::NULL),
    }
    .done()
}
