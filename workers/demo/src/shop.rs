//! The embedded demo origin of SPEC §7: `POST /api/orders` creates an order
//! and a pretend charge, `GET /api/orders?item=` counts executions.
//! `delay_ms` slows it down; `Demo-Fault` injects faults: `unavailable`
//! (503, nothing created), `drop` (created, no answer) and, beyond SPEC §7,
//! `error` (created, then a 500).

use std::cell::RefCell;
use std::time::Duration;

use serde_json::{Value, json};
use worker::{Delay, Env, Headers, Method, Request, Response, ResponseBuilder, Result};

use oncekey::core::{PROBLEM_CONTENT_TYPE, Uuid7Generator};
use oncekey::edge::OriginError;

const MAX_DELAY_MS: u64 = 10_000;

thread_local! {
    static IDS: RefCell<Uuid7Generator> = RefCell::new(Uuid7Generator::default());
}

/// Serves one request to the demo origin. `Demo-Fault: drop` creates the
/// order and then gives no answer, as a dropped connection would.
///
/// # Errors
/// [`OriginError::NoAnswer`] for `Demo-Fault: drop`.
pub async fn serve(req: Request, env: Env) -> std::result::Result<Response, OriginError> {
    let answer = match (req.method(), req.path().as_str()) {
        (Method::Post, "/api/orders") => create(req, &env).await,
        (Method::Get, "/api/orders") => list(&req, &env).await,
        (Method::Get, path) if path.starts_with("/api/loyalty/") || path == "/api/consumer/stats" => {
            super::loyalty::serve(path, &env).await.map(Ok)
        }
        (_, "/api/orders") => Ok(Ok(problem(405, "method-not-allowed", "Use GET or POST on /api/orders."))),
        (_, path) if path == "/classic" || path.starts_with("/classic/") => {
            super::classic::serve(req, &env).await.map(Ok)
        }
        _ => Ok(Ok(problem(404, "not-found", "No such route in the demo origin."))),
    };
    match answer {
        Ok(Ok(response)) => Ok(response),
        Ok(Err(dropped)) => Err(dropped),
        Err(e) => Ok(problem(500, "demo-failed", &format!("The demo origin failed: {e}"))),
    }
}

async fn create(mut req: Request, env: &Env) -> Result<std::result::Result<Response, OriginError>> {
    let url = req.url()?;
    let delay_ms = match url.query_pairs().find(|(k, _)| k == "delay_ms") {
        None => 0,
        Some((_, v)) => match v.parse::<u64>() {
            Ok(ms) if ms <= MAX_DELAY_MS => ms,
            _ => return Ok(Ok(problem(400, "bad-delay", "delay_ms must be a whole number from 0 to 10000."))),
        },
    };
    if delay_ms > 0 {
        Delay::from(Duration::from_millis(delay_ms)).await;
    }
    let fault = req.headers().get("Demo-Fault")?;
    if fault.as_deref() == Some("unavailable") {
        let response = problem(503, "unavailable", "The payment provider is unavailable; try again.");
        response.headers().set("Retry-After", "1")?;
        return Ok(Ok(response));
    }
    let attempt = req.headers().get("Idempotency-Attempt")?.and_then(|a| a.parse::<u32>().ok());
    let order = match req.text().await.ok().and_then(|t| serde_json::from_str::<Value>(&t).ok()) {
        Some(input) => match validate(&input) {
            Some(order) => order,
            None => return Ok(Ok(bad_order())),
        },
        None => return Ok(Ok(bad_order())),
    };
    let (item, quantity, amount_cents, customer_id) = order;
    let created = place(env, &item, quantity, amount_cents, customer_id, attempt).await?;
    super::loyalty::publish(env, &created, fault.as_deref()).await;
    match fault.as_deref() {
        Some("drop") => return Ok(Err(OriginError::NoAnswer("Demo-Fault: drop".into()))),
        // The order exists but the answer is a 500: its outcome is unknown
        // to the caller, so the layer stores it rather than running it again.
        Some("error") => return Ok(Ok(problem(500, "charge-failed", "The order was created but the answer failed."))),
        _ => {}
    }
    let headers = Headers::new();
    headers.set("Content-Type", "application/json")?;
    Ok(Ok(ResponseBuilder::new().with_status(201).with_headers(headers).fixed(created.to_string().into_bytes())))
}

/// Creates an order and its pretend charge in the order book: the order
/// as stored.
pub(crate) async fn place(
    env: &Env,
    item: &str,
    quantity: u64,
    amount_cents: u64,
    customer_id: Option<String>,
    attempt: Option<u32>,
) -> Result<Value> {
    let now = worker::Date::now().as_millis();
    let order = json!({
        "orderId": new_id(now),
        "chargeId": new_id(now),
        "item": item,
        "quantity": quantity,
        "amountCents": amount_cents,
        "customerId": customer_id,
        "attempt": attempt,
        "createdAt": worker::js_sys::Date::new_0().to_iso_string().as_string(),
    });
    let mut stub_req = Request::new_with_init(
        "https://orders.demo/add",
        worker::RequestInit::new().with_method(Method::Post).with_body(Some(order.to_string().into())),
    )?;
    stub_req.headers_mut()?.set("Content-Type", "application/json")?;
    let stub = env.durable_object("ORDERS")?.get_by_name(item)?;
    let mut created = stub.fetch_with_request(stub_req).await?;
    created.json().await
}

/// Every order of `item`, as the order book lists them.
pub(crate) async fn orders_of(env: &Env, item: &str) -> Result<Response> {
    let stub = env.durable_object("ORDERS")?.get_by_name(item)?;
    stub.fetch_with_str("https://orders.demo/list").await
}

async fn list(req: &Request, env: &Env) -> Result<std::result::Result<Response, OriginError>> {
    let url = req.url()?;
    let Some((_, item)) = url.query_pairs().find(|(k, _)| k == "item") else {
        return Ok(Ok(problem(400, "missing-item", "Name the item: GET /api/orders?item=...")));
    };
    Ok(Ok(orders_of(env, &item).await?))
}

/// Item, quantity, amount and customer of a valid order body.
fn validate(input: &Value) -> Option<(String, u64, u64, Option<String>)> {
    let item = input.get("item")?.as_str().filter(|s| !s.is_empty())?.to_owned();
    let quantity = input.get("quantity")?.as_u64().filter(|&q| q > 0)?;
    let amount = input.get("amountCents")?.as_u64().filter(|&a| a > 0)?;
    let customer = match input.get("customerId") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => return None,
    };
    Some((item, quantity, amount, customer))
}

fn bad_order() -> Response {
    problem(
        400,
        "bad-order",
        "The body must be JSON {\"item\": string, \"quantity\": int > 0, \"amountCents\": int > 0, \"customerId\"?: string}.",
    )
}

fn new_id(now_ms: u64) -> String {
    let mut random = [0u8; 10];
    // Demo identifiers only: Math.random is enough, and needs no binding.
    for byte in &mut random {
        *byte = (worker::js_sys::Math::random() * 256.0) as u8;
    }
    IDS.with(|ids| Uuid7Generator::format(&ids.borrow_mut().next(now_ms, random)))
}

/// A problem+json answer from the demo origin (not from the layer).
fn problem(status: u16, code: &str, detail: &str) -> Response {
    let body = json!({ "type": format!("urn:oncekey:demo:{code}"), "title": code, "status": status, "detail": detail });
    let headers = Headers::new();
    let _ = headers.set("Content-Type", PROBLEM_CONTENT_TYPE);
    ResponseBuilder::new().with_status(status).with_headers(headers).fixed(body.to_string().into_bytes())
}
