// The `oncekey/proxy` entry: `oncekey/worker`'s HTTP side alone (no queue
// consumer), over a smaller wasm. Its types are `oncekey/worker`'s.
export type { FetchHandler, IdempotencyBindings, IdempotencyOptions, ProxyOptions } from "./worker.js";
export { IdempotencyCoordinator, NotSentError, proxy, withIdempotency } from "./worker.js";
