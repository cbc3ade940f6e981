//! The client side of the Durable Object coordinator: the core's
//! [`Store`] over one round trip per call, with the store timeout.
//!
//! The round trip talks to the runtime's stub directly: one RPC call,
//! `call(bytes)`, answered with the reply's bytes. A class exported by
//! workers-rs' glue alone takes no RPC calls (it does not extend
//! `DurableObject`); the first call it refuses turns this isolate's calls to
//! one `fetch` with the encoded call and one `arrayBuffer()` for the reply.
//! Going through `worker::Request`/`Response` instead parses the URL in
//! Rust, reads `cf` on both, and reads the reply chunk by chunk across the
//! wasm boundary — measurable on a path that makes two of these calls
//! (bench/RESULTS.md).

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
        let stub = self
            .namespace
            .get_by_name(&name.to_hex())
            .map_err(|e| StoreError::Failed(e.to_string()))?
            .into_rpc::<RawStub>();
        let bytes = js_sys::Uint8Array::from(call);
        if OVER_RPC.get() {
            match rpc_call(&stub, &bytes).await {
                Err(error) if refuses_rpc(&error) => {
                    // Refused before any method ran: the call goes again, over
                    // fetch. Calls already on their way are refused too; the
                    // first refusal says so.
                    if OVER_RPC.replace(false) {
                        worker::console_warn!("{FETCH_ONLY}");
                    }
                }
                reply => return reply.map_err(failed),
            }
        }
        fetch_call(&stub, &bytes).await
    }
}

/// A stub's call that failed, as a store failure.
fn failed(error: JsValue) -> StoreError {
    StoreError::Failed(worker::Error::from(error).to_string())
}

/// One store call over RPC: `stub.call(bytes)`, the reply's bytes.
async fn rpc_call(stub: &RawStub, call: &js_sys::Uint8Array) -> Result<Vec<u8>, JsValue> {
    let reply = JsFuture::from(stub.call(call)?).await?;
    Ok(js_sys::Uint8Array::new(&reply).to_vec())
}

/// One store call over `fetch`: a `POST` of its bytes, the reply's bytes.
async fn fetch_call(stub: &RawStub, call: &js_sys::Uint8Array) -> Result<Vec<u8>, StoreError> {
    let init = web_sys::RequestInit::new();
    init.set_method("POST");
    init.set_body(call);
    let res: web_sys::Response =
        JsFuture::from(stub.fetch(CALL_URL, &init).map_err(failed)?).await.map_err(failed)?.unchecked_into();
    if res.status() != 200 {
        return Err(StoreError::Failed(format!("status {}", res.status())));
    }
    let reply = JsFuture::from(res.array_buffer().map_err(failed)?).await.map_err(failed)?;
    Ok(js_sys::Uint8Array::new(&reply).to_vec())
}

thread_local! {
    /// Whether store calls go over RPC: until the bound class refuses one.
    static OVER_RPC: std::cell::Cell<bool> = const { std::cell::Cell::new(true) };
}

/// Whether the runtime refused an RPC call because the object's class is
/// not a `DurableObject` subclass — workers-rs' glue exports
/// `IdempotencyCoordinator` as a plain class; `rust-entry.mjs` re-exports it
/// as a subclass. The runtime refuses before the object runs any method,
/// so the call can go again over `fetch`.
fn refuses_rpc(error: &JsValue) -> bool {
    error.dyn_ref::<js_sys::Error>().is_some_and(|e| String::from(e.message()).contains("does not support RPC"))
}

/// Logged once per isolate when the object takes no RPC calls.
const FETCH_ONLY: &str = "oncekey: IDEMPOTENCY_DO's class takes no RPC calls (it is exported by workers-rs' glue, not \
    as a DurableObject subclass): store calls go over fetch, which costs more CPU. Export it through an entry like \
    workers/rust-entry.mjs (docs/performance.md)";

/// Where store calls are sent (the object answers any path).
const CALL_URL: &str = "https://oncekey.coordinator/call";

#[wasm_bindgen]
extern "C" {
    /// A Durable Object stub as the runtime hands it out.
    type RawStub;

    /// `stub.fetch(url, init)`: a promise of the object's `Response`.
    #[wasm_bindgen(method, catch)]
    fn fetch(this: &RawStub, url: &str, init: &web_sys::RequestInit) -> Result<js_sys::Promise, JsValue>;

    /// `stub.call(bytes)`: a promise of the reply's bytes, over RPC
    /// ([`IdempotencyCoordinator::call`](super::IdempotencyCoordinator::call)).
    #[wasm_bindgen(method, catch)]
    fn call(this: &RawStub, call: &js_sys::Uint8Array) -> Result<js_sys::Promise, JsValue>;
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
        let reply = self
            .call(name, StoreCall::Finish { policy: self.policy.clone(), attempt, reservation: 0, outcome })
            .await?;
        decode_finished(&reply).map_err(|e| StoreError::Failed(e.to_string()))
    }
}
