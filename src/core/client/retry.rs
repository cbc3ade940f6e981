//! The browser client's retry policy (SPEC §8), as data and one pure
//! function. Option names follow ky.

use crate::core::client::answer::AnswerKind;
use crate::core::client::retry_after::parse_retry_after;

/// Statuses retried by default: the transient ones, 500 included (the
/// server may not have stored an answer yet).
pub const DEFAULT_RETRY_STATUS_CODES: [u16; 7] = [408, 425, 429, 500, 502, 503, 504];

/// When and how often to retry a request with the same key.
#[derive(Clone, Debug, PartialEq)]
pub struct RetryPolicy {
    /// Retries after the first attempt (`limit`, default 2, as in ky).
    pub limit: u32,
    /// Statuses that are retried (`statusCodes`).
    pub status_codes: Vec<u16>,
    /// Base of the exponential backoff in ms (`delay`, default 300: waits of
    /// 300, 600, 1200… ms before jitter).
    pub delay_ms: u64,
    /// Cap on a computed backoff in ms (`backoffLimit`, default none).
    pub backoff_limit_ms: Option<u64>,
    /// Full jitter: wait a random share of the computed backoff (`jitter`,
    /// default true). `Retry-After` waits are never jittered.
    pub jitter: bool,
    /// Cap on a wait asked for by `Retry-After`, in ms (`maxRetryAfter`,
    /// default none). A longer request is waited for this long.
    pub max_retry_after_ms: Option<u64>,
    /// How long an in-flight answer ([`AnswerKind::InFlight`]) is polled,
    /// in ms, apart from the retry limit (`maxInFlightWait`, default
    /// 120 000: the server's default lease).
    pub max_in_flight_wait_ms: u64,
    /// Whether an unknown outcome ([`AnswerKind::OutcomeUnknown`]) is
    /// waited out like an in-flight answer (`waitUnknown`, default false):
    /// polled after its `Retry-After` (the rest of the lease) within
    /// `max_in_flight_wait_ms`, then retried as the next attempt. By default
    /// it ends the call: a person should not watch a spinner for a lease.
    pub wait_unknown: bool,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            limit: 2,
            status_codes: DEFAULT_RETRY_STATUS_CODES.to_vec(),
            delay_ms: 300,
            backoff_limit_ms: None,
            jitter: true,
            max_retry_after_ms: None,
            max_in_flight_wait_ms: 120_000,
            wait_unknown: false,
        }
    }
}

/// What one attempt produced, as the client saw it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AttemptResult<'a> {
    /// No HTTP answer: the connection failed or was dropped.
    NetworkError,
    /// An HTTP answer.
    Response {
        /// Its status.
        status: u16,
        /// Its `Retry-After` header, if any.
        retry_after: Option<&'a str>,
        /// What it says: a replay, in flight, or neither ([`AnswerKind::of`]).
        kind: AnswerKind,
    },
}

/// The retries spent so far on one request.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RetryState {
    /// Retries counted against the limit.
    pub retries: u32,
    /// Time spent waiting on in-flight answers, in ms.
    pub in_flight_waited_ms: u64,
}

impl RetryState {
    /// The state after `next` was acted on: a counted retry spends one of
    /// the limit, an in-flight poll spends its wait.
    ///
    /// ```
    /// use oncekey::core::{Next, RetryState};
    /// let s = RetryState::default().after(Next::Retry { delay_ms: 300, counted: true });
    /// let s = s.after(Next::Retry { delay_ms: 1000, counted: false });
    /// assert_eq!(s, RetryState { retries: 1, in_flight_waited_ms: 1000 });
    /// ```
    pub fn after(self, next: Next) -> Self {
        match next {
            Next::Retry { counted: true, .. } => Self { retries: self.retries.saturating_add(1), ..self },
            Next::Retry { delay_ms, counted: false } => {
                Self { in_flight_waited_ms: self.in_flight_waited_ms.saturating_add(delay_ms), ..self }
            }
            Next::Stop => self,
        }
    }
}

/// What the client does after an attempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Next {
    /// Wait, then send again with the same key.
    Retry {
        /// How long to wait, in ms.
        delay_ms: u64,
        /// Whether this retry counts against `limit` (an in-flight poll
        /// does not).
        counted: bool,
    },
    /// Stop: resolve with this answer, or, after a network error, reject.
    Stop,
}

