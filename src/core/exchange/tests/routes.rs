//! Routes (SPEC §13, `IDEMPOTENCY_ROUTES`): the first route that matches
//! a request holds it to its own policy, key sources and fingerprint
//! selection; a request no route matches follows the variables, as every
//! other row of these tests does.

#[cfg(target_arch = "wasm32")]
use wasm_bindgen_test::wasm_bindgen_test as test;

use super::*;

/// A world whose `IDEMPOTENCY_ROUTES` is `routes`, over `vars`.
fn routed(routes: &str, vars: &[(&str, &str)]) -> World {
    let mut all = vec![("IDEMPOTENCY_ROUTES", routes)];
    all.extend_from_slice(vars);
    World::new(&all)
}

/// A POST of `body` (JSON) to `path`, with no `Idempotency-Key`.
fn post(path: &str) -> RequestHead {
    RequestHead { path: path.into(), key: None, ..keyed("") }
}

fn json(body: &str) -> BodyRead {
    BodyRead::Complete(body.as_bytes().to_vec())
}

fn replayed(run: &Run) -> bool {
    header(&run.reply, "idempotent-replayed") == Some("true")
}

#[test]
fn a_json_pointer_key_keys_the_request_and_reaches_the_origin_as_the_header() {
    let mut world = routed(r#"[{"match": "POST /v1/payments/*", "key": ["json:/request_id"]}]"#, &[]);
    let body = r#"{"request_id": "r-1", "amount": 500}"#;
    let first = world.run(post("/v1/payments/pi_1"), json(body));
    assert_eq!(first.steps, ["read-body", "detach", "begin", "call-origin", "respond", "pause", "finish", "log"]);
    assert_eq!(
        first.edits,
        [HeaderEdit::Set("Idempotency-Key", "r-1".into()), HeaderEdit::Set("Idempotency-Attempt", "1".into())]
    );
    assert_eq!(first.origin_body.as_deref(), Some(body.as_bytes()), "the body as sent");
    assert_eq!(first.log["route"].as_str(), Some("route 1 (POST /v1/payments/*)"), "the line names the route");
    let again = world.run(post("/v1/payments/pi_1"), json(body));
    assert!(replayed(&again));
    assert_eq!(again.log["route"], first.log["route"]);
    // The same key in the header names the same record: one key, wherever it was found.
    let by_header = world.run(RequestHead { key: Some(b"r-1".to_vec()), ..post("/v1/payments/pi_1") }, json(body));
    assert!(replayed(&by_header));
    assert_eq!(world.calls, [1]);
    // A request no route matches: no route in its line, its key from the header only.
    let elsewhere = world.run(post("/api/orders"), json(body));
    assert_eq!((elsewhere.steps.as_slice(), elsewhere.log["route"].is_null()), (&["forward", "respond"][..], true));
}

#[test]
fn key_sources_are_tried_in_order_and_a_malformed_value_is_refused() {
    let routes = r#"[
        {"match": "POST /required", "key": ["header:x-request-id", "json:/request_id"], "required": true},
        {"match": "POST /optional", "key": ["json:/request_id"]}
    ]"#;
    let mut world = routed(routes, &[]);
    let with_header = |path: &str, value: &str| {
        let mut head = post(path);
        head.headers.push(("x-request-id".into(), value.into()));
        head
    };
    // The header first: the body is not looked at for a key.
    let run = world.run(with_header("/required", "h-1"), json(r#"{"request_id": "j-1"}"#));
    assert_eq!(run.edits[0], HeaderEdit::Set("Idempotency-Key", "h-1".into()));
    let run = world.run(post("/required"), json(r#"{"request_id": "j-1"}"#));
    assert_eq!(run.edits[0], HeaderEdit::Set("Idempotency-Key", "j-1".into()));
    // A value found but malformed is refused, never passed over for the next.
    let bad = world.run(with_header("/required", "two words"), json(r#"{"request_id": "j-1"}"#));
    assert_eq!(
        (bad.reply.status, code(&bad.reply).as_str(), bad.steps.as_slice()),
        (400, "invalid-key", &["respond", "log"][..])
    );
    assert!(bad.log["reason"].as_str().unwrap().contains("header:x-request-id"), "{}", bad.log);
    let not_text = world.run(post("/required"), json(r#"{"request_id": {"id": 1}}"#));
    assert_eq!(code(&not_text.reply), "invalid-key");
    assert!(not_text.log["reason"].as_str().unwrap().contains("json:/request_id: the member is an object"));
    // None found: required, 400; optional, the request goes on unprotected,
    // with the body already read.
    let missing = world.run(post("/required"), json("{}"));
    assert_eq!((missing.reply.status, code(&missing.reply).as_str()), (400, "missing-key"));
    assert_eq!(missing.steps, ["read-body", "respond", "log"], "nothing stored");
    let unkeyed = world.run(post("/optional"), json(r#"{"amount": 1}"#));
    assert_eq!(unkeyed.steps, ["read-body", "forward", "respond"]);
    assert_eq!(unkeyed.forwarded_body, Some(Some(br#"{"amount": 1}"#.to_vec())));
    assert_eq!(world.calls, [1, 1]);
}

#[test]
fn an_ignored_member_that_changes_between_retries_replays_and_a_changed_amount_is_422() {
    let routes = r#"[{"match": "POST /v1/payments", "fingerprint": {"ignore": ["/client_ts", "/meta/sent_at"]}}]"#;
    let mut world = routed(routes, &[]);
    let pay = |key: &str| RequestHead { key: Some(key.as_bytes().to_vec()), ..post("/v1/payments") };
    let first = world.run(pay("k1"), json(r#"{"amount": 500, "client_ts": 1, "meta": {"sent_at": "a"}}"#));
    assert_eq!(first.reply.status, 201);
    let retry = world.run(pay("k1"), json(r#"{"meta": {"sent_at": "b"}, "client_ts": 2, "amount": 500}"#));
    assert!(replayed(&retry), "only ignored members (and member order) changed");
    let changed = world.run(pay("k1"), json(r#"{"amount": 501, "client_ts": 3, "meta": {"sent_at": "c"}}"#));
    assert_eq!((changed.reply.status, code(&changed.reply).as_str()), (422, "key-reused"));
    assert_eq!(world.calls, [1]);
    // Without the route, every byte counts.
    let mut plain = World::new(&[]);
    plain.run(pay("k1"), json(r#"{"amount": 500, "client_ts": 1}"#));
    let strict = plain.run(pay("k1"), json(r#"{"amount": 500, "client_ts": 2}"#));
    assert_eq!(code(&strict.reply), "key-reused");
}

#[test]
fn a_route_s_ttl_and_release_statuses_replace_the_variables_for_its_requests() {
    let routes = r#"[{"match": "POST /v1/resets", "ttlSeconds": 60, "leaseSeconds": 30, "releaseOn": [409]}]"#;
    let mut world = routed(routes, &[("IDEMPOTENCY_IN_FLIGHT_WAIT_MS", "0")]);
    let (mut exchange, _) =
        Exchange::start(Rc::clone(&world.config), RequestHead { key: Some(b"k".to_vec()), ..post("/v1/resets") }, 0);
    exchange.body_read(json("{}"), 1);
    let Action::Store { call: StoreCall::Begin { policy, wait_ms, .. }, timeout_ms, .. } = exchange.detached(2) else {
        panic!("begin")
    };
    assert_eq!((policy.ttl_ms, policy.lease_ms, policy.release_on.as_slice()), (60_000, 30_000, &[409][..]));
    assert_eq!((wait_ms, timeout_ms), (0, 5_000));
    let Action::CallOrigin { timeout_ms, .. } =
        exchange.begun(Ok(Decision::Execute { attempt: 1, reclaimed: false }), 3)
    else {
        panic!("the origin")
    };
    assert_eq!(timeout_ms, 15_000, "what a 30 s lease leaves the origin, as for the variable");

    // 409 releases the key on the route only.
    world.origin = Box::new(|attempt| match attempt {
        1 => OriginResult::Answered { status: 409, headers: Vec::new(), body: b"busy".to_vec() },
        _ => created(),
    });
    let reset = |key: &str| RequestHead { key: Some(key.as_bytes().to_vec()), ..post("/v1/resets") };
    let first = world.run(reset("r1"), json("{}"));
    assert_eq!((first.reply.status, first.log["finish"].as_str()), (409, Some("released")));
    assert_eq!(world.run(reset("r1"), json("{}")).reply.status, 201, "released: the retry runs");
    let order_key = |key: &str| RequestHead { key: Some(key.as_bytes().to_vec()), ..keyed("") };
    world.origin = Box::new(|_| OriginResult::Answered { status: 409, headers: Vec::new(), body: b"busy".to_vec() });
    let unrouted = world.run(order_key("o1"), order());
    assert_eq!(unrouted.log["finish"].as_str(), Some("stored"), "a 409 is an answer under the variables");

    // The route's TTL: its record is gone after 60 s, the variables' one is not.
    world.origin = Box::new(|_| created());
    world.now += 61_000;
    assert!(!replayed(&world.run(reset("r1"), json("{}"))), "the route's key is new again");
    assert!(replayed(&world.run(order_key("o1"), order())), "the other keeps its day");
    assert_eq!(world.calls, [1, 2, 1, 1], "a record past its TTL is gone, its attempts with it");
}

#[test]
fn the_first_route_that_matches_wins_and_a_route_covers_what_the_variables_do_not() {
    let routes = r#"[
        {"match": "POST /v1/payments/refunds", "maxBodyBytes": 10},
        {"match": "POST,PUT /v1/payments/*", "maxBodyBytes": 1000}
    ]"#;
    let mut world = routed(routes, &[("IDEMPOTENCY_PATHS", "/api/*")]);
    let at = |method: &str, path: &str| RequestHead {
        method: method.into(),
        key: Some(format!("{method} {path}").replace(' ', "_").into_bytes()),
        ..post(path)
    };
    let body = json(r#"{"amount": 500, "note": "x"}"#);
    // The route's body limit, counted on the bytes read.
    let (mut refund, _) = Exchange::start(Rc::clone(&world.config), at("POST", "/v1/payments/refunds"), 0);
    refund.body_chunk(br#"{"amount": 500, "note": "x"}"#);
    let Action::Respond(reply) = refund.body_ended(false, 1) else { panic!("refused") };
    assert_eq!((reply.status, code(&reply).as_str()), (413, "body-too-large"));
    assert_eq!(refund.log().route.as_deref(), Some("route 1 (POST /v1/payments/refunds)"));
    let payment = world.run(at("POST", "/v1/payments/pi_1"), body.clone());
    assert_eq!((payment.reply.status, payment.log["route"].as_str()), (201, Some("route 2 (POST,PUT /v1/payments/*)")));
    // PUT is no covered method and /v1 no covered path of the variables: the route covers them.
    let put = world.run(at("PUT", "/v1/payments/pi_2"), body.clone());
    assert_eq!((put.reply.status, put.steps[2]), (201, "begin"));
    assert_eq!(world.run(at("PUT", "/api/orders"), body).steps, ["forward", "respond"], "the variables elsewhere");
}

#[test]
fn a_preflight_for_a_route_s_method_is_answered() {
    let mut world = routed(
        r#"[{"match": "PUT /v1/things/*", "key": ["header:x-request-id"]}]"#,
        &[("IDEMPOTENCY_CORS_ORIGINS", "https://app.example")],
    );
    let preflight = |method: &str, path: &str| RequestHead {
        method: "OPTIONS".into(),
        path: path.into(),
        key: None,
        origin: Some("https://app.example".into()),
        preflight_method: Some(method.into()),
        preflight_headers: Some("x-request-id, content-type".into()),
        ..RequestHead::default()
    };
    let run = world.run(preflight("PUT", "/v1/things/t1"), BodyRead::Incomplete);
    assert_eq!((run.reply.status, run.steps.as_slice()), (204, &["respond", "log"][..]));
    assert!(header(&run.reply, "access-control-allow-methods").unwrap().contains("PUT"));
    assert_eq!(header(&run.reply, "access-control-allow-headers"), Some("x-request-id, content-type"));
    let elsewhere = world.run(preflight("PUT", "/v1/other"), BodyRead::Incomplete);
    assert_eq!(elsewhere.steps, ["forward", "respond"], "not covered: the origin's own preflight");
    // The route's header source is among the headers a host copies.
    assert!(RequestHead::headers_read(&world.config).contains(&"x-request-id"));
}

#[test]
fn a_missing_key_says_where_the_route_takes_it_from() {
    let routes = r#"[
        {"match": "POST /v1/payments", "key": ["header:x-request-id", "json:/request_id"], "required": true},
        {"match": "POST /v1/refunds", "required": true},
        {"match": "POST /v1/disputes", "key": ["header:Idempotency-Key"], "required": true}
    ]"#;
    let mut world = routed(routes, &[]);
    let detail = |run: &Run| {
        let ReplyBody::Bytes(body) = &run.reply.body else { panic!("a problem has a body") };
        serde_json::from_slice::<serde_json::Value>(body).unwrap()["detail"].as_str().unwrap().to_owned()
    };
    let elsewhere = world.run(post("/v1/payments"), json(r#"{"amount": 1}"#));
    assert_eq!((elsewhere.reply.status, code(&elsewhere.reply)), (400, "missing-key".to_owned()));
    assert!(detail(&elsewhere).contains("header:x-request-id or json:/request_id"), "{}", detail(&elsewhere));
    // A route that takes the key where the variables do says it as they do.
    let header = world.run(post("/v1/refunds"), json("{}"));
    assert_eq!(detail(&header), "This endpoint requires an Idempotency-Key header on this method.");
    let named = world.run(post("/v1/disputes"), json("{}"));
    assert_eq!(detail(&named), detail(&header), "the default, named in any case, is the default");
}

#[test]
fn a_routed_request_s_data_point_names_its_route_as_its_log_line_does() {
    let mut world = routed(r#"[{"match": "POST /v1/payments/*", "key": ["json:/request_id"]}]"#, &[]);
    let with_metrics = |head: RequestHead| RequestHead { metrics: true, ..head };
    let first = world.run(with_metrics(post("/v1/payments/pi_1")), json(r#"{"request_id": "r-1"}"#));
    let point = world.points.pop().unwrap();
    assert_eq!(point.blobs[0], "execute");
    assert_eq!(point.blobs[4], "route 1 (POST /v1/payments/*)");
    assert_eq!(Some(point.blobs[4].as_str()), first.log["route"].as_str(), "the same words as the log line");
    // A request no route matches: an empty route.
    world.run(with_metrics(RequestHead { key: Some(b"k-2".to_vec()), ..post("/api/orders") }), json("{}"));
    assert_eq!(world.points.pop().unwrap().blobs[4], "");
}

#[test]
fn an_admin_release_s_tombstone_outlasts_a_route_s_longer_ttl_so_attempt_numbers_keep_rising() {
    let routes = r#"[{"match": "POST /v1/payouts", "ttlSeconds": 604800}]"#;
    let mut world = routed(routes, &[TOKEN]);
    world.origin = Box::new(|attempt| if attempt == 1 { OriginResult::NoAnswer("reset".into()) } else { created() });
    let payout = || RequestHead { key: Some(b"p1".to_vec()), ..post("/v1/payouts") };
    let first = world.run(payout(), json("{}"));
    assert_eq!(first.log["finish"].as_str(), Some("lease-kept"));
    let record = first.log["record"].as_str().unwrap().to_owned();
    let release = format!("/.well-known/oncekey/records/{record}/release");
    let released = world.run(admin("POST", &release, Some("Bearer s3cret")), BodyRead::Incomplete);
    assert_eq!(released.reply.status, 200);
    // Past the variables' day, within the route's week: the tombstone is still there.
    world.now += 2 * 86_400_000;
    let retry = world.run(payout(), json("{}"));
    assert_eq!((retry.reply.status, world.calls.as_slice()), (201, &[1, 2][..]), "the retry runs as attempt 2, not 1");
}

#[test]
fn a_path_servers_read_apart_is_held_to_its_one_rule_or_refused() {
    // Sixth to eighth red teams: `;params`, `%3B`, `%2F` and `%5C` read
    // apart by Tomcat, Jetty, nginx, WSGI servers and Hono; `..` after an
    // encoded separator climbs out of a rule at a server that keeps the
    // separator in the segment.
    let ambiguous = |world: &mut World, head: RequestHead| {
        let run = world.run(head, json(r#"{"id": "evt_1"}"#));
        (run.reply.status, code(&run.reply))
    };
    for path in [
        "/hooks/stripe;%2F..",
        "/hooks;%2F../stripe",
        "/x;%2F..%2Fhooks%2Fstripe",
        "/hooks/x;%5C..%5Cstripe",
        "/hooks/stripe/billing%2F..%2F..%2Fx",
        "/v1/charges%2F..%2F..%2Fx",
        "/v1/orders/12%2F%2E%2E%2F%2E%2E/pay",
        "/v1/payments/p1%5C..%5C..%5Cx",
        "/v1/orders;%2F..%2F..%2Fv1%2Fpayments%2Fp1",
        "/hooks/stripe;x",
    ] {
        let mut world = webhook_world();
        assert_eq!(ambiguous(&mut world, post(path)), (400, "ambiguous-request".to_owned()), "{path}");
        assert!(world.calls.is_empty(), "{path}");
    }
    // `%3B`, which nginx decodes before a servlet drops the parameter: the
    // readings are the route's and the variables' (every path covered).
    let mut world = webhook_world();
    for path in ["/hooks/stripe%3Bx", "/v1/payments%3B/p1"] {
        assert_eq!(ambiguous(&mut world, post(path)), (400, "ambiguous-request".to_owned()), "{path}");
    }
    // One rule whichever way it is read (the other readings uncovered):
    // governed by it.
    let mut world = routed(SPELLED_ROUTES, &[("IDEMPOTENCY_PATHS", "/v1/payments/*")]);
    let mut config = (*world.config).clone();
    config.bind_webhook_secrets(|_| Some("whsec_test".to_owned()));
    world.config = Rc::new(config);
    let run = world.run(post("/hooks/stripe%3Bx"), json(r#"{"id": "evt_1"}"#));
    assert_eq!((run.reply.status, run.log["route"].as_str()), (401, Some("route 1 (POST /hooks/stripe)")));
    let run = world.run(post("/v1/payments%3B/p1"), json("{}"));
    assert_eq!((run.reply.status, code(&run.reply)), (400, "missing-key".to_owned()), "nginx decodes %3B");
    // Two rules, one for each reading: refused.
    let routes = r#"[{"match": "POST /v1/payments/*", "required": true}, {"match": "POST /v1/*", "ttlSeconds": 3600}]"#;
    let mut world = routed(routes, &[]);
    assert_eq!(ambiguous(&mut world, post("/v1/payments%2Fp1")), (400, "ambiguous-request".to_owned()));
    assert_eq!(ambiguous(&mut world, post("/v1/payments;y/p1")), (400, "ambiguous-request".to_owned()));
    let run = world.run(post("/v1/payments/p1"), json("{}"));
    assert_eq!(code(&run.reply), "missing-key", "the plain spelling is governed");
    assert!(world.calls.is_empty());
    // Readings no rule governs take nothing from the rule: a servlet's
    // session id on a covered path goes on.
    let mut world = World::new(&[]);
    let run = world.run(RequestHead { key: Some(b"k-1".to_vec()), ..post("/v1/orders;jsessionid=1") }, json("{}"));
    assert_eq!((run.reply.status, world.calls.as_slice()), (201, &[1][..]));
}

#[test]
fn a_method_override_naming_a_method_another_rule_governs_is_refused() {
    // Eighth red team: method-override middleware (Express, Rails, Laravel)
    // runs a POST as the DELETE its override names.
    let routes = r#"[{"match": "DELETE,PATCH /v1/accounts/*", "required": true}]"#;
    let mut world = routed(routes, &[]);
    let overridden = |override_header: Option<&str>, query: Option<&str>| RequestHead {
        headers: override_header.map(|m| vec![("x-http-method-override".to_owned(), m.to_owned())]).unwrap_or_default(),
        query: query.map(str::to_owned),
        ..post("/v1/accounts/acct_1")
    };
    for head in
        [overridden(Some("DELETE"), None), overridden(None, Some("_method=delete")), overridden(Some("patch"), None)]
    {
        let run = world.run(head, json("{}"));
        assert_eq!((run.reply.status, code(&run.reply)), (400, "ambiguous-request".to_owned()));
    }
    assert!(world.calls.is_empty());
    // An override to a method no rule covers, or none at all: as before.
    let run = world.run(overridden(Some("GET"), None), json("{}"));
    assert_eq!(run.reply.status, 200, "passed through, unkeyed");
    let run = world.run(RequestHead { method: "DELETE".into(), ..post("/v1/accounts/acct_1") }, json("{}"));
    assert_eq!(code(&run.reply), "missing-key");
}

/// A webhook route, a route that requires a key and one keyed from the
/// body: what [`every_spelling`]'s tests spell.
const SPELLED_ROUTES: &str = r#"[
    {"match": "POST /hooks/stripe", "webhook": "stripe", "secret": "STRIPE_SECRET"},
    {"match": "POST /v1/payments/*", "required": true, "ttlSeconds": 3600},
    {"match": "POST /v1/orders", "key": ["json:/request_id"]}
]"#;

/// [`SPELLED_ROUTES`], their webhook secret bound.
fn webhook_world() -> World {
    let mut world = routed(SPELLED_ROUTES, &[]);
    let mut config = (*world.config).clone();
    config.bind_webhook_secrets(|_| Some("whsec_test".to_owned()));
    world.config = Rc::new(config);
    world
}

/// SPEC §13, one request, one identity: each kind of route, and a
/// request that names it in any spelling of its path.
#[cfg(not(target_arch = "wasm32"))]
mod every_spelling {
    use super::*;
    use proptest::prelude::*;

    /// `path` spelled another way, as a client or an attacker may: each
    /// character's case, an unreserved one percent-encoded, a segment's
    /// `;params`, `//`, `./` and `x/../` before it, a trailing `/`.
    fn spelling(path: &'static str) -> impl Strategy<Value = String> {
        let segments: Vec<&'static str> = path.split('/').filter(|s| !s.is_empty()).collect();
        let n = segments.len();
        (proptest::collection::vec((any::<u64>(), 0u8..8, any::<bool>()), n), any::<bool>()).prop_map(
            move |(choices, trailing)| {
                let mut out = String::new();
                let mut after_params = false;
                for (segment, (bits, prefix, params)) in segments.iter().zip(choices) {
                    // An encoded separator (decoded by WSGI servers before routing)
                    // after the first segment — not right after `;params`, which
                    // run to the next `/` as sent.
                    let separators = ["/", "//", "/./", "/x/../", "/%2E/", "%2F", "%5c", "/x%2f..%2F"];
                    let separator = separators[usize::from(prefix)];
                    let encoded_first = separator.starts_with('%');
                    out.push_str(if (out.is_empty() || after_params) && encoded_first { "/" } else { separator });
                    after_params = params;
                    for (i, c) in segment.chars().enumerate() {
                        match (bits >> (2 * (i % 32))) & 3 {
                            0 => out.push(c),
                            1 => out.push(c.to_ascii_uppercase()),
                            2 => out.push_str(&format!("%{:02X}", c as u32)),
                            _ => out.push_str(&format!("%{:02x}", c as u32)),
                        }
                    }
                    if params {
                        out.push_str(";v=1");
                    }
                }
                if trailing {
                    out.push('/');
                }
                out
            },
        )
    }

    fn world() -> World {
        webhook_world()
    }

    /// Whether servers read `path` apart (SPEC §13): a spelling the layer
    /// may refuse `400 ambiguous-request` rather than hold to one rule.
    fn read_apart(path: &str) -> bool {
        let lower = path.to_ascii_lowercase();
        path.contains(';') || ["%2f", "%5c", "%3b"].iter().any(|escape| lower.contains(escape))
    }

    /// Whether `run` was refused as a request read two ways.
    fn refused_as_ambiguous(run: &Run) -> bool {
        run.reply.status == 400 && code(&run.reply) == "ambiguous-request"
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn prop_a_webhook_route_governs_every_spelling_and_method(path in spelling("/hooks/stripe"), patch in any::<bool>()) {
            let mut world = world();
            let method = if patch { "PATCH" } else { "POST" };
            let run = world.run(RequestHead { method: method.into(), ..post(&path) }, json(r#"{"id": "evt_1"}"#));
            prop_assert!(world.calls.is_empty());
            if refused_as_ambiguous(&run) {
                prop_assert!(read_apart(&path), "{}", path);
                return Ok(());
            }
            prop_assert_eq!(run.reply.status, if patch { 405 } else { 401 }, "{} {}", method, path);
            prop_assert_eq!(run.log["route"].as_str(), Some("route 1 (POST /hooks/stripe)"));
        }

        #[test]
        fn prop_a_route_s_policy_governs_every_spelling(path in spelling("/v1/payments/pi_1")) {
            let mut world = world();
            let run = world.run(post(&path), json("{}"));
            prop_assert!(world.calls.is_empty());
            if refused_as_ambiguous(&run) {
                prop_assert!(read_apart(&path), "{}", path);
                return Ok(());
            }
            prop_assert_eq!((run.reply.status, code(&run.reply)), (400, "missing-key".to_owned()), "{}", path);
            prop_assert_eq!(run.log["route"].as_str(), Some("route 2 (POST /v1/payments/*)"));
        }

        #[test]
        fn prop_a_route_s_key_source_governs_every_spelling(path in spelling("/v1/orders")) {
            let mut world = world();
            let run = world.run(post(&path), json(r#"{"request_id": "r-1"}"#));
            if refused_as_ambiguous(&run) {
                prop_assert!(read_apart(&path) && world.calls.is_empty(), "{}", path);
                return Ok(());
            }
            prop_assert_eq!(&run.edits[0], &HeaderEdit::Set("Idempotency-Key", "r-1".into()), "{}", path);
            prop_assert_eq!(run.log["route"].as_str(), Some("route 3 (POST /v1/orders)"));
        }

        #[test]
        fn prop_covered_and_required_paths_govern_every_spelling(path in spelling("/v1/refunds")) {
            let mut world = World::new(&[("IDEMPOTENCY_PATHS", "/v1/*"), ("IDEMPOTENCY_REQUIRED_PATHS", "/v1/refunds")]);
            let run = world.run(post(&path), json("{}"));
            prop_assert!(world.calls.is_empty());
            if refused_as_ambiguous(&run) {
                prop_assert!(read_apart(&path), "{}", path);
                return Ok(());
            }
            prop_assert_eq!((run.reply.status, code(&run.reply)), (400, "missing-key".to_owned()), "{}", path);
        }
    }
}

#[test]
fn a_key_from_a_body_keys_only_a_request_from_the_page_s_own_origin() {
    // SPEC §13: every key source crossed with every site relation. A key
    // read from a body (a route's json: or form: source, the injected form
    // field) is another site's plant unless the request comes from the
    // page's own origin; a header key is the caller's own.
    let routes = r#"[
        {"match": "POST /json", "key": ["json:/request_id"]},
        {"match": "POST /form", "key": ["form:request_id"]},
        {"match": "POST /required", "key": ["json:/request_id"], "required": true}
    ]"#;
    let own = "https://shop.example";
    // (Sec-Fetch-Site, Origin, from the page's own origin)
    let relations: [(Option<&str>, Option<&str>, bool); 7] = [
        (Some("same-origin"), Some(own), true),
        (None, Some(own), true),
        (None, None, true),
        (Some("same-site"), Some("https://user-content.shop.example"), false),
        (Some("cross-site"), Some("https://evil.example"), false),
        (None, Some("https://evil.example"), false),
        (None, Some("null"), false),
    ];
    // (source, path, content type, body, header key, keyed from another origin)
    type Source<'a> = (&'a str, &'a str, &'a str, &'a str, Option<&'a str>, bool);
    let sources: [Source; 5] = [
        ("json:", "/json", "text/plain", r#"{"request_id": "k-1"}"#, None, false),
        ("json: as JSON", "/json", "application/json", r#"{"request_id": "k-1"}"#, None, false),
        ("form:", "/form", "application/x-www-form-urlencoded", "request_id=k-1", None, false),
        ("form field", "/api/orders", "application/x-www-form-urlencoded", "item=tea&idempotency_key=k-1", None, false),
        ("header", "/api/orders", "application/json", r#"{"item": "tea"}"#, Some("k-1"), true),
    ];
    for (site, origin, own_origin) in relations {
        for (source, path, content_type, body, header_key, cross_origin) in sources {
            let mut world = routed(routes, &[("IDEMPOTENCY_FORMS", "inject")]);
            let mut head = post(path);
            head.own_origin = own.into();
            head.origin = origin.map(Into::into);
            head.key = header_key.map(|k| k.as_bytes().to_vec());
            head.headers = vec![("content-type".into(), content_type.into())];
            if let Some(site) = site {
                head.headers.push(("sec-fetch-site".into(), site.into()));
            }
            let case = format!("{source} from Sec-Fetch-Site {site:?}, Origin {origin:?}");
            let first = world.run(head.clone(), json(body));
            let again = world.run(head, json(body));
            if own_origin || cross_origin {
                let key = first.edits.first();
                assert_eq!(key, Some(&HeaderEdit::Set("Idempotency-Key", "k-1".into())), "{case}: {:?}", first.steps);
                assert!(replayed(&again), "{case}");
                assert_eq!(world.calls, [1], "{case}");
            } else {
                assert_eq!(first.steps, ["read-body", "forward", "respond", "log"], "{case}");
                assert!(first.log["error"].as_str().unwrap().contains("another origin"), "{case}: {}", first.log);
                assert!(!replayed(&again), "{case}: nothing to read back");
                assert!(world.calls.is_empty() && world.stored.is_empty(), "{case}: nothing planted");
            }
        }
        // Where a key is required, another origin's body key is no key.
        let mut world = routed(routes, &[]);
        let mut head = post("/required");
        head.own_origin = own.into();
        head.origin = origin.map(Into::into);
        if let Some(site) = site {
            head.headers.push(("sec-fetch-site".into(), site.into()));
        }
        let run = world.run(head, json(r#"{"request_id": "k-1"}"#));
        let expected = if own_origin { 201 } else { 400 };
        assert_eq!(run.reply.status, expected, "required, Sec-Fetch-Site {site:?}, Origin {origin:?}");
    }
}

#[test]
fn a_misconfigured_route_fails_its_own_requests_closed_and_no_others() {
    // SPEC §6: one route's problem (its policy, its secret unbound) is that
    // route's alone: the rest of the API goes on.
    let routes = r#"[
        {"match": "POST /v1/payouts", "ttlSeconds": 5},
        {"match": "POST /hooks/github", "webhook": "github", "secret": "GITHUB_SECRET"}
    ]"#;
    let mut world = routed(routes, &[]);
    let mut config = (*world.config).clone();
    config.bind_webhook_secrets(|_| None);
    world.config = Rc::new(config);
    for (method, path) in
        [("POST", "/v1/payouts"), ("POST", "/V1/Payouts/"), ("POST", "/hooks/github"), ("GET", "/hooks/github/")]
    {
        let run =
            world.run(RequestHead { method: method.into(), key: Some(b"k-1".to_vec()), ..post(path) }, json("{}"));
        assert_eq!((run.reply.status, code(&run.reply).as_str()), (500, "misconfigured"), "{method} {path}");
        assert_eq!(run.steps, ["respond", "log"], "{method} {path}: nothing read, nothing forwarded");
        assert!(run.log["reason"].as_str().unwrap().contains("IDEMPOTENCY_ROUTES: route"), "{}", run.log);
    }
    let elsewhere = world.run(RequestHead { key: Some(b"k-2".to_vec()), ..post("/v1/orders") }, json("{}"));
    assert_eq!(elsewhere.reply.status, 201, "the rest of the API goes on");
    let get = world.run(RequestHead { method: "GET".into(), ..post("/v1/anything") }, json(""));
    assert_eq!(get.steps, ["forward", "respond"]);
    assert_eq!(world.calls, [1]);
}
