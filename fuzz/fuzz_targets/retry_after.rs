//! `parse_retry_after` on any text and clock reading: a bounded delay or a
//! typed error, never a panic. Whole seconds are read exactly, up to the
//! one-year cap.
#![no_main]

use libfuzzer_sys::fuzz_target;
use oncekey::core::parse_retry_after;

/// A year, the longest delay `parse_retry_after` may return.
const MAX_DELAY_MS: u64 = 365 * 24 * 3600 * 1000;

fuzz_target!(|data: &[u8]| {
    // The first 8 bytes are the clock reading, the rest the header value.
    let (now, value) = match data.split_first_chunk::<8>() {
        Some((now, rest)) => (u64::from_be_bytes(*now), rest),
        None => (0, data),
    };
    let Ok(value) = std::str::from_utf8(value) else { return };
    let Ok(delay) = parse_retry_after(value, now) else { return };
    assert!(delay <= MAX_DELAY_MS, "{delay} ms");
    let trimmed = value.trim();
    if !trimmed.is_empty() && trimmed.len() <= 9 && trimmed.bytes().all(|b| b.is_ascii_digit()) {
        assert_eq!(delay, (trimmed.parse::<u64>().unwrap() * 1000).min(MAX_DELAY_MS));
    }
});
