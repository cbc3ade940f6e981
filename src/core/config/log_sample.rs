//! `IDEMPOTENCY_LOG_SAMPLE` (SPEC §5): the share of routine decisions whose
//! line is logged, decided per request after the decision — every other
//! decision is always logged.

/// Parts of a million: the finest share the variable takes (six decimals).
const MILLION: u64 = 1_000_000;

/// The share of routine decisions logged, in parts per million.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LogSample(u32);

impl Default for LogSample {
    /// Every decision logged.
    fn default() -> Self {
        Self(MILLION as u32)
    }
}

impl LogSample {
    /// The rule a value must follow, as a misconfiguration names it.
    pub(super) const RULE: &'static str = "a number from 0 to 1 with at most six decimals (0.01 logs 1 in 100)";

    /// Reads a share written as `0`, `1`, `0.25` or `.25` (at most six
    /// decimals); `None` for anything else. Read by hand: float parsing
    /// would cost the Worker's wasm more than this whole variable.
    ///
    /// ```
    /// use oncekey::core::LogSample;
    /// assert_eq!(LogSample::parse("0.25").map(LogSample::per_million), Some(250_000));
    /// assert_eq!(LogSample::parse("1").map(LogSample::per_million), Some(1_000_000));
    /// assert_eq!(LogSample::parse("1.5"), None);
    /// assert_eq!(LogSample::parse("1e-3"), None);
    /// ```
    pub fn parse(text: &str) -> Option<Self> {
        let (whole, decimals) = text.split_once('.').unwrap_or((text, ""));
        let digits = |part: &str| part.bytes().all(|b| b.is_ascii_digit());
        let fits = matches!(whole, "" | "0" | "1") && decimals.len() <= 6 && digits(decimals);
        if !fits || text.is_empty() || text == "." || text.ends_with('.') {
            return None;
        }
        let fraction = decimals.bytes().chain(std::iter::repeat(b'0')).take(6);
        let fraction = fraction.fold(0u64, |n, digit| n * 10 + u64::from(digit - b'0'));
        let share = if whole == "1" { MILLION + fraction } else { fraction };
        (share <= MILLION).then_some(Self(share as u32))
    }

    /// The share in parts per million.
    pub fn per_million(self) -> u32 {
        self.0
    }

    /// Whether a routine decision of the request whose host drew `draw`
    /// (its reservation number, [`RequestHead::reservation`]: random bits,
    /// odd) is logged. Every decision at 1, none at 0.
    ///
    /// [`RequestHead::reservation`]: crate::core::RequestHead::reservation
    ///
    /// ```
    /// use oncekey::core::LogSample;
    /// let half = LogSample::parse("0.5").unwrap();
    /// assert!(half.keeps(1) && !half.keeps((999_999 << 1) | 1));
    /// assert!(!LogSample::parse("0").unwrap().keeps(1));
    /// ```
    pub fn keeps(self, draw: u64) -> bool {
        // The low bit is always set; the bits above it are the draw.
        (draw >> 1) % MILLION < u64::from(self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    #[test]
    fn shares_as_written() {
        let rows = [
            ("0", 0),
            ("1", 1_000_000),
            ("1.0", 1_000_000),
            ("1.000000", 1_000_000),
            ("0.1", 100_000),
            (".1", 100_000),
            ("0.000001", 1),
            ("0.999999", 999_999),
            ("0.05", 50_000),
        ];
        for (text, per_million) in rows {
            assert_eq!(LogSample::parse(text).map(LogSample::per_million), Some(per_million), "{text}");
        }
    }

    #[test]
    fn anything_else_is_refused() {
        for text in ["", ".", "0.", "1.", "1.000001", "2", "-0.1", "+0.1", "0.0000001", "1e-3", "0,5", "half", "00.5"] {
            assert_eq!(LogSample::parse(text), None, "{text}");
        }
    }

    #[test]
    fn the_share_kept_is_the_share_asked_for() {
        // Draws as the hosts make them: 53 random bits, odd.
        let draws = (0..100_000u64).map(|i| (i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 11) | 1);
        let tenth = LogSample::parse("0.1").unwrap();
        let kept = draws.clone().filter(|&d| tenth.keeps(d)).count();
        assert!((9_000..11_000).contains(&kept), "{kept} of 100000");
        assert!(draws.clone().all(|d| LogSample::default().keeps(d)));
        assert!(!draws.clone().any(|d| LogSample::parse("0").unwrap().keeps(d)));
    }
}
