//! The boundary's packed encodings, all of them here (their JavaScript
//! side is `pkg/src/worker/http.js`): values that cross on every request
//! cross as one string of `\n`-ended fields rather than one crossing each
//! (bench/RESULTS.md: the wasm-bindgen glue costs about what the core
//! does). No field holds a line break: each is a method, a URL, a header's
//! name or value, or an [`EditOp`].
//!
//! - the request's head ([`unpack_head`]), which of its parts came said by
//!   [`HeadFlag`]s;
//! - headers, `name\nvalue\n...` ([`pack_headers`], [`unpack_headers`]);
//! - header edits, `op\nname\nvalue\n...` with `op` an [`EditOp`]'s number
//!   ([`pack_edits`]).

use wasm_bindgen::prelude::*;

use crate::core::{HeaderEdit, RequestHead};

/// Which parts of the request's head came, as the bits of `start`'s
/// `flags` (`HeadFlag.Key | HeadFlag.Origin`, ...).
#[wasm_bindgen]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HeadFlag {
    /// An `Idempotency-Key` header: its field holds it.
    Key = 1,
    /// An `Origin` header: its field holds it.
    Origin = 2,
    /// An `Access-Control-Request-Method` header: its field holds it.
    PreflightMethod = 4,
    /// An `Access-Control-Request-Headers` header: its field holds it.
    PreflightHeaders = 8,
    /// An `Idempotency-Attempt` header (no field: it is only removed).
    Attempt = 16,
    /// An Analytics Engine dataset is bound (no field).
    Metrics = 32,
}

impl HeadFlag {
    /// Whether `flags` has this one.
    fn in_(self, flags: u32) -> bool {
        flags & self as u32 != 0
    }
}

/// What a header edit does, as the `op` field of [`pack_edits`] gives it
/// (its number: `EditOp.Set`, ...).
#[wasm_bindgen]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EditOp {
    /// Sets the header `name` to `value`.
    Set = 0,
    /// Removes the header `name` (its value field is empty).
    Remove = 1,
}

impl EditOp {
    /// The op's field: its number, as text.
    fn field(self) -> &'static str {
        const FIELDS: [&str; 2] = ["0", "1"];
        FIELDS[self as usize]
    }
}

/// The request's head from `start`'s packed string and `flags`: the
/// method, the URL as the runtime serialises it (the core splits it into
/// host, path and query), the `Idempotency-Key`, `Origin`,
/// `Access-Control-Request-Method` and `Access-Control-Request-Headers`
/// fields (each empty when its [`HeadFlag`] is not set), then the name and
/// value of each header the layer reads that is present. `reservation`:
/// the request's reservation number.
pub(crate) fn unpack_head(head: &str, flags: u32, reservation: u64) -> RequestHead {
    let mut fields = head.split_terminator('\n');
    let mut next = || fields.next().unwrap_or_default().to_owned();
    let (method, url) = (next(), next());
    let mut optional = |flag: HeadFlag| {
        let field = next();
        flag.in_(flags).then_some(field)
    };
    let (key, origin) = (optional(HeadFlag::Key), optional(HeadFlag::Origin));
    let (preflight_method, preflight_headers) =
        (optional(HeadFlag::PreflightMethod), optional(HeadFlag::PreflightHeaders));
    let (host, path, query) = RequestHead::url_parts(&url);
    RequestHead {
        method,
        host: host.to_owned(),
        path: path.to_owned(),
        query: query.map(str::to_owned),
        key: key.map(String::into_bytes),
        origin,
        own_origin: RequestHead::url_origin(&url),
        preflight_method,
        preflight_headers,
        has_attempt_header: HeadFlag::Attempt.in_(flags),
        headers: pairs_of(fields),
        reservation,
        metrics: HeadFlag::Metrics.in_(flags),
    }
}

/// Headers packed as `name\nvalue\n...`, as pairs with lower-case names.
pub(crate) fn unpack_headers(packed: &str) -> Vec<(String, String)> {
    pairs_of(packed.split_terminator('\n'))
}

/// Pairs packed as `name\nvalue\n...`.
pub(crate) fn pack_headers(pairs: &[(String, String)]) -> String {
    packed(pairs.iter().map(|(name, value)| [name.as_str(), value.as_str()]))
}

/// Header edits packed as `op\nname\nvalue\n...`.
pub(crate) fn pack_edits(edits: &[HeaderEdit]) -> String {
    packed(edits.iter().map(|edit| match edit {
        HeaderEdit::Set(name, value) => [EditOp::Set.field(), name, value.as_str()],
        HeaderEdit::Remove(name) => [EditOp::Remove.field(), name, ""],
    }))
}

/// Fields `name, value, ...` as pairs with lower-case names.
fn pairs_of<'a>(mut parts: impl Iterator<Item = &'a str>) -> Vec<(String, String)> {
    let mut pairs = Vec::new();
    while let (Some(name), Some(value)) = (parts.next(), parts.next()) {
        pairs.push((name.to_ascii_lowercase(), value.to_owned()));
    }
    pairs
}

/// Lists of fields as one string, each field followed by `\n`.
fn packed<'a, const N: usize>(items: impl Iterator<Item = [&'a str; N]>) -> String {
    let mut out = String::new();
    for fields in items {
        for field in fields {
            out.push_str(field);
            out.push('\n');
        }
    }
    out
}
