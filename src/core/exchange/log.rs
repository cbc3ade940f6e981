//! One structured log line per decision (SPEC §5), and the tier durations
//! that go into it and into `Server-Timing`. The record is named by a prefix
//! of its hash, never by the raw key, and no header is logged.

use serde_json::json;

/// Durations of the tiers a request touched, for `Server-Timing`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Timing {
    /// Time spent reading or writing KV before the answer, in ms.
    pub kv: Option<u64>,
    /// Time spent in Durable Object calls (begin and finish), in ms.
    pub durable: Option<u64>,
    /// Time spent waiting for the origin, in ms.
    pub origin: Option<u64>,
}

impl Timing {
    /// Adds `ms` to a tier, counting it as touched.
    pub fn add(slot: &mut Option<u64>, ms: u64) {
        *slot = Some(slot.unwrap_or(0) + ms);
    }

    /// The `Server-Timing` value, or `None` if no tier was touched.
    ///
    /// ```
    /// use oncekey::core::Timing;
    /// let timing = Timing { kv: None, durable: Some(3), origin: Some(12) };
    /// assert_eq!(timing.header_value().as_deref(), Some("do;dur=3, origin;dur=12"));
    /// ```
    pub fn header_value(&self) -> Option<String> {
        let parts: Vec<String> = [("kv", self.kv), ("do", self.durable), ("origin", self.origin)]
            .into_iter()
            .filter_map(|(name, ms)| ms.map(|ms| format!("{name};dur={ms}")))
            .collect();
        (!parts.is_empty()).then(|| parts.join(", "))
    }
}

/// What the layer did with one request.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DecisionLog {
    /// `pass-through`, `execute`, `replay`, `in-flight`, `key-reused`,
    /// `store-unavailable`, `fail-open`, `invalid-key`, ...
    pub outcome: &'static str,
    /// Where the decision came from: `kv`, `do`, `origin` or `layer`.
    pub tier: &'static str,
    /// The attempt number, when one was reserved or replayed.
    pub attempt: Option<u32>,
    /// The status answered.
    pub status: u16,
    /// The first 16 hex digits of the record name.
    pub record: Option<String>,
    /// What became of the attempt after the origin answered, for executions.
    pub finish: Option<&'static str>,
    /// A short error description (store or origin failure), never a header.
    pub error: Option<String>,
    /// How long this duplicate waited for a running attempt, in ms.
    pub waited_ms: Option<u64>,
}

impl DecisionLog {
    /// The line, with the tier durations.
    ///
    /// ```
    /// use oncekey::core::{DecisionLog, Timing};
    /// let log = DecisionLog { outcome: "replay", tier: "do", status: 201, ..DecisionLog::default() };
    /// let line: serde_json::Value = serde_json::from_str(&log.to_json(&Timing::default())).unwrap();
    /// assert_eq!(line["oncekey"], "replay");
    /// ```
    pub fn to_json(&self, timing: &Timing) -> String {
        json!({
            "oncekey": self.outcome,
            "tier": self.tier,
            "attempt": self.attempt,
            "status": self.status,
            "record": self.record,
            "finish": self.finish,
            "error": self.error,
            "waited_ms": self.waited_ms,
            "kv_ms": timing.kv,
            "do_ms": timing.durable,
            "origin_ms": timing.origin,
        })
        .to_string()
    }
}
