//! The browser bindings, run by wasm-bindgen-test under Node and in
//! headless Chromium (`make test-browser` checks both counts).
#![cfg(all(feature = "browser", target_arch = "wasm32"))]

use oncekey::browser::{
    Answer, KeySource, RetryPlan, answer_kind, answer_reads_body, answer_replayed, key_refusal, payload_fingerprint,
    retry_after_ms,
};
use oncekey::core::Fingerprint;
use wasm_bindgen_test::wasm_bindgen_test;

const NOW: f64 = 1_700_000_000_000.0;

fn is_v7(key: &str) -> bool {
    let b = key.as_bytes();
    key.len() == 36
        && [8, 13, 18, 23].iter().all(|&i| b[i] == b'-')
        && b[14] == b'7'
        && matches!(b[19], b'8' | b'9' | b'a' | b'b')
        && key.chars().filter(|&c| c != '-').all(|c| matches!(c, '0'..='9' | 'a'..='f'))
}

#[wasm_bindgen_test]
fn keys_are_v7_and_strictly_increasing() {
    let mut source = KeySource::new();
    let mut last = String::new();
    // More keys than one random pool holds, all in one millisecond.
    for _ in 0..2_000 {
        let key = source.next(NOW);
        assert!(is_v7(&key), "{key}");
        assert!(key > last);
        last = key;
    }
    assert_eq!(&last[..13], "018bcfe5-6800", "the timestamp is the clock reading");
}

#[wasm_bindgen_test]
fn random_bits_come_from_webcrypto() {
    let a = KeySource::new().next(NOW);
    let b = KeySource::new().next(NOW);
    assert_ne!(a, b, "two fresh sources share a timestamp, not their random bits");
}

#[wasm_bindgen_test]
fn batches_grow_while_used_up_and_shrink_to_use() {
    let mut source = KeySource::new();
    let sizes: Vec<usize> = (0..10).map(|i| source.batch(NOW + f64::from(i), u32::MAX).len() / 36).collect();
    assert_eq!(sizes, [1, 2, 4, 8, 16, 32, 64, 128, 256, 256]);
    assert_eq!(source.batch(NOW + 20.0, 3).len(), 3 * 36, "a batch left mostly unused shrinks");
    assert_eq!(source.batch(NOW + 21.0, 0).len(), 36);
    let mut last = String::new();
    for _ in 0..4 {
        let text = source.batch(NOW, u32::MAX);
        for key in text.as_bytes().chunks(36).map(|c| std::str::from_utf8(c).unwrap().to_owned()) {
            assert!(is_v7(&key) && key > last, "{key} after {last}, even with the clock set back");
            last = key;
        }
    }
}

const FRESH: Option<Answer> = Some(Answer::Fresh);
const IN_FLIGHT: Option<Answer> = Some(Answer::InFlight);

#[wasm_bindgen_test]
fn retry_plan_follows_the_core_policy() {
    let mut plan = RetryPlan::new(Some(2.0), None, Some(100.0), None, Some(false), None, None, None).unwrap();
    assert_eq!(plan.next(503, Some("2".into()), FRESH, NOW, 0.5), 2000.0, "Retry-After wins");
    assert_eq!(plan.next(0, None, None, NOW, 0.5), 200.0, "second retry backs off");
    assert_eq!(plan.next(0, None, None, NOW, 0.5), -1.0, "limit reached");

    let mut plan = RetryPlan::new(None, None, None, None, None, None, None, None).unwrap();
    assert_eq!(plan.next(500, None, Some(Answer::Replayed), NOW, 0.5), -1.0, "a replay is final");
    assert_eq!(plan.next(422, None, FRESH, NOW, 0.5), -1.0);
    assert_eq!(plan.next(404, None, FRESH, NOW, 0.5), -1.0);
    assert!(plan.is_settled(201, FRESH));
    assert!(!plan.is_settled(503, FRESH));
    assert!(!plan.is_settled(409, IN_FLIGHT));
    assert!(!plan.is_settled(0, None));
}

#[wasm_bindgen_test]
fn key_in_flight_polls_apart_from_the_limit() {
    let mut plan = RetryPlan::new(Some(0.0), None, None, None, None, None, Some(2500.0), None).unwrap();
    assert_eq!(plan.next(409, Some("1".into()), IN_FLIGHT, NOW, 0.5), 1000.0);
    assert_eq!(plan.next(409, Some("1".into()), IN_FLIGHT, NOW, 0.5), 1000.0);
    assert_eq!(plan.next(409, Some("1".into()), IN_FLIGHT, NOW, 0.5), -1.0, "waited 2000 of 2500 ms");
    assert_eq!(plan.next(503, None, FRESH, NOW, 0.5), -1.0, "limit 0: no counted retry");
}

