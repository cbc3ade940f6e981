//! `make model`: every interleaving of the small worlds of
//! `oncekey::core::world`, each property checked in every state. With
//! `MUTANT=<name>` the core runs with that rule deliberately broken, and the
//! checker must find a counterexample: it prints the trace and exits 1.

use std::process::ExitCode;
use std::time::Instant;

use oncekey::core::world::mutant::{self, Mutant};
use oncekey::core::world::{explore, small_worlds};

/// Past this many states a world is too big to call its search exhaustive.
const MAX_STATES: usize = 3_000_000;

const PROPERTIES: [&str; 7] = [
    "no-attempt-twice",
    "one-attempt-per-lease",
    "replay-is-the-stored-answer",
    "stored-answer-never-changes",
    "finish-keeps-later-attempts",
    "unreadable-fails-closed",
    "every-waiter-ends",
];

fn main() -> ExitCode {
    let name = std::env::var("MUTANT").unwrap_or_default();
    let chosen = if name.is_empty() {
        None
    } else {
        match Mutant::named(&name) {
            Some(m) => Some(m),
            None => {
                let names: Vec<_> = Mutant::ALL.iter().map(|(n, _)| *n).collect();
                eprintln!("model: no mutant named {name:?}; the mutants: {}", names.join(", "));
                return ExitCode::from(2);
            }
        }
    };
    mutant::set(chosen);
    match chosen {
        Some(_) => println!("model: the core with the mutant {name} (a rule deliberately broken)"),
        None => println!("model: the core as written"),
    }
    let (mut states, started) = (0, Instant::now());
    let only: Option<usize> = std::env::var("MODEL_ONLY").ok().and_then(|v| v.parse().ok());
    for (n, setup) in small_worlds().into_iter().enumerate() {
        if only.is_some_and(|o| o != n) {
            continue;
        }
        let t = Instant::now();
        match explore(&setup, MAX_STATES) {
            Ok(explored) => {
                states += explored.states;
                println!(
                    "  {:>9} states, {:>9} moves, {:>6} ends, depth {:>3}, {:>6.1} s  {}",
                    explored.states,
                    explored.moves,
                    explored.ends,
                    explored.depth,
                    t.elapsed().as_secs_f64(),
                    setup.name
                );
            }
            Err(counterexample) => {
                println!("  COUNTEREXAMPLE in \"{}\": {}", setup.name, counterexample.violation);
                let verbose = std::env::var_os("MODEL_VERBOSE").is_some();
                let mut world = oncekey::core::world::World::new(&setup);
                for (i, (line, mv)) in counterexample.trace.iter().zip(&counterexample.moves).enumerate() {
                    println!("    {:>3}. {line}", i + 1);
                    if verbose {
                        let _ = world.apply(*mv);
                        print!("{}", world.actors());
                    }
                }
                return ExitCode::FAILURE;
            }
        }
    }
    println!(
        "model: {states} states explored in {:.1} s, every interleaving; held: {}",
        started.elapsed().as_secs_f64(),
        PROPERTIES.join(", ")
    );
    if chosen.is_some() {
        println!("model: the mutant {name} was NOT caught");
    }
    ExitCode::SUCCESS
}
