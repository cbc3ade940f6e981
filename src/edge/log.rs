//! One structured log line per decision (SPEC §5). It names the record by
//! a prefix of its hash, never by the raw key, and holds no headers.

use serde_json::json;

use super::http::Timing;

/// What the layer did with one request.
#[derive(Debug, Default)]
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
}

impl DecisionLog {
    /// Writes the line, with the tier durations.
    pub fn emit(&self, timing: &Timing) {
        let line = json!({
            "oncekey": self.outcome,
            "tier": self.tier,
            "attempt": self.attempt,
            "status": self.status,
            "record": self.record,
            "finish": self.finish,
            "error": self.error,
            "kv_ms": timing.kv,
            "do_ms": timing.durable,
            "origin_ms": timing.origin,
        });
        worker::console_log!("{line}");
    }
}
