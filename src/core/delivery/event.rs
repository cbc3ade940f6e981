//! Exactly-once event handling (queue consumers) on the same state machine.
//!
//! Events cannot be refused and queues deliver at least once. A consumer
//! names each message by a key (its id, a hash of its content, or a key the
//! user derives), runs [`begin`](crate::core::begin) on it, and maps the decision
//! to what the queue should do with the message.

use crate::core::output::metrics::DataPoint;
use crate::core::record::decision::{Decision, Finished, Outcome};
use crate::core::record::response::StoredResponse;
use crate::core::request::digest::{PartHasher, hex};
use crate::core::request::fingerprint::Fingerprint;
use crate::core::request::scope::RecordName;
use crate::core::text::json_read::{canonical, canonical_members};

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

impl EventKeyStrategy {
    /// The key of a message under this strategy, or `None` for
    /// [`Custom`](Self::Custom) (the adapter calls the user's function).
    ///
    /// ```
    /// use oncekey::core::{EventKeyStrategy, MessageBody};
    /// let body = MessageBody::Value(b"{}".to_vec());
    /// assert_eq!(EventKeyStrategy::MessageId.key("m-1", &body).as_deref(), Some("m-1"));
    /// assert_eq!(EventKeyStrategy::Custom.key("m-1", &body), None);
    /// ```
    pub fn key(&self, message_id: &str, body: &MessageBody) -> Option<String> {
        match self {
            Self::MessageId => Some(message_id.to_owned()),
            Self::ContentHash { ignore_fields } => {
                let fields: Vec<&str> = ignore_fields.iter().map(String::as_str).collect();
                Some(content_key(body, &fields))
            }
            Self::Custom => None,
        }
    }

    /// The fingerprint of a message's event record under this strategy.
    /// Under a key of the user's own it is the body's content (its
    /// [`content_key`], nothing ignored), so a later event under that key
    /// with other content is told apart ([`Delivery::KeyReused`]); under a
    /// message id or a content hash the key already names the content, and
    /// every record carries [`EVENT_FINGERPRINT`].
    pub fn fingerprint(&self, body: &MessageBody) -> Fingerprint {
        match self {
            Self::Custom => {
                let mut hasher = PartHasher::new("oncekey/event-content/1");
                hasher.part(content_key(body, &[]).as_bytes());
                Fingerprint(hasher.finish())
            }
            Self::MessageId | Self::ContentHash { .. } => EVENT_FINGERPRINT,
        }
    }
}

/// A queue message's body as the consumer read it: its bytes, and the form
/// they came in. The content hash keeps the forms apart (SPEC §11): a string
/// body and an object body whose JSON is that string are two events.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MessageBody {
    /// A string, as its UTF-8.
    Text(Vec<u8>),
    /// An `ArrayBuffer` or a view of one, as its bytes.
    Bytes(Vec<u8>),
    /// Any other value (an object, an array, a number, …), as its JSON.
    Value(Vec<u8>),
}

impl MessageBody {
    /// The body's bytes, whatever its form.
    pub fn bytes(&self) -> &[u8] {
        match self {
            Self::Text(bytes) | Self::Bytes(bytes) | Self::Value(bytes) => bytes,
        }
    }

    /// The body's bytes, owned.
    pub fn into_bytes(self) -> Vec<u8> {
        match self {
            Self::Text(bytes) | Self::Bytes(bytes) | Self::Value(bytes) => bytes,
        }
    }
}

/// The fingerprint of an event record whose key already names its event
/// (a message id, a content hash): two deliveries under such a key are the
/// same event. A key of the user's own carries the body's content instead
/// ([`EventKeyStrategy::fingerprint`]).
pub const EVENT_FINGERPRINT: Fingerprint = Fingerprint([0xE7; 32]);

/// Seconds before a message whose record does not decode is tried again:
/// it never runs until an operator releases the record (SPEC §3).
pub const UNREADABLE_RETRY_SECS: u32 = 60;

