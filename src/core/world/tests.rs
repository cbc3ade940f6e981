//! Rows of the world: the small worlds hold every property, and a broken
//! rule is caught with a trace (the mutants need the feature `model`).

use super::*;
#[cfg(target_arch = "wasm32")]
use wasm_bindgen_test::wasm_bindgen_test as test;

/// The small world whose name starts with `name`.
fn world(name: &str) -> Setup {
    small_worlds().into_iter().find(|w| w.name.starts_with(name)).expect("a world by that name")
}

#[test]
fn a_single_caller_runs_once_and_its_answer_is_stored() {
    let setup = Setup { name: "one", callers: 1, ..world("3 callers, a Worker dies") };
    let setup = Setup { crashes: 0, jumps: 0, ..setup };
    let explored = explore(&setup, 10_000).expect("every property holds");
    assert!(explored.states > 3 && explored.ends >= 1, "{explored:?}");
}

#[test]
fn every_interleaving_of_three_callers_with_no_fault_holds_every_property() {
    let setup = Setup { crashes: 0, store_faults: 0, ..world("3 callers, attempt 1 released") };
    let explored = explore(&setup, 100_000).expect("every property holds");
    // Three callers race for one key: many interleavings, several endings.
    assert!(explored.states > 100 && explored.ends > 10, "{explored:?}");
}

#[test]
fn an_unreadable_record_answers_503_until_an_operator_releases_it() {
    let setup = Setup { release: None, ..world("2 callers on an unreadable record") };
    let mut world = World::new(&setup);
    // A caller sends; its begin arrives: the object cannot read the record.
    for mv in [Move::Send, Move::Arrive(0)] {
        world.apply(mv).expect("no property broken");
    }
    assert!(world.runs.is_empty(), "nothing ran");
    assert!(world.actors().contains("Done"), "the caller was answered: {}", world.actors());
    // Were the record readable as nothing, the begin would have run it.
    let fresh = Setup { unreadable: false, ..setup };
    let mut world = World::new(&fresh);
    for mv in [Move::Send, Move::Arrive(0)] {
        world.apply(mv).expect("no property broken");
    }
    assert_eq!(world.runs.len(), 1);
}

#[test]
fn a_counterexample_names_its_property_and_every_move_from_the_start() {
    // No caller ever answered: the world stops with one still waiting.
    let setup = Setup { callers: 1, store_faults: 0, crashes: 0, ..world("3 callers, attempt 1 released") };
    let mut world = World::new(&setup);
    world.apply(Move::Send).expect("sent");
    let waiting = world.every_actor_ended().expect_err("the caller waits for its begin");
    assert_eq!(waiting.property, "every-waiter-ends");
}

#[test]
fn sealed_answers_are_stored_sealed_and_every_replay_opens_to_the_stored_answer() {
    let setup = Setup { crashes: 0, store_faults: 0, ..world("3 callers, answers sealed at rest") };
    let explored = explore(&setup, 100_000).expect("every property holds, the replays' opened");
    assert!(explored.states > 100 && explored.ends > 10, "{explored:?}");
    // Down one path, the first move each time: every answer stored is sealed.
    let mut world = World::new(&setup);
    let mut answers = Vec::new();
    while let Some(mv) = world.moves().first().copied() {
        world.apply(mv).expect("no property broken");
        for record in world.stored_records() {
            if let crate::core::Record::Completed(c) = record {
                answers.push(c.response.sealed_by().is_some());
            }
        }
    }
    assert!(!answers.is_empty() && answers.iter().all(|sealed| *sealed), "{answers:?}");
}
