//! One structured log line per decision (SPEC §5), its Analytics Engine
//! data point (SPEC §12), and the tier durations that go into both and into
//! `Server-Timing`. The record is named by its hash in full (the name the
//! admin paths take), never by the raw key, and no header is logged.

use serde_json::json;

use crate::core::DataPoint;

/// Durations of the tiers a request touched, for `Server-Timing`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Timing {
    /// Time spent reading or writing KV before the answer, in ms.
    pub kv: Option<u64>,
    /// Time spent in Durable Object calls (begin and finish), in ms.
    pub durable: Option<u64>,
    /// Time spent waiting for the origin, in ms.
    pub origin: Option<u64>,
    /// Whether the attempt's outcome is recorded after the answer (SPEC §4):
    /// `Server-Timing` then says `finish;desc="after-answer"`.
    pub finish_after_answer: bool,
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
    /// let timing = Timing { kv: None, durable: Some(3), origin: Some(12), finish_after_answer: true };
    /// assert_eq!(timing.header_value().as_deref(), Some(r#"do;dur=3, origin;dur=12, finish;desc="after-answer""#));
    /// ```
    pub fn header_value(&self) -> Option<String> {
        let mut parts: Vec<String> = [("kv", self.kv), ("do", self.durable), ("origin", self.origin)]
            .into_iter()
            .filter_map(|(name, ms)| ms.map(|ms| format!("{name};dur={ms}")))
            .collect();
        if self.finish_after_answer {
            parts.push(r#"finish;desc="after-answer""#.to_owned());
        }
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
    /// The record's name in hex (64 digits).
    pub record: Option<String>,
    /// What became of the attempt after the origin answered, for executions.
    pub finish: Option<&'static str>,
    /// A short error description (store or origin failure), never a header.
    pub error: Option<String>,
    /// How long this duplicate waited for a running attempt, in ms.
    pub waited_ms: Option<u64>,
    /// How long recording the attempt's outcome took after the caller had
    /// its answer (`finish` and its repeats), in ms.
    pub after_answer_ms: Option<u64>,
}

impl DecisionLog {
    /// The line for a request answered `500 misconfigured` (the layer could
    /// not be configured, so no exchange ran): `detail` says why.
    pub fn misconfigured(detail: String) -> String {
        let log = Self { outcome: "misconfigured", tier: "layer", status: 500, error: Some(detail), ..Self::default() };
        log.to_json(&Timing::default())
    }

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
            "after_answer_ms": self.after_answer_ms,
            "kv_ms": timing.kv,
            "do_ms": timing.durable,
            "origin_ms": timing.origin,
        })
        .to_string()
    }

    /// The decision's Analytics Engine data point, in the columns
    /// [`DataPoint`] lists: a missing number as 0, a missing word as empty.
    ///
    /// ```
    /// use oncekey::core::{DecisionLog, Timing};
    /// let log = DecisionLog { outcome: "replay", tier: "do", attempt: Some(1), status: 201, ..DecisionLog::default() };
    /// let point = log.data_point(&Timing { durable: Some(4), ..Timing::default() });
    /// assert_eq!(point.blobs, ["replay", "do", "", ""]);
    /// assert_eq!(point.doubles, [1.0, 201.0, 0.0, 4.0, 0.0, 0.0, 0.0]);
    /// assert_eq!(point.indexes, ["replay"]);
    /// ```
    pub fn data_point(&self, timing: &Timing) -> DataPoint {
        let ms = |n: Option<u64>| n.unwrap_or(0) as f64;
        DataPoint {
            blobs: vec![
                self.outcome.to_owned(),
                self.tier.to_owned(),
                self.finish.unwrap_or("").to_owned(),
                self.record.clone().unwrap_or_default(),
            ],
            doubles: vec![
                f64::from(self.attempt.unwrap_or(0)),
                f64::from(self.status),
                ms(timing.kv),
                ms(timing.durable),
                ms(timing.origin),
                ms(self.waited_ms),
                ms(self.after_answer_ms),
            ],
            indexes: vec![self.outcome.to_owned()],
        }
    }
}
