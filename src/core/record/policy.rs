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
    /// Origin statuses that release the key (`IDEMPOTENCY_RELEASE_ON`): a
    /// status, or a class as its first digit (`5` for every `5xx`).
    pub release_on: Vec<u16>,
}

impl RecordPolicy {
    /// Whether an answer with this status releases the key, rather than
    /// being stored.
    ///
    /// ```
    /// use oncekey::core::RecordPolicy;
    /// let policy = RecordPolicy { release_on: vec![503, 4], ..RecordPolicy::default() };
    /// assert!(policy.releases(503) && policy.releases(400) && policy.releases(499));
    /// assert!(!policy.releases(500) && !policy.releases(201) && !policy.releases(4));
    /// ```
    pub fn releases(&self, status: u16) -> bool {
        self.release_on.iter().any(|&r| if r < 10 { status >= 100 && status / 100 == r } else { r == status })
    }
}

impl Default for RecordPolicy {
    /// A 120 s lease, a 24 h TTL and the release set `408,425,429,503`.
    fn default() -> Self {
        Self { lease_ms: 120_000, ttl_ms: 86_400_000, release_on: DEFAULT_RELEASE_ON.to_vec() }
    }
}