impl RetryPolicy {
    /// Decides what follows `result`, given the retries spent, the clock
    /// (for `Retry-After` dates) and a random number in `[0, 1)` for jitter.
    ///
    /// ```
    /// use oncekey::core::{AnswerKind, AttemptResult, Next, RetryPolicy, RetryState};
    /// let policy = RetryPolicy::default();
    /// let busy = AttemptResult::Response { status: 503, retry_after: Some("2"), kind: AnswerKind::Fresh };
    /// assert_eq!(policy.next(RetryState::default(), &busy, 0, 0.5), Next::Retry { delay_ms: 2000, counted: true });
    /// let reused = AttemptResult::Response { status: 422, retry_after: None, kind: AnswerKind::Fresh };
    /// assert_eq!(policy.next(RetryState::default(), &reused, 0, 0.5), Next::Stop);
    /// ```
    pub fn next(&self, state: RetryState, result: &AttemptResult<'_>, now_ms: u64, random: f64) -> Next {
        let (retry_after, in_flight) = match *result {
            AttemptResult::NetworkError => (None, false),
            // A replay is the stored, final answer, whatever its status.
            AttemptResult::Response { kind: AnswerKind::Replayed, .. } => return Next::Stop,
            AttemptResult::Response { kind: AnswerKind::InFlight, retry_after, .. } => (retry_after, true),
            AttemptResult::Response { kind: AnswerKind::OutcomeUnknown, retry_after, .. } if self.wait_unknown => {
                (retry_after, true)
            }
            AttemptResult::Response { kind: AnswerKind::OutcomeUnknown, .. } => return Next::Stop,
            AttemptResult::Response { status, retry_after, .. } if self.status_codes.contains(&status) => {
                (retry_after, false)
            }
            AttemptResult::Response { .. } => return Next::Stop,
        };
        let asked = retry_after.and_then(|v| parse_retry_after(v, now_ms).ok());
        if in_flight {
            let delay_ms = self.cap_retry_after(asked.unwrap_or(1000));
            return match state.in_flight_waited_ms.saturating_add(delay_ms) <= self.max_in_flight_wait_ms {
                true => Next::Retry { delay_ms, counted: false },
                false => Next::Stop,
            };
        }
        if state.retries >= self.limit {
            return Next::Stop;
        }
        let delay_ms = match asked {
            Some(ms) => self.cap_retry_after(ms),
            None => self.backoff(state.retries + 1, random),
        };
        Next::Retry { delay_ms, counted: true }
    }

    /// Whether `result` is the request's final answer whatever the budget
    /// left: a replay, or a status this policy never retries. A form keeps
    /// its key after anything else (a network error, an in-flight answer, a
    /// retryable status once the retries ran out), since sending the same
    /// request again is still safe and may still be needed.
    ///
    /// ```
    /// use oncekey::core::{AnswerKind, AttemptResult, RetryPolicy};
    /// let p = RetryPolicy::default();
    /// let created = AttemptResult::Response { status: 201, retry_after: None, kind: AnswerKind::Fresh };
    /// assert!(p.is_settled(&created));
    /// assert!(!p.is_settled(&AttemptResult::NetworkError));
    /// ```
    pub fn is_settled(&self, result: &AttemptResult<'_>) -> bool {
        match *result {
            AttemptResult::NetworkError => false,
            AttemptResult::Response { kind: AnswerKind::Replayed, .. } => true,
            // Sending the same request again is still safe once the lease ends.
            AttemptResult::Response { kind: AnswerKind::InFlight | AnswerKind::OutcomeUnknown, .. } => false,
            AttemptResult::Response { status, .. } => !self.status_codes.contains(&status),
        }
    }

    /// `delay · 2^(n-1)`, capped by `backoff_limit_ms`, then full jitter.
    fn backoff(&self, retry_number: u32, random: f64) -> u64 {
        let exp = self.delay_ms.saturating_mul(1u64.checked_shl(retry_number - 1).unwrap_or(u64::MAX));
        let capped = self.backoff_limit_ms.map_or(exp, |limit| exp.min(limit));
        if self.jitter {
            // Clamp so a random of exactly 1.0 (or junk) cannot exceed the cap.
            (capped as f64 * random.clamp(0.0, 1.0)) as u64
        } else {
            capped
        }
    }

