//! The layer's own errors as RFC 9457 problem details (SPEC §5): one table,
//! in one place.

use crate::core::JsonObject;

use crate::core::record::state::RecordState;
use crate::core::request::admin::AdminRefusal;
use crate::core::request::key::KeyRefusal;
use crate::core::request::target::Ambiguity;

/// A request without a usable key, as the layer answers it.
impl From<KeyRefusal> for Problem {
    fn from(refusal: KeyRefusal) -> Self {
        match refusal {
            KeyRefusal::Missing => Self::MissingKey,
            KeyRefusal::Invalid(why) => Self::InvalidKey(why),
        }
    }
}

/// An admin path's refusal, as the layer answers it.
impl From<AdminRefusal> for Problem {
    fn from(refusal: AdminRefusal) -> Self {
        match refusal {
            AdminRefusal::Unauthorized => Self::Unauthorized,
            AdminRefusal::NoRecord(why) => Self::RecordNotFound(why.into()),
            AdminRefusal::NotAdminPath => {
                Self::RecordNotFound("The admin token was sent on no admin path: the request was not forwarded.".into())
            }
            AdminRefusal::MethodNotAllowed { allow } => Self::MethodNotAllowed { allow },
        }
    }
}

/// Media type of every error the layer returns.
pub const PROBLEM_CONTENT_TYPE: &str = "application/problem+json";

/// Every error the layer itself answers with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Problem {
    /// 400: a covered request without a key while keys are required.
    MissingKey,
    /// 400: the `Idempotency-Key` header is malformed.
    InvalidKey(String),
    /// 409: another attempt with this key holds it; retry after
    /// `retry_after_secs`.
    KeyInFlight {
        /// Seconds for the `Retry-After` header.
        retry_after_secs: u32,
        /// Whether that attempt ended without an answer, so the key is held
        /// until its lease ends.
        outcome_unknown: bool,
    },
    /// 413: the keyed request body is over `IDEMPOTENCY_MAX_BODY_BYTES`.
    BodyTooLarge {
        /// The limit, in bytes.
        limit: usize,
    },
    /// 400: the keyed request body broke off before its end (fewer bytes
    /// than `Content-Length`, broken chunked framing, the client went
    /// away). Nothing was forwarded and the key is still free.
    BodyIncomplete,
    /// 422: the key was already used with a different request.
    KeyReused,
    /// 502: the origin could not be reached or gave no answer.
    OriginUnreachable,
    /// 502 (`origin-unreachable` too): the request was never carried out —
    /// the connection failed before it was sent, or the handler threw
    /// `NotSentError` — so the key is released and a retry runs at once.
    NotCarriedOut,
    /// 502 (`origin-unreachable` too): the worker's own handler threw, so
    /// its outcome is unknown (it may have acted before failing) and the
    /// key is held until its lease ends.
    HandlerFailed,
    /// 503: the idempotency store failed or did not answer in time.
    StoreUnavailable,
    /// 500: a configuration variable has a bad value.
    Misconfigured(String),
    /// 401: an admin path (SPEC §12) without `Authorization: Bearer
    /// <IDEMPOTENCY_ADMIN_TOKEN>`, or with another token.
    Unauthorized,
    /// 404: an admin path that names no record, or a record that does not
    /// exist (never written, or expired). The detail says which.
    RecordNotFound(String),
    /// 405: an admin path with the other method; `allow` is the one it takes.
    MethodNotAllowed {
        /// The method the path takes, for the `Allow` header.
        allow: &'static str,
    },
    /// 409: a release of a record that holds no attempt in flight (its
    /// answer is stored, or it is already released).
    NotInFlight(RecordState),
    /// 503: the key's record does not decode (a newer layout after a
    /// rollback, or damage); nothing was forwarded.
    RecordUnreadable,
    /// 400: a route's request has no key in any of the places its route
    /// takes one from (SPEC §13), written as `header:…`, `json:…`, `form:…`.
    MissingKeyFrom(String),
    /// 503: the key's stored answer is sealed (SPEC §4) and no configured
    /// key opens it (its key was removed from `IDEMPOTENCY_SEAL_KEYS`, or
    /// sealing was turned off, or the bytes were moved or damaged); nothing
    /// was forwarded.
    RecordSealed,
    /// 409: a release of an attempt that is running (lease live, outcome
    /// not yet known) without `?force=true`.
    AttemptRunning(RecordState),
    /// 401: a delivery to a webhook route (SPEC §13) whose signature is
    /// missing, wrong or stale, or that is signed but has no usable
    /// delivery id: why, as
    /// [`WebhookRefusal`](crate::core::WebhookRefusal) says it. Nothing was
    /// stored and the receiver was not called.
    WebhookSignature(String),
    /// 400: a request servers would read two ways — its path, or its
    /// method under an override — that different rules govern, or a path
    /// with a dot segment in some reading (SPEC §13). Nothing was forwarded.
    AmbiguousRequest(Ambiguity),
}

