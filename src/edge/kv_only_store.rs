//! `IDEMPOTENCY_CONSISTENCY=kv`: the core's [`Store`] over Workers KV alone,
//! for accounts without Durable Objects. Replay only: `begin` decides on the
//! copy KV returns and keeps the reservation in this request's memory, not
//! in KV, so two concurrent duplicates can both run (KV has no
//! compare-and-set); `finish` writes a completed answer to KV for later
//! retries.

use std::cell::RefCell;

use crate::core::{
    Decision, Fingerprint, Finished, Outcome, Record, RecordName, RecordPolicy, Store, Write, begin, finish,
};

use super::deadline::within;
use super::durable_store::StoreError;
use super::kv_replay::KvReplay;

/// One request's view of the KV-only store.
#[derive(Debug)]
pub struct KvOnlyStore {
    kv: KvReplay,
    policy: RecordPolicy,
    timeout_ms: u64,
    /// The reservation `begin` made, for `finish`.
    reserved: RefCell<Option<Record>>,
}

impl KvOnlyStore {
    /// A store over `kv`, applying `policy`, giving up on a read after
    /// `timeout_ms`.
    pub fn new(kv: KvReplay, policy: RecordPolicy, timeout_ms: u64) -> Self {
        Self { kv, policy, timeout_ms, reserved: RefCell::new(None) }
    }
}

impl Store for KvOnlyStore {
    type Error = StoreError;

    async fn begin(&self, name: &RecordName, fingerprint: Fingerprint, now_ms: u64) -> Result<Decision, StoreError> {
        let found = within(self.timeout_ms, self.kv.read(name, now_ms))
            .await
            .ok_or(StoreError::Timeout(self.timeout_ms))?
            .map_err(|e| StoreError::Failed(e.to_string()))?;
        let step = begin(found, fingerprint, now_ms, &self.policy);
        if let Write::Put(record) = step.write {
            *self.reserved.borrow_mut() = Some(record);
        }
        Ok(step.answer)
    }

    /// Finishes on the reservation; a completed answer is written to KV (a
    /// failed write leaves later retries unprotected, as a missed KV
    /// propagation would, and does not change the caller's answer).
    async fn finish(
        &self,
        name: &RecordName,
        attempt: u32,
        outcome: Outcome,
        now_ms: u64,
    ) -> Result<Finished, StoreError> {
        let reserved = self.reserved.borrow_mut().take();
        let step = finish(reserved, attempt, outcome, now_ms, &self.policy);
        if let Finished::Stored(completed) = &step.answer {
            let _ = self.kv.write(name, completed, now_ms).await;
        }
        Ok(step.answer)
    }
}
