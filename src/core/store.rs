//! The store interface (SPEC §3): exactly two atomic calls.

use std::cell::RefCell;
use std::collections::HashMap;
use std::convert::Infallible;

use super::decision::{self, Decision, Finished, Outcome, Write};
use super::fingerprint::Fingerprint;
use super::policy::RecordPolicy;
use super::record::Record;
use super::scope::RecordName;

/// Where records live. Each call decides and writes in one atomic step on
/// the store's side: never a read followed by a separate write across a
/// round trip.
///
/// The futures are not `Send`: Workers run on one thread.
#[allow(async_fn_in_trait)]
pub trait Store {
    /// Why the store could not answer. The layer turns it into 503
    /// `store-unavailable` (or forwards unprotected when failing open).
    type Error;

    /// Runs [`decision::begin`] on the record `name` and applies its write.
    ///
    /// # Errors
    /// The store failed; nothing may be assumed about the record.
    async fn begin(&self, name: &RecordName, fingerprint: Fingerprint, now_ms: u64) -> Result<Decision, Self::Error>;

    /// Runs [`decision::finish`] on the record `name` and applies its write.
    ///
    /// # Errors
    /// The store failed; the record may still hold the lease.
    async fn finish(&self, name: &RecordName, attempt: u32, outcome: Outcome, now_ms: u64)
    -> Result<Finished, Self::Error>;
}

/// An in-memory store: a map behind a `RefCell`, atomic because nothing
/// awaits between its read and its write. For tests and single-isolate use.
#[derive(Debug, Default)]
pub struct MemoryStore {
    policy: RecordPolicy,
    records: RefCell<HashMap<RecordName, Record>>,
}

impl MemoryStore {
    /// An empty store applying `policy`.
    pub fn new(policy: RecordPolicy) -> Self {
        Self { policy, records: RefCell::default() }
    }

    /// The record stored under `name`, expired or not.
    pub fn get(&self, name: &RecordName) -> Option<Record> {
        self.records.borrow().get(name).cloned()
    }

    /// Runs one pure step on one record and applies its write.
    fn step<T>(&self, name: &RecordName, f: impl FnOnce(Option<Record>) -> decision::Step<T>) -> T {
        let mut records = self.records.borrow_mut();
        let step = f(records.get(name).cloned());
        if let Write::Put(record) = step.write {
            records.insert(*name, record);
        }
        step.answer
    }
}

impl Store for MemoryStore {
    type Error = Infallible;

    async fn begin(&self, name: &RecordName, fingerprint: Fingerprint, now_ms: u64) -> Result<Decision, Infallible> {
        Ok(self.step(name, |found| decision::begin(found, fingerprint, now_ms, &self.policy)))
    }

    async fn finish(
        &self,
        name: &RecordName,
        attempt: u32,
        outcome: Outcome,
        now_ms: u64,
    ) -> Result<Finished, Infallible> {
        Ok(self.step(name, |found| decision::finish(found, attempt, outcome, now_ms, &self.policy)))
    }
}
