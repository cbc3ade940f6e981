//! The small JSON the core reads and writes, with no allocation it does
//! not need: a writer for the layer's own documents, a reader for the few
//! fields it looks for, and the pointers that name a member; and the
//! strict base64 that keys and signatures are written in.

pub(super) mod base64;
pub(super) mod cut;
pub(super) mod json_line;
pub(super) mod json_pointer;
pub(super) mod json_read;

pub use json_line::JsonObject;
pub use json_pointer::{JsonPointer, JsonPointerError};
