// The KV copies of answers (SPEC §4), as src/edge/kv_replay.rs is for the
// Rust host: read and write bytes under a record's name; the core decides
// when, and what a copy may replay.
import { within } from "./deadline.js";

/** The KV namespace bound as `binding` (absent: every read fails, no write). */
export class KvReplay {
  constructor(env, binding) {
    this.binding = binding;
    this.kv = env[binding];
  }

  /** A copy's bytes (undefined when absent), or the error. */
  async read(key, timeoutMs) {
    // The core's HostText::NoKvBound (tests/support/host-texts.tsv).
    if (!this.kv) return [undefined, `no KV namespace bound as ${this.binding}`];
    try {
      const found = await within(this.kv.get(key, "arrayBuffer"), timeoutMs);
      return [found === null ? undefined : new Uint8Array(found), undefined];
    } catch (error) {
      return [undefined, error instanceof Error ? error.message : String(error)];
    }
  }

  /** Writes a copy; its failure changes nothing (the object holds the answer). */
  async write(key, value, ttlSeconds) {
    if (!this.kv) return;
    try {
      await this.kv.put(key, value, { expirationTtl: ttlSeconds });
    } catch {
      // Nothing depends on the copy.
    }
  }
}
