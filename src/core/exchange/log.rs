//! One structured log line per decision (SPEC §5), its Analytics Engine
//! data point (SPEC §12), and the tier durations that go into both and into
//! `Server-Timing`. The record is named by its hash in full (the name the
//! admin paths take), never by the raw key, and no header is logged.

use crate::core::{DataPoint, JsonObject};

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

/// What the layer decided for one request: the log line's `oncekey` field.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Verdict {
    /// Nothing decided yet.
    #[default]
    Undecided,
    /// A CORS preflight the layer answered itself.
    Preflight,
    /// Not covered: forwarded as it came.
    PassThrough,
    /// The store failed and `IDEMPOTENCY_FAIL_OPEN` forwarded it unprotected.
    FailOpen,
    /// The origin ran an attempt.
    Execute,
    /// The origin ran an attempt that reclaimed a lease that had ended.
    ExecuteReclaimed,
    /// A stored answer, replayed.
    Replay,
    /// An attempt is running (`409 key-in-flight`).
    InFlight,
    /// The last attempt ended without an answer (`409 outcome-unknown`).
    InFlightUnknown,
    /// An operator read a record.
    Inspect,
    /// An operator released an attempt.
    Release,
    /// The layer could not be configured.
    Misconfigured,
    /// One of the layer's own problems, by its code.
    Refused(&'static str),
}

impl Verdict {
    /// The name in the log line and data point.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Undecided => "",
            Self::Preflight => "preflight",
            Self::PassThrough => "pass-through",
            Self::FailOpen => "fail-open",
            Self::Execute => "execute",
            Self::ExecuteReclaimed => "execute-reclaimed",
            Self::Replay => "replay",
            Self::InFlight => "in-flight",
            Self::InFlightUnknown => "in-flight-unknown",
            Self::Inspect => "inspect",
            Self::Release => "release",
            Self::Misconfigured => "misconfigured",
            Self::Refused(code) => code,
        }
    }
}

/// Where a decision came from: the log line's `tier` field.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Tier {
    /// The layer itself (a bad request, its configuration).
    #[default]
    Layer,
    /// Workers KV.
    Kv,
    /// The key's Durable Object.
    Durable,
    /// The origin (a forward).
    Origin,
}

impl Tier {
    /// The name in the log line and data point.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Layer => "layer",
            Self::Kv => "kv",
            Self::Durable => "do",
            Self::Origin => "origin",
        }
    }
}

/// What became of an attempt once the origin answered: the log line's
/// `finish` field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FinishResult {
    /// Its answer is stored.
    Stored,
    /// The key is released (a release status, or not sent).
    Released,
    /// No answer: the lease is kept, the outcome unknown.
    LeaseKept,
    /// The attempt had been reclaimed or expired: nothing written.
    Stale,
    /// The store failed every try.
    StoreFailed,
}

impl FinishResult {
    /// The name in the log line and data point.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Stored => "stored",
            Self::Released => "released",
            Self::LeaseKept => "lease-kept",
            Self::Stale => "stale",
            Self::StoreFailed => "store-failed",
        }
    }
}

/// What the layer did with one request.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DecisionLog {
    /// What was decided.
    pub outcome: Verdict,
    /// Where the decision came from.
    pub tier: Tier,
    /// The attempt number, when one was reserved or replayed.
    pub attempt: Option<u32>,
    /// The status answered.
    pub status: u16,
    /// The record's name in hex (64 digits).
    pub record: Option<String>,
    /// What became of the attempt after the origin answered, for executions.
    pub finish: Option<FinishResult>,
    /// A short error description (store or origin failure), never a header.
    pub error: Option<String>,
    /// Why the layer refused the request (which key rule failed, which
    /// limit): the problem's detail. `None` for anything but a refusal.
    pub reason: Option<String>,
    /// The request's method.
    pub method: String,
    /// The request's path, never its query (it may hold secrets).
    pub path: String,
    /// The route of `IDEMPOTENCY_ROUTES` the request followed, as errors
    /// name it (`route 2 (POST /v1/payments/*)`); `None` when no route
    /// matched and the variables applied.
    pub route: Option<String>,
    /// How long this duplicate waited for a running attempt, in ms.
    pub waited_ms: Option<u64>,
    /// How long recording the attempt's outcome took after the caller had
    /// its answer (`finish` and its repeats), in ms.
    pub after_answer_ms: Option<u64>,
    /// A webhook delivery: its id and event type (SPEC §12).
    pub delivery: Option<DeliveryLog>,
}

/// A webhook delivery as its decision's line names it (SPEC §12): the id
/// and event type it carried — checked by its signature, or claimed by a
/// delivery that was refused — so any `evt_…` can be found in the logs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DeliveryLog {
    /// The delivery id.
    pub id: Option<String>,
    /// The event type, where the sender names one.
    pub event: Option<String>,
    /// Whether the signature was checked: `false` on a refusal, whose id
    /// and type anyone could have written.
    pub verified: bool,
}

