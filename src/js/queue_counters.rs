//! A queue consumer's counters as the coordinator stores them and
//! `queueStats` reads them. Not behind `js-queue`: the coordinator class of
//! every `oncekey/worker` build answers the counters' calls.

use wasm_bindgen::JsValue;
use wasm_bindgen::prelude::wasm_bindgen;

use super::values::Object;
use crate::core::ConsumerStats;
#[cfg(feature = "js-queue")]
use wasm_bindgen::JsError;

/// Counts `delta` (encoded) added to `total` (encoded, or undefined for
/// none yet): what the counters object stores. Undefined when `delta` is
/// not a set of counts.
#[wasm_bindgen(js_name = addCounts)]
pub fn add_counts(total: Option<Vec<u8>>, delta: &[u8]) -> Option<Vec<u8>> {
    let delta = ConsumerStats::decode(delta)?;
    let mut sum = total.as_deref().and_then(ConsumerStats::decode).unwrap_or_default();
    sum.add(&delta);
    Some(sum.encode())
}

/// Counts (encoded, or undefined for none) as the object `queueStats`
/// answers: `{firstRuns, duplicatesSkipped, inFlightConflicts, releases,
/// reclaims, keysReused}`.
#[wasm_bindgen(js_name = countsOf)]
pub fn counts_of(counts: Option<Vec<u8>>) -> JsValue {
    let s = counts.as_deref().and_then(ConsumerStats::decode).unwrap_or_default();
    Object::empty()
        .set("firstRuns", s.first_runs as f64)
        .set("duplicatesSkipped", s.duplicates_skipped as f64)
        .set("inFlightConflicts", s.in_flight_conflicts as f64)
        .set("releases", s.releases as f64)
        .set("reclaims", s.reclaims as f64)
        .set("keysReused", s.keys_reused as f64)
        .done()
}

/// The names `options` gives the bindings, each the core's default when
/// not given: `{coordinator, kv, metrics, origin}` (`queueStats` finds the
/// counters' namespace under `coordinator`).
///
/// # Errors
/// A name given that is not a string, naming its option.
#[cfg(feature = "js-queue")]
#[wasm_bindgen(js_name = bindingNames)]
pub fn binding_names(options: JsValue) -> Result<JsValue, JsError> {
    let names = super::options::BindingNames::of(&options).map_err(|e| JsError::new(&e))?;
    Ok(names.object())
}

/// The name of the coordinator object that keeps consumer `name`'s
/// counters ([`ConsumerStats::object_name`]).
#[cfg(feature = "js-queue")]
#[wasm_bindgen(js_name = countersObject)]
pub fn counters_object(name: &str) -> String {
    ConsumerStats::object_name(name)
}
