//! The wasm module of `oncekey/worker`: the library's JavaScript host
//! bindings (`oncekey::js`, exported by wasm-bindgen from the library).
//! Nothing else lives here.

// The bindings exist for wasm32 only: natively (`cargo build --workspace`,
// clippy) this crate is empty.
#[cfg(target_arch = "wasm32")]
pub use oncekey::js::*;
