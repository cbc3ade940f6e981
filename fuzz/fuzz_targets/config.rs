//! `Config::from_vars` fed arbitrary values: a valid configuration or an
//! error naming one of the variables, never a panic; what it accepts keeps
//! the rules of SPEC §6.
//!
//! Input: records `[index][value bytes]` separated by 0x00; `index` picks
//! the variable (one index names no variable), values are lossy UTF-8 as
//! the runtime would hand them over.
#![no_main]

use libfuzzer_sys::fuzz_target;
use oncekey::core::{Config, MAX_RESPONSE_BYTES_LIMIT, OriginUrl, VARIABLES};

/// Every variable, and one that is not oncekey's.
const NAMES: [&str; VARIABLES.len() + 1] = {
    let mut names = ["NOT_AN_ONCEKEY_VARIABLE"; VARIABLES.len() + 1];
    let mut i = 0;
    while i < VARIABLES.len() {
        names[i] = VARIABLES[i];
        i += 1;
    }
    names
};

fuzz_target!(|data: &[u8]| {
    let mut vars: Vec<(&str, String)> = Vec::new();
    for record in data.split(|&b| b == 0) {
        let Some((&index, value)) = record.split_first() else { continue };
        let name = NAMES[usize::from(index) % NAMES.len()];
        vars.retain(|(n, _)| *n != name);
        vars.push((name, String::from_utf8_lossy(value).into_owned()));
    }
    let lookup = |name: &str| vars.iter().find(|(n, _)| *n == name).map(|(_, v)| v.clone());
    let result = Config::from_vars(lookup);
    assert_eq!(Config::from_vars(lookup), result, "parsing is deterministic");
    match result {
        Err(e) => {
            assert!(VARIABLES.contains(&e.variable), "{}", e.variable);
            assert!(vars.iter().any(|(n, _)| *n == e.variable), "an unset variable cannot be bad: {e}");
        }
        Ok(c) => {
            let lease = c.records.lease_ms;
            assert!((1_000..=900_000).contains(&lease));
            assert!(c.origin_timeout_ms > 0 && c.origin_timeout_ms < lease);
            assert!((60_000..=2_592_000_000).contains(&c.records.ttl_ms));
            assert!(c.max_response_bytes <= MAX_RESPONSE_BYTES_LIMIT);
            assert!((1..=60_000).contains(&c.store_timeout_ms));
            assert!(c.records.release_on.iter().all(|s| (100..=599).contains(s)));
            assert!(!c.methods.is_empty());
            assert!(c.methods.iter().all(|m| !m.is_empty() && m.bytes().all(|b| b.is_ascii_uppercase())));
            if let Some(OriginUrl::Fixed(url)) = &c.origin_url {
                assert!(url.starts_with("http://") || url.starts_with("https://"));
                assert!(!url.contains(char::is_whitespace));
            }
            assert!(c.in_flight_wait_ms <= lease);
            if vars.is_empty() {
                assert_eq!(c, Config::default());
            }
        }
    }
});
