//! `Retry-After` (RFC 9110 §10.2.3): delay-seconds or an HTTP date.

/// Why a `Retry-After` value could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RetryAfterError {
    /// The value is empty.
    #[error("Retry-After is empty")]
    Empty,
    /// Neither a whole number of seconds nor an HTTP date.
    #[error("Retry-After is neither seconds nor an HTTP date")]
    Malformed,
}

/// The longest wait a value can ask for: a year, to keep arithmetic finite.
const MAX_DELAY_MS: u64 = 365 * 24 * 3600 * 1000;

/// Reads a `Retry-After` value as a delay in ms from `now_ms` (ms since the
/// Unix epoch). A date in the past is a delay of 0.
///
/// ```
/// use oncekey::core::parse_retry_after;
/// assert_eq!(parse_retry_after("3", 0), Ok(3_000));
/// assert_eq!(parse_retry_after("Thu, 01 Jan 1970 00:00:10 GMT", 4_000), Ok(6_000));
/// ```
///
/// # Errors
/// [`RetryAfterError`] when the value is neither form. Never panics.
pub fn parse_retry_after(value: &str, now_ms: u64) -> Result<u64, RetryAfterError> {
    let value = value.trim();
    if value.is_empty() {
        return Err(RetryAfterError::Empty);
    }
    if value.bytes().all(|b| b.is_ascii_digit()) {
        // Very long digit strings saturate rather than fail: the server asked for "a lot".
        let secs = value.parse::<u64>().unwrap_or(u64::MAX);
        return Ok(secs.saturating_mul(1000).min(MAX_DELAY_MS));
    }
    let at = httpdate::parse_http_date(value).map_err(|_| RetryAfterError::Malformed)?;
    let at_ms =
        at.duration_since(std::time::UNIX_EPOCH).map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)).unwrap_or(0);
    Ok(at_ms.saturating_sub(now_ms).min(MAX_DELAY_MS))
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(not(target_arch = "wasm32"))]
    use proptest::prelude::*;
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    #[test]
    fn seconds_and_dates() {
        assert_eq!(parse_retry_after("0", 5), Ok(0));
        assert_eq!(parse_retry_after(" 120 ", 5), Ok(120_000));
        assert_eq!(parse_retry_after("99999999999999999999999", 0), Ok(MAX_DELAY_MS));
        // 1994-11-06T08:49:37Z = 784111777 s.
        let date = "Sun, 06 Nov 1994 08:49:37 GMT";
        assert_eq!(parse_retry_after(date, 784_111_777_000 - 2_500), Ok(2_500));
        assert_eq!(parse_retry_after(date, 784_111_777_000 + 1), Ok(0), "past dates mean now");
        assert_eq!(parse_retry_after("Sunday, 06-Nov-94 08:49:37 GMT", 784_111_770_000), Ok(7_000));
        assert_eq!(parse_retry_after("Sun Nov  6 08:49:37 1994", 784_111_776_000), Ok(1_000));
    }

    #[test]
    fn rejects_other_values() {
        assert_eq!(parse_retry_after("", 0), Err(RetryAfterError::Empty));
        for bad in ["-1", "1.5", "soon", "1s", "Sun, 06 Nov 1994", "+3"] {
            assert_eq!(parse_retry_after(bad, 0), Err(RetryAfterError::Malformed), "{bad:?}");
        }
    }

    #[cfg(not(target_arch = "wasm32"))]
    proptest! {
        #[test]
        fn prop_never_panics(value in ".{0,64}", now in any::<u64>()) {
            match parse_retry_after(&value, now) {
                Ok(ms) => prop_assert!(ms <= MAX_DELAY_MS),
                Err(RetryAfterError::Empty | RetryAfterError::Malformed) => {}
            }
        }

        #[test]
        fn prop_any_seconds_value_round_trips(secs in 0u64..10_000_000) {
            prop_assert_eq!(parse_retry_after(&secs.to_string(), 0), Ok(secs * 1000));
        }
    }
}
