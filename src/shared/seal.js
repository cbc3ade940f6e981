// Seals and opens a stored answer's parts with AES-256-GCM, the runtime's
// Web Crypto (SPEC §4) — the same file for both hosts: the JavaScript host
// imports it (pkg/src/worker/seal.js), the Rust host binds it
// (src/edge/seal.rs). Glue only: the core decides what is sealed, with
// which key, bound to what; this draws the nonce and runs the cipher.

/** Imported keys, by their bytes' base64: one import per key per isolate. */
const imported = new Map();

function keyOf(bytes) {
  const name = btoa(String.fromCharCode(...bytes));
  let key = imported.get(name);
  if (key === undefined) {
    key = crypto.subtle.importKey("raw", bytes, "AES-GCM", false, ["encrypt", "decrypt"]);
    imported.set(name, key);
  }
  return key;
}

/**
 * `seal`: a fresh 12-byte nonce, then `data` encrypted under `key` (32
 * bytes) with `aad`, then GCM's 16-byte tag. Else opens `data` (what a seal
 * returned): the plaintext, or a rejection when the tag does not verify.
 */
export async function cipher(seal, key, aad, data) {
  const aesKey = await keyOf(key);
  if (seal) {
    const iv = crypto.getRandomValues(new Uint8Array(12));
    const sealed = await crypto.subtle.encrypt({ name: "AES-GCM", iv, additionalData: aad }, aesKey, data);
    const out = new Uint8Array(12 + sealed.byteLength);
    out.set(iv);
    out.set(new Uint8Array(sealed), 12);
    return out;
  }
  const iv = data.subarray(0, 12);
  const opened = await crypto.subtle.decrypt({ name: "AES-GCM", iv, additionalData: aad }, aesKey, data.subarray(12));
  return new Uint8Array(opened);
}
