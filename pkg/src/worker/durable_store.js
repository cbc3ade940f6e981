// The store: a record's coordinator object over RPC, as
// src/edge/durable_store.rs is for the Rust host. It carries the encoded
// call and its reply; the object (coordinator.js) and the core decide.
import { within } from "./deadline.js";

/** The coordinator namespace bound as `binding`, one request's stub of it. */
export class DurableStore {
  constructor(env, binding) {
    this.env = env;
    this.binding = binding;
    /** The stub of this request's record, once asked for. */
    this.stub = undefined;
  }

  /** The exchange's store call: the reply's bytes, or the error. */
  async call(exchange) {
    try {
      const call = exchange.call;
      const timeoutMs = exchange.timeoutMs;
      if (this.stub === undefined) {
        const namespace = this.env[this.binding];
        if (!namespace) return [undefined, `no Durable Object namespace bound as ${this.binding}`];
        this.stub = namespace.get(namespace.idFromName(exchange.record));
      }
      return [await within(this.stub.call(call), timeoutMs), undefined];
    } catch (error) {
      // A stub that saw its object fail or reset stays broken: every later
      // call through it fails too. The next call (a repeated finish, an
      // abandon) gets a fresh one, as the Rust host gets one per call.
      this.stub = undefined;
      return [undefined, error instanceof Error ? error.message : String(error)];
    }
  }
}
