//! Webhook routes (SPEC §13): a delivery's signature is checked over its
//! whole body before any store call; a forged, altered or stale one is 401
//! and plants nothing; a real one runs once per delivery id and endpoint,
//! its resends replayed. The signature rules themselves are
//! `webhook/verify.rs`'s; the edge tests sign in Node as each sender does.

#[cfg(target_arch = "wasm32")]
use wasm_bindgen_test::wasm_bindgen_test as test;

use base64ct::{Base64, Encoding};
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

use super::*;
use crate::core::request::digest::hex;

const ROUTES: &str = r#"[
    {"match": "POST /hooks/standard", "webhook": "standard", "secret": "STANDARD_SECRET"},
    {"match": "POST /hooks/github", "webhook": "github", "secret": "GITHUB_SECRET"},
    {"match": "POST /hooks/stripe/*", "webhook": "stripe", "secret": "STRIPE_SECRET"},
    {"match": "POST /hooks/shopify", "webhook": "shopify", "secret": "SHOPIFY_SECRET"}
]"#;

// Standard Webhooks' published vector (its reference libraries' tests).
const STANDARD_SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const STANDARD_ID: &str = "msg_p5jXN8AQM9LWM0D4loKWxJek";
const STANDARD_TIMESTAMP: u64 = 1_614_265_330;
const STANDARD_BODY: &str = r#"{"test": 2432232314}"#;
const STANDARD_SIGNATURE: &str = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=";
// GitHub's published example.
const GITHUB_SECRET: &str = "It's a Secret to Everybody";
const GITHUB_SIGNATURE: &str = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17";
const GITHUB_DELIVERY: &str = "72d3162e-cc78-11e3-81ab-4c9367dc0958";
const STRIPE_SECRET: &str = "whsec_test_5e8f1b2a9c";
const SHOPIFY_SECRET: &str = "shpss_client_secret_3f1c";

/// The world's clock: the Standard Webhooks vector's time.
const NOW_MS: u64 = STANDARD_TIMESTAMP * 1000;

/// A world with the four webhook routes, their secrets read as a host
/// reads them when the layer is made.
fn hooks(vars: &[(&str, &str)]) -> World {
    let mut all = vec![("IDEMPOTENCY_ROUTES", ROUTES)];
    all.extend_from_slice(vars);
    let mut world = World::new(&all);
    let mut config = (*world.config).clone();
    config.bind_webhook_secrets(|name| {
        let value = match name {
            "STANDARD_SECRET" => STANDARD_SECRET,
            "GITHUB_SECRET" => GITHUB_SECRET,
            "STRIPE_SECRET" => STRIPE_SECRET,
            "SHOPIFY_SECRET" => SHOPIFY_SECRET,
            _ => return None,
        };
        Some(value.to_owned())
    });
    world.config = Rc::new(config);
    world.now = NOW_MS;
    world
}

fn mac(key: &[u8], parts: &[&[u8]]) -> Vec<u8> {
    let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(key).unwrap();
    for part in parts {
        mac.update(part);
    }
    mac.finalize().into_bytes().to_vec()
}

/// A delivery to `path` with these headers: no `Idempotency-Key`, and
/// whatever the sender sends.
fn delivery(path: &str, headers: &[(&str, &str)]) -> RequestHead {
    let mut head = RequestHead { path: path.into(), key: None, ..keyed("") };
    head.headers.extend(headers.iter().map(|(n, v)| (n.to_string(), v.to_string())));
    head
}

fn standard() -> RequestHead {
    delivery(
        "/hooks/standard",
        &[
            ("webhook-id", STANDARD_ID),
            ("webhook-timestamp", &STANDARD_TIMESTAMP.to_string()),
            ("webhook-signature", STANDARD_SIGNATURE),
        ],
    )
}

fn github(signature: &str) -> RequestHead {
    delivery("/hooks/github", &[("x-hub-signature-256", signature), ("x-github-delivery", GITHUB_DELIVERY)])
}

