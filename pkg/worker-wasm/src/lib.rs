//! The wasm module of `oncekey/worker`: the library's JavaScript host
//! bindings (`oncekey::js`, exported by wasm-bindgen from the library).
//! Nothing else lives here but the module's allocator.

// The bindings exist for wasm32 only: natively (`cargo build --workspace`,
// clippy) this crate is empty.
#[cfg(target_arch = "wasm32")]
pub use oncekey::js::*;

/// The module's allocator: talc, which takes memory from the wasm
/// `memory.grow` as it needs it. Smaller than Rust's default (dlmalloc) by
/// about 2 KB gzip, at the same CPU (docs/performance.md, "Bundle size").
#[cfg(target_arch = "wasm32")]
#[global_allocator]
// SAFETY: `new_global` needs single-threaded wasm: an isolate runs this
// module on one thread (workerd, Node for the command, wasm-bindgen's
// `--target web` glue, no shared memory).
static ALLOCATOR: talc::TalckWasm = unsafe { talc::TalckWasm::new_global() };