/// The record name of an event key in one consumer: SHA-256 over the
/// consumer's name and the key, in a domain of its own, so an event record
/// never shares a name with an HTTP request's record or another consumer's.
///
/// ```
/// use oncekey::core::event_record_name;
/// assert_ne!(event_record_name("loyalty", "m-1"), event_record_name("mailer", "m-1"));
/// assert_eq!(event_record_name("loyalty", "m-1"), event_record_name("loyalty", "m-1"));
/// ```
pub fn event_record_name(consumer: &str, key: &str) -> RecordName {
    let mut hasher = PartHasher::new("oncekey/event-record/1");
    hasher.part(consumer.as_bytes()).part(key.as_bytes());
    RecordName(hasher.finish())
}

/// How a handler's run ended, as the consumer saw it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HandlerRun {
    /// It returned `Ok`.
    Done,
    /// It returned an error.
    Failed,
    /// It was still running at the time limit; the consumer stopped waiting.
    StillRunning,
}

/// How a handler's run is recorded: success stores the key as done (later
/// deliveries are acknowledged as duplicates); failure releases it, so the
/// retry runs the handler again; a run still going at the time limit may yet
/// do its work, so its key stays leased until the lease ends (as for a
/// consumer that crashed).
pub fn handler_outcome(run: HandlerRun) -> Outcome {
    match run {
        HandlerRun::Done => Outcome::Answered(StoredResponse { status: 204, headers: vec![], body: None }.into()),
        HandlerRun::Failed => Outcome::NotSent,
        HandlerRun::StillRunning => Outcome::Unknown,
    }
}

/// The content key of a message body: SHA-256 over its form (a string,
/// bytes, or another value's JSON: never alike) and its canonical JSON (no
/// white space, object keys sorted, strings escaped one way, numbers as
/// written; `ignore_fields` removed from the top level). A body that is not
/// JSON is hashed as raw bytes.
///
/// ```
/// use oncekey::core::{MessageBody, content_key};
/// let value = |json: &str| MessageBody::Value(json.as_bytes().to_vec());
/// let a = content_key(&value(r#"{"orderId":"o1","at":"10:00","points":5}"#), &["at"]);
/// let b = content_key(&value(r#"{"points":5, "at":"10:01","orderId":"o1"}"#), &["at"]);
/// assert_eq!(a, b);
/// assert_ne!(a, content_key(&value(r#"{"orderId":"o2","at":"10:00","points":5}"#), &["at"]));
/// let text = MessageBody::Text(br#"{"orderId":"o1","at":"10:00","points":5}"#.to_vec());
/// assert_ne!(a, content_key(&text, &["at"]), "a string is not the object it spells");
/// ```
pub fn content_key(body: &MessageBody, ignore_fields: &[&str]) -> String {
    let mut hasher = PartHasher::new("oncekey/event/1");
    // A value's key is as it was before the forms were told apart.
    match body {
        MessageBody::Text(_) => _ = hasher.part(b"string"),
        MessageBody::Bytes(_) => _ = hasher.part(b"bytes"),
        MessageBody::Value(_) => {}
    }
    let body = body.bytes();
    let text = std::str::from_utf8(body).ok();
    if let Some(members) = text.and_then(canonical_members) {
        hasher.part(b"object");
        for (field, value) in members.iter().filter(|(field, _)| !ignore_fields.contains(&field.as_str())) {
            hasher.part(field.as_bytes()).part(value.as_bytes());
        }
    } else if let Some(value) = text.and_then(canonical) {
        hasher.part(b"json").part(value.as_bytes());
    } else {
        hasher.part(b"raw").part(body);
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
        /// Whether an expired lease was taken over: an earlier run crashed
        /// or hung, and may have done part of its work.
        reclaimed: bool,
    },
    /// Already handled: acknowledge without running the handler.
    AckDuplicate,
    /// Another consumer holds the key: retry the message after a delay,
    /// never acknowledge it.
    RetryLater {
        /// Seconds before the queue redelivers it.
        delay_secs: u32,
    },
    /// The key (one of the user's own) was handled for an event with other
    /// content: retry it until it dead-letters, logged and counted, never
    /// acknowledge it as that event's duplicate (SPEC §11, as HTTP answers
    /// `422`).
    KeyReused,
}

