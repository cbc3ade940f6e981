//! The coordinator (SPEC §3, §4): the protocol one Durable Object runs per
//! record, as a sans-IO object. The object ([`Coordinator`]) takes each
//! store call's bytes, decides it on the record as it is at that moment,
//! parks a duplicate of a running attempt until the record changes, and
//! runs the expiry alarm; the wire ([`StoreCall`]) is what a host sends it
//! and what each call does to a record; [`on_alarm`] is the alarm's rule.
//!
//! - `object.rs`: the object, its waiters, its alarm, crossed abandons;
//! - `wire.rs`: the store calls and their replies as bytes, and each call's
//!   step on a record (`StoreCall::run`, how long a call waits);
//! - `expiry.rs`: what the alarm does with the record it finds.

pub(super) mod expiry;
pub(super) mod object;
pub(super) mod wire;

pub use expiry::{Expiry, on_alarm};
pub use object::{CallId, CallReply, Coordinator, Effects, MAX_WAITERS, RECORD_KEY};
pub use wire::{
    StoreCall, decode_decision, decode_finished, decode_inspected, decode_released, encode_decision, encode_finished,
    encode_inspected, encode_released,
};