    fn cap_retry_after(&self, ms: u64) -> u64 {
        self.max_retry_after_ms.map_or(ms, |max| ms.min(max))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    fn response(status: u16) -> AttemptResult<'static> {
        AttemptResult::Response { status, retry_after: None, kind: AnswerKind::Fresh }
    }

    fn at(retries: u32) -> RetryState {
        RetryState { retries, in_flight_waited_ms: 0 }
    }

    #[test]
    fn which_outcomes_retry() {
        let p = RetryPolicy { jitter: false, ..RetryPolicy::default() };
        for status in [408, 425, 429, 500, 502, 503, 504] {
            assert!(matches!(p.next(at(0), &response(status), 0, 0.0), Next::Retry { counted: true, .. }), "{status}");
        }
        for status in [200, 201, 204, 301, 400, 401, 403, 404, 409, 413, 422, 501, 505] {
            assert_eq!(p.next(at(0), &response(status), 0, 0.0), Next::Stop, "{status}");
        }
        assert!(matches!(p.next(at(0), &AttemptResult::NetworkError, 0, 0.0), Next::Retry { .. }));
        let replayed_500 = AttemptResult::Response { status: 500, retry_after: None, kind: AnswerKind::Replayed };
        assert_eq!(p.next(at(0), &replayed_500, 0, 0.0), Next::Stop);
        let custom = RetryPolicy { status_codes: vec![418], ..p.clone() };
        assert!(matches!(custom.next(at(0), &response(418), 0, 0.0), Next::Retry { .. }));
        assert_eq!(custom.next(at(0), &response(503), 0, 0.0), Next::Stop);
    }

    #[test]
    fn exponential_backoff_with_full_jitter() {
        let p = RetryPolicy { limit: 10, ..RetryPolicy::default() };
        let no_jitter = RetryPolicy { jitter: false, ..p.clone() };
        for (retries, want) in [(0, 300), (1, 600), (2, 1200), (3, 2400)] {
            assert_eq!(
                no_jitter.next(at(retries), &AttemptResult::NetworkError, 0, 0.9),
                Next::Retry { delay_ms: want, counted: true }
            );
            assert_eq!(
                p.next(at(retries), &AttemptResult::NetworkError, 0, 0.5),
                Next::Retry { delay_ms: want / 2, counted: true }
            );
            assert_eq!(
                p.next(at(retries), &AttemptResult::NetworkError, 0, 0.0),
                Next::Retry { delay_ms: 0, counted: true }
            );
        }
        let capped = RetryPolicy { backoff_limit_ms: Some(1000), jitter: false, limit: 100, ..p };
        assert_eq!(
            capped.next(at(5), &AttemptResult::NetworkError, 0, 0.3),
            Next::Retry { delay_ms: 1000, counted: true }
        );
        assert_eq!(
            capped.next(at(90), &AttemptResult::NetworkError, 0, 0.3),
            Next::Retry { delay_ms: 1000, counted: true }
        );
    }

    #[test]
    fn limit_counts_retries() {
        let p = RetryPolicy::default();
        assert!(matches!(p.next(at(1), &response(503), 0, 0.1), Next::Retry { .. }));
        assert_eq!(p.next(at(2), &response(503), 0, 0.1), Next::Stop);
        assert_eq!(p.next(at(2), &AttemptResult::NetworkError, 0, 0.1), Next::Stop);
        let none = RetryPolicy { limit: 0, ..p };
        assert_eq!(none.next(at(0), &AttemptResult::NetworkError, 0, 0.1), Next::Stop);
    }

    #[test]
    fn retry_after_is_honoured_and_capped() {
        let p = RetryPolicy::default();
        let with =
            |v: &'static str| AttemptResult::Response { status: 503, retry_after: Some(v), kind: AnswerKind::Fresh };
        assert_eq!(p.next(at(0), &with("4"), 0, 0.5), Next::Retry { delay_ms: 4000, counted: true });
        let date = "Thu, 01 Jan 1970 00:00:10 GMT";
        assert_eq!(p.next(at(0), &with(date), 7_000, 0.5), Next::Retry { delay_ms: 3000, counted: true });
        // An unreadable value falls back to backoff.
        assert_eq!(p.next(at(0), &with("soon"), 0, 0.5), Next::Retry { delay_ms: 150, counted: true });
        let capped = RetryPolicy { max_retry_after_ms: Some(1500), ..p };
        assert_eq!(capped.next(at(0), &with("60"), 0, 0.5), Next::Retry { delay_ms: 1500, counted: true });
    }

