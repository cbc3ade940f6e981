// The workers the edge benchmarks run (bench/edge.mjs, bench/wasm-compile.mjs,
// bench/native-profile.mjs): an oncekey host's build configured as the
// harness configures the production proxy, and the origin they all call;
// and the helpers they share.
import { randomUUID } from "node:crypto";
import { readFileSync, realpathSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { COMPATIBILITY_DATE, COMPATIBILITY_FLAGS, defaultVars, WORKERS } from "../tests/edge/harness.mjs";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");

/** Where every layer sends its origin calls; Miniflare's `outboundService` routes it to the origin worker. */
export const ORIGIN_URL = "http://origin.bench";

/**
 * An oncekey host's build as a worker, configured as the harness configures
 * the production proxy: the root config's compatibility date and flags, its
 * wrangler config's [vars], ORIGIN_URL, its own KV namespace and
 * IdempotencyCoordinator objects.
 */
export const oncekeyWorker = (name, { build, config }, { routes = [], kvId = `${name}-kv`, vars = {} } = {}) => ({
  name,
  routes,
  modules: true,
  modulesRoot: build,
  scriptPath: join(build, "index.js"),
  modulesRules: [{ type: "CompiledWasm", include: ["**/*.wasm"] }],
  compatibilityDate: COMPATIBILITY_DATE,
  compatibilityFlags: COMPATIBILITY_FLAGS,
  bindings: { ...defaultVars(config), ORIGIN_URL, ...vars },
  kvNamespaces: { IDEMPOTENCY_KV: kvId },
  durableObjects: { IDEMPOTENCY_DO: { className: "IdempotencyCoordinator", useSQLite: true } },
  outboundService: "origin",
});

/** oncekey's proxy from `host` (a WORKERS entry, or one with another build) as `name`, on route `<name>.bench`. */
export const benchOncekey = (name, host) => oncekeyWorker(name, host, { routes: [`${name}.bench/*`] });

/**
 * A build named on a bench's command line, `name=dir` (the JavaScript
 * proxy's) or `name=rust:dir` (the Rust host's), dir from the project's
 * root: its name, its directory, and its worker on route `<name>.bench`.
 */
export function namedBuild(pair) {
  const [name, spec] = pair.split("=");
  const rust = spec.startsWith("rust:");
  const build = resolve(ROOT, rust ? spec.slice("rust:".length) : spec);
  const host = rust ? WORKERS.proxy : WORKERS["proxy-js"];
  return { name, build, worker: () => benchOncekey(name, { ...host, build }) };
}

/** The origin worker every layer calls (bench/peers/origin-worker.ts, built by `make bench-peers`). */
export const originWorker = {
  name: "origin",
  modules: true,
  scriptPath: join(ROOT, "build", "bench", "origin-worker.js"),
  compatibilityDate: COMPATIBILITY_DATE,
  durableObjects: { ORDERS: { className: "Orders", useSQLite: true } },
};

/** A peer worker (bench/peers, built into build/bench by `make bench-peers`): `coordinator` binds its Durable Object class, `kv` its own KV namespace. */
export const peer = (name, { flags = [], coordinator = true, kv = true, script = name, bindings = {} } = {}) => ({
  name,
  routes: [`${name}.bench/*`],
  modules: true,
  scriptPath: join(ROOT, "build", "bench", `${script}.js`),
  bindings: { ORIGIN_URL, ...bindings },
  compatibilityDate: COMPATIBILITY_DATE,
  compatibilityFlags: flags,
  // Miniflare names a namespace given as a list by its binding: one id per
  // worker keeps each worker's KV apart.
  kvNamespaces: kv ? { IDEMPOTENCY_KV: `${name}-kv` } : {},
  outboundService: "origin",
  durableObjects: coordinator ? { IDEMPOTENCY_DO: { className: "Coordinator", useSQLite: true } } : {},
});

/** Where `make bench-peers` builds hono-idempotency on a Durable Object (bench/peers/hono-do.ts), when it finds its source. */
export const HONO_DO = join(ROOT, "build", "bench", "hono-do.js");

/**
 * hono-do as a worker; `expiry`: its `lock` also sets the expiry alarm SPEC
 * §4 asks for (the control hono-do-expiry).
 */
export const honoDoWorker = (name, { expiry = false } = {}) =>
  peer(name, { kv: false, script: "hono-do", bindings: expiry ? { EXPIRY: "1" } : {} });

/** Where `make bench-peers` builds do-only in Rust (bench/peers/do-only-rs) with worker-build. */
export const DO_ONLY_RS = join(ROOT, "build", "bench", "do-only-rs");

/** do-only in Rust as a worker: its worker-build output, the wasm beside its glue. */
export const doOnlyRsWorker = (name) => ({
  ...peer(name, { kv: false }),
  modulesRoot: DO_ONLY_RS,
  scriptPath: join(DO_ONLY_RS, "index.js"),
  modulesRules: [{ type: "CompiledWasm", include: ["**/*.wasm"] }],
});

/** The median of `xs` (the mean of the middle two for an even count). */
export const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

/**
 * `list` in a fresh order per round (seeded, so a rerun repeats it): no
 * series always follows the same one, and none always runs first or last.
 */
export function shuffled(list, round) {
  let seed = 0x9e3779b9 ^ (round + 1);
  const random = () => {
    seed = Math.imul(seed ^ (seed >>> 15), 0x2c1b3c6d) ^ Math.imul(seed ^ (seed >>> 12), 0x297a2d39);
    return ((seed ^ (seed >>> 15)) >>> 0) / 2 ** 32;
  };
  const out = [...list];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [out[i], out[j]] = [out[j], out[i]];
  }
  return out;
}

