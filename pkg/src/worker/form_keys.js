// Keys for HTML forms (SPEC §8, `IDEMPOTENCY_FORMS=inject`), as
// src/edge/form_keys.rs is for the Rust host: the rewriter both hosts share
// (src/shared/form_keys.js), with the core's `keyInput` deciding each
// form's input.
import { keyInput } from "oncekey-worker-wasm";
import { withFormKeys } from "../../../src/shared/form_keys.js";

/** `response` with its post forms given keys as it streams. */
export function withKeys(response, longestTag) {
  return withFormKeys(response, keyInput, longestTag);
}
