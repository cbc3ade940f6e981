//! Deliberately broken rules, to show the checker catches what it claims
//! (`make model MUTANT=<name>`). The core's code reads them through its
//! `mutant!` macro, which is `false` unless the test-only feature `model`
//! is on: a build that ships holds none of them.

use std::cell::Cell;

/// A broken rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mutant {
    /// `finish` stores its outcome whatever attempt the record holds now.
    FinishIgnoresAttempt,
    /// A parked `begin` waits and decides on the record it parked on.
    WaiterDecidesOnStaleRecord,
    /// A release decides every parked `begin` on the released record.
    ReleaseWakesEveryWaiter,
    /// An operator's release forgets the attempt number it released.
    TombstoneForgetsAttempt,
    /// A lease is taken over from half its length.
    ReclaimBeforeLeaseEnd,
    /// `abandon` releases whatever attempt is running.
    AbandonIgnoresReservation,
}

impl Mutant {
    /// Every mutant, by its name.
    pub const ALL: [(&'static str, Mutant); 6] = [
        ("finish-ignores-attempt", Mutant::FinishIgnoresAttempt),
        ("waiter-decides-on-stale-record", Mutant::WaiterDecidesOnStaleRecord),
        ("release-wakes-every-waiter", Mutant::ReleaseWakesEveryWaiter),
        ("tombstone-forgets-attempt", Mutant::TombstoneForgetsAttempt),
        ("reclaim-before-lease-end", Mutant::ReclaimBeforeLeaseEnd),
        ("abandon-ignores-reservation", Mutant::AbandonIgnoresReservation),
    ];

    /// The mutant named `name`.
    pub fn named(name: &str) -> Option<Self> {
        Self::ALL.iter().find(|(n, _)| *n == name).map(|(_, m)| *m)
    }
}

thread_local! {
    static ACTIVE: Cell<Option<Mutant>> = const { Cell::new(None) };
}

/// Turns `mutant` on for this thread (`None`: the core as written).
pub fn set(mutant: Option<Mutant>) {
    ACTIVE.with(|active| active.set(mutant));
}

/// Whether `mutant` is on.
pub fn active(mutant: Mutant) -> bool {
    ACTIVE.with(|active| active.get() == Some(mutant))
}
