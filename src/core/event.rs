//! Exactly-once event handling (queue consumers) on the same state machine.
//!
//! Events cannot be refused and queues deliver at least once. A consumer
//! names each message by a key (its id, a hash of its content, or a key the
//! user derives), runs [`begin`](super::begin) on it, and maps the decision
//! to what the queue should do with the message.

use serde_json::Value;

use super::decision::{Decision, Finished};
use super::digest::{PartHasher, hex};

/// How a message is named for deduplication.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EventKeyStrategy {
    /// The queue's message id (default): redeliveries of one message are
    /// duplicates; two sends of the same event are not.
    MessageId,
    /// SHA-256 of the body with the named top-level JSON fields left out
    /// (timestamps, event ids): the same content sent twice is one event.
    ContentHash {
        /// Top-level fields ignored when hashing.
        ignore_fields: Vec<String>,
    },
    /// A key the user derives from the message.
    Custom,
}

/// The content key of a message body: SHA-256 over its canonical JSON
/// (object keys sorted, `ignore_fields` removed from the top level). A body
/// that is not JSON is hashed as raw bytes.
///
/// ```
/// use oncekey::core::content_key;
/// let a = content_key(br#"{"orderId":"o1","at":"10:00","points":5}"#, &["at"]);
/// let b = content_key(br#"{"points":5, "at":"10:01","orderId":"o1"}"#, &["at"]);
/// assert_eq!(a, b);
/// assert_ne!(a, content_key(br#"{"orderId":"o2","at":"10:00","points":5}"#, &["at"]));
/// ```
pub fn content_key(body: &[u8], ignore_fields: &[&str]) -> String {
    let mut hasher = PartHasher::new("oncekey/event/1");
    match serde_json::from_slice::<Value>(body) {
        Ok(mut value) => {
            if let Value::Object(map) = &mut value {
                for field in ignore_fields {
                    map.remove(*field);
                }
            }
            // serde_json's map is ordered by key: this is canonical.
            hasher.part(b"json").part(value.to_string().as_bytes());
        }
        Err(_) => {
            hasher.part(b"raw").part(body);
        }
    }
    hex(&hasher.finish())
}

/// What the consumer does with a message after `begin`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Delivery {
    /// Run the handler as attempt `attempt`, then `finish` it.
    Run {
        /// The attempt number.
        attempt: u32,
    },
    /// Already handled: acknowledge without running the handler.
    AckDuplicate,
    /// Another consumer holds the key: retry the message after a delay,
    /// never acknowledge it.
    RetryLater {
        /// Seconds before the queue redelivers it.
        delay_secs: u32,
    },
}

impl Delivery {
    /// Maps a store decision to a queue action. A key reused with other
    /// content is treated as handled: the event under that key already ran.
    pub fn from_decision(decision: &Decision) -> Self {
        match decision {
            Decision::Execute { attempt, .. } => Self::Run { attempt: *attempt },
            Decision::Replay(_) | Decision::Mismatch => Self::AckDuplicate,
            Decision::InFlight { retry_after_secs } => Self::RetryLater { delay_secs: *retry_after_secs },
        }
    }
}

/// What the consumer does with a message after its handler ran and the
/// attempt was finished.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Settle {
    /// The handler succeeded: acknowledge.
    Ack,
    /// The handler failed and the key was released: retry with backoff.
    Retry {
        /// Seconds before the queue redelivers it.
        delay_secs: u32,
    },
}

/// Settles a message: acknowledged once its result is stored (or once a
/// later attempt took over, which will settle it), retried with exponential
/// backoff (1, 2, 4 … seconds, at most `max_delay_secs`) when its handler
/// failed.
pub fn settle(finished: &Finished, handler_ok: bool, attempt: u32, max_delay_secs: u32) -> Settle {
    match finished {
        Finished::Stored(_) => Settle::Ack,
        Finished::Stale if handler_ok => Settle::Ack,
        Finished::Released | Finished::LeaseKept | Finished::Stale => {
            let delay = 1u32.checked_shl(attempt.saturating_sub(1)).unwrap_or(u32::MAX);
            Settle::Retry { delay_secs: delay.min(max_delay_secs) }
        }
    }
}