#[wasm_bindgen_test]
fn an_unknown_outcome_stops_unless_waited_out() {
    let unknown = Some(Answer::OutcomeUnknown);
    let body = r#"{"type":"urn:oncekey:problem:outcome-unknown","status":409}"#;
    assert_eq!(answer_kind(409, false, Some(body.into())), Answer::OutcomeUnknown);
    let mut stops = RetryPlan::new(None, None, None, None, None, None, None, None).unwrap();
    assert_eq!(stops.next(409, Some("90".into()), unknown, NOW, 0.5), -1.0, "by default the call ends");
    assert!(!stops.is_settled(409, unknown), "the form keeps its key");
    let mut waits = RetryPlan::new(None, None, None, None, None, None, None, Some(true)).unwrap();
    assert_eq!(waits.next(409, Some("90".into()), unknown, NOW, 0.5), 90_000.0);
}

#[wasm_bindgen_test]
fn options_are_checked_and_unbounded_values_accepted() {
    assert!(RetryPlan::new(Some(-1.0), None, None, None, None, None, None, None).is_err());
    assert!(RetryPlan::new(None, None, Some(f64::NAN), None, None, None, None, None).is_err());
    let mut plan = RetryPlan::new(
        Some(f64::INFINITY),
        Some(vec![418.0]),
        Some(10.0),
        Some(f64::INFINITY),
        Some(false),
        Some(500.0),
        None,
        None,
    )
    .unwrap();
    assert_eq!(plan.next(418, Some("60".into()), FRESH, NOW, 0.5), 500.0, "maxRetryAfter caps");
    assert_eq!(plan.next(503, None, FRESH, NOW, 0.5), -1.0, "only the given statusCodes");
}

#[wasm_bindgen_test]
fn answers_are_read_by_the_core() {
    let stripe = r#"{"error":{"code":"idempotency_key_in_use","type":"invalid_request_error"}}"#;
    let hono = r#"{"type":"https://hono-idempotency.dev/errors/conflict","title":"A request is outstanding for this idempotency key"}"#;
    for body in [stripe, hono, r#"{"title":"A request is outstanding for this Idempotency-Key"}"#] {
        assert_eq!(answer_kind(409, false, Some(body.into())), Answer::InFlight, "{body}");
        assert_eq!(answer_kind(422, false, Some(body.into())), Answer::Fresh, "{body}");
    }
    assert_eq!(answer_kind(409, false, Some(r#"{"error":"seat taken"}"#.into())), Answer::Fresh, "a bare 409");
    assert_eq!(answer_kind(409, false, None), Answer::Fresh);
    assert_eq!(answer_kind(409, true, Some(stripe.into())), Answer::Replayed);
    assert!(answer_replayed(None, Some("true".into())) && answer_replayed(Some("TRUE".into()), None));
    assert!(!answer_replayed(None, None) && !answer_replayed(Some("false".into()), Some("no".into())));
    assert!(answer_reads_body(409, None) && answer_reads_body(409, Some("120".into())));
    assert!(!answer_reads_body(200, None) && !answer_reads_body(409, Some(" 99999999 ".into())));
    assert!(answer_reads_body(409, Some("junk".into())), "an unreadable length reads as none");
}

#[wasm_bindgen_test]
fn retry_after_parsing() {
    assert_eq!(retry_after_ms("3", NOW), Some(3000.0));
    assert_eq!(retry_after_ms("Thu, 01 Jan 1970 00:00:10 GMT", 4000.0), Some(6000.0));
    assert_eq!(retry_after_ms("soon", NOW), None);
}

#[wasm_bindgen_test]
fn payload_fingerprint_is_the_core_fingerprint() {
    let hex = payload_fingerprint("POST", "/api/orders", Some("application/json".into()), b"{}");
    assert_eq!(hex, Fingerprint::of("POST", "/api/orders", Some("application/json"), b"{}").to_hex());
    assert_ne!(hex, payload_fingerprint("POST", "/api/orders", None, b"{}"));
}

#[wasm_bindgen_test]
fn key_refusal_is_the_edge_key_rules() {
    for key in ["order-42", "\"quoted\"", &"x".repeat(255)] {
        assert_eq!(key_refusal(key), None, "{key}");
    }
    assert!(key_refusal("a,b").unwrap().contains("comma"));
    for key in ["", "two words", "caf\u{e9}", "\"unclosed", &"x".repeat(256)] {
        assert!(key_refusal(key).is_some(), "{key}");
    }
}

#[wasm_bindgen_test]
fn status_codes_outside_100_to_599_are_refused() {
    let plan = |codes: Vec<f64>| RetryPlan::new(None, Some(codes), None, None, None, None, None, None);
    assert!(plan(vec![100.0, 503.0, 599.0]).is_ok());
    for bad in [99.0, 600.0, 503.5, f64::NAN, 65_736.0] {
        assert!(plan(vec![503.0, bad]).is_err(), "{bad}");
    }
}
