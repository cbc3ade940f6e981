// The `oncekey/proxy` entry: oncekey/worker's HTTP side alone — `proxy()`,
// `withIdempotency()`, the coordinator class, `NotSentError` — over a wasm
// built without the queue consumer's bindings (pkg/worker-wasm's `queue`
// feature off), for a smaller bundle and a quicker cold start. What the
// root wrangler.toml deploys (workers/proxy-js/index.js).
//
// wrangler's bundler turns this `.wasm` import into a compiled
// WebAssembly.Module, so a user's worker needs no bundler configuration.
import wasm from "./oncekey_proxy_bg.wasm";
import { initSync } from "oncekey-worker-wasm";

initSync({ module: wasm });

export { IdempotencyCoordinator } from "./worker/coordinator.js";
export { proxy, withIdempotency } from "./worker/layer.js";
export { NotSentError } from "./worker/origin.js";
