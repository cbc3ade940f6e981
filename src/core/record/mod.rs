//! The record (SPEC §3, §4): what is stored per key, its versioned
//! binary codec, and the state machine's transitions on it.
//!
//! - `codec.rs`: [`Record`] and its states, and their byte layout;
//! - `decision.rs`: [`begin`] and [`finish`], the state machine as two pure
//!   functions, and what a KV copy may replay;
//! - `state.rs`: what an operator sees of a record, and its release;
//! - `response.rs`: an answer as it is stored and replayed;
//! - `sealed.rs`: an answer sealed at rest, in its parts;
//! - `policy.rs`: how long records live, which statuses release a key;
//! - `store.rs`: the store interface, and the in-memory store tests use.

pub(super) mod codec;
pub(super) mod decision;
pub(super) mod policy;
pub(super) mod response;
pub(super) mod sealed;
pub(super) mod state;
pub(super) mod store;

pub use codec::{Completed, DecodeError, InFlight, Record, Released};
pub use decision::{
    Decision, Finished, IN_FLIGHT_RETRY_AFTER_SECS, KV_MIN_TTL_SECS, Outcome, Step, Write, abandon, begin,
    begin_holding, copy_ttl_secs, finish, replay_from_copy,
};
pub use policy::{DEFAULT_RELEASE_ON, RecordPolicy};
pub use response::{StoredResponse, cookie_jar, reads_whole};
pub use sealed::{KeyId, SEAL_OVERHEAD, SealedAnswer, SealedPart, StoredAnswer, opened, plaintext_parts};
pub use state::{RecordState, ReleaseAnswer, ReleaseAsked, inspect, release};
pub use store::{MemoryStore, Store};
