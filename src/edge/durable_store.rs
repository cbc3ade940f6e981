//! The client side of the Durable Object coordinator: the core's
//! [`Store`] over one round trip per call, with the store timeout.
//!
//! The round trip talks to the runtime's stub directly: one `fetch` with the
//! encoded call, one `arrayBuffer()` for the reply. Going through
//! `worker::Request`/`Response` instead parses the URL in Rust, reads `cf`
//! on both, and reads the reply chunk by chunk across the wasm boundary —
//! measurable on a path that makes two of these calls (bench/RESULTS.md).

use wasm_bindgen::prelude::wasm_bindgen;
use worker::wasm_bindgen::{JsCast, JsValue};
use worker::wasm_bindgen_futures::JsFuture;
use worker::{ObjectNamespace, js_sys, web_sys};

use super::deadline::within;

use crate::core::{
    Decision, Fingerprint, Finished, Outcome, RecordName, RecordPolicy, RecordState, ReleaseAnswer, Store, StoreCall,
    decode_decision, decode_finished, decode_inspected, decode_released,
};

/// Why the coordinator gave no decision. Answered as 503
/// `store-unavailable` (or forwarded unprotected when failing open).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StoreError {
    /// No answer within `IDEMPOTENCY_STORE_TIMEOUT_MS`.
    #[error("store did not answer within {0} ms")]
    Timeout(u64),
    /// The object failed, answered with an error, or sent a reply that is
    /// not a decision.
    #[error("store failed: {0}")]
    Failed(String),
}

/// The Durable Object namespace bound as `IDEMPOTENCY_DO`, one object per
/// record name. Each call is decided and written inside the object, on its
/// clock: the `now_ms` passed to [`Store`] calls is not used.
#[derive(Clone, Debug)]
pub struct DurableStore {
    namespace: ObjectNamespace,
    policy: RecordPolicy,
    timeout_ms: u64,
}

impl DurableStore {
    /// A store over `namespace`, applying `policy`, giving up on a call
    /// after `timeout_ms`.
    pub fn new(namespace: ObjectNamespace, policy: RecordPolicy, timeout_ms: u64) -> Self {
        Self { namespace, policy, timeout_ms }
    }

    /// `begin` with what the layer adds: `wait_ms`, how long a duplicate of a
    /// running attempt may wait inside the object for it to end (SPEC §3;
    /// the call's time limit is the store's plus the wait), and the
    /// request's `reservation` number, kept in the reservation it makes.
    ///
    /// # Errors
    /// The object failed or did not answer in time.
    pub async fn begin_call(
        &self,
        name: &RecordName,
        fingerprint: Fingerprint,
        wait_ms: u64,
        reservation: u64,
    ) -> Result<Decision, StoreError> {
        let call = StoreCall::Begin { policy: self.policy.clone(), fingerprint, wait_ms, reservation };
        let reply = self.call(name, call).await?;
        decode_decision(&reply).map_err(|e| StoreError::Failed(e.to_string()))
    }

    /// Gives back the reservation `reservation` if a `begin` whose reply was
    /// lost made it: whether it did.
    ///
    /// # Errors
    /// The object failed or did not answer in time.
    pub async fn abandon(&self, name: &RecordName, reservation: u64) -> Result<bool, StoreError> {
        let reply = self.call(name, StoreCall::Abandon { policy: self.policy.clone(), reservation }).await?;
        Ok(reply.first() == Some(&1))
    }

    /// The state of the record `name`, for an operator (SPEC §12): `None`
    /// when there is none. Never its stored answer.
    ///
    /// # Errors
    /// The object failed or did not answer in time.
    pub async fn inspect(&self, name: &RecordName) -> Result<Option<RecordState>, StoreError> {
        let reply = self.call(name, StoreCall::Inspect).await?;
        decode_inspected(&reply).map_err(|e| StoreError::Failed(e.to_string()))
    }

    /// Releases the attempt in flight on `name`, whose outcome an operator
    /// has settled (SPEC §12); a running one only when `force` is set.
    ///
    /// # Errors
    /// The object failed or did not answer in time (whether it released is
    /// then unknown; a repeat is safe).
    pub async fn release(&self, name: &RecordName, force: bool) -> Result<ReleaseAnswer, StoreError> {
        let reply = self.call(name, StoreCall::Release { policy: self.policy.clone(), force }).await?;
        decode_released(&reply).map_err(|e| StoreError::Failed(e.to_string()))
    }

    /// One call within the store limit (plus the wait a `begin` may spend in
    /// the object).
    async fn call(&self, name: &RecordName, call: StoreCall) -> Result<Vec<u8>, StoreError> {
        let limit = match call {
            StoreCall::Begin { wait_ms, .. } => self.timeout_ms.saturating_add(wait_ms),
            StoreCall::Finish { .. } | StoreCall::Abandon { .. } | StoreCall::Inspect | StoreCall::Release { .. } => {
                self.timeout_ms
            }
        };
        within(limit, self.round_trip(name, call)).await.unwrap_or(Err(StoreError::Timeout(limit)))
    }

    async fn round_trip(&self, name: &RecordName, call: StoreCall) -> Result<Vec<u8>, StoreError> {
        let failed = |e: JsValue| StoreError::Failed(worker::Error::from(e).to_string());
        let stub = self
            .namespace
            .get_by_name(&name.to_hex())
            .map_err(|e| StoreError::Failed(e.to_string()))?
            .into_rpc::<RawStub>();
        let init = web_sys::RequestInit::new();
        init.set_method("POST");
        init.set_body(&js_sys::Uint8Array::from(call.encode().as_slice()));
        let res: web_sys::Response =
            JsFuture::from(stub.fetch(CALL_URL, &init).map_err(failed)?).await.map_err(failed)?.unchecked_into();
        if res.status() != 200 {
            return Err(StoreError::Failed(format!("status {}", res.status())));
        }
        let reply = JsFuture::from(res.array_buffer().map_err(failed)?).await.map_err(failed)?;
        Ok(js_sys::Uint8Array::new(&reply).to_vec())
    }
}

/// Where store calls are sent (the object answers any path).
const CALL_URL: &str = "https://oncekey.coordinator/call";

#[wasm_bindgen]
extern "C" {
    /// A Durable Object stub as the runtime hands it out.
    type RawStub;

    /// `stub.fetch(url, init)`: a promise of the object's `Response`.
    #[wasm_bindgen(method, catch)]
    fn fetch(this: &RawStub, url: &str, init: &web_sys::RequestInit) -> Result<js_sys::Promise, JsValue>;
}

impl Store for DurableStore {
    type Error = StoreError;

    async fn begin(&self, name: &RecordName, fingerprint: Fingerprint, _now_ms: u64) -> Result<Decision, StoreError> {
        let reply = self
            .call(name, StoreCall::Begin { policy: self.policy.clone(), fingerprint, wait_ms: 0, reservation: 0 })
            .await?;
        decode_decision(&reply).map_err(|e| StoreError::Failed(e.to_string()))
    }

    async fn finish(
        &self,
        name: &RecordName,
        attempt: u32,
        outcome: Outcome,
        _now_ms: u64,
    ) -> Result<Finished, StoreError> {
        let reply = self.call(name, StoreCall::Finish { policy: self.policy.clone(), attempt, outcome }).await?;
        decode_finished(&reply).map_err(|e| StoreError::Failed(e.to_string()))
    }
}