/// A Stripe event `id` delivered to `path`, signed at `t` (unix seconds).
fn stripe(path: &str, id: &str, t: u64) -> (RequestHead, BodyRead) {
    let body = format!(r#"{{"id": "{id}", "object": "event", "type": "payment_intent.succeeded"}}"#);
    let v1 = hex(&mac(STRIPE_SECRET.as_bytes(), &[format!("{t}.").as_bytes(), body.as_bytes()]));
    (delivery(path, &[("stripe-signature", &format!("t={t},v1={v1}"))]), bytes(&body))
}

fn shopify(id: &str, body: &str) -> RequestHead {
    let hmac = Base64::encode_string(&mac(SHOPIFY_SECRET.as_bytes(), &[body.as_bytes()]));
    delivery("/hooks/shopify", &[("x-shopify-hmac-sha256", &hmac), ("x-shopify-webhook-id", id)])
}

fn bytes(body: &str) -> BodyRead {
    BodyRead::Complete(body.as_bytes().to_vec())
}

fn refused(run: &Run) -> bool {
    run.reply.status == 401 && code(&run.reply) == "webhook-signature"
}

#[test]
fn each_sender_s_delivery_runs_once_keyed_by_its_id_and_its_resend_replays() {
    let now = NOW_MS / 1000;
    let shopify_body = r#"{"id":820982911946154508,"total_price":"10.00"}"#;
    let (stripe_head, stripe_body) = stripe("/hooks/stripe/billing", "evt_1", now);
    // (sender, the delivery, its body, its key)
    let rows = [
        ("standard", standard(), bytes(STANDARD_BODY), STANDARD_ID),
        ("github", github(GITHUB_SIGNATURE), bytes("Hello, World!"), GITHUB_DELIVERY),
        ("stripe", stripe_head, stripe_body, "evt_1"),
        ("shopify", shopify("b54557e4", shopify_body), bytes(shopify_body), "b54557e4"),
    ];
    for (sender, head, body, key) in rows {
        let mut world = hooks(&[]);
        let BodyRead::Complete(sent) = body.clone() else { unreachable!() };
        let first = world.run(head.clone(), body.clone());
        assert_eq!(first.steps[..4], ["read-body", "detach", "begin", "call-origin"], "{sender}");
        assert_eq!(
            first.edits,
            [HeaderEdit::Set("Idempotency-Key", key.into()), HeaderEdit::Set("Idempotency-Attempt", "1".into())],
            "{sender}: the delivery id is the key"
        );
        assert_eq!(first.origin_body, Some(sent), "{sender}: the body untouched, for the receiver to check too");
        assert!(first.log["route"].as_str().unwrap().contains("/hooks/"), "{sender}: {}", first.log);
        let resend = world.run(head, body);
        assert_eq!(header(&resend.reply, "idempotent-replayed"), Some("true"), "{sender}");
        assert_eq!(world.calls, [1], "{sender}: the receiver ran once");
    }
}

#[test]
fn a_bad_missing_or_stale_signature_is_401_before_any_store_call_and_plants_nothing() {
    let mut world = hooks(&[]);
    let stale = (STANDARD_TIMESTAMP - 301).to_string();
    let wrong = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OA=";
    // (what is wrong, the delivery, its body, the reason logged)
    let rows = [
        (
            "bad",
            delivery(
                "/hooks/standard",
                &[
                    ("webhook-id", STANDARD_ID),
                    ("webhook-timestamp", &STANDARD_TIMESTAMP.to_string()),
                    ("webhook-signature", wrong),
                ],
            ),
            bytes(STANDARD_BODY),
            "no signature matches",
        ),
        (
            "missing",
            delivery(
                "/hooks/standard",
                &[("webhook-id", STANDARD_ID), ("webhook-timestamp", &STANDARD_TIMESTAMP.to_string())],
            ),
            bytes(STANDARD_BODY),
            "webhook-signature header is missing",
        ),
        (
            "stale",
            delivery(
                "/hooks/standard",
                &[
                    ("webhook-id", STANDARD_ID),
                    ("webhook-timestamp", &stale),
                    ("webhook-signature", STANDARD_SIGNATURE),
                ],
            ),
            bytes(STANDARD_BODY),
            "no signature matches",
        ),
        ("forged body", standard(), bytes(r#"{"test": 1}"#), "no signature matches"),
        (
            "an Idempotency-Key instead",
            RequestHead { key: Some(STANDARD_ID.as_bytes().to_vec()), ..delivery("/hooks/standard", &[]) },
            bytes(STANDARD_BODY),
            "webhook-id header is missing",
        ),
    ];
    for (wrong, head, body, reason) in rows {
        let run = world.run(head, body);
        assert!(refused(&run), "{wrong}: {} {:?}", run.reply.status, run.reply.body);
        assert_eq!(run.steps, ["read-body", "respond", "log"], "{wrong}: no store call, no origin");
        assert_eq!(run.log["oncekey"].as_str(), Some("webhook-signature"), "{wrong}");
        assert!(run.log["reason"].as_str().unwrap().contains(reason), "{wrong}: {}", run.log);
        assert_eq!(run.log["route"].as_str(), Some("route 1 (POST /hooks/standard)"), "{wrong}");
        assert_eq!(header(&run.reply, "cache-control"), Some("no-store"));
    }
    assert!(world.stored.is_empty() && world.objects.is_empty(), "nothing stored, no object touched");
    // The real delivery with the same id then runs, once.
    let real = world.run(standard(), bytes(STANDARD_BODY));
    assert_eq!((real.reply.status, header(&real.reply, "idempotent-replayed")), (201, None));
    assert_eq!(world.calls, [1]);
    // A signed delivery stale by the clock: the same signature, five minutes and a second later.
    world.now = NOW_MS + 301_000;
    let late = world.run(standard(), bytes(STANDARD_BODY));
    assert!(refused(&late) && late.log["reason"].as_str().unwrap().contains("300 seconds"), "{}", late.log);
    assert_eq!(world.calls, [1]);
}

#[test]
fn a_github_or_shopify_delivery_with_a_wrong_secret_is_refused() {
    let mut world = hooks(&[]);
    let other = hex(&mac(b"another secret", &[b"Hello, World!"]));
    assert!(refused(&world.run(github(&format!("sha256={other}")), bytes("Hello, World!"))));
    assert!(refused(&world.run(github("sha1=757107ea"), bytes("Hello, World!"))), "not the sender's form");
    let body = r#"{"id":1}"#;
    let mut forged = shopify("d-1", body);
    forged.headers.retain(|(n, _)| n != "x-shopify-hmac-sha256");
    forged.headers.push(("x-shopify-hmac-sha256".into(), Base64::encode_string(&mac(b"guess", &[body.as_bytes()]))));
    assert!(refused(&world.run(forged, bytes(body))));
    assert!(world.calls.is_empty());
}

#[test]
fn one_stripe_event_delivered_to_two_endpoints_runs_at_each_once() {
    let mut world = hooks(&[]);
    let now = NOW_MS / 1000;
    for path in ["/hooks/stripe/billing", "/hooks/stripe/analytics", "/hooks/stripe/billing"] {
        let (head, body) = stripe(path, "evt_shared", now);
        world.run(head, body);
    }
    assert_eq!(world.calls, [1, 1], "each endpoint ran once; the resend replayed");
    let (head, body) = stripe("/hooks/stripe/billing", "evt_shared", now);
    let mut keyed_as_header = head.clone();
    keyed_as_header.key = Some(b"evt_shared".to_vec());
    assert_eq!(world.run(keyed_as_header, body.clone()).log["record"], world.run(head, body).log["record"]);
    // An event with no id is signed but cannot be keyed.
    let no_id = "{\"object\": \"event\"}";
    let v1 = hex(&mac(STRIPE_SECRET.as_bytes(), &[format!("{now}.").as_bytes(), no_id.as_bytes()]));
    let head = delivery("/hooks/stripe/billing", &[("stripe-signature", &format!("t={now},v1={v1}"))]);
    let run = world.run(head, bytes(no_id));
    assert!(refused(&run) && run.log["reason"].as_str().unwrap().contains("no id"), "{}", run.log);
}

#[test]
fn a_receiver_s_500_releases_the_delivery_so_the_sender_s_retry_runs_it() {
    let mut world = hooks(&[("IDEMPOTENCY_IN_FLIGHT_WAIT_MS", "0")]);
    world.origin = Box::new(|attempt| match attempt {
        1 => OriginResult::Answered { status: 500, headers: Vec::new(), body: b"handler failed".to_vec() },
        _ => created(),
    });
    let first = world.run(standard(), bytes(STANDARD_BODY));
    assert_eq!((first.reply.status, first.log["finish"].as_str()), (500, Some("released")));
    let retry = world.run(standard(), bytes(STANDARD_BODY));
    assert_eq!((retry.reply.status, header(&retry.reply, "idempotent-replayed")), (201, None));
    assert_eq!(world.calls, [1, 2], "the next attempt");
}

#[test]
fn a_route_whose_secrets_were_never_read_refuses_every_delivery_as_misconfigured() {
    let mut world = World::new(&[("IDEMPOTENCY_ROUTES", ROUTES)]);
    world.now = NOW_MS;
    let run = world.run(standard(), bytes(STANDARD_BODY));
    assert_eq!((run.reply.status, code(&run.reply).as_str()), (500, "misconfigured"));
    assert!(run.log["reason"].as_str().unwrap().contains("route 1 (POST /hooks/standard): its webhook secret"));
    assert!(!run.log["reason"].as_str().unwrap().contains("STANDARD_SECRET"), "never the name: it may be a value");
    assert!(world.calls.is_empty());
    // The headers a host copies include every sender's.
    let read = RequestHead::headers_read(&world.config);
    for name in [
        "webhook-signature",
        "svix-id",
        "x-hub-signature-256",
        "x-github-delivery",
        "stripe-signature",
        "x-shopify-hmac-sha256",
        "x-shopify-webhook-id",
    ] {
        assert!(read.contains(&name), "{name}");
    }
}

#[test]
fn no_spelling_or_method_of_a_webhook_route_reaches_the_receiver_unsigned() {
    // SPEC §13: every spelling of the route's path is the route's, and
    // anything but a POST there is 405, never a pass-through.
    let mut world = hooks(&[]);
    let unsigned = r#"{"id": "evt_forged", "object": "event", "type": "payment_intent.succeeded"}"#;
    let spellings = [
        "/hooks/stripe/billing",
        "/hooks/stripe/billing/",
        "/hooks//stripe/billing",
        "/Hooks/Stripe/Billing",
        "/hooks/%73tripe/billing",
        "/hooks/stripe/billing;x",
        "/hooks/./stripe/billing",
        "/hooks/x/../stripe/billing",
    ];
    for path in spellings {
        let run = world.run(delivery(path, &[]), bytes(unsigned));
        assert!(refused(&run), "{path}: {} {:?}", run.reply.status, run.reply.body);
        assert_eq!(run.steps, ["read-body", "respond", "log"], "{path}");
        for method in ["PATCH", "PUT", "DELETE", "GET", "HEAD", "OPTIONS", "post-ish"] {
            let run = world.run(RequestHead { method: method.into(), ..delivery(path, &[]) }, bytes(unsigned));
            assert_eq!((run.reply.status, code(&run.reply).as_str()), (405, "method-not-allowed"), "{method} {path}");
            assert_eq!(header(&run.reply, "allow"), Some("POST"), "{method} {path}");
            assert_eq!(run.steps, ["respond", "log"], "{method} {path}: nothing read, nothing forwarded");
        }
    }
    assert!(world.calls.is_empty() && world.stored.is_empty(), "the receiver never ran");
    // A route that only shares a prefix is not the webhook's.
    let other = world.run(RequestHead { key: None, ..delivery("/hooks/stripe-other", &[]) }, bytes("{}"));
    assert_eq!(other.steps, ["forward", "respond"]);
}

#[test]
fn one_signed_delivery_runs_once_whatever_spelling_or_hostname_carries_it() {
    let now = NOW_MS / 1000;
    let mut world = hooks(&[]);
    let mut records = Vec::new();
    let carriers = [
        ("api.example", "/hooks/stripe/billing"),
        ("oncekey-proxy.someone.workers.dev", "/hooks/stripe/billing"),
        ("API.EXAMPLE", "/hooks//stripe/billing/"),
        ("other.example", "/Hooks/%73tripe/billing;x"),
    ];
    for (host, path) in carriers {
        let (head, body) = stripe(path, "evt_once", now);
        let run = world.run(RequestHead { host: host.into(), ..head }, body);
        assert!(run.reply.status == 201, "{host}{path}: {}", run.reply.status);
        records.push(run.log["record"].clone());
    }
    assert_eq!(world.calls, [1], "one run for one event");
    assert!(records.windows(2).all(|pair| pair[0] == pair[1]), "one record: {records:?}");
    // The same with Standard Webhooks and GitHub, whose ids are headers.
    for (head, body) in [(standard(), STANDARD_BODY), (github(GITHUB_SIGNATURE), "Hello, World!")] {
        let mut world = hooks(&[]);
        for (host, path) in [("a.example", head.path.clone()), ("b.example", format!("/{}/", head.path.to_uppercase()))]
        {
            world.run(RequestHead { host: host.into(), path, ..head.clone() }, bytes(body));
        }
        assert_eq!(world.calls, [1], "{}", head.path);
    }
}

#[test]
fn a_captured_github_or_shopify_delivery_resent_under_a_future_id_never_blocks_that_delivery() {
    // GitHub and Shopify sign the body, not the id: a captured delivery can
    // be resent under any id. Its record is named by its body too, so the
    // real delivery with that id still runs (SPEC §13).
    let mut world = hooks(&[]);
    let captured = r#"{"id":1,"total_price":"10.00"}"#;
    let future = r#"{"id":2,"total_price":"99.00"}"#;
    let resent = world.run(shopify("future-id", captured), bytes(captured));
    assert_eq!(resent.reply.status, 201);
    let real = world.run(shopify("future-id", future), bytes(future));
    assert_eq!((real.reply.status, header(&real.reply, "idempotent-replayed")), (201, None), "{:?}", real.reply);
    assert_ne!(resent.log["record"], real.log["record"]);
    // The real delivery's own resend still replays.
    let again = world.run(shopify("future-id", future), bytes(future));
    assert_eq!(header(&again.reply, "idempotent-replayed"), Some("true"));
    assert_eq!(world.calls, [1, 1], "each body ran once");
}
