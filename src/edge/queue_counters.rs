//! A consumer's counters, kept in the coordinator's namespace
//! (`IDEMPOTENCY_DO`): one object per consumer, named by the core
//! ([`ConsumerStats::object_name`]), so the counts survive isolates and add
//! up across every instance that consumed a batch, with no binding beyond
//! the ones the layer needs.
//!
//! `POST` to [`COUNTERS_PATH`] adds an encoded [`ConsumerStats`] and answers
//! the new total; `GET` answers the total. The read and the write have no
//! other await between them, so concurrent batches never lose a count.

use worker::wasm_bindgen::JsCast;
use worker::wasm_bindgen_futures::JsFuture;
use worker::{Method, Request, Response, Result, State, js_sys};

use crate::core::ConsumerStats;

/// The path the coordinator object serves counters on.
pub(crate) const COUNTERS_PATH: &str = "/consumer-counters";

/// Serves one counters call inside the object.
pub(crate) async fn serve(state: &State, mut req: Request) -> Result<Response> {
    let adding = match req.method() {
        Method::Post => match ConsumerStats::decode(&req.bytes().await?) {
            Some(delta) => Some(delta),
            None => return Response::error("not a ConsumerStats", 400),
        },
        _ => None,
    };
    let raw = JsFuture::from(state.storage().as_raw().get(ConsumerStats::STORAGE_KEY)?).await?;
    let mut total =
        raw.dyn_into::<js_sys::Uint8Array>().ok().and_then(|b| ConsumerStats::decode(&b.to_vec())).unwrap_or_default();
    if let Some(delta) = adding {
        total.add(&delta);
        state
            .storage()
            .put_raw(ConsumerStats::STORAGE_KEY, js_sys::Uint8Array::from(total.encode().as_slice()))
            .await?;
    }
    Response::from_bytes(total.encode())
}
