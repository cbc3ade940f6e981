//! Metrics (SPEC §12): with a Workers Analytics Engine dataset bound as
//! `IDEMPOTENCY_METRICS`, one data point per decision, and one per queue
//! consumer batch. Every column of each point is listed here, so both
//! hosts write the same columns and one SQL query reads either
//! ([`DataPoint`]).

/// One Analytics Engine data point: `writeDataPoint({blobs, doubles,
/// indexes})`.
///
/// A decision's point ([`DecisionLog::data_point`](crate::core::DecisionLog::data_point);
/// index: the outcome):
///
/// | column | value |
/// |---|---|
/// | `blob1` | outcome (`execute`, `replay`, `in-flight`, `key-reused`, `inspect`, `release`, …) |
/// | `blob2` | tier (`do`, `kv`, `origin`, `layer`) |
/// | `blob3` | finish (`stored`, `released`, `lease-kept`, `stale`, `store-failed`, or empty) |
/// | `blob4` | the record's name in hex (empty when there is none) |
/// | `double1` | attempt (0 when none) |
/// | `double2` | status answered |
/// | `double3`–`double5` | ms spent in KV, the Durable Object, the origin |
/// | `double6` | ms a duplicate waited for a running attempt |
/// | `double7` | ms the attempt's `finish` took after the caller had its answer |
///
/// A consumer batch's point ([`ConsumerStats::data_point`](crate::core::ConsumerStats::data_point); index
/// `consumer-batch`): `blob1` `consumer-batch`, `blob2` the consumer's
/// name; `double1`–`double5` its first runs, duplicates skipped, in-flight
/// conflicts, releases and reclaims.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DataPoint {
    /// `blob1`, `blob2`, …
    pub blobs: Vec<String>,
    /// `double1`, `double2`, …
    pub doubles: Vec<f64>,
    /// The sampling index (Analytics Engine takes exactly one).
    pub indexes: Vec<String>,
}
