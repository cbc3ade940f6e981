//! Prints every problem the layer answers (`Problem::samples`), one JSON
//! line each, as the core's exchange sends it: `{"status", "headers",
//! "body"}`, header names in lower case. `tests/docs/openapi.test.js` checks
//! each against `docs/openapi/oncekey.yaml`.
//!
//! ```text
//! cargo run --quiet --example problems
//! ```

use oncekey::core::{Problem, Reply, ReplyBody};
use serde_json::{Map, Value, json};

fn main() {
    for problem in Problem::samples() {
        let reply = Reply::problem(&problem);
        let ReplyBody::Bytes(body) = &reply.body else { unreachable!("a problem's body is its own bytes") };
        let body: Value = serde_json::from_slice(body).expect("a problem's body is JSON");
        let headers: Map<String, Value> = reply.headers.into_iter().map(|(name, value)| (name, value.into())).collect();
        println!("{}", json!({ "status": reply.status, "headers": headers, "body": body }));
    }
}
