//! The demo's event flow (SPEC §7): an order with a `customerId` publishes
//! `OrderPlaced` to the queue bound as `ORDER_EVENTS`; the consumer awards
//! `floor(amountCents / 100)` points to the customer's loyalty account.
//!
//! Two layers keep the points right. The [`Consumer`] wrapper skips
//! deliveries whose key already ran. The handler does not rely on it: the
//! account is the set of orders awarded, keyed by order id, in one Durable
//! Object per customer (`customer:<id>` in the `ORDERS` namespace). An order
//! already in the set is not added again (check-then-act on the aggregate's
//! own id, inside the object, with no await between the check and the
//! write), and the points are derived from the set rather than kept as a
//! counter (set-based). That covers the runs the wrapper cannot rule out: a
//! handler that wrote and then failed, or crashed and was reclaimed.
//!
//! Variables: `DEMO_EVENT_KEY` (`content-hash`, the default here, ignoring
//! `publishedAt`; `message-id`; `order-id`, a key function; `order-id-raw`, one
//! that gives an empty key for an event without an order id) and
//! `DEMO_LOYALTY_GUARD` (`false` turns the handler's own check off, to show
//! what the wrapper alone does). `Demo-Fault` on `POST /api/orders`:
//! `redeliver` publishes the event twice; `consumer-fail` makes the
//! handler fail after its write on the first attempt; `consumer-slow` makes
//! it wait 1.5 s before writing. Tests that drive the handler directly may
//! also put `"demoFault": "consumer-crash"` in a body: the first attempt
//! writes and then never returns, like a consumer that died.

use std::time::Duration;

use serde_json::{Value, json};
use worker::wasm_bindgen::JsValue;
use worker::{
    Delay, Env, MessageBatch, Method, QueueContentType, RawMessageBuilder, Request, RequestInit, Response, Result,
    js_sys,
};

use oncekey::edge::{Consumer, Event};

/// The consumer's name: its records and counters are kept under it.
pub const CONSUMER: &str = "loyalty";
/// The queue producer binding.
const QUEUE_BINDING: &str = "ORDER_EVENTS";
/// The customers' loyalty accounts: objects of the demo's `Orders` class.
const ACCOUNTS_BINDING: &str = "ORDERS";
/// Faults the event carries to the consumer.
const CONSUMER_FAULTS: [&str; 2] = ["consumer-fail", "consumer-slow"];

