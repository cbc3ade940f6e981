// The entry of a worker built by worker-build (the Rust host): its module
// (`workers-rs.mjs`, worker-build's `index.js` renamed beside this file) with
// the coordinator class re-exported as a `DurableObject` subclass, so that
// the layer reaches each object over RPC (`call(bytes)`) rather than `fetch`:
// less CPU per store call (docs/performance.md). workers-rs' glue exports
// the class as a plain class, which the runtime refuses RPC calls to; a
// worker whose entry is workers-rs' own module still works, over `fetch`
// (src/edge/durable_store.rs). docs/rust.md shows the same for your worker.
import { DurableObject } from "cloudflare:workers";
import worker, { IdempotencyCoordinator as Coordinator } from "./workers-rs.mjs";

export * from "./workers-rs.mjs";
export default worker;

export class IdempotencyCoordinator extends DurableObject {
  #coordinator;

  constructor(ctx, env) {
    super(ctx, env);
    this.#coordinator = new Coordinator(ctx, env);
  }

  /** One store call: the encoded call in, the encoded reply out. */
  call(bytes) {
    return this.#coordinator.call(bytes);
  }

  fetch(request) {
    return this.#coordinator.fetch(request);
  }

  alarm() {
    return this.#coordinator.alarm();
  }
}
