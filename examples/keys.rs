//! Reads `Idempotency-Key` header values, one JSON string a line, and
//! prints for each whether the core accepts it as a key (`true` or
//! `false`), one a line. `tests/docs/openapi.test.js` holds the header's
//! schema in `docs/openapi/oncekey.yaml` to this.
//!
//! ```text
//! echo '"order-42"' | cargo run --quiet --example keys
//! ```

use std::io::{BufRead, Write};

use oncekey::core::IdempotencyKey;

fn main() {
    let mut out = std::io::stdout().lock();
    for line in std::io::stdin().lock().lines() {
        let value: String = serde_json::from_str(&line.expect("stdin")).expect("one JSON string a line");
        writeln!(out, "{}", IdempotencyKey::parse(&value).is_ok()).expect("stdout");
    }
}
