//! What an idempotency server's answer says (SPEC §8): a replay, the key's
//! first request still running, or neither. The browser client speaks to
//! more servers than oncekey, so each one is read by what it says: a 409
//! alone may be the origin's own business conflict and is never taken for
//! "in flight".

use super::said;

use said::Said;

/// The status every known server gives a duplicate of a running request;
/// only its body is read ([`reads_body`]).
pub const IN_FLIGHT_STATUS: u16 = 409;

/// oncekey's own problem type (SPEC §5, [`crate::core::Problem::KeyInFlight`]).
const ONCEKEY_IN_FLIGHT: &str = "urn:oncekey:problem:key-in-flight";
/// oncekey's problem type for a last attempt that ended without an answer.
const ONCEKEY_OUTCOME_UNKNOWN: &str = "urn:oncekey:problem:outcome-unknown";
/// hono-idempotency's problem type for a duplicate of a running request;
/// its other answers (400, 413, 422) have other types.
const HONO_CONFLICT: &str = "https://hono-idempotency.dev/errors/conflict";
/// Stripe's `error.code` for a duplicate of a running request (its `type`
/// has been both `invalid_request_error` and `idempotency_error`).
const STRIPE_KEY_IN_USE: &str = "idempotency_key_in_use";

/// A longer 409 body is not an idempotency problem, and is not parsed.
const MAX_BODY_LEN: usize = 16 * 1024;

/// What kind of answer a server gave, as far as sending again goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AnswerKind {
    /// Made for this attempt; its status decides what follows.
    Fresh,
    /// The stored answer to an earlier attempt with this key: final,
    /// whatever its status.
    Replayed,
    /// The key's first request is still running: ask again later.
    InFlight,
    /// The key's last attempt ended without an answer (oncekey's
    /// `outcome-unknown`): it may have been carried out, and the key is
    /// held until its lease ends (`Retry-After`).
    OutcomeUnknown,
}

/// Whether a replay header's value says the answer was replayed: oncekey
/// and Stripe-style servers send `Idempotent-Replayed: true`, the IETF
/// draft's implementations (hono-idempotency) `Idempotency-Replayed: true`.
///
/// ```
/// use oncekey::core::is_replayed;
/// assert!(is_replayed(None, Some(" TRUE ")));
/// assert!(!is_replayed(Some("false"), None));
/// ```
pub fn is_replayed(idempotent_replayed: Option<&str>, idempotency_replayed: Option<&str>) -> bool {
    [idempotent_replayed, idempotency_replayed].into_iter().flatten().any(|v| v.trim().eq_ignore_ascii_case("true"))
}

/// Whether an answer's body is needed to know its kind, given its
/// `Content-Length` if it has one: only a 409 can be in flight, and not one
/// longer than any idempotency problem. A client reads it from a copy, so
/// the caller still gets the whole answer.
///
/// ```
/// use oncekey::core::reads_body;
/// assert!(reads_body(409, Some(180)) && reads_body(409, None));
/// assert!(!reads_body(201, Some(2)) && !reads_body(409, Some(10_000_000)));
/// ```
pub fn reads_body(status: u16, content_length: Option<u64>) -> bool {
    status == IN_FLIGHT_STATUS && content_length.is_none_or(|n| n <= MAX_BODY_LEN as u64)
}

impl AnswerKind {
    /// Reads an answer from its status, whether a replay header said
    /// `true` ([`is_replayed`]) and, for a 409, its body text.
    ///
    /// A 409 is in flight when its body says so in one of the forms the
    /// known servers use:
    /// - oncekey: problem type `urn:oncekey:problem:key-in-flight`;
    /// - Stripe: `{"error": {"code": "idempotency_key_in_use", …}}`;
    /// - hono-idempotency: problem type
    ///   `https://hono-idempotency.dev/errors/conflict`;
    /// - the IETF draft (draft-ietf-httpapi-idempotency-key-header §2.7)
    ///   and servers following it: a `title`, `detail` or `message` (or a
    ///   plain-text body) saying a request with this idempotency key is
    ///   outstanding, being processed or in progress. The draft's example
    ///   `type` is the same for its 400, 422 and 409, so the words decide.
    ///
    /// ```
    /// use oncekey::core::AnswerKind;
    /// let stripe = r#"{"error":{"code":"idempotency_key_in_use","type":"idempotency_error"}}"#;
    /// assert_eq!(AnswerKind::of(409, false, Some(stripe)), AnswerKind::InFlight);
    /// let business = r#"{"error":"seat already taken"}"#;
    /// assert_eq!(AnswerKind::of(409, false, Some(business)), AnswerKind::Fresh);
    /// assert_eq!(AnswerKind::of(500, true, None), AnswerKind::Replayed);
    /// let unknown = r#"{"type":"urn:oncekey:problem:outcome-unknown","status":409}"#;
    /// assert_eq!(AnswerKind::of(409, false, Some(unknown)), AnswerKind::OutcomeUnknown);
    /// ```
    pub fn of(status: u16, replayed: bool, body: Option<&str>) -> Self {
        match (replayed, body) {
            (true, _) => Self::Replayed,
            (false, Some(body)) if status == IN_FLIGHT_STATUS && body.len() <= MAX_BODY_LEN => match Said::read(body) {
                Some(said) if said.kind.as_deref() == Some(ONCEKEY_OUTCOME_UNKNOWN) => Self::OutcomeUnknown,
                _ if says_in_flight(body) => Self::InFlight,
                _ => Self::Fresh,
            },
            _ => Self::Fresh,
        }
    }
}

