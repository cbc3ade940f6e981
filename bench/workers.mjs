// The workers the edge benchmarks run (bench/edge.mjs, bench/wasm-compile.mjs):
// an oncekey host's build configured as the harness configures the
// production proxy, and the origin they all call.
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { COMPATIBILITY_DATE, defaultVars } from "../tests/edge/harness.mjs";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");

/** Where every layer sends its origin calls; Miniflare's `outboundService` routes it to the origin worker. */
export const ORIGIN_URL = "http://origin.bench";

/**
 * An oncekey host's build as a worker, configured as the harness configures
 * the production proxy: its wrangler config's [vars], ORIGIN_URL, its own KV
 * namespace and IdempotencyCoordinator objects.
 */
export const oncekeyWorker = (name, { build, config }, { routes = [], kvId = `${name}-kv`, vars = {} } = {}) => ({
  name,
  routes,
  modules: true,
  modulesRoot: build,
  scriptPath: join(build, "index.js"),
  modulesRules: [{ type: "CompiledWasm", include: ["**/*.wasm"] }],
  compatibilityDate: COMPATIBILITY_DATE,
  bindings: { ...defaultVars(config), ORIGIN_URL, ...vars },
  kvNamespaces: { IDEMPOTENCY_KV: kvId },
  durableObjects: { IDEMPOTENCY_DO: { className: "IdempotencyCoordinator", useSQLite: true } },
  outboundService: "origin",
});

/** The origin worker every layer calls (bench/peers/origin-worker.ts, built by `make bench-peers`). */
export const originWorker = {
  name: "origin",
  modules: true,
  scriptPath: join(ROOT, "build", "bench", "origin-worker.js"),
  compatibilityDate: COMPATIBILITY_DATE,
  durableObjects: { ORDERS: { className: "Orders", useSQLite: true } },
};

/** The median of `xs` (the mean of the middle two for an even count). */
export const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