impl Delivery {
    /// Maps a store decision to a queue action.
    pub fn from_decision(decision: &Decision) -> Self {
        match decision {
            Decision::Execute { attempt, reclaimed } => Self::Run { attempt: *attempt, reclaimed: *reclaimed },
            Decision::Replay(_) => Self::AckDuplicate,
            // The key was handled for other content: never that event's duplicate.
            Decision::Mismatch => Self::KeyReused,
            Decision::InFlight { retry_after_secs, .. } => Self::RetryLater { delay_secs: *retry_after_secs },
            // Until an operator releases the record: try again later, never run.
            Decision::Unreadable => Self::RetryLater { delay_secs: UNREADABLE_RETRY_SECS },
        }
    }

    /// Spaces out retries of a message whose key another consumer holds. A
    /// queue counts every retry against the message's limit, so a fixed
    /// one-second delay would drop a message long before a crashed holder's
    /// lease ends. The delay follows the message's age instead (at least
    /// 1 s, at most the lease and `max_delay_secs`): each retry roughly
    /// doubles it, so a message outlives a lease in about log2(lease) retries.
    ///
    /// ```
    /// use oncekey::core::Delivery;
    /// let conflict = Delivery::RetryLater { delay_secs: 1 };
    /// assert_eq!(conflict.with_conflict_backoff(0, 120_000, 300), Delivery::RetryLater { delay_secs: 1 });
    /// assert_eq!(conflict.with_conflict_backoff(9_500, 120_000, 300), Delivery::RetryLater { delay_secs: 9 });
    /// assert_eq!(conflict.with_conflict_backoff(600_000, 120_000, 300), Delivery::RetryLater { delay_secs: 120 });
    /// ```
    pub fn with_conflict_backoff(self, message_age_ms: u64, lease_ms: u64, max_delay_secs: u32) -> Self {
        match self {
            Self::RetryLater { delay_secs } => Self::RetryLater {
                delay_secs: conflict_backoff_secs(delay_secs, message_age_ms, lease_ms, max_delay_secs),
            },
            other => other,
        }
    }
}

