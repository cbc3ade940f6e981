//! How long records live and which answers release a key: policy as data.

/// Statuses that mean "not done, try later" (SPEC §3): the key is released.
pub const DEFAULT_RELEASE_ON: [u16; 4] = [408, 425, 429, 503];

/// The record lifetimes and release set that [`begin`](crate::core::begin) and
/// [`finish`](crate::core::finish) apply.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordPolicy {
    /// How long an attempt holds the key, in ms (`IDEMPOTENCY_LEASE_SECONDS`).
    pub lease_ms: u64,
    /// How long a completed answer or a release tombstone is kept, in ms
    /// (`IDEMPOTENCY_TTL_SECONDS`).
    pub ttl_ms: u64,
    /// Origin statuses that release the key (`IDEMPOTENCY_RELEASE_ON`).
    pub release_on: Vec<u16>,
}

impl RecordPolicy {
    /// Whether an answer with this status releases the key, rather than
    /// being stored.
    pub fn releases(&self, status: u16) -> bool {
        self.release_on.contains(&status)
    }
}

impl Default for RecordPolicy {
    /// A 120 s lease, a 24 h TTL and the release set `408,425,429,503`.
    fn default() -> Self {
        Self { lease_ms: 120_000, ttl_ms: 86_400_000, release_on: DEFAULT_RELEASE_ON.to_vec() }
    }
}
