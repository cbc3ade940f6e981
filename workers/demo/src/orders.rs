//! The demo's order book: one Durable Object per item (binding `ORDERS`),
//! so every execution that created an order can be counted from a strongly
//! consistent store. The loyalty accounts reuse the class (one object per
//! customer, see `loyalty`), with `Unique-By` for their check-then-act.

// `#[durable_object(fetch)]` generates undocumented glue (the JS class
// wrapper), for `fetch` only: the orders need no alarm or socket.
#![allow(missing_docs)]

use std::cell::RefCell;

use serde_json::Value;
use worker::{DurableObject, Env, Method, Request, Response, Result, State, durable_object};

const ORDERS: &str = "orders";

/// Orders of one item, kept as one JSON array.
#[durable_object(fetch)]
pub struct Orders {
    state: State,
    orders: RefCell<Option<Vec<Value>>>,
}

impl DurableObject for Orders {
    fn new(state: State, _env: Env) -> Self {
        Self { state, orders: RefCell::new(None) }
    }

    /// `POST` appends the order in the body (unless `Unique-By: <field>`
    /// names a field whose value an entry already has); `GET` lists them.
    async fn fetch(&self, mut req: Request) -> Result<Response> {
        let adding = match req.method() {
            Method::Post => Some(req.json::<Value>().await?),
            _ => None,
        };
        // The cached copy, cloned before any await (no borrow is held across one).
        let cached = self.orders.borrow().clone();
        let mut orders = match cached {
            Some(orders) => orders,
            None => self
                .state
                .storage()
                .get::<String>(ORDERS)
                .await?
                .map_or_else(Vec::new, |raw| serde_json::from_str(&raw).unwrap_or_default()),
        };
        if let Some(order) = adding {
            // Check-then-act on the aggregate's own ids, with no await between.
            if let Some(field) = req.headers().get("Unique-By")?.as_deref()
                && order.get(field).is_some()
                && orders.iter().any(|o| o.get(field) == order.get(field))
            {
                *self.orders.borrow_mut() = Some(orders);
                return Response::from_json(&order);
            }
            orders.push(order.clone());
            *self.orders.borrow_mut() = Some(orders);
            let raw = serde_json::to_string(self.orders.borrow().as_ref().unwrap())?;
            self.state.storage().put(ORDERS, raw).await?;
            return Response::from_json(&order);
        }
        *self.orders.borrow_mut() = Some(orders.clone());
        Response::from_json(&serde_json::json!({ "count": orders.len(), "orders": orders }))
    }
}
