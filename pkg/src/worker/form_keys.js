// Keys for HTML forms (SPEC §8, `IDEMPOTENCY_FORMS=inject`), as
// src/edge/form_keys.rs is for the Rust host: the rewriter both hosts share
// (src/shared/form_keys.js), with the core's `pageFormKeys` deciding which
// forms get a key and where.
import { pageFormKeys } from "oncekey-worker-wasm";
import { withFormKeys } from "../../../src/shared/form_keys.js";

/** `response` with its forms given keys as it streams, for a page on `pageOrigin`. */
export function withKeys(response, pageOrigin, longestTag) {
  return withFormKeys(response, pageOrigin, pageFormKeys, longestTag);
}
