// Stored answers sealed at rest (SPEC §4, IDEMPOTENCY_SEAL_KEYS), as
// src/edge/seal.rs is for the Rust host: the Web Crypto glue both hosts
// share (src/shared/seal.js) runs the exchange's `cipher` action.
import { cipher } from "../../../src/shared/seal.js";

/** Runs the pending `cipher` action: `[bytes, undefined]` or `[undefined, error]`. */
export async function runCipher(exchange) {
  try {
    return [await cipher(exchange.seals, exchange.cipherKey, exchange.aad, exchange.body), undefined];
  } catch (error) {
    return [undefined, error instanceof Error ? `${error.name}: ${error.message}` : String(error)];
  }
}
