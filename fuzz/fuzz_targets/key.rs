//! `IdempotencyKey::parse_bytes` on any bytes: a key or a typed error, never
//! a panic; an accepted key is 1–255 visible ASCII characters and names the
//! same key in both spellings.
#![no_main]

use libfuzzer_sys::fuzz_target;
use oncekey::core::{IdempotencyKey, MAX_KEY_LEN};

fuzz_target!(|data: &[u8]| {
    let Ok(key) = IdempotencyKey::parse_bytes(data) else { return };
    let s = key.as_str();
    assert!((1..=MAX_KEY_LEN).contains(&s.len()), "length {}", s.len());
    assert!(s.bytes().all(|b| (0x21..=0x7e).contains(&b)));

    // The quoted spelling of any accepted key parses back to it.
    let mut quoted = String::with_capacity(s.len() + 2);
    quoted.push('"');
    for c in s.chars() {
        if c == '"' || c == '\\' {
            quoted.push('\\');
        }
        quoted.push(c);
    }
    quoted.push('"');
    assert_eq!(IdempotencyKey::parse(&quoted).as_ref(), Ok(&key));

    // So does the bare spelling, when the key has no character a token forbids.
    if !s.bytes().any(|b| matches!(b, b'"' | b'\\' | b',')) {
        assert_eq!(IdempotencyKey::parse(s).as_ref(), Ok(&key));
    }
});
