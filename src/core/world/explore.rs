//! The explorer: every interleaving of a small world, breadth first, each
//! state once. A broken property ends the search with the shortest trace
//! that breaks it.

use std::collections::hash_map::DefaultHasher;
use std::collections::{HashSet, VecDeque};
use std::hash::{Hash, Hasher};

use super::properties::Violation;
use super::state::{Move, Setup, World};

/// What an exhaustive search covered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Explored {
    /// Distinct states reached.
    pub states: usize,
    /// Moves performed (each from a state seen for the first time).
    pub moves: usize,
    /// States where nothing more could happen.
    pub ends: usize,
    /// The longest path from the start, in moves.
    pub depth: usize,
}

/// A property broken, and the moves that break it from the start.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Counterexample {
    /// The property and how it broke.
    pub violation: Violation,
    /// Each move, in words, in order; the last one broke it.
    pub trace: Vec<String>,
    /// The same moves, to replay them.
    pub moves: Vec<Move>,
}

/// Explores every interleaving of `setup`'s world, up to `max_states`
/// distinct states (past it the search is not exhaustive: an error).
///
/// # Errors
/// A property broke (its shortest trace), or the bound was reached.
pub fn explore(setup: &Setup, max_states: usize) -> Result<Explored, Box<Counterexample>> {
    let start = World::new(setup);
    let mut seen = HashSet::new();
    seen.insert(key(&start));
    // Each state's parent and the move that reached it, for traces.
    let mut steps: Vec<(usize, String, Move)> = vec![(0, String::new(), Move::Tick)];
    let mut queue = VecDeque::from([(start, 0usize, 0usize)]);
    let mut explored = Explored { states: 1, moves: 0, ends: 0, depth: 0 };
    let trace = |steps: &[(usize, String, Move)], mut at: usize, last: (String, Move)| {
        let (mut lines, mut moves) = (vec![last.0], vec![last.1]);
        while at != 0 {
            lines.push(steps[at].1.clone());
            moves.push(steps[at].2);
            at = steps[at].0;
        }
        lines.reverse();
        moves.reverse();
        (lines, moves)
    };
    while let Some((world, at, depth)) = queue.pop_front() {
        explored.depth = explored.depth.max(depth);
        let moves = world.moves();
        if moves.is_empty() {
            explored.ends += 1;
            if let Err(violation) = world.every_actor_ended() {
                let (trace, moves) = trace(&steps, at, ("(nothing more happens)".into(), Move::Tick));
                return Err(Box::new(Counterexample { violation, trace, moves }));
            }
        }
        for mv in moves {
            let mut next = world.clone();
            explored.moves += 1;
            let line = world.describe(mv);
            match next.apply(mv) {
                Ok(()) => {
                    if seen.insert(key(&next)) {
                        explored.states += 1;
                        if explored.states > max_states {
                            return Err(Box::new(Counterexample {
                                violation: Violation::new(
                                    "exhaustive",
                                    format!("more than {max_states} states: the search stopped"),
                                ),
                                trace: Vec::new(),
                                moves: Vec::new(),
                            }));
                        }
                        steps.push((at, line, mv));
                        queue.push_back((next, steps.len() - 1, depth + 1));
                    }
                }
                Err(violation) => {
                    let (trace, moves) = trace(&steps, at, (line, mv));
                    return Err(Box::new(Counterexample { violation, trace, moves }));
                }
            }
        }
    }
    Ok(explored)
}

fn key(world: &World) -> u64 {
    let mut hasher = DefaultHasher::new();
    world.state().hash(&mut hasher);
    hasher.finish()
}