/// [`Delivery::with_conflict_backoff`]'s delay: the message's age in
/// seconds, at least `at_least_secs` (and 1), at most the lease and
/// `max_delay_secs`.
pub(crate) fn conflict_backoff_secs(
    at_least_secs: u32,
    message_age_ms: u64,
    lease_ms: u64,
    max_delay_secs: u32,
) -> u32 {
    let floor = u64::from(at_least_secs.max(1));
    let cap = lease_ms.div_ceil(1000).min(u64::from(max_delay_secs)).max(floor);
    (message_age_ms / 1000).clamp(floor, cap) as u32
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
/// failed. `finished` is `None` when the store gave no answer to `finish`:
/// a handler that succeeded is acknowledged all the same (its work is done;
/// the record's lease simply runs out), a failed one is retried.
pub fn settle(finished: Option<&Finished>, handler_ok: bool, attempt: u32, max_delay_secs: u32) -> Settle {
    match finished {
        Some(Finished::Stored(_)) => Settle::Ack,
        Some(Finished::Stale) | None if handler_ok => Settle::Ack,
        Some(Finished::Released | Finished::LeaseKept | Finished::Stale) | None => {
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
    /// Runs that took over an expired lease (a consumer crashed or hung
    /// mid-handler): a later attempt, not a first run.
    pub reclaims: u64,
    /// Messages retried because their key (a key of the user's own) was
    /// handled for an event with other content (SPEC §11): retried until
    /// they dead-letter, never acknowledged as duplicates.
    pub keys_reused: u64,
}

/// The counters as an object of their names (`first_runs`,
/// `duplicates_skipped`, …): a consumer's stats answered as JSON, say.
impl serde::Serialize for ConsumerStats {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut stats = serializer.serialize_struct("ConsumerStats", 6)?;
        stats.serialize_field("first_runs", &self.first_runs)?;
        stats.serialize_field("duplicates_skipped", &self.duplicates_skipped)?;
        stats.serialize_field("in_flight_conflicts", &self.in_flight_conflicts)?;
        stats.serialize_field("releases", &self.releases)?;
        stats.serialize_field("reclaims", &self.reclaims)?;
        stats.serialize_field("keys_reused", &self.keys_reused)?;
        stats.end()
    }
}

impl ConsumerStats {
    /// The data point of one batch of consumer `consumer`.
    ///
    /// ```
    /// use oncekey::core::ConsumerStats;
    /// let point = ConsumerStats { first_runs: 3, duplicates_skipped: 1, ..ConsumerStats::default() }.data_point("loyalty");
    /// assert_eq!(point.blobs, ["consumer-batch", "loyalty"]);
    /// assert_eq!(point.doubles, [3.0, 1.0, 0.0, 0.0, 0.0, 0.0]);
    /// assert_eq!(point.indexes, ["consumer-batch"]);
    /// ```
    pub fn data_point(&self, consumer: &str) -> DataPoint {
        DataPoint {
            blobs: vec!["consumer-batch".to_owned(), consumer.to_owned()],
            doubles: self.fields().iter().map(|&n| n as f64).collect(),
            indexes: vec!["consumer-batch".to_owned()],
        }
    }
}

/// Bytes of an encoded [`ConsumerStats`].
const STATS_LEN: usize = 48;

impl ConsumerStats {
    /// The storage key under which a consumer's counters object keeps its
    /// total ([`encode`](Self::encode)d), on both hosts.
    pub const STORAGE_KEY: &'static str = "consumer-stats";

    /// The name of the object, in the coordinator's namespace, that keeps
    /// consumer `consumer`'s counters: one per consumer, so the counts add
    /// up across every isolate that consumed a batch, and never a record's
    /// name (64 hex digits), so it never holds a record.
    ///
    /// ```
    /// use oncekey::core::ConsumerStats;
    /// assert_eq!(ConsumerStats::object_name("loyalty"), "consumer-counters:loyalty");
    /// ```
    pub fn object_name(consumer: &str) -> String {
        format!("consumer-counters:{consumer}")
    }

    /// Counts one delivery decision.
    pub fn count_delivery(&mut self, delivery: Delivery) {
        match delivery {
            // A run after a release or a reclaim (attempt 2 on) is no first
            // run: releases and reclaims count those.
            Delivery::Run { attempt, reclaimed } => {
                self.first_runs += u64::from(attempt == 1);
                self.reclaims += u64::from(reclaimed);
            }
            Delivery::AckDuplicate => self.duplicates_skipped += 1,
            Delivery::RetryLater { .. } => self.in_flight_conflicts += 1,
            Delivery::KeyReused => self.keys_reused += 1,
        }
    }

    /// Counts one settled attempt.
    pub fn count_finish(&mut self, finished: &Finished) {
        if *finished == Finished::Released {
            self.releases += 1;
        }
    }

    /// Adds another set of counts (a batch's) to these.
    pub fn add(&mut self, other: &Self) {
        let [a, b, c, d, e, f] = other.fields();
        self.first_runs = self.first_runs.saturating_add(a);
        self.duplicates_skipped = self.duplicates_skipped.saturating_add(b);
        self.in_flight_conflicts = self.in_flight_conflicts.saturating_add(c);
        self.releases = self.releases.saturating_add(d);
        self.reclaims = self.reclaims.saturating_add(e);
        self.keys_reused = self.keys_reused.saturating_add(f);
    }

    /// Whether nothing was counted.
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }

    fn fields(&self) -> [u64; 6] {
        [
            self.first_runs,
            self.duplicates_skipped,
            self.in_flight_conflicts,
            self.releases,
            self.reclaims,
            self.keys_reused,
        ]
    }

    /// The counts as 48 bytes (six big-endian `u64`), for a store.
    pub fn encode(&self) -> Vec<u8> {
        self.fields().iter().flat_map(|n| n.to_be_bytes()).collect()
    }

    /// Counts written by [`encode`](Self::encode) (or by a version before
    /// `keys_reused`, 40 bytes); `None` for anything else.
    ///
    /// ```
    /// use oncekey::core::ConsumerStats;
    /// let stats = ConsumerStats { first_runs: 3, reclaims: 1, ..ConsumerStats::default() };
    /// assert_eq!(ConsumerStats::decode(&stats.encode()), Some(stats));
    /// assert_eq!(ConsumerStats::decode(b"short"), None);
    /// ```
    pub fn decode(bytes: &[u8]) -> Option<Self> {
        if bytes.len() != STATS_LEN && bytes.len() != STATS_LEN - 8 {
            return None;
        }
        let n =
            |i: usize| bytes.get(i * 8..i * 8 + 8).map_or(0, |b| u64::from_be_bytes(b.try_into().unwrap_or_default()));
        Some(Self {
            first_runs: n(0),
            duplicates_skipped: n(1),
            in_flight_conflicts: n(2),
            releases: n(3),
            reclaims: n(4),
            keys_reused: n(5),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    use crate::core::{Completed, Fingerprint, StoredResponse};

    fn value_key(json: &[u8], ignore_fields: &[&str]) -> String {
        content_key(&MessageBody::Value(json.to_vec()), ignore_fields)
    }

    #[test]
    fn consumer_stats_serialize_as_an_object_of_their_names() {
        let stats = ConsumerStats { first_runs: 3, duplicates_skipped: 1, keys_reused: 2, ..ConsumerStats::default() };
        assert_eq!(
            serde_json::to_string(&stats).unwrap(),
            r#"{"first_runs":3,"duplicates_skipped":1,"in_flight_conflicts":0,"releases":0,"reclaims":0,"keys_reused":2}"#
        );
    }

    #[test]
    fn content_key_ignores_order_whitespace_and_named_fields() {
        let a = value_key(br#"{"customerId":"c1","orderId":"o1","eventId":"e1"}"#, &["eventId"]);
        let b = value_key(br#"{ "orderId": "o1", "customerId": "c1", "eventId": "e2" }"#, &["eventId"]);
        assert_eq!(a, b);
        assert_ne!(a, value_key(br#"{"customerId":"c1","orderId":"o1","eventId":"e1"}"#, &[]));
        assert_ne!(a, value_key(br#"{"customerId":"c2","orderId":"o1","eventId":"e1"}"#, &["eventId"]));
        // Only the top level is filtered.
        assert_ne!(
            value_key(br#"{"o":{"eventId":1}}"#, &["eventId"]),
            value_key(br#"{"o":{"eventId":2}}"#, &["eventId"])
        );
        assert_eq!(a.len(), 64);
    }

    #[test]
    fn content_key_hashes_non_json_as_bytes() {
        assert_eq!(value_key(b"not json", &[]), value_key(b"not json", &["x"]));
        assert_ne!(value_key(b"not json", &[]), value_key(b"not json!", &[]));
        assert_ne!(value_key(b"\"s\"", &[]), value_key(b"s", &[]));
    }

    #[test]
    fn deliveries_follow_the_decision() {
        let done = Completed {
            fingerprint: Fingerprint([0; 32]),
            attempt: 1,
            response: StoredResponse { status: 200, headers: vec![], body: None }.into(),
            expires_at: 1,
            copied: false,
        };
        let cases = [
            (Decision::Execute { attempt: 3, reclaimed: true }, Delivery::Run { attempt: 3, reclaimed: true }),
            (Decision::Execute { attempt: 1, reclaimed: false }, Delivery::Run { attempt: 1, reclaimed: false }),
            (Decision::Replay(done), Delivery::AckDuplicate),
            (Decision::Mismatch, Delivery::KeyReused),
            (
                Decision::InFlight { retry_after_secs: 1, outcome_unknown: false, attempt: 0 },
                Delivery::RetryLater { delay_secs: 1 },
            ),
            (
                Decision::InFlight { retry_after_secs: 90, outcome_unknown: true, attempt: 0 },
                Delivery::RetryLater { delay_secs: 90 },
            ),
            (Decision::Unreadable, Delivery::RetryLater { delay_secs: UNREADABLE_RETRY_SECS }),
        ];
        let mut stats = ConsumerStats::default();
        for (decision, want) in cases {
            let delivery = Delivery::from_decision(&decision);
            assert_eq!(delivery, want);
            stats.count_delivery(delivery);
        }
        stats.count_finish(&Finished::Released);
        stats.count_finish(&Finished::LeaseKept);
        stats.count_finish(&Finished::Stale);
        assert_eq!(
            stats,
            ConsumerStats {
                first_runs: 1,
                duplicates_skipped: 1,
                in_flight_conflicts: 3,
                releases: 1,
                reclaims: 1,
                keys_reused: 1
            }
        );
    }

    #[test]
    fn settling_acks_stored_results_and_backs_off_failures() {
        let stored = Finished::Stored(Completed {
            fingerprint: Fingerprint([0; 32]),
            attempt: 1,
            response: StoredResponse { status: 200, headers: vec![], body: None }.into(),
            expires_at: 1,
            copied: false,
        });
        assert_eq!(settle(Some(&stored), true, 1, 60), Settle::Ack);
        assert_eq!(settle(Some(&Finished::Stale), true, 1, 60), Settle::Ack);
        assert_eq!(settle(Some(&Finished::Released), false, 1, 60), Settle::Retry { delay_secs: 1 });
        assert_eq!(settle(Some(&Finished::Released), false, 3, 60), Settle::Retry { delay_secs: 4 });
        assert_eq!(settle(Some(&Finished::Released), false, 40, 60), Settle::Retry { delay_secs: 60 });
        assert_eq!(settle(Some(&Finished::Stale), false, 2, 60), Settle::Retry { delay_secs: 2 });
        assert_eq!(settle(Some(&Finished::LeaseKept), false, 1, 60), Settle::Retry { delay_secs: 1 });
        // The store did not answer `finish`: done work is acknowledged,
        // failed work retried.
        assert_eq!(settle(None, true, 2, 60), Settle::Ack);
        assert_eq!(settle(None, false, 2, 60), Settle::Retry { delay_secs: 2 });
    }

    #[test]
    fn strategies_name_messages() {
        let value = |json: &[u8]| MessageBody::Value(json.to_vec());
        let body = &value(br#"{"orderId":"o1","publishedAt":"10:00"}"#);
        assert_eq!(EventKeyStrategy::MessageId.key("m1", body).as_deref(), Some("m1"));
        let hashed = EventKeyStrategy::ContentHash { ignore_fields: vec!["publishedAt".into()] };
        assert_eq!(hashed.key("m1", body), hashed.key("m2", &value(br#"{"publishedAt":"10:05","orderId":"o1"}"#)));
        assert_eq!(hashed.key("m1", body), Some(content_key(body, &["publishedAt"])));
        assert_ne!(hashed.key("m1", body), EventKeyStrategy::ContentHash { ignore_fields: vec![] }.key("m1", body));
        assert_eq!(EventKeyStrategy::Custom.key("m1", body), None);
    }

    #[test]
    fn a_string_bytes_and_a_value_never_hash_alike() {
        let json = br#"{"orderId":"o1"}"#.to_vec();
        let forms = [MessageBody::Text(json.clone()), MessageBody::Bytes(json.clone()), MessageBody::Value(json)];
        let keys: Vec<String> = forms.iter().map(|body| content_key(body, &[])).collect();
        assert!(keys[0] != keys[1] && keys[1] != keys[2] && keys[0] != keys[2], "{keys:?}");
        // Each form reads JSON alike: white space and member order do not matter.
        let spaced = MessageBody::Text(br#"{ "orderId" : "o1" }"#.to_vec());
        assert_eq!(content_key(&spaced, &[]), keys[0]);
    }

    #[test]
    fn a_user_key_s_record_carries_its_content() {
        let value = |json: &[u8]| MessageBody::Value(json.to_vec());
        let (a, b) = (value(br#"{"orderId":"o1","points":5}"#), value(br#"{"points":5,"orderId":"o1"}"#));
        assert_eq!(EventKeyStrategy::Custom.fingerprint(&a), EventKeyStrategy::Custom.fingerprint(&b));
        assert_ne!(
            EventKeyStrategy::Custom.fingerprint(&a),
            EventKeyStrategy::Custom.fingerprint(&value(br#"{"orderId":"o1","points":50}"#))
        );
        assert_ne!(EventKeyStrategy::Custom.fingerprint(&a), EVENT_FINGERPRINT);
        for named in [EventKeyStrategy::MessageId, EventKeyStrategy::ContentHash { ignore_fields: vec![] }] {
            assert_eq!(named.fingerprint(&a), EVENT_FINGERPRINT, "the key names the content already");
        }
    }

    #[test]
    fn event_records_are_named_apart_from_requests_and_each_other() {
        let a = event_record_name("loyalty", "k");
        assert_eq!(a, event_record_name("loyalty", "k"));
        assert_ne!(a, event_record_name("loyalty", "k2"));
        assert_ne!(a, event_record_name("mailer", "k"));
        // Length prefixes keep ("ab", "c") apart from ("a", "bc").
        assert_ne!(event_record_name("ab", "c"), event_record_name("a", "bc"));
        let key = crate::core::IdempotencyKey::parse("k").unwrap();
        assert_ne!(a, RecordName::new("loyalty", &[], |_| None, &key));
    }

    #[test]
    fn handler_runs_map_to_store_release_and_lease() {
        let policy = crate::core::RecordPolicy::default();
        let crate::core::Write::Put(reserved) = crate::core::begin(None, EVENT_FINGERPRINT, 0, &policy).write else {
            panic!("begin reserves")
        };
        let ok = crate::core::finish(Some(reserved.clone()), 1, handler_outcome(HandlerRun::Done), 1, &policy);
        assert!(matches!(ok.answer, Finished::Stored(_)));
        let failed = crate::core::finish(Some(reserved.clone()), 1, handler_outcome(HandlerRun::Failed), 1, &policy);
        assert_eq!(failed.answer, Finished::Released);
        let running = crate::core::finish(Some(reserved), 1, handler_outcome(HandlerRun::StillRunning), 1, &policy);
        assert_eq!(running.answer, Finished::LeaseKept);
    }

    #[test]
    fn conflicts_back_off_with_the_message_age_up_to_the_lease() {
        let conflict = Delivery::RetryLater { delay_secs: 1 };
        let delay = |age_ms, lease_ms, max| match conflict.with_conflict_backoff(age_ms, lease_ms, max) {
            Delivery::RetryLater { delay_secs } => delay_secs,
            other => panic!("{other:?}"),
        };
        assert_eq!(delay(0, 120_000, 300), 1);
        assert_eq!(delay(1_999, 120_000, 300), 1);
        assert_eq!(delay(2_000, 120_000, 300), 2);
        assert_eq!(delay(64_000, 120_000, 300), 64);
        assert_eq!(delay(500_000, 120_000, 300), 120, "never beyond the lease");
        assert_eq!(delay(500_000, 120_000, 30), 30, "never beyond the maximum");
        assert_eq!(delay(500_000, 2_500, 300), 3, "a partial second of lease rounds up");
        assert_eq!(delay(500_000, 0, 0), 1, "never under a second");
        // Ages double under this delay: a message outlives a 120 s lease in
        // a handful of retries, not 120.
        let (mut age, mut retries) = (0u64, 0);
        while age < 120_000 {
            age += u64::from(delay(age, 120_000, 300)) * 1000;
            retries += 1;
        }
        assert!(retries <= 8, "{retries} retries");
        // Other deliveries are left alone.
        let run = Delivery::Run { attempt: 2, reclaimed: false };
        assert_eq!(run.with_conflict_backoff(9_000, 1_000, 5), run);
        assert_eq!(Delivery::AckDuplicate.with_conflict_backoff(9_000, 1_000, 5), Delivery::AckDuplicate);
    }

    #[test]
    fn stats_add_and_round_trip() {
        let mut total = ConsumerStats::default();
        assert!(total.is_empty());
        let batch = ConsumerStats {
            first_runs: 1,
            duplicates_skipped: 2,
            in_flight_conflicts: 3,
            releases: 4,
            reclaims: 5,
            keys_reused: 6,
        };
        total.add(&batch);
        total.add(&batch);
        assert_eq!(
            total,
            ConsumerStats {
                first_runs: 2,
                duplicates_skipped: 4,
                in_flight_conflicts: 6,
                releases: 8,
                reclaims: 10,
                keys_reused: 12
            }
        );
        assert!(!total.is_empty());
        assert_eq!(ConsumerStats::decode(&total.encode()), Some(total));
        assert_eq!(total.encode().len(), 48);
        // Counts kept before keys_reused was counted: 40 bytes, read with none.
        let before = ConsumerStats { keys_reused: 0, ..total };
        assert_eq!(ConsumerStats::decode(&before.encode()[..40]), Some(before));
        assert_eq!(ConsumerStats::decode(&[0; 39]), None);
        assert_eq!(ConsumerStats::decode(&[0; 41]), None);
        assert_eq!(ConsumerStats::decode(&[0; 49]), None);
        let mut full = ConsumerStats { first_runs: u64::MAX, ..ConsumerStats::default() };
        full.add(&batch);
        assert_eq!(full.first_runs, u64::MAX, "counts saturate");
    }
}