/** One POST /api/orders to `host` on `url` (Miniflare routes on MF-Original-URL). */
export async function postTo(url, host, item, key) {
  const body = JSON.stringify({ item, quantity: 1, amountCents: 1200 });
  const headers = { "content-type": "application/json", "mf-original-url": `http://${host}/api/orders` };
  if (key) headers["idempotency-key"] = key;
  const started = process.hrtime.bigint();
  let res, text;
  try {
    res = await fetch(new URL("/api/orders", url), { method: "POST", headers, body });
    text = await res.text();
  } catch (e) {
    // Counted, and the run fails at the end naming the series.
    console.error(`${host}: ${e.message} (${e.cause?.code ?? e.cause?.message ?? "no cause"})`);
    return {
      status: `network error ${e.cause?.code ?? ""}`.trim(),
      ms: Number(process.hrtime.bigint() - started) / 1e6,
    };
  }
  return {
    status: res.status,
    ms: Number(process.hrtime.bigint() - started) / 1e6,
    replayed: res.headers.get("idempotent-replayed"),
    text,
  };
}

/**
 * Miniflare's `handleRuntimeStdio` for a bench: workerd's output drained and
 * dropped (a log line per decision; an unread pipe would stall workerd).
 */
export const drainStdio = (out, err) => {
  out.resume();
  err.resume();
};

/**
 * Series of `POST /api/orders` to the workers on `url` (each on its
 * `<name>.bench` route), `inFlight` at a time. `run(impl, path, count)`
 * sends `count` requests of one path — `first` (a new key each), `replay`
 * (a key `warm` completed) or `baseline` (no key) — and answers their
 * latencies in ms; any status but 201 fails it. `warm(impls, paths)`
 * completes 100 keys per worker for its replays, then sends 300 requests
 * of each path.
 */
export function seriesOn(url, inFlight) {
  const replayKeys = {};
  const post = async (impl, item, key) => {
    const { status, text, ms } = await postTo(url, `${impl}.bench`, item, key);
    if (status !== 201) throw new Error(`${impl}: ${status} ${text?.slice(0, 200) ?? ""}`);
    return ms;
  };
  const request = {
    first: (impl, item) => post(impl, item, randomUUID()),
    replay: (impl, _item, i) => post(impl, "replay-item", replayKeys[impl][i % replayKeys[impl].length]),
    baseline: (impl, item) => post(impl, item),
  };
  const run = async (impl, path, count) => {
    let next = 0;
    const tag = randomUUID().slice(0, 6);
    const latencies = [];
    await Promise.all(
      Array.from({ length: inFlight }, async () => {
        while (next < count) {
          const i = next++;
          latencies.push(await request[path](impl, `${impl}-${tag}-${i % 16}`, i));
        }
      }),
    );
    return latencies;
  };
  const warm = async (impls, paths) => {
    for (const impl of impls) {
      replayKeys[impl] = Array.from({ length: 100 }, () => randomUUID());
      for (const key of replayKeys[impl]) await post(impl, "replay-item", key);
      for (const path of paths) await run(impl, path, 300);
    }
  };
  return { run, warm };
}

/**
 * Where local workerd keeps the objects' SQLite files, as a section says it:
 * Miniflare puts them under the temporary directory (`TMPDIR`), and a
 * tmpfs there takes the disk's syncs out of every first execution.
 */
export const objectFiles = () => {
  const dir = realpathSync(tmpdir());
  let best = { at: "", type: "unknown" };
  for (const line of readFileSync("/proc/mounts", "utf8").split("\n")) {
    const [, at, type] = line.split(" ");
    const under = at === "/" || dir === at || dir.startsWith(`${at}/`);
    if (type !== undefined && under && at.length >= best.at.length) best = { at, type };
  }
  return `\`${dir}\` (${best.type})`;
};