/// `409 key-in-flight: <detail>`: the status, the code and the detail, as
/// a log line or an error chain shows it. So a `Problem` is an error like
/// any other: `?` takes it into `Box<dyn std::error::Error>`.
///
/// ```
/// use oncekey::core::Problem;
/// fn check() -> Result<(), Box<dyn std::error::Error>> {
///     Err(Problem::MissingKey)?
/// }
/// let error = check().unwrap_err();
/// assert!(error.to_string().starts_with("400 missing-key: This endpoint requires"));
/// ```
impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}: {}", self.status(), self.code(), self.detail())
    }
}

impl std::error::Error for Problem {}

impl Problem {
    /// The problem's code, the last part of its `type` URN.
    pub fn code(&self) -> &'static str {
        self.row().0
    }

    /// The HTTP status.
    pub fn status(&self) -> u16 {
        self.row().1
    }

    /// The short, fixed `title`.
    pub fn title(&self) -> &'static str {
        self.row().2
    }

    /// `urn:oncekey:problem:<code>`.
    pub fn type_uri(&self) -> String {
        format!("urn:oncekey:problem:{}", self.code())
    }

    /// Seconds for a `Retry-After` header, for the problems that have one.
    pub fn retry_after_secs(&self) -> Option<u32> {
        match self {
            Self::KeyInFlight { retry_after_secs, .. } => Some(*retry_after_secs),
            Self::StoreUnavailable => Some(1),
            _ => None,
        }
    }

    /// The `detail`: what happened to this request.
    pub fn detail(&self) -> String {
        match self {
            Self::MissingKey => "This endpoint requires an Idempotency-Key header on this method.".into(),
            Self::MissingKeyFrom(sources) => {
                format!("This endpoint requires an idempotency key on this method, taken from {sources}.")
            }
            Self::InvalidKey(why) => format!("The Idempotency-Key header is not valid: {why}."),
            Self::KeyInFlight { outcome_unknown: false, .. } => {
                "A request with this Idempotency-Key is still being processed; retry after Retry-After seconds.".into()
            }
            Self::KeyInFlight { outcome_unknown: true, .. } => {
                "The last attempt with this Idempotency-Key ended without an answer, so its outcome is unknown: it may have been carried out. The key is held until its lease ends; retry after Retry-After seconds, when a retry runs it again as the next attempt.".into()
            }
            Self::BodyTooLarge { limit } => format!("The request body is larger than {limit} bytes."),
            Self::BodyIncomplete => {
                "The request body ended before it was complete; nothing was forwarded. Send the whole request again with the same key.".into()
            }
            Self::KeyReused => "This Idempotency-Key was already used with a different request.".into(),
            Self::OriginUnreachable => {
                "The origin did not answer; the outcome is unknown. Retry with the same key.".into()
            }
            Self::NotCarriedOut => {
                "The request was not carried out (the origin was not reached), and the key is free: retry with the same key now.".into()
            }
            Self::HandlerFailed => {
                "The request's handler failed; the outcome is unknown (it may have acted before failing). Retry with the same key once the key's lease has ended.".into()
            }
            Self::StoreUnavailable => {
                "The idempotency store is unavailable; the request was not forwarded. Retry with the same key.".into()
            }
            Self::Misconfigured(why) => format!("The idempotency layer is misconfigured: {why}."),
            Self::Unauthorized => {
                "This path needs the header Authorization: Bearer <token>, with the token set as IDEMPOTENCY_ADMIN_TOKEN.".into()
            }
            Self::RecordNotFound(why) => why.clone(),
            Self::MethodNotAllowed { allow } => format!("This path takes {allow} only."),
            Self::NotInFlight(RecordState::Completed { attempt, status, .. }) => format!(
                "The record is completed: attempt {attempt} answered {status}, and that answer is replayed to every retry. There is no attempt in flight to release; `?completed=true` forgets the answer, so the next request runs again (as attempt {}).",
                attempt.saturating_add(1)
            ),
            Self::NotInFlight(RecordState::Released { last_attempt, .. }) => format!(
                "The record is already released (last attempt {last_attempt}): the next request with this key runs as attempt {}. There is no attempt in flight to release.",
                last_attempt.saturating_add(1)
            ),
            Self::NotInFlight(RecordState::InFlight { .. } | RecordState::Unreadable) => {
                "The record holds an attempt in flight.".into()
            }
            Self::RecordUnreadable => {
                "The idempotency record of this key cannot be read by this version of the layer (written by a newer one before a rollback, or damaged), so whether this request already ran is unknown; it was not forwarded. An operator can inspect and release the record at /.well-known/oncekey/records/{record}.".into()
            }
            Self::RecordSealed => {
                "The stored answer of this key is sealed at rest, and no key in IDEMPOTENCY_SEAL_KEYS opens it (its key was removed, sealing was turned off, or the stored bytes were moved or damaged), so whether this request already ran cannot be shown; it was not forwarded. Put the key back, or have an operator inspect and release the record at /.well-known/oncekey/records/{record}.".into()
            }
            Self::WebhookSignature(why) => format!(
                "The webhook delivery was refused: {why}. Nothing was stored and the receiver was not called; only a delivery signed with this endpoint's secret, within the sender's time tolerance, is accepted."
            ),
            Self::AmbiguousRequest(why) => format!(
                "The request was refused: {why}. Nothing was forwarded. Send the path in one plain spelling, and the method as the request's own."
            ),
            Self::AttemptRunning(state) => format!(
                "Attempt {} is running: its lease is live and its outcome not yet known, so its origin call may still be under way. Wait for it to end (or its lease to), or POST again with ?force=true to release it anyway, at the risk that the next attempt runs beside it and the work is done twice.",
                state.attempt()
            ),
        }
    }

    /// The `application/problem+json` body: `type`, `title`, `status` and
    /// `detail`, and one extension member (RFC 9457 §3.2), `error`, that
    /// says the same in the shape Stripe's API answers errors in — `type`,
    /// `code` (the problem's code) and `message` (its detail). Stripe's SDKs
    /// (stripe-node among them) read an answer as an error only when its
    /// JSON has an `error` member, whatever its status: without it, a
    /// client of a Stripe-shaped API behind the layer would take a 409 or
    /// a 502 of the layer's for a success.
    ///
    /// ```
    /// use oncekey::core::Problem;
    /// let body: serde_json::Value = serde_json::from_str(&Problem::KeyReused.to_json()).unwrap();
    /// assert_eq!(body["type"], "urn:oncekey:problem:key-reused");
    /// assert_eq!(body["status"], 422);
    /// assert_eq!(body["error"]["code"], "key-reused");
    /// ```
    pub fn to_json(&self) -> String {
        let detail = self.detail();
        // Members in name order, as the body has always been written.
        let error =
            JsonObject::new().string("code", self.code()).string("message", &detail).string("type", self.error_type());
        JsonObject::new()
            .string("detail", &detail)
            .object("error", error)
            .number("status", Some(u64::from(self.status())))
            .string("title", self.title())
            .string("type", &self.type_uri())
            .end()
    }

    /// One of each problem the layer answers — every variant, both codes of
    /// [`Problem::KeyInFlight`], and each record state a refused release
    /// names — with sample details. `examples/problems.rs` prints them for
    /// the test that holds `docs/openapi/oncekey.yaml` to the core; not
    /// part of the API.
    #[doc(hidden)]
    pub fn samples() -> Vec<Problem> {
        let running = RecordState::InFlight { attempt: 2, lease_expires_at: 0, expires_at: 0, outcome_unknown: false };
        let samples = vec![
            Self::MissingKey,
            Self::InvalidKey(crate::core::KeyError::TooLong(256).to_string()),
            Self::KeyInFlight { retry_after_secs: 1, outcome_unknown: false },
            Self::KeyInFlight { retry_after_secs: 95, outcome_unknown: true },
            Self::BodyTooLarge { limit: 1_048_576 },
            Self::BodyIncomplete,
            Self::KeyReused,
            Self::OriginUnreachable,
            Self::NotCarriedOut,
            Self::HandlerFailed,
            Self::StoreUnavailable,
            Self::Misconfigured("IDEMPOTENCY_TTL_SECONDS: \"soon\" is not a number".into()),
            Self::Unauthorized,
            Self::RecordNotFound("No idempotency record by that name: never written, or expired.".into()),
            Self::MethodNotAllowed { allow: "GET" },
            Self::MethodNotAllowed { allow: "POST" },
            Self::NotInFlight(RecordState::Completed { attempt: 1, status: 201, sealed: None, expires_at: 0 }),
            Self::NotInFlight(RecordState::Released { last_attempt: 1, expires_at: 0 }),
            Self::NotInFlight(running),
            Self::RecordUnreadable,
            Self::MissingKeyFrom("header:idempotency-key or json:/request_id".into()),
            Self::RecordSealed,
            Self::AttemptRunning(running),
            Self::WebhookSignature(crate::core::WebhookRefusal::BadSignature.to_string()),
            Self::AmbiguousRequest(Ambiguity::Readings),
        ];
        // Names every variant, so a new one fails to compile here until it
        // has a sample above.
        for sample in &samples {
            match sample {
                Self::MissingKey
                | Self::InvalidKey(_)
                | Self::KeyInFlight { .. }
                | Self::BodyTooLarge { .. }
                | Self::BodyIncomplete
                | Self::KeyReused
                | Self::OriginUnreachable
                | Self::NotCarriedOut
                | Self::HandlerFailed
                | Self::StoreUnavailable
                | Self::Misconfigured(_)
                | Self::Unauthorized
                | Self::RecordNotFound(_)
                | Self::MethodNotAllowed { .. }
                | Self::NotInFlight(_)
                | Self::RecordUnreadable
                | Self::MissingKeyFrom(_)
                | Self::RecordSealed
                | Self::AttemptRunning(_)
                | Self::WebhookSignature(_)
                | Self::AmbiguousRequest(_) => {}
            }
        }
        samples
    }

    /// The `type` of the Stripe-shaped `error` member: `idempotency_error`
    /// for a problem with the key, `api_error` for a failure of the layer,
    /// its store or the origin, `invalid_request_error` for the rest.
    fn error_type(&self) -> &'static str {
        match self {
            Self::MissingKey
            | Self::MissingKeyFrom(_)
            | Self::InvalidKey(_)
            | Self::KeyInFlight { .. }
            | Self::KeyReused => "idempotency_error",
            Self::OriginUnreachable
            | Self::NotCarriedOut
            | Self::HandlerFailed
            | Self::StoreUnavailable
            | Self::Misconfigured(_)
            | Self::RecordUnreadable
            | Self::RecordSealed => "api_error",
            Self::BodyTooLarge { .. }
            | Self::BodyIncomplete
            | Self::Unauthorized
            | Self::RecordNotFound(_)
            | Self::MethodNotAllowed { .. }
            | Self::NotInFlight(_)
            | Self::AttemptRunning(_)
            | Self::WebhookSignature(_)
            | Self::AmbiguousRequest(_) => "invalid_request_error",
        }
    }

    /// Code, status and title: the table of SPEC §5.
    fn row(&self) -> (&'static str, u16, &'static str) {
        match self {
            Self::MissingKey | Self::MissingKeyFrom(_) => ("missing-key", 400, "Idempotency-Key is missing"),
            Self::InvalidKey(_) => ("invalid-key", 400, "Idempotency-Key is invalid"),
            Self::KeyInFlight { outcome_unknown: false, .. } => {
                ("key-in-flight", 409, "A request with this key is in flight")
            }
            Self::KeyInFlight { outcome_unknown: true, .. } => {
                ("outcome-unknown", 409, "The last attempt with this key ended without an answer")
            }
            Self::BodyTooLarge { .. } => ("body-too-large", 413, "Request body too large"),
            Self::BodyIncomplete => ("body-incomplete", 400, "Request body incomplete"),
            Self::KeyReused => ("key-reused", 422, "Idempotency-Key reused with a different request"),
            Self::OriginUnreachable | Self::NotCarriedOut | Self::HandlerFailed => {
                ("origin-unreachable", 502, "Origin unreachable")
            }
            Self::StoreUnavailable => ("store-unavailable", 503, "Idempotency store unavailable"),
            Self::Misconfigured(_) => ("misconfigured", 500, "Idempotency layer misconfigured"),
            Self::Unauthorized => ("unauthorized", 401, "Admin token missing or wrong"),
            Self::RecordNotFound(_) => ("record-not-found", 404, "No such idempotency record"),
            Self::MethodNotAllowed { .. } => ("method-not-allowed", 405, "Method not allowed on this admin path"),
            Self::NotInFlight(_) => ("not-in-flight", 409, "No attempt in flight to release"),
            Self::AttemptRunning(_) => ("attempt-running", 409, "The attempt is still running"),
            Self::RecordUnreadable | Self::RecordSealed => ("record-unreadable", 503, "Idempotency record unreadable"),
            Self::WebhookSignature(_) => ("webhook-signature", 401, "Webhook signature missing, wrong or stale"),
            Self::AmbiguousRequest(_) => ("ambiguous-request", 400, "Request read two ways"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    #[test]
    fn the_table_of_spec_5() {
        let table = [
            (Problem::MissingKey, "missing-key", 400, None),
            (Problem::InvalidKey("empty".into()), "invalid-key", 400, None),
            (Problem::KeyInFlight { retry_after_secs: 7, outcome_unknown: false }, "key-in-flight", 409, Some(7)),
            (Problem::KeyInFlight { retry_after_secs: 95, outcome_unknown: true }, "outcome-unknown", 409, Some(95)),
            (Problem::BodyTooLarge { limit: 5 }, "body-too-large", 413, None),
            (Problem::BodyIncomplete, "body-incomplete", 400, None),
            (Problem::KeyReused, "key-reused", 422, None),
            (Problem::OriginUnreachable, "origin-unreachable", 502, None),
            (Problem::NotCarriedOut, "origin-unreachable", 502, None),
            (Problem::StoreUnavailable, "store-unavailable", 503, Some(1)),
            (Problem::Misconfigured("IDEMPOTENCY_TTL_SECONDS: bad".into()), "misconfigured", 500, None),
            (Problem::Unauthorized, "unauthorized", 401, None),
            (Problem::RecordNotFound("none".into()), "record-not-found", 404, None),
            (Problem::MethodNotAllowed { allow: "GET" }, "method-not-allowed", 405, None),
            (
                Problem::NotInFlight(RecordState::Released { last_attempt: 1, expires_at: 0 }),
                "not-in-flight",
                409,
                None,
            ),
            (Problem::AttemptRunning(RecordState::Unreadable), "attempt-running", 409, None),
            (Problem::RecordUnreadable, "record-unreadable", 503, None),
            (Problem::RecordSealed, "record-unreadable", 503, None),
            (Problem::MissingKeyFrom("json:/request_id".into()), "missing-key", 400, None),
            (
                Problem::WebhookSignature("the stripe-signature header is missing".into()),
                "webhook-signature",
                401,
                None,
            ),
        ];
        for (problem, code, status, retry_after) in table {
            assert_eq!((problem.code(), problem.status(), problem.retry_after_secs()), (code, status, retry_after));
            let body: serde_json::Value = serde_json::from_str(&problem.to_json()).unwrap();
            assert_eq!(body["type"], format!("urn:oncekey:problem:{code}"));
            assert_eq!(body["status"], status);
            assert_eq!(body["title"], problem.title());
            assert!(problem.title().len() > 10 && problem.title().is_ascii());
            assert_eq!(body["detail"], problem.detail());
            // The same, as Stripe's API shapes an error.
            assert_eq!(body["error"]["code"], code);
            assert_eq!(body["error"]["message"], problem.detail());
            let error_type = if code.starts_with("key-") || code.ends_with("-key") || code == "outcome-unknown" {
                "idempotency_error"
            } else if status >= 500 {
                "api_error"
            } else {
                "invalid_request_error"
            };
            assert_eq!(body["error"]["type"], error_type, "{code}");
            assert_eq!(body.as_object().unwrap().len(), 5, "{body}");
        }
    }

    #[test]
    fn titles_are_distinct() {
        let all = [
            Problem::MissingKey,
            Problem::InvalidKey(String::new()),
            Problem::KeyInFlight { retry_after_secs: 1, outcome_unknown: false },
            Problem::BodyTooLarge { limit: 1 },
            Problem::BodyIncomplete,
            Problem::KeyReused,
            Problem::OriginUnreachable,
            Problem::StoreUnavailable,
            Problem::Misconfigured(String::new()),
            Problem::Unauthorized,
            Problem::RecordNotFound(String::new()),
            Problem::MethodNotAllowed { allow: "GET" },
            Problem::NotInFlight(RecordState::Released { last_attempt: 1, expires_at: 0 }),
            Problem::WebhookSignature(String::new()),
        ];
        let titles: std::collections::HashSet<_> = all.iter().map(Problem::title).collect();
        assert_eq!(titles.len(), all.len());
        assert_eq!(Problem::KeyReused.title(), "Idempotency-Key reused with a different request");
    }

    #[test]
    fn a_refused_release_says_what_the_record_holds() {
        let done =
            Problem::NotInFlight(RecordState::Completed { attempt: 1, status: 201, sealed: None, expires_at: 0 });
        assert!(done.detail().contains("completed") && done.detail().contains("201"), "{}", done.detail());
        let released = Problem::NotInFlight(RecordState::Released { last_attempt: 2, expires_at: 0 });
        assert!(released.detail().contains("already released") && released.detail().contains("attempt 3"));
    }

    #[test]
    fn misconfigured_names_the_variable_and_escapes() {
        let p = Problem::Misconfigured("IDEMPOTENCY_TTL_SECONDS: \"x\" is not a number".into());
        let body: serde_json::Value = serde_json::from_str(&p.to_json()).unwrap();
        assert!(body["detail"].as_str().unwrap().contains("IDEMPOTENCY_TTL_SECONDS"));
    }
}
