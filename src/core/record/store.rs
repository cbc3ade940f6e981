//! The store interface (SPEC §3): atomic calls, never a read and a separate
//! write.

use std::cell::RefCell;
use std::collections::HashMap;
use std::convert::Infallible;

use crate::core::record::codec::Record;
use crate::core::record::decision::{self, Decision, Finished, Outcome, Write};
use crate::core::record::policy::RecordPolicy;
use crate::core::record::state::{self, RecordState, ReleaseAnswer};
use crate::core::request::fingerprint::Fingerprint;
use crate::core::request::scope::RecordName;

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
    async fn finish(
        &self,
        name: &RecordName,
        attempt: u32,
        outcome: Outcome,
        now_ms: u64,
    ) -> Result<Finished, Self::Error>;
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

    /// The state of the record `name` at `now_ms`, for the admin paths
    /// ([`state::inspect`]).
    pub fn inspect(&self, name: &RecordName, now_ms: u64) -> Option<RecordState> {
        self.step(name, |found| state::inspect(found, now_ms))
    }

    /// Releases the attempt in flight on `name` ([`state::release`]);
    /// a running one only when `force` is set.
    pub fn release(&self, name: &RecordName, now_ms: u64, force: bool) -> ReleaseAnswer {
        let asked = state::ReleaseAsked { force, completed: false };
        self.step(name, |found| state::release(found, now_ms, &self.policy, asked, &[]))
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

/// Runs a future that never waits, such as a [`MemoryStore`] call (for the
/// core's tests).
#[cfg(test)]
pub(crate) fn now_or_never<F: std::future::Future>(f: F) -> F::Output {
    let mut f = std::pin::pin!(f);
    match f.as_mut().poll(&mut std::task::Context::from_waker(std::task::Waker::noop())) {
        std::task::Poll::Ready(v) => v,
        std::task::Poll::Pending => panic!("the memory store never waits"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    use crate::core::{IdempotencyKey, StoredResponse};

    #[test]
    fn applies_each_step_and_keeps_the_record() {
        let store = MemoryStore::new(RecordPolicy::default());
        let name = RecordName::new("h", &[], |_| None, &IdempotencyKey::parse("k").unwrap());
        let fp = Fingerprint([3; 32]);
        assert_eq!(store.get(&name), None);
        assert_eq!(now_or_never(store.begin(&name, fp, 0)), Ok(Decision::Execute { attempt: 1, reclaimed: false }));
        assert!(matches!(store.get(&name), Some(Record::InFlight(r)) if r.attempt == 1));
        let answer = StoredResponse { status: 201, headers: vec![], body: Some(b"ok".to_vec()) };
        assert!(matches!(
            now_or_never(store.finish(&name, 1, Outcome::Answered(answer.into()), 5)),
            Ok(Finished::Stored(_))
        ));
        assert!(
            matches!(store.get(&name), Some(Record::Completed(c)) if c.response.plain().is_some_and(|r| r.status == 201))
        );
    }
}