    #[test]
    fn state_follows_the_decisions() {
        let p = RetryPolicy { limit: 1, max_in_flight_wait_ms: 2000, jitter: false, ..RetryPolicy::default() };
        let busy = AttemptResult::Response { status: 409, retry_after: Some("1"), kind: AnswerKind::InFlight };
        let mut state = RetryState::default();
        let mut polls = 0;
        loop {
            match p.next(state, &busy, 0, 0.0) {
                Next::Stop => break,
                next => {
                    polls += 1;
                    state = state.after(next);
                }
            }
        }
        assert_eq!((polls, state), (2, RetryState { retries: 0, in_flight_waited_ms: 2000 }));
        let next = p.next(state, &AttemptResult::NetworkError, 0, 0.0);
        state = state.after(next);
        assert_eq!(state.retries, 1);
        assert_eq!(p.next(state, &AttemptResult::NetworkError, 0, 0.0), Next::Stop);
        assert_eq!(state.after(Next::Stop), state);
    }

    #[test]
    fn settled_answers() {
        let p = RetryPolicy::default();
        for status in [200, 201, 204, 400, 404, 409, 422, 501] {
            assert!(p.is_settled(&response(status)), "{status}");
        }
        for status in [408, 425, 429, 500, 502, 503, 504] {
            assert!(!p.is_settled(&response(status)), "{status}");
        }
        let replayed_503 = AttemptResult::Response { status: 503, retry_after: None, kind: AnswerKind::Replayed };
        assert!(p.is_settled(&replayed_503));
        let busy = AttemptResult::Response { status: 409, retry_after: None, kind: AnswerKind::InFlight };
        assert!(!p.is_settled(&busy));
        assert!(!p.is_settled(&AttemptResult::NetworkError));
    }

    #[test]
    fn an_unknown_outcome_ends_the_call_unless_waited_out() {
        let unknown =
            AttemptResult::Response { status: 409, retry_after: Some("90"), kind: AnswerKind::OutcomeUnknown };
        let p = RetryPolicy::default();
        assert_eq!(p.next(RetryState::default(), &unknown, 0, 0.5), Next::Stop, "by default: no two-minute spinner");
        assert!(!p.is_settled(&unknown), "the submission keeps its key: sending it again stays safe");
        let waits = RetryPolicy { wait_unknown: true, ..RetryPolicy::default() };
        assert_eq!(
            waits.next(RetryState::default(), &unknown, 0, 0.5),
            Next::Retry { delay_ms: 90_000, counted: false }
        );
        let short = RetryPolicy { wait_unknown: true, max_in_flight_wait_ms: 60_000, ..RetryPolicy::default() };
        assert_eq!(short.next(RetryState::default(), &unknown, 0, 0.5), Next::Stop, "past maxInFlightWait");
    }

    #[test]
    fn in_flight_is_polled_apart_from_the_limit() {
        let p = RetryPolicy { max_in_flight_wait_ms: 3000, ..RetryPolicy::default() };
        let busy = AttemptResult::Response { status: 409, retry_after: Some("1"), kind: AnswerKind::InFlight };
        let spent = RetryState { retries: 2, in_flight_waited_ms: 1000 };
        assert_eq!(p.next(spent, &busy, 0, 0.5), Next::Retry { delay_ms: 1000, counted: false });
        let spent = RetryState { retries: 0, in_flight_waited_ms: 2001 };
        assert_eq!(p.next(spent, &busy, 0, 0.5), Next::Stop);
        // A 409 that is not in flight is final.
        assert_eq!(p.next(at(0), &response(409), 0, 0.5), Next::Stop);
        let no_header = AttemptResult::Response { status: 409, retry_after: None, kind: AnswerKind::InFlight };
        assert_eq!(p.next(at(0), &no_header, 0, 0.5), Next::Retry { delay_ms: 1000, counted: false });
    }
}
