// The `oncekey/worker` entry (SPEC §11): the Rust core, compiled to wasm,
// protecting a JavaScript or TypeScript Worker's own fetch handler and its
// queue consumers. Glue only: every decision is the core's `Exchange`
// (worker/host.js performs its actions), its delivery exchange
// (worker/queue.js) and the coordinator's step (worker/coordinator.js runs
// it atomically). `oncekey/proxy` (proxy.js) is the same HTTP side without
// the queue consumer, over a smaller wasm.
//
// wrangler's bundler turns this `.wasm` import into a compiled
// WebAssembly.Module, so a user's worker needs no bundler configuration.
import wasm from "./oncekey_worker_bg.wasm";
import { initSync } from "oncekey-worker-wasm";

initSync({ module: wasm });

export { IdempotencyCoordinator } from "./worker/coordinator.js";
export { proxy, withIdempotency } from "./worker/layer.js";
export { NotSentError } from "./worker/origin.js";
export { withQueueIdempotency } from "./worker/queue.js";
export { queueStats } from "./worker/queue_counters.js";
