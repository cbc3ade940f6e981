//! The retry decision for one request: the core's [`RetryPolicy`] and the
//! [`RetryState`] it has spent, behind one JavaScript object.

use wasm_bindgen::prelude::*;

use super::Answer;
use crate::core::{AttemptResult, Next, RetryPolicy, RetryState, parse_retry_after};

/// The retry policy and state of one `idempotentFetch` call.
#[wasm_bindgen]
pub struct RetryPlan {
    policy: RetryPolicy,
    state: RetryState,
}

/// A non-negative number of ms (or count); `Infinity` means no bound.
fn bound(value: f64, name: &str) -> Result<Option<u64>, JsError> {
    if value.is_nan() || value < 0.0 {
        return Err(JsError::new(&[name, " must be a number >= 0"].concat()));
    }
    Ok(value.is_finite().then_some(value as u64))
}

/// An HTTP status code: a whole number from 100 to 599.
fn status(code: f64) -> Result<u16, JsError> {
    match (100.0..=599.0).contains(&code) && code.fract() == 0.0 {
        true => Ok(code as u16),
        // No number in the message: formatting a float costs the wasm ~10 KB.
        false => Err(JsError::new("statusCodes must hold whole HTTP statuses from 100 to 599")),
    }
}

#[wasm_bindgen]
impl RetryPlan {
    /// A plan from the ky-named `retry` options; `undefined` takes the
    /// core's default for that option.
    ///
    /// # Errors
    /// A negative or NaN number, or a status code that is not a whole
    /// number from 100 to 599: the error's message names the option.
    #[wasm_bindgen(constructor)]
    #[allow(clippy::too_many_arguments)] // one per ky-named `retry` option, as the glue passes them
    pub fn new(
        limit: Option<f64>,
        status_codes: Option<Vec<f64>>,
        delay: Option<f64>,
        backoff_limit: Option<f64>,
        jitter: Option<bool>,
        max_retry_after: Option<f64>,
        max_in_flight_wait: Option<f64>,
        wait_unknown: Option<bool>,
    ) -> Result<RetryPlan, JsError> {
        let mut policy = RetryPolicy::default();
        if let Some(v) = limit {
            policy.limit = bound(v, "limit")?.map_or(u32::MAX, |n| n.min(u64::from(u32::MAX)) as u32);
        }
        if let Some(codes) = status_codes {
            policy.status_codes = codes.into_iter().map(status).collect::<Result<_, _>>()?;
        }
        if let Some(v) = delay {
            policy.delay_ms = bound(v, "delay")?.unwrap_or(u64::MAX);
        }
        if let Some(v) = backoff_limit {
            policy.backoff_limit_ms = bound(v, "backoffLimit")?;
        }
        if let Some(v) = jitter {
            policy.jitter = v;
        }
        if let Some(v) = max_retry_after {
            policy.max_retry_after_ms = bound(v, "maxRetryAfter")?;
        }
        if let Some(v) = max_in_flight_wait {
            policy.max_in_flight_wait_ms = bound(v, "maxInFlightWait")?.unwrap_or(u64::MAX);
        }
        if let Some(v) = wait_unknown {
            policy.wait_unknown = v;
        }
        Ok(RetryPlan { policy, state: RetryState::default() })
    }

    /// Decides what follows an attempt and records it: the wait in ms
    /// before sending again with the same key, or -1 to stop. `answer` is
    /// what the answer said ([`answer_kind`](super::answer_kind)), or
    /// `undefined` for no HTTP answer (a network error).
    pub fn next(
        &mut self,
        status: u16,
        retry_after: Option<String>,
        answer: Option<Answer>,
        now_ms: f64,
        random: f64,
    ) -> f64 {
        let result = attempt(status, retry_after.as_deref(), answer);
        let next = self.policy.next(self.state, &result, now_ms as u64, random);
        self.state = self.state.after(next);
        match next {
            Next::Retry { delay_ms, .. } => delay_ms as f64,
            Next::Stop => -1.0,
        }
    }

    /// Whether an answer is final whatever the budget left (see
    /// [`RetryPolicy::is_settled`]): after it, a form's next submit is a
    /// new submission.
    #[wasm_bindgen(js_name = isSettled)]
    pub fn is_settled(&self, status: u16, answer: Option<Answer>) -> bool {
        self.policy.is_settled(&attempt(status, None, answer))
    }
}

fn attempt(status: u16, retry_after: Option<&str>, answer: Option<Answer>) -> AttemptResult<'_> {
    match answer {
        None => AttemptResult::NetworkError,
        Some(answer) => AttemptResult::Response { status, retry_after, kind: answer.into() },
    }
}

/// A `Retry-After` value as a delay in ms from `now_ms`, or `undefined`
/// when it is neither seconds nor an HTTP date.
#[wasm_bindgen(js_name = retryAfterMs)]
pub fn retry_after_ms(value: &str, now_ms: f64) -> Option<f64> {
    parse_retry_after(value, now_ms as u64).ok().map(|ms| ms as f64)
}
