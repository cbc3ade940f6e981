// The core's wasm, loaded once: on first use, or ahead by `ready()`.
// Importing the package starts nothing, so a page never waits for the
// wasm nor fails on it. The entry says where the wasm is (`useWasm`): a
// URL to fetch (browsers, bundlers) or bytes to read at once (Node).
import init, { initSync } from "../dist/bindgen/oncekey_wasm.js";
import { LoadError, NotReadyError } from "./errors.js";

let source;
let loaded = false;
let loading;
const warned = new Set();

/** Set by the entry: `{ url: () => URL }` or `{ bytes: () => Uint8Array }`. */
export function useWasm(where) {
  source = where;
}

/**
 * Loads the wasm if it is not loaded yet; idempotent (every call returns
 * the same promise). A failed load is not kept: the next call tries
 * again, since a network blip passes (a Content-Security-Policy does not).
 */
export function ready() {
  loading ??= load().then(
    () => {
      loaded = true;
    },
    (error) => {
      loading = undefined;
      throw error;
    },
  );
  return loading;
}

/**
 * For the synchronous API: returns once the wasm is loaded. Where its bytes
 * can be read at once (Node) they are; in a browser the load is started and
 * `call` throws {@link NotReadyError}.
 */
export function loadNow(call) {
  if (loaded) return;
  if (source.bytes) {
    loadBytes();
    loaded = true;
    loading ??= Promise.resolve();
    return;
  }
  ready().catch(() => {}); // reported to whoever awaits ready()
  throw new NotReadyError(call);
}

function loadBytes() {
  let bytes;
  try {
    bytes = source.bytes();
  } catch (error) {
    throw report(new LoadError(`oncekey could not read its wasm: ${error.message}`, error));
  }
  try {
    initSync({ module: bytes });
  } catch (error) {
    throw report(new LoadError(`oncekey could not compile its wasm: ${error.message}`, error));
  }
}

async function load() {
  if (source.bytes) return loadBytes();
  const url = source.url();
  let response;
  try {
    response = await fetch(url);
  } catch (error) {
    throw report(new LoadError(`oncekey could not fetch its wasm at ${url}: ${error.message}`, error));
  }
  if (!response.ok) {
    throw report(
      new LoadError(
        `oncekey's wasm at ${url} answered ${response.status}: serve the package's dist/oncekey_bg.wasm there, as application/wasm`,
      ),
    );
  }
  try {
    await init({ module_or_path: response });
  } catch (error) {
    throw report(
      blockedByPolicy(error)
        ? new LoadError(
            "the page's Content-Security-Policy blocks WebAssembly, so oncekey cannot run: add 'wasm-unsafe-eval' to its script-src (script-src 'self' 'wasm-unsafe-eval')",
            error,
          )
        : new LoadError(`oncekey could not compile its wasm from ${url}: ${error.message}`, error),
    );
  }
}

// Chromium and Safari name the directive ('unsafe-eval', 'wasm-unsafe-eval')
// and the policy; Firefox says "blocked by CSP".
function blockedByPolicy(error) {
  return /content.security.policy|\bCSP\b|unsafe-eval/i.test(String(error?.message));
}

// A load failure is a page's misconfiguration: said once in the console,
// whoever catches the error.
function report(error) {
  if (!warned.has(error.message)) {
    warned.add(error.message);
    console.warn(`${error.message}. Protected forms are sent once, without an Idempotency-Key.`);
  }
  return error;
}
