//! The client side of the Durable Object coordinator: the core's
//! [`Store`] over one round trip per call, with the store timeout.

use std::time::Duration;

use futures_util::future::{Either, select};
use worker::{Delay, Method, ObjectNamespace, Request, RequestInit};

use crate::core::{
    Decision, Finished, Fingerprint, Outcome, RecordName, RecordPolicy, Store, StoreCall, decode_decision,
    decode_finished,
};

/// Why the coordinator gave no decision. Answered as 503
/// `store-unavailable` (or forwarded unprotected when failing open).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreError {
    /// No answer within `IDEMPOTENCY_STORE_TIMEOUT_MS`.
    Timeout(u64),
    /// The object failed, answered with an error, or sent a reply that is
    /// not a decision.
    Failed(String),
}

impl std::fmt::Display for StoreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Timeout(ms) => write!(f, "store did not answer within {ms} ms"),
            Self::Failed(why) => write!(f, "store failed: {why}"),
        }
    }
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

    async fn call(&self, name: &RecordName, call: StoreCall) -> Result<Vec<u8>, StoreError> {
        let timer = Delay::from(Duration::from_millis(self.timeout_ms));
        let round_trip = std::pin::pin!(self.round_trip(name, call));
        match select(round_trip, timer).await {
            Either::Left((result, _)) => result,
            Either::Right(_) => Err(StoreError::Timeout(self.timeout_ms)),
        }
    }

    async fn round_trip(&self, name: &RecordName, call: StoreCall) -> Result<Vec<u8>, StoreError> {
        let failed = |e: worker::Error| StoreError::Failed(e.to_string());
        let stub = self.namespace.get_by_name(&name.to_hex()).map_err(failed)?;
        let body = worker::js_sys::Uint8Array::from(call.encode().as_slice());
        let mut init = RequestInit::new();
        init.with_method(Method::Post).with_body(Some(body.into()));
        let req = Request::new_with_init("https://oncekey.coordinator/call", &init).map_err(failed)?;
        let mut res = stub.fetch_with_request(req).await.map_err(failed)?;
        if res.status_code() != 200 {
            return Err(StoreError::Failed(format!("status {}", res.status_code())));
        }
        res.bytes().await.map_err(failed)
    }
}

impl Store for DurableStore {
    type Error = StoreError;

    async fn begin(&self, name: &RecordName, fingerprint: Fingerprint, _now_ms: u64) -> Result<Decision, StoreError> {
        let reply = self.call(name, StoreCall::Begin { policy: self.policy.clone(), fingerprint }).await?;
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
