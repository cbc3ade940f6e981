//! The wasm module of `oncekey/worker`: the library's JavaScript host
//! bindings (`oncekey::js`, exported by wasm-bindgen from the library).
//! Nothing else lives here.

pub use oncekey::js::*;
