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
    Decision, Fingerprint, Finished, Outcome, RecordName, RecordPolicy, Store, StoreCall, decode_decision,
    decode_finished,
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

    /// Sends one encoded store call to the object of `name` and reads the
    /// reply's bytes, within `timeout_ms`: the whole transport. What to send
    /// and how long to wait are the core's (`Action::Store`).
    ///
    /// # Errors
    /// The object failed, answered with another status, or did not answer
    /// in time.
    pub async fn send(&self, name: &RecordName, call: &[u8], timeout_ms: u64) -> Result<Vec<u8>, StoreError> {
        within(timeout_ms, self.round_trip(name, call)).await.unwrap_or(Err(StoreError::Timeout(timeout_ms)))
    }

    /// One call of the [`Store`] interface (the queue consumer's), within
    /// the store's limit.
    async fn call(&self, name: &RecordName, call: StoreCall) -> Result<Vec<u8>, StoreError> {
        self.send(name, &call.encode(), self.timeout_ms).await
    }

    async fn round_trip(&self, name: &RecordName, call: &[u8]) -> Result<Vec<u8>, StoreError> {
        let failed = |e: JsValue| StoreError::Failed(worker::Error::from(e).to_string());
        let stub = self
            .namespace
            .get_by_name(&name.to_hex())
            .map_err(|e| StoreError::Failed(e.to_string()))?
            .into_rpc::<RawStub>();
        let init = web_sys::RequestInit::new();
        init.set_method("POST");
        init.set_body(&js_sys::Uint8Array::from(call));
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
            .call(
                name,
                StoreCall::Begin {
                    policy: self.policy.clone(),
                    fingerprint,
                    wait_ms: 0,
                    reservation: 0,
                    open_keys: Some(Vec::new()),
                },
            )
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
        let reply = self
            .call(name, StoreCall::Finish { policy: self.policy.clone(), attempt, reservation: 0, outcome })
            .await?;
        decode_finished(&reply).map_err(|e| StoreError::Failed(e.to_string()))
    }
}
