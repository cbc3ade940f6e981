//! The browser client's rules (SPEC §8), sans-IO: what a server's answer
//! says, when and how long to wait before a retry, and the UUIDv7 keys.
//!
//! - `answer.rs`, `said.rs`: what an idempotency server's answer says;
//! - `retry.rs`, `retry_after.rs`: the retry policy and `Retry-After`;
//! - `uuid7.rs`: keys, strictly increasing within one generator.

pub(super) mod answer;
pub(super) mod retry;
pub(super) mod retry_after;
pub(super) mod said;
pub(super) mod uuid7;

pub use answer::{AnswerKind, IN_FLIGHT_STATUS, is_replayed, reads_body};
pub use retry::{AttemptResult, DEFAULT_RETRY_STATUS_CODES, Next, RetryPolicy, RetryState};
pub use retry_after::{RetryAfterError, parse_retry_after};
pub use uuid7::Uuid7Generator;
