//! The Durable Object that makes decisions atomic (binding
//! `IDEMPOTENCY_DO`, class `IdempotencyCoordinator`): one object per record
//! name, holding at most one record.
//!
//! Each call runs the core's pure step on the record and applies its write
//! with no await other than storage between the read and the write (the
//! runtime's input gate holds other events during storage operations, and
//! the cached copy is updated before the write is issued). The object's own
//! clock decides leases and expiry; an alarm deletes the record when it
//! expires.

// `#[durable_object]` generates undocumented glue (the JS class wrapper).
#![allow(missing_docs)]

use std::cell::{Cell, RefCell};

use worker::wasm_bindgen::JsCast;
use worker::wasm_bindgen_futures::JsFuture;
use worker::{DurableObject, Env, Method, Request, Response, Result, State, durable_object, js_sys};

use crate::core::{Record, StoreCall, Write};

use super::http::now_ms;

/// Storage key of the record.
const RECORD: &str = "record";

/// The coordinator object. `GET /calls` answers how many store calls this
/// instance has served, so tests can show that a replay did not touch it.
#[durable_object]
pub struct IdempotencyCoordinator {
    state: State,
    /// The record as last read or written: `None` until first loaded.
    cached: RefCell<Option<Option<Record>>>,
    /// Whether this instance has set the expiry alarm.
    alarm_set: Cell<bool>,
    calls: Cell<u64>,
}

impl DurableObject for IdempotencyCoordinator {
    fn new(state: State, _env: Env) -> Self {
        Self { state, cached: RefCell::new(None), alarm_set: Cell::new(false), calls: Cell::new(0) }
    }

    async fn fetch(&self, mut req: Request) -> Result<Response> {
        // A queue consumer's counters live in an object of this namespace.
        if req.path() == super::consumer_counters::COUNTERS_PATH {
            return super::consumer_counters::serve(&self.state, req).await;
        }
        if req.method() == Method::Get {
            return Response::from_json(&serde_json::json!({ "calls": self.calls.get() }));
        }
        self.calls.set(self.calls.get() + 1);
        let body = req.bytes().await?;
        let Ok(call) = StoreCall::decode(&body) else {
            return Response::error("not a store call", 400);
        };
        let found = self.load().await?;
        let step = call.run(found, now_ms());
        if let Write::Put(record) = step.write {
            self.save(record).await?;
        }
        Ok(Response::from_bytes(step.answer)?)
    }

    async fn alarm(&self) -> Result<Response> {
        self.alarm_set.set(false);
        match self.load().await? {
            Some(record) if now_ms() < record.expires_at() => {
                self.alarm_set.set(true);
                self.state.storage().set_alarm(record.expires_at() as i64).await?;
            }
            Some(_) => {
                *self.cached.borrow_mut() = Some(None);
                self.state.storage().delete_all().await?;
            }
            None => {}
        }
        Response::empty()
    }
}

impl IdempotencyCoordinator {
    /// The record, from the cache or storage (undecodable bytes read as absent).
    async fn load(&self) -> Result<Option<Record>> {
        if let Some(record) = self.cached.borrow().as_ref() {
            return Ok(record.clone());
        }
        let raw = JsFuture::from(self.state.storage().as_raw().get(RECORD)?).await?;
        let record = raw
            .dyn_into::<js_sys::Uint8Array>()
            .ok()
            .and_then(|bytes| Record::decode(&bytes.to_vec()).ok());
        *self.cached.borrow_mut() = Some(record.clone());
        Ok(record)
    }

    /// Writes the record, and sets the expiry alarm if this instance has
    /// not. The alarm is not moved on every write: it re-arms itself for a
    /// record that lives longer, and one that expired earlier already reads
    /// as absent, so deletion is late by at most a lease. That saves a
    /// storage operation on each `finish`.
    async fn save(&self, record: Record) -> Result<()> {
        let bytes = js_sys::Uint8Array::from(record.encode().as_slice());
        let expires_at = record.expires_at();
        *self.cached.borrow_mut() = Some(Some(record));
        let storage = self.state.storage();
        if self.alarm_set.replace(true) {
            storage.put_raw(RECORD, bytes).await
        } else {
            let (put, alarm) =
                futures_util::future::join(storage.put_raw(RECORD, bytes), storage.set_alarm(expires_at as i64)).await;
            put.and(alarm)
        }
    }
}
