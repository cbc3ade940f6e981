//! What both Worker hosts share, kept in one place: the Rust host
//! (`edge`, workers-rs) and the JavaScript host's wasm (`js`) each bind it,
//! so the two read the runtime's values the same way.
//!
//! - `variable_value.rs`: a `[vars]` entry's text, and which bindings exist;
//! - `page_form_keys.rs` and `form_keys.js`: the HTML rewriter that gives
//!   forms their keys (`withFormKeys`), with the core's rule as its input;
//! - `message_body.rs`: a queue message's body as bytes (feature
//!   `js-queue` on the JavaScript host).

#[cfg(any(feature = "edge", all(feature = "js-queue", target_arch = "wasm32")))]
pub(crate) mod message_body;
#[cfg(any(feature = "edge", all(feature = "js", target_arch = "wasm32")))]
pub(crate) mod page_form_keys;
#[cfg(any(feature = "edge", all(feature = "js", target_arch = "wasm32")))]
pub(crate) mod variable_value;
