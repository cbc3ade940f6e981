// A queue consumer's counters (SPEC §11), as src/edge/queue_counters.rs
// is for the Rust host: kept in the coordinator's namespace, one object per
// consumer, so the counts add up across every isolate that consumed a batch.
import { bindingNames, countersObject, countsOf } from "oncekey-worker-wasm";

/** The coordinator object that keeps consumer `name`'s counters (the core names it). */
export { countersObject };

/**
 * The counters of the consumer named `name` (by default, its queue's name),
 * summed over every batch and isolate: `{firstRuns, duplicatesSkipped,
 * inFlightConflicts, releases, reclaims, keysReused}`.
 */
export async function queueStats(env, name, options = {}) {
  const { coordinator } = bindingNames(options);
  const namespace = env?.[coordinator];
  if (namespace === undefined) throw new Error(`oncekey: no Durable Object namespace bound as ${coordinator}`);
  const counts = await namespace.get(namespace.idFromName(countersObject(name))).counters();
  return countsOf(counts);
}
