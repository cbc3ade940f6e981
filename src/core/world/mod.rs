//! One world (issue "One world"): the three protocol objects wired together
//! as the hosts wire them — request [`Exchange`](crate::core::Exchange)s
//! and queue [`DeliveryExchange`](crate::core::DeliveryExchange)s talking to
//! real [`Coordinator`](crate::core::Coordinator)s through the encoded store
//! calls — with a KV map, a scripted origin and handler, an operator, faults
//! and a virtual clock, in the manner of quinn-proto's `Pair`; and an
//! explorer of every interleaving of a small world, each state once, that
//! checks the properties named in `properties.rs` in each.
//!
//! Test-only: compiled for the crate's tests and under the feature `model`
//! (`make model`), never in a build that ships.
//!
//! - `state.rs`: the world, its moves, and what the hosts do between them;
//! - `properties.rs`: the properties, by name;
//! - `explore.rs`: the breadth-first explorer and its counterexamples;
//! - `mutant.rs`: the deliberately broken rules `make model MUTANT=` runs;
//! - `cipher.rs`: a stand-in for the hosts' AES-256-GCM.

pub mod cipher;
mod explore;
pub mod mutant;
mod properties;
mod state;

pub use explore::{Counterexample, Explored, explore};
pub use properties::Violation;
pub use state::{JUMP_MS, Move, Run, Script, Setup, World};

/// The small worlds `make model` explores, each exhaustively: together they
/// hold 3 callers on one key, 2 attempts, a Worker that dies mid-attempt, a
/// lost or late store reply, a lease's end, a clock jump, an operator's
/// release and forced release, a tombstone's expiry, an unreadable record,
/// answers sealed at rest, and a queue's redelivery.
pub fn small_worlds() -> Vec<Setup> {
    use Script::{NoAnswer, Status};
    let none = Setup {
        name: "",
        callers: 0,
        deliveries: 0,
        redeliveries: 0,
        script: vec![Status(201)],
        crashes: 0,
        store_faults: 0,
        late_calls: false,
        jumps: 0,
        release: None,
        evictions: 0,
        unreadable: false,
        sealed: false,
        quiet_clock: false,
    };
    vec![
        Setup {
            name: "3 callers, attempt 1 released (503), attempt 2 stored, a Worker dies, a lost store reply",
            callers: 3,
            script: vec![Status(503), Status(201)],
            crashes: 1,
            store_faults: 1,
            quiet_clock: true,
            ..none.clone()
        },
        Setup {
            name: "3 callers, a Worker dies mid-attempt, the lease ends, a clock jump, an object evicted",
            callers: 3,
            crashes: 1,
            jumps: 1,
            evictions: 1,
            quiet_clock: true,
            ..none.clone()
        },
        Setup {
            name: "2 callers, attempt 1 released, a store call late by a TTL",
            callers: 2,
            script: vec![Status(503), Status(201)],
            store_faults: 1,
            late_calls: true,
            quiet_clock: true,
            ..none.clone()
        },
        Setup {
            name: "2 callers, attempt 1 released, a late store call, any clock",
            callers: 2,
            script: vec![Status(503), Status(201)],
            store_faults: 1,
            ..none.clone()
        },
        Setup {
            name: "2 callers, an unknown outcome, a forced release, the tombstone expires, any clock",
            callers: 2,
            script: vec![NoAnswer, Status(201)],
            release: Some(true),
            ..none.clone()
        },
        Setup {
            name: "2 callers, a Worker dies, an operator's release, any clock",
            callers: 2,
            crashes: 1,
            release: Some(false),
            ..none.clone()
        },
        Setup {
            name: "3 callers, answers sealed at rest, attempt 1 released (503), a Worker dies, a lost store reply",
            callers: 3,
            script: vec![Status(503), Status(201)],
            crashes: 1,
            store_faults: 1,
            sealed: true,
            quiet_clock: true,
            ..none.clone()
        },
        Setup {
            name: "2 callers on an unreadable record, an operator's release",
            callers: 2,
            release: Some(false),
            unreadable: true,
            quiet_clock: true,
            ..none.clone()
        },
        Setup {
            name: "a message delivered twice, its handler failing once, a consumer that dies, redelivery",
            deliveries: 2,
            redeliveries: 2,
            script: vec![Status(500), Status(200)],
            crashes: 1,
            quiet_clock: true,
            ..none
        },
    ]
}

#[cfg(test)]
mod tests;