/// Publishes `OrderPlaced` for a created order with a customer (twice for
/// `Demo-Fault: redeliver`, as a redelivery would). A failed publish is
/// logged, not answered: the order exists. (An outbox in the order's own
/// object would make the publish as durable as the order; see docs/queues.md.)
pub async fn publish(env: &Env, order: &Value, fault: Option<&str>) {
    let (Some(customer), Some(order_id), Some(cents)) =
        (order["customerId"].as_str(), order["orderId"].as_str(), order["amountCents"].as_u64())
    else {
        return;
    };
    let carried =
        fault.filter(|f| CONSUMER_FAULTS.contains(f)).map_or_else(String::new, |f| format!(r#","demoFault":"{f}""#));
    let copies = if fault == Some("redeliver") { 2 } else { 1 };
    for _ in 0..copies {
        // Every copy is the same event, stamped when it is published. Written
        // out rather than built as a `Value`: a smaller wasm.
        let event = format!(
            r#"{{"type":"OrderPlaced","eventId":"{order_id}","orderId":"{order_id}","customerId":{},"amountCents":{cents},"publishedAt":"{}"{carried}}}"#,
            Value::from(customer),
            now_iso()
        );
        if let Err(e) = send(env, &event).await {
            worker::console_error!(r#"{{"oncekey":"demo-publish-failed","error":{}}}"#, Value::from(e.to_string()));
        }
    }
}

async fn send(env: &Env, event: &str) -> Result<()> {
    let body = js_sys::JSON::parse(event).map_err(|_| worker::Error::RustError("event is not JSON".into()))?;
    let message = RawMessageBuilder::new(body).build_with_content_type(QueueContentType::Json);
    env.queue(QUEUE_BINDING)?.send_raw(message).await
}

fn now_iso() -> String {
    js_sys::Date::new_0().to_iso_string().as_string().unwrap_or_default()
}

/// The demo's queue entry point: the wrapper around [`award`].
pub async fn consume(batch: MessageBatch<Value>, env: Env) -> Result<()> {
    let consumer = match Consumer::from_env(&env, CONSUMER) {
        Ok(consumer) => consumer,
        Err(problem) => {
            // Leave every message for a retry: nothing ran.
            worker::console_error!("{}", json!({ "oncekey": "misconfigured", "error": problem.detail() }));
            batch.retry_all();
            return Ok(());
        }
    };
    let consumer = match env.var("DEMO_EVENT_KEY").map(|v| v.to_string()).ok().as_deref() {
        Some("message-id") => consumer.message_id(),
        Some("order-id") => {
            consumer.key_fn(|id, body| match parse(body).as_ref().and_then(|e| e["orderId"].as_str()) {
                Some(order) => format!("OrderPlaced:{order}"),
                None => id.to_owned(),
            })
        }
        // What a hurried user writes: an empty key for an event without one
        // (the tests of SPEC §11's "never taken for another").
        Some("order-id-raw") => consumer
            .key_fn(|_, body| parse(body).as_ref().and_then(|e| e["orderId"].as_str()).unwrap_or_default().to_owned()),
        _ => consumer.content_hash(&["publishedAt"]),
    };
    // `DEMO_QUEUE_CONCURRENCY`: how many of a batch's messages run at once.
    let concurrency = env.var("DEMO_QUEUE_CONCURRENCY").ok().and_then(|v| v.to_string().parse().ok()).unwrap_or(1);
    let consumer = consumer.concurrency(concurrency);
    let guard = env.var("DEMO_LOYALTY_GUARD").map(|v| v.to_string()).ok().as_deref() != Some("false");
    consumer.consume(&batch, &env, |event| award(event, &env, guard)).await;
    Ok(())
}

/// The handler: one order's points to its customer. `guard` is the
/// handler-side check (on unless `DEMO_LOYALTY_GUARD=false`).
///
/// # Errors
/// The loyalty object failed, or `consumer-fail` was injected: the wrapper
/// releases the key and the queue retries the message.
async fn award(event: Event, env: &Env, guard: bool) -> std::result::Result<(), String> {
    let Some(body) = parse(&event.body) else {
        // A malformed event will never get better: acknowledge and log it.
        worker::console_warn!("{}", json!({ "oncekey": "demo-bad-event", "id": event.id }));
        return Ok(());
    };
    let (Some(order), Some(customer), Some(cents)) = (
        body.get("orderId").and_then(Value::as_str),
        body.get("customerId").and_then(Value::as_str),
        body.get("amountCents").and_then(Value::as_u64),
    ) else {
        worker::console_warn!("{}", json!({ "oncekey": "demo-bad-event", "id": event.id }));
        return Ok(());
    };
    let fault = body.get("demoFault").and_then(Value::as_str);
    let first = event.attempt == 1;
    if fault == Some("consumer-slow") {
        Delay::from(Duration::from_millis(1500)).await;
    }
    let award = json!({ "orderId": order, "points": cents / 100, "amountCents": cents, "attempt": event.attempt, "awardedAt": now_iso() });
    loyalty_call(env, customer, Some((award, guard))).await.map_err(|e| e.to_string())?;
    match fault {
        Some("consumer-fail") if first => Err("Demo-Fault: consumer-fail, after the points were written".into()),
        Some("consumer-crash") if first => {
            // A consumer that dies mid-handler: it never finishes, and its
            // lease is left to run out.
            std::future::pending::<()>().await;
            Ok(())
        }
        _ => Ok(()),
    }
}

/// Reads a customer's account, or awards (`Some((award, guard))`) an
/// order. The account is the `Orders` object `customer:<id>`: the set of
/// orders awarded, keyed by order id (`Unique-By: orderId` when guarded).
async fn loyalty_call(env: &Env, customer: &str, award: Option<(Value, bool)>) -> Result<Value> {
    let stub = env.durable_object(ACCOUNTS_BINDING)?.get_by_name(&format!("customer:{customer}"))?;
    let mut init = RequestInit::new();
    if let Some((award, guard)) = award {
        let headers = worker::Headers::new();
        headers.set("Content-Type", "application/json")?;
        if guard {
            headers.set("Unique-By", "orderId")?;
        }
        init.with_method(Method::Post).with_headers(headers).with_body(Some(JsValue::from_str(&award.to_string())));
    }
    let mut res = stub.fetch_with_request(Request::new_with_init("https://loyalty.demo/", &init)?).await?;
    if res.status_code() != 200 {
        return Err(worker::Error::RustError(format!("loyalty answered {}", res.status_code())));
    }
    serde_json::from_str(&res.text().await?).map_err(|e| worker::Error::RustError(e.to_string()))
}

/// A JSON body (parsed from a `str`, as the rest of the worker does).
fn parse(body: &[u8]) -> Option<Value> {
    std::str::from_utf8(body).ok().and_then(|text| serde_json::from_str(text).ok())
}

/// `GET /api/loyalty/:customerId` and `GET /api/consumer/stats`.
pub async fn serve(path: &str, env: &Env) -> Result<Response> {
    if path == "/api/consumer/stats" {
        let s = Consumer::stats(env, CONSUMER).await?;
        return json_response(format!(
            r#"{{"consumer":"{CONSUMER}","firstRuns":{},"duplicatesSkipped":{},"inFlightConflicts":{},"releases":{},"reclaims":{},"keysReused":{}}}"#,
            s.first_runs, s.duplicates_skipped, s.in_flight_conflicts, s.releases, s.reclaims, s.keys_reused
        ));
    }
    let raw = path.trim_start_matches("/api/loyalty/");
    let customer = js_sys::decode_uri_component(raw).ok().and_then(|s| s.as_string()).unwrap_or_else(|| raw.to_owned());
    let account = loyalty_call(env, &customer, None).await?;
    let orders = &account["orders"];
    // Points are derived from the set of awarded orders, never a counter.
    let points: u64 = orders.as_array().map_or(0, |all| all.iter().filter_map(|o| o["points"].as_u64()).sum());
    json_response(format!(r#"{{"customerId":{},"points":{points},"orders":{orders}}}"#, Value::from(customer)))
}

fn json_response(body: String) -> Result<Response> {
    let response = Response::ok(body)?;
    response.headers().set("Content-Type", "application/json")?;
    Ok(response)
}
