//! The wasm module of the npm package: the library's browser bindings
//! (`oncekey::browser`, exported by wasm-bindgen from the library) linked
//! with a small allocator. Nothing else lives here.

// The bindings exist for wasm32 only: natively (`cargo build --workspace`,
// clippy) this crate is empty.
#[cfg(target_arch = "wasm32")]
pub use oncekey::browser::*;

#[cfg(target_arch = "wasm32")]
#[global_allocator]
static ALLOCATOR: lol_alloc::AssumeSingleThreaded<lol_alloc::FreeListAllocator> =
    // SAFETY: a wasm32 module without threads runs on one thread.
    unsafe { lol_alloc::AssumeSingleThreaded::new(lol_alloc::FreeListAllocator::new()) };