fn says_in_flight(body: &str) -> bool {
    if body.len() > MAX_BODY_LEN {
        return false;
    }
    let Some(said) = Said::read(body) else {
        return says_outstanding(body);
    };
    matches!(said.kind.as_deref(), Some(ONCEKEY_IN_FLIGHT | HONO_CONFLICT))
        || said.code.as_deref() == Some(STRIPE_KEY_IN_USE)
        || said.messages.iter().any(|m| says_outstanding(m))
}

/// Whether a message says a request with this idempotency key is still
/// running: it names the key and a state of "not finished yet".
fn says_outstanding(message: &str) -> bool {
    // ASCII lower case, with `-`, `_` and runs of white space as one space:
    // the draft's own example breaks its detail across lines.
    let mut words = Vec::with_capacity(message.len());
    for byte in message.bytes() {
        let byte = match byte {
            b'-' | b'_' => b' ',
            b if b.is_ascii_whitespace() => b' ',
            b => b.to_ascii_lowercase(),
        };
        if byte != b' ' || words.last().is_some_and(|&last| last != b' ') {
            words.push(byte);
        }
    }
    let says = |phrase: &&str| words.windows(phrase.len()).any(|w| w == phrase.as_bytes());
    ["idempotency key", "idempotent key"].iter().any(says)
        && ["outstanding", "being processed", "in progress", "in flight", "still processing"].iter().any(says)
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    // Each server's real answer to a duplicate of a running request.

    /// oncekey: `Problem::KeyInFlight`'s `to_json()` (src/core/output/problem.rs),
    /// as the edge sends it with `Retry-After`.
    const ONCEKEY: &str = r#"{"detail":"A request with this Idempotency-Key is still being processed; retry after Retry-After seconds.","status":409,"title":"A request with this key is in flight","type":"urn:oncekey:problem:key-in-flight"}"#;

    /// The IETF draft's example 409, "Error Handling" (§2.7) of
    /// draft-ietf-httpapi-idempotency-key-header: github.com/ietf-wg-httpapi/
    /// idempotency, draft-ietf-httpapi-idempotency-key-header.md at dab060c
    /// ("draft 06"; the same example since -03; -07 keeps the same `type` for
    /// its 400 and 422). Made valid JSON: the draft's line break inside
    /// `detail` is a space and its trailing comma is gone.
    const DRAFT: &str = "{\n      \"type\": \"https://developer.example.com/idempotency\",\n      \"title\": \"A request is outstanding for this Idempotency-Key\",\n      \"detail\": \"A request with the same Idempotency-Key for the same operation is being processed or is outstanding.\"\n    }";
    /// The draft's example verbatim, trailing comma and line break inside a
    /// string included: not JSON, read leniently.
    const DRAFT_VERBATIM: &str = "{\n      \"type\": \"https://developer.example.com/idempotency\",\n      \"title\": \"A request is outstanding for this Idempotency-Key\",\n      \"detail\": \"A request with the same Idempotency-Key for the\n      same operation is being processed or is outstanding.\",\n    }";
    /// The draft's example 422 and 400: the same `type`, not in flight.
    const DRAFT_REUSED: &str = r#"{"type":"https://developer.example.com/idempotency","title":"Idempotency-Key is already used","detail":"This operation is idempotent and it requires correct usage of Idempotency Key. Idempotency Key MUST not be reused across different payloads of this operation."}"#;
    const DRAFT_MISSING: &str = r#"{"type":"https://developer.example.com/idempotency","title":"Idempotency-Key is missing","detail":"This operation is idempotent and it requires correct usage of Idempotency Key."}"#;

    /// Stripe, as captured from api.stripe.com in stripe/stripe-go#647
    /// (2018) and beam-community/stripity-stripe#564 (2019): `type` was
    /// `invalid_request_error`.
    const STRIPE: &str = r#"{"error":{"code":"idempotency_key_in_use","doc_url":"https://stripe.com/docs/error-codes/idempotency-key-in-use","message":"There is currently another in-progress request using this Idempotent Key (that probably means you submitted twice, and the other request is still going through): 770434815mw69wd8iuv. Please try again later.","type":"invalid_request_error"}}"#;
    /// The same with `type` `idempotency_error` (the API reference's type
    /// for idempotency errors; stripe-node throws `StripeIdempotencyError`
    /// for it): `code` decides, whatever the `type`.
    const STRIPE_IDEMPOTENCY_ERROR: &str = r#"{"error":{"type":"idempotency_error","code":"idempotency_key_in_use","message":"There is currently another in-progress request using this Idempotent Key (that probably means you submitted twice, and the other request is still going through): k1. Please try again later."}}"#;
    /// Stripe's answer to a key reused with other parameters (a 400, its
    /// message as quoted in stripe/stripe-ruby#503; servers copying Stripe
    /// may send it as a 409): not in flight.
    const STRIPE_MISMATCH: &str = r#"{"error":{"type":"idempotency_error","message":"Keys for idempotent requests can only be used with the same parameters they were first used with. Try using a key other than 'k1' if you meant to execute a different request."}}"#;

    /// hono-idempotency 0.9.1 (github.com/paveg/hono-idempotency,
    /// src/errors.ts `IdempotencyErrors.conflict()`, sent by
    /// src/middleware.ts with `Retry-After: 1`).
    const HONO: &str = r#"{"type":"https://hono-idempotency.dev/errors/conflict","title":"A request is outstanding for this idempotency key","status":409,"detail":"A request with the same idempotency key is currently being processed","code":"CONFLICT"}"#;
    /// hono-idempotency's 422 (`fingerprintMismatch()`), same file.
    const HONO_MISMATCH: &str = r#"{"type":"https://hono-idempotency.dev/errors/fingerprint-mismatch","title":"Idempotency-Key is already used with a different request","status":422,"detail":"A request with the same idempotency key but different parameters was already processed","code":"FINGERPRINT_MISMATCH"}"#;

    #[test]
    fn each_servers_in_flight_answer() {
        for (server, body) in [
            ("oncekey", ONCEKEY),
            ("IETF draft", DRAFT),
            ("IETF draft verbatim", DRAFT_VERBATIM),
            ("Stripe", STRIPE),
            ("Stripe idempotency_error", STRIPE_IDEMPOTENCY_ERROR),
            ("hono-idempotency", HONO),
            // Each server's mark alone, without words that also say it.
            ("oncekey type alone", r#"{"type":"urn:oncekey:problem:key-in-flight"}"#),
            ("Stripe code alone", r#"{"error":{"code":"idempotency_key_in_use"}}"#),
            ("hono-idempotency type alone", r#"{"type":"https://hono-idempotency.dev/errors/conflict"}"#),
            ("draft title alone", r#"{"title":"A request is outstanding for this Idempotency-Key"}"#),
            ("draft detail alone", r#"{"detail":"A request with the same Idempotency-Key is being processed"}"#),
            // sushichan044/hono-idempotent-request's early 409, plain text
            // (its src/middleware.test.ts).
            ("plain text", "A request is outstanding for this Idempotency-Key"),
            ("JSON string", r#""A request is outstanding for this Idempotency-Key""#),
            ("error string", r#"{"error":"A request with this idempotency key is in progress"}"#),
            ("message", r#"{"message":"Idempotency key in use: the first request is still processing"}"#),
        ] {
            if !matches!(server, "IETF draft verbatim" | "plain text") {
                assert!(serde_json::from_str::<serde_json::Value>(body).is_ok(), "{server}: valid JSON");
            }
            assert_eq!(AnswerKind::of(409, false, Some(body)), AnswerKind::InFlight, "{server}");
            // Never by the words alone: the same body with another status.
            for status in [200, 400, 422, 423, 500, 503] {
                assert_eq!(AnswerKind::of(status, false, Some(body)), AnswerKind::Fresh, "{server} {status}");
            }
        }
    }

    #[test]
    fn a_409_that_does_not_say_so_is_fresh() {
        for body in [
            "",
            "Conflict",
            "{}",
            "[]",
            "null",
            r#"{"error":"seat already taken"}"#,
            r#"{"type":"about:blank","title":"Conflict","status":409}"#,
            r#"{"type":"https://example.com/probs/out-of-stock","title":"Order is being processed","detail":"Order 17 is in progress"}"#,
            r#"{"error":{"type":"invalid_request_error","code":"resource_already_exists","message":"A customer with this id already exists"}}"#,
            r#"{"type":"urn:oncekey:problem:key-reused","title":"Key reused","status":422}"#,
            r#"{"code":"CONFLICT","title":"Conflict"}"#,
            r#"{"title":["A request is outstanding for this Idempotency-Key"]}"#,
            r#"{"error":{"code":["idempotency_key_in_use"]}}"#,
            DRAFT_REUSED,
            DRAFT_MISSING,
            STRIPE_MISMATCH,
            HONO_MISMATCH,
            "<html><body>409 Conflict</body></html>",
        ] {
            assert_eq!(AnswerKind::of(409, false, Some(body)), AnswerKind::Fresh, "{body}");
        }
        assert_eq!(AnswerKind::of(409, false, None), AnswerKind::Fresh, "no body read");
        let long = format!(r#"{{"type":"{ONCEKEY_IN_FLIGHT}","padding":"{}"}}"#, " ".repeat(MAX_BODY_LEN));
        assert_eq!(AnswerKind::of(409, false, Some(&long)), AnswerKind::Fresh, "a long body is not parsed");
    }

    #[test]
    fn replays_by_either_header() {
        for (idempotent, idempotency) in [(Some("true"), None), (None, Some("true")), (Some("True"), Some("false"))] {
            assert!(is_replayed(idempotent, idempotency), "{idempotent:?} {idempotency:?}");
        }
        for (idempotent, idempotency) in
            [(None, None), (Some("false"), None), (None, Some("1")), (Some(""), Some("yes"))]
        {
            assert!(!is_replayed(idempotent, idempotency), "{idempotent:?} {idempotency:?}");
        }
        // A replay is final even when its stored body reads as in flight.
        assert_eq!(AnswerKind::of(409, true, Some(ONCEKEY)), AnswerKind::Replayed);
        assert_eq!(AnswerKind::of(201, true, None), AnswerKind::Replayed);
        assert_eq!(AnswerKind::of(201, false, None), AnswerKind::Fresh);
    }

    #[test]
    fn only_a_409_body_is_read() {
        assert!(reads_body(409, None));
        assert!(reads_body(409, Some(MAX_BODY_LEN as u64)));
        assert!(!reads_body(409, Some(MAX_BODY_LEN as u64 + 1)));
        for status in [200, 201, 400, 408, 422, 425, 429, 500, 503] {
            assert!(!reads_body(status, None), "{status}");
        }
    }

    #[test]
    fn the_reader_reads_what_the_rules_need() {
        let said = |body: &str| Said::read(body);
        let of = |kind: Option<&str>, code: Option<&str>, messages: &[&str]| Said {
            kind: kind.map(Into::into),
            code: code.map(Into::into),
            messages: messages.iter().map(|m| m.to_string()).collect(),
        };
        assert_eq!(
            said(HONO),
            Some(of(
                Some(HONO_CONFLICT),
                None,
                &[
                    "A request is outstanding for this idempotency key",
                    "A request with the same idempotency key is currently being processed",
                ]
            ))
        );
        assert_eq!(said(STRIPE).unwrap().code.as_deref(), Some(STRIPE_KEY_IN_USE));
        assert_eq!(said(r#" "a\"b" "#), Some(of(None, None, &["a\"b"])));
        // Escapes, a surrogate pair, and fields nested or typed otherwise skipped.
        let body = r#"{"x":{"title":"no","a":[1,{"b":[]},"]"]},"n":-1.5e3,"t":true,"z":null,
            "title":"\u0041\ud83d\ude00\b\f\n\r\t\"\/\\\ud800x","type":7,"detail":["no"],
            "error":{"type":"idempotency_error","code":"c","message":"m","error":{"code":"no"}}}"#;
        assert_eq!(said(body), Some(of(None, Some("c"), &["A\u{1F600}\u{8}\u{c}\n\r\t\"/\\\u{FFFD}x", "m"])));
        assert_eq!(said(r#"{"error":"busy","type":"t",}"#), Some(of(Some("t"), None, &["busy"])), "lenient");
        for not_json in [
            "",
            "  ",
            "A request",
            "[]",
            "1",
            "null",
            "{",
            r#"{"a"}"#,
            r#"{"a":}"#,
            r#"{"a":1"#,
            r#"{"a":"b"#,
            r#"{"title":"\u12"}"#,
            r#"{"a":[}"#,
            "{\"a\":\"\\",
        ] {
            assert_eq!(said(not_json), None, "{not_json:?}");
        }
    }

    #[cfg(not(target_arch = "wasm32"))]
    mod reader_properties {
        use super::super::*;
        use proptest::prelude::*;
        use serde_json::Value;

        /// The same reading through serde_json, for valid JSON.
        fn said_by_serde(body: &str) -> Option<Said> {
            let value: Value = serde_json::from_str(body).ok()?;
            let text = |v: &Value| v.as_str().map(str::to_owned);
            let mut said = Said::default();
            match &value {
                Value::String(s) => said.messages.push(s.clone()),
                Value::Object(_) => {
                    said.kind = text(&value["type"]);
                    let error = &value["error"];
                    said.code = text(&error["code"]);
                    let messages = [&value["title"], &value["detail"], &value["message"], error];
                    let inner = [&error["title"], &error["detail"], &error["message"]];
                    said.messages = messages.into_iter().chain(inner).filter_map(text).collect();
                }
                _ => return None,
            }
            said.messages.sort();
            Some(said)
        }

        fn key() -> impl Strategy<Value = String> {
            prop_oneof![
                3 => prop::sample::select(vec!["type", "code", "title", "detail", "message", "error", "x"])
                    .prop_map(String::from),
                1 => ".{0,8}",
            ]
        }

        fn object(value: impl Strategy<Value = Value>) -> impl Strategy<Value = Value> {
            prop::collection::btree_map(key(), value, 0..6).prop_map(|m| Value::Object(m.into_iter().collect()))
        }

        /// Mostly objects whose keys are mostly the ones the rules read, so
        /// the cases exercise them.
        fn json() -> impl Strategy<Value = Value> {
            let leaf = prop_oneof![
                1 => Just(Value::Null),
                1 => any::<bool>().prop_map(Value::from),
                1 => any::<i64>().prop_map(Value::from),
                1 => any::<f64>().prop_filter("finite", |f| f.is_finite()).prop_map(Value::from),
                // Characters JSON escapes (controls, quote, backslash) and
                // ones it need not (non-ASCII, astral) come up often.
                3 => r#"[\x00-\x1f"\\/a-z é\u{1F600}]{0,12}|.{0,12}"#.prop_map(Value::from),
            ];
            let value = leaf.prop_recursive(4, 32, 6, |inner| {
                prop_oneof![prop::collection::vec(inner.clone(), 0..4).prop_map(Value::from), object(inner)]
            });
            prop_oneof![1 => value.clone(), 4 => object(value)]
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(1024))]

            #[test]
            fn prop_reads_valid_json_as_serde_json_does(value in json(), pretty in any::<bool>()) {
                let body = match pretty {
                    true => serde_json::to_string_pretty(&value).unwrap(),
                    false => serde_json::to_string(&value).unwrap(),
                };
                let mut said = Said::read(&body);
                if let Some(said) = &mut said {
                    said.messages.sort();
                }
                prop_assert_eq!(said, said_by_serde(&body));
            }

            #[test]
            fn prop_never_panics(body in r#"[ {}\[\]":,\\ua-f0-9.eE+-]{0,64}|.{0,64}"#) {
                let _ = AnswerKind::of(409, false, Some(&body));
            }
        }
    }

    #[test]
    fn messages_name_the_key_and_a_running_state() {
        for yes in [
            "A request is outstanding for this idempotency_key",
            "A transaction with the supplied idempotency-key is already in progress",
            "A request with Idempotency-Key 3fa8 is still being processed. Retry later with the same key.",
            "The Idempotency-Key conflicted with another in-flight request.",
            "IDEMPOTENCY   KEY\n\t still processing",
        ] {
            assert!(says_outstanding(yes), "{yes}");
        }
        for no in [
            "Idempotency-Key is already used",
            "A request with the same idempotency key was already processed with other parameters",
            "The order is being processed",
            "outstanding balance",
            "",
        ] {
            assert!(!says_outstanding(no), "{no}");
        }
    }
}
