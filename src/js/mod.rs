//! The JavaScript host's bindings (feature `js`, wasm32 only): the core's
//! [`Exchange`](crate::core::Exchange) and the coordinator's steps for the
//! `oncekey/worker` npm entry (SPEC §11), built into its wasm by
//! `pkg/worker-wasm`.
//!
//! Thin wasm-bindgen wrappers, deciding nothing: [`Layer`] validates the
//! options through the core's configuration, [`JsExchange`] turns each core
//! [`Action`](crate::core::Action) into a kind and a few fields the
//! JavaScript glue reads and performs (store calls go to the coordinator as encoded
//! [`StoreCall`](crate::core::StoreCall)s over RPC) and each result back
//! into the core's values; [`JsCoordinator`] runs the
//! coordinator's atomic step inside a JavaScript Durable Object;
//! `record_name` names a key's record and `config_problems` checks a
//! configuration offline, for the `oncekey` command (which loads the
//! `oncekey/worker` wasm: both are left out of the proxy's with the queue);
//! [`JsConsumer`] and [`JsDelivery`] carry the core's queue consumer
//! protocol for `withQueueIdempotency` (feature `js-queue`: the proxy's
//! build leaves them out); `pageFormKeys` (src/shared/page_form_keys.rs, shared with
//! the Rust host) gives an HTML answer's forms their keys. What crosses
//! packed (the request's head, headers, header edits) is packed and
//! unpacked in [`packed`] only, its flags and ops wasm-bindgen enums.

#[cfg(feature = "js-queue")]
mod check;
mod coordinator;
mod exchange;
mod layer;
mod options;
mod packed;
#[cfg(feature = "js-queue")]
mod queue;
mod queue_counters;
#[cfg(feature = "js-queue")]
mod record_name;
mod values;

#[cfg(feature = "js-queue")]
pub use check::{JsBindingKind, binding_method, config_problems};
pub use coordinator::{JsCoordinator, misconfigured_reply};
pub use exchange::JsExchange;
pub use layer::{Layer, OriginKind};
pub use packed::{EditOp, HeadFlag};
#[cfg(feature = "js-queue")]
pub use queue::{DeliveryKind, HandlerEnd, JsConsumer, JsDelivery};
pub use queue_counters::{add_counts, counts_of};
#[cfg(feature = "js-queue")]
pub use queue_counters::{binding_names, counters_object};
#[cfg(feature = "js-queue")]
pub use record_name::{delivery_record_name, record_name};
