//! Plain JavaScript values to and from the core's: objects built with
//! `Reflect.set`, header lists as arrays of pairs. The packed strings are
//! [`super::packed`]'s.

use wasm_bindgen::JsValue;

use crate::core::{DataPoint, Reply, ReplyBody};

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

/// Pairs as `[[name, value], ...]`.
pub(crate) fn header_list(pairs: &[(String, String)]) -> js_sys::Array {
    pairs.iter().map(|(name, value)| js_sys::Array::of2(&name.into(), &value.into())).collect()
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

/// An Analytics Engine data point as `writeDataPoint` takes it:
/// `{blobs, doubles, indexes}`.
pub(crate) fn point_object(point: &DataPoint) -> JsValue {
    Object::empty()
        .set("blobs", point.blobs.iter().map(JsValue::from).collect::<js_sys::Array>())
        .set("doubles", point.doubles.iter().map(|&n| JsValue::from_f64(n)).collect::<js_sys::Array>())
        .set("indexes", point.indexes.iter().map(JsValue::from).collect::<js_sys::Array>())
        .done()
}