impl DecisionLog {
    /// Whether this is a routine decision, whose line `IDEMPOTENCY_LOG_SAMPLE`
    /// samples (SPEC §5): a first execution whose answer was stored, or a
    /// replay, with no error on the way. A refusal, a conflict, a wait that
    /// ran out, an unknown outcome, a release, a reclaimed lease, a store or
    /// origin failure, a fail-open forward, a misconfiguration: never.
    ///
    /// ```
    /// use oncekey::core::{DecisionLog, FinishResult, Verdict};
    /// let stored = DecisionLog { outcome: Verdict::Execute, finish: Some(FinishResult::Stored), ..DecisionLog::default() };
    /// assert!(stored.is_routine());
    /// let released = DecisionLog { finish: Some(FinishResult::Released), ..stored.clone() };
    /// assert!(!released.is_routine());
    /// assert!(!DecisionLog { outcome: Verdict::Refused("key-reused"), ..DecisionLog::default() }.is_routine());
    /// ```
    pub fn is_routine(&self) -> bool {
        let clean = self.error.is_none() && self.reason.is_none();
        clean
            && match self.outcome {
                Verdict::Execute => self.finish == Some(FinishResult::Stored),
                Verdict::Replay => true,
                _ => false,
            }
    }

    /// The line for a request answered `500 misconfigured` (the layer could
    /// not be configured, so no exchange ran): `detail` says why.
    pub fn misconfigured(detail: String) -> String {
        let log = Self { outcome: Verdict::Misconfigured, status: 500, error: Some(detail), ..Self::default() };
        log.to_json(&Timing::default())
    }

    /// The line, with the tier durations.
    ///
    /// ```
    /// use oncekey::core::{DecisionLog, Tier, Timing, Verdict};
    /// let log = DecisionLog { outcome: Verdict::Replay, tier: Tier::Durable, status: 201, ..DecisionLog::default() };
    /// let line: serde_json::Value = serde_json::from_str(&log.to_json(&Timing::default())).unwrap();
    /// assert_eq!(line["oncekey"], "replay");
    /// ```
    pub fn to_json(&self, timing: &Timing) -> String {
        // Members in name order, as the line has always been written; a
        // delivery's only on a webhook route's lines.
        let line = JsonObject::new()
            .number("after_answer_ms", self.after_answer_ms)
            .number("attempt", self.attempt.map(u64::from));
        let line = match &self.delivery {
            Some(delivery) => line.object(
                "delivery",
                JsonObject::new()
                    .string_or_null("event", delivery.event.as_deref())
                    .string_or_null("id", delivery.id.as_deref())
                    .boolean("verified", delivery.verified),
            ),
            None => line,
        };
        line.number("do_ms", timing.durable)
            .string_or_null("error", self.error.as_deref())
            .string_or_null("finish", self.finish.map(FinishResult::as_str))
            .number("kv_ms", timing.kv)
            .string_or_null("method", Some(self.method.as_str()).filter(|m| !m.is_empty()))
            .string("oncekey", self.outcome.as_str())
            .number("origin_ms", timing.origin)
            .string_or_null("path", Some(self.path.as_str()).filter(|p| !p.is_empty()))
            .string_or_null("reason", self.reason.as_deref())
            .string_or_null("record", self.record.as_deref())
            .string_or_null("route", self.route.as_deref())
            .number("status", Some(u64::from(self.status)))
            .string("tier", self.tier.as_str())
            .number("waited_ms", self.waited_ms)
            .end()
    }

    /// The decision's Analytics Engine data point, in the columns
    /// [`DataPoint`] lists: a missing number as 0, a missing word as empty.
    ///
    /// ```
    /// use oncekey::core::{DecisionLog, Tier, Timing, Verdict};
    /// let log =
    ///     DecisionLog { outcome: Verdict::Replay, tier: Tier::Durable, attempt: Some(1), status: 201, ..DecisionLog::default() };
    /// let point = log.data_point(&Timing { durable: Some(4), ..Timing::default() });
    /// assert_eq!(point.blobs, ["replay", "do", "", "", ""]);
    /// assert_eq!(point.doubles, [1.0, 201.0, 0.0, 4.0, 0.0, 0.0, 0.0]);
    /// assert_eq!(point.indexes, ["replay"]);
    /// ```
    pub fn data_point(&self, timing: &Timing) -> DataPoint {
        let ms = |n: Option<u64>| n.unwrap_or(0) as f64;
        DataPoint {
            blobs: vec![
                self.outcome.as_str().to_owned(),
                self.tier.as_str().to_owned(),
                self.finish.map_or("", FinishResult::as_str).to_owned(),
                self.record.clone().unwrap_or_default(),
                self.route.clone().unwrap_or_default(),
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
            indexes: vec![self.outcome.as_str().to_owned()],
        }
    }
}
