//! Workers KV: copies of completed answers beside the Durable Object
//! (`IDEMPOTENCY_KV_REPLAY`: read when the object fails, or before it), and
//! the only store in `IDEMPOTENCY_CONSISTENCY=kv` mode.
//!
//! A copy is only ever trusted to say "here is the answer"
//! ([`crate::core::replay_from_copy`]): a miss, an expired or undecodable
//! copy, or a KV error is no answer (KV is eventually consistent and caches
//! misses).

use worker::{KvError, KvStore};

use crate::core::{Completed, Record, RecordName, copy_ttl_secs};

/// The namespace bound as `IDEMPOTENCY_KV`, keyed by record name (hex).
#[derive(Clone, Debug)]
pub struct KvReplay {
    kv: KvStore,
}

impl KvReplay {
    /// The tier over `kv`.
    pub fn new(kv: KvStore) -> Self {
        Self { kv }
    }

    /// The record copy stored under `name` and still live at `now_ms`.
    /// Bytes that are not a record read as absent.
    ///
    /// # Errors
    /// KV failed; the caller treats that as "unknown", never as "absent".
    pub async fn read(&self, name: &RecordName, now_ms: u64) -> Result<Option<Record>, KvError> {
        let bytes = self.kv.get(&name.to_hex()).bytes().await?;
        Ok(bytes.and_then(|b| Record::decode(&b).ok()).and_then(|r| r.live(now_ms)))
    }

    /// Copies a completed record, expiring with it (never under KV's 60 s
    /// floor; reads check `expires_at` themselves).
    ///
    /// # Errors
    /// KV failed; the object still holds the record.
    pub async fn write(&self, name: &RecordName, completed: &Completed, now_ms: u64) -> Result<(), KvError> {
        let ttl = copy_ttl_secs(completed.expires_at, now_ms);
        let bytes = Record::Completed(completed.clone()).encode();
        self.kv.put_bytes(&name.to_hex(), &bytes)?.expiration_ttl(ttl).execute().await
    }
}