/// Counters a consumer keeps, readable by the user.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ConsumerStats {
    /// Messages whose handler ran for the first time under their key.
    pub first_runs: u64,
    /// Messages acknowledged as duplicates without running the handler.
    pub duplicates_skipped: u64,
    /// Messages retried because another consumer held their key.
    pub in_flight_conflicts: u64,
    /// Handler failures that released their key for a retry.
    pub releases: u64,
}

impl ConsumerStats {
    /// Counts one delivery decision.
    pub fn count_delivery(&mut self, delivery: Delivery) {
        match delivery {
            Delivery::Run { .. } => self.first_runs += 1,
            Delivery::AckDuplicate => self.duplicates_skipped += 1,
            Delivery::RetryLater { .. } => self.in_flight_conflicts += 1,
        }
    }

    /// Counts one settled attempt.
    pub fn count_finish(&mut self, finished: &Finished) {
        if *finished == Finished::Released {
            self.releases += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    use crate::core::{Completed, Fingerprint, StoredResponse};

    #[test]
    fn content_key_ignores_order_whitespace_and_named_fields() {
        let a = content_key(br#"{"customerId":"c1","orderId":"o1","eventId":"e1"}"#, &["eventId"]);
        let b = content_key(br#"{ "orderId": "o1", "customerId": "c1", "eventId": "e2" }"#, &["eventId"]);
        assert_eq!(a, b);
        assert_ne!(a, content_key(br#"{"customerId":"c1","orderId":"o1","eventId":"e1"}"#, &[]));
        assert_ne!(a, content_key(br#"{"customerId":"c2","orderId":"o1","eventId":"e1"}"#, &["eventId"]));
        // Only the top level is filtered.
        assert_ne!(
            content_key(br#"{"o":{"eventId":1}}"#, &["eventId"]),
            content_key(br#"{"o":{"eventId":2}}"#, &["eventId"])
        );
        assert_eq!(a.len(), 64);
    }

    #[test]
    fn content_key_hashes_non_json_as_bytes() {
        assert_eq!(content_key(b"not json", &[]), content_key(b"not json", &["x"]));
        assert_ne!(content_key(b"not json", &[]), content_key(b"not json!", &[]));
        assert_ne!(content_key(b"\"s\"", &[]), content_key(b"s", &[]));
    }

    #[test]
    fn deliveries_follow_the_decision() {
        let done = Completed {
            fingerprint: Fingerprint([0; 32]),
            attempt: 1,
            response: StoredResponse { status: 200, headers: vec![], body: None },
            expires_at: 1,
        };
        let cases = [
            (Decision::Execute { attempt: 3, reclaimed: true }, Delivery::Run { attempt: 3 }),
            (Decision::Replay(done), Delivery::AckDuplicate),
            (Decision::Mismatch, Delivery::AckDuplicate),
            (Decision::InFlight { retry_after_secs: 1 }, Delivery::RetryLater { delay_secs: 1 }),
        ];
        let mut stats = ConsumerStats::default();
        for (decision, want) in cases {
            let delivery = Delivery::from_decision(&decision);
            assert_eq!(delivery, want);
            stats.count_delivery(delivery);
        }
        stats.count_finish(&Finished::Released);
        stats.count_finish(&Finished::LeaseKept);
        assert_eq!(stats, ConsumerStats { first_runs: 1, duplicates_skipped: 2, in_flight_conflicts: 1, releases: 1 });
    }

    #[test]
    fn settling_acks_stored_results_and_backs_off_failures() {
        let stored = Finished::Stored(Completed {
            fingerprint: Fingerprint([0; 32]),
            attempt: 1,
            response: StoredResponse { status: 200, headers: vec![], body: None },
            expires_at: 1,
        });
        assert_eq!(settle(&stored, true, 1, 60), Settle::Ack);
        assert_eq!(settle(&Finished::Stale, true, 1, 60), Settle::Ack);
        assert_eq!(settle(&Finished::Released, false, 1, 60), Settle::Retry { delay_secs: 1 });
        assert_eq!(settle(&Finished::Released, false, 3, 60), Settle::Retry { delay_secs: 4 });
        assert_eq!(settle(&Finished::Released, false, 40, 60), Settle::Retry { delay_secs: 60 });
        assert_eq!(settle(&Finished::Stale, false, 2, 60), Settle::Retry { delay_secs: 2 });
        assert_eq!(settle(&Finished::LeaseKept, false, 1, 60), Settle::Retry { delay_secs: 1 });
    }
}
