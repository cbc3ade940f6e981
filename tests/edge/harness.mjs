// Runs a built worker in workerd through Miniflare, with real local KV and
// Durable Object bindings: the demo (build/demo/, workers/demo/wrangler.toml)
// or the production proxy (build/proxy/, the root wrangler.toml).
//
// With ONCEKEY_HOST=js in the environment (`make test-edge-js`) the same
// suites run on the JavaScript host: "demo" starts demo-js (the npm
// package's withIdempotency over a port of the demo shop, tests/edge/js-host)
// and "proxy" starts proxy-js (the package's proxy()).
import assert from "node:assert/strict";
import { createHash, randomUUID } from "node:crypto";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import http from "node:http";
import { Miniflare } from "miniflare";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
/** The two deployables: their build output and their wrangler config. */
export const WORKERS = {
  demo: { build: join(ROOT, "build", "demo"), config: join(ROOT, "workers", "demo", "wrangler.toml") },
  /** The production proxy on the Rust host (`make build-proxy`, workers/proxy/wrangler.toml). */
  proxy: { build: join(ROOT, "build", "proxy"), config: join(ROOT, "workers", "proxy", "wrangler.toml") },
  /** The production proxy on the JavaScript host: the root config (`make build-proxy-js`). */
  "proxy-js": { build: join(ROOT, "build", "proxy-js"), config: join(ROOT, "wrangler.toml") },
  /** A user's Rust Worker (tests/consumer, built by scripts/test-crate.sh with worker-build). */
  consumer: {
    build: join(ROOT, "tests", "consumer", "build"),
    config: join(ROOT, "tests", "consumer", "wrangler.toml"),
  },
  /** A user's axum Worker with oncekey as a tower layer (tests/consumer-axum, built by scripts/test-crate.sh). */
  "consumer-axum": {
    build: join(ROOT, "tests", "consumer-axum", "build"),
    config: join(ROOT, "tests", "consumer-axum", "wrangler.toml"),
  },
  /** The demo on the JavaScript host (`make build-demo-js`). */
  "demo-js": { build: join(ROOT, "build", "demo-js"), config: join(ROOT, "workers", "demo", "wrangler.toml") },
};

/** The host the suites run on: "rust" (the default) or "js" (ONCEKEY_HOST=js). */
export const HOST = process.env.ONCEKEY_HOST === "js" ? "js" : "rust";
/** What `start({worker})` runs for each name on the JavaScript host. */
const ON_JS_HOST = { demo: "demo-js", proxy: "proxy-js" };
export const COMPATIBILITY_DATE = /^compatibility_date = "([^"]+)"/m.exec(
  readFileSync(join(ROOT, "wrangler.toml"), "utf8"),
)[1];
/** The root config's compatibility flags (the layer needs `enable_request_signal`). */
export const COMPATIBILITY_FLAGS = JSON.parse(
  /^compatibility_flags = (\[[^\]]*\])/m.exec(readFileSync(join(ROOT, "wrangler.toml"), "utf8"))?.[1] ?? "[]",
);

export const BASE = "http://oncekey.test";
/** How the metrics double marks a data point on stdout. */
const DATA_POINT_MARK = "oncekey-test-data-point ";

// A stand-in for the coordinator that fails or never answers, bound as
// IDEMPOTENCY_DO to inject store faults from outside the worker. The Rust
// host sends each store call as a POST (`fetch`), the JavaScript host over
// RPC (`call(bytes)`): both go through the same fault logic, and a failing
// answer reaches an RPC caller as a thrown Error, as a failed call would.
// REAL is the script under test's own coordinator class, which answers the
// same POST on either host.
const FAULTY_STORE = `
import { DurableObject } from "cloudflare:workers";
/** Records whose object the reset-* modes have reset once. */
const resetRecords = new Set();
export class FaultyStore extends DurableObject {
  constructor(state, env) { super(state, env); this.state = state; this.env = env; }
  async call(bytes) {
    const answer = await this.fetch(new Request("https://coordinator/call", { method: "POST", body: bytes }));
    if (answer.status !== 200) throw new Error(\`store call failed: \${answer.status} \${await answer.text()}\`);
    return new Uint8Array(await answer.arrayBuffer());
  }
  async fetch(request) {
    if (this.env.MODE === "hang") return new Promise(() => {});
    const real = () => this.env.REAL.getByName(this.state.id.name);
    if (this.env.MODE === "slow") {
      // Every call reaches the real coordinator late: half a second, or SLOW_MS.
      await new Promise((resolve) => setTimeout(resolve, Number(this.env.SLOW_MS || 500)));
      return real().fetch(request);
    }
    if (this.env.MODE === "hold-finish") {
      // Every finish reaches the coordinator SLOW_MS late (1 s unless
      // given), as from a worker far from the key's object; every other
      // call at once.
      const call = new Uint8Array(await request.arrayBuffer());
      if (call[0] === 2) await new Promise((resolve) => setTimeout(resolve, Number(this.env.SLOW_MS || 1000)));
      return real().fetch(new Request(request.url, { method: "POST", body: call }));
    }
    if (this.env.MODE === "lose-first-begin") {
      // The first begin of each record reaches the coordinator (and
      // reserves the key), but its reply is lost.
      const call = new Uint8Array(await request.arrayBuffer());
      const answer = await real().fetch(new Request(request.url, { method: "POST", body: call }));
      if (call[0] === 1 && !this.lostOnce) {
        this.lostOnce = true;
        await answer.arrayBuffer();
        return new Response("reply lost", { status: 500 });
      }
      return answer;
    }
    if (this.env.MODE === "late-first-finish") {
      // The first finish of each record is held 1.5 s, then fails: its
      // repeat lands after a short lease has ended.
      const call = new Uint8Array(await request.arrayBuffer());
      if (call[0] === 2 && !this.heldOnce) {
        this.heldOnce = true;
        await new Promise((resolve) => setTimeout(resolve, 1500));
        return new Response("store exploded", { status: 500 });
      }
      return real().fetch(new Request(request.url, { method: "POST", body: call }));
    }
    if (this.env.MODE === "lose-attempt-1-finish") {
      // Every finish of attempt 1 fails before it reaches the coordinator
      // (its worker died after the origin answered): the lease must end
      // before anyone else may run.
      const call = new Uint8Array(await request.arrayBuffer());
      const view = new DataView(call.buffer);
      if (call[0] === 2 && view.getUint32(21 + 2 * view.getUint32(17)) === 1) {
        return new Response("finish lost", { status: 500 });
      }
      return real().fetch(new Request(request.url, { method: "POST", body: call }));
    }
    if (this.env.MODE === "fail-first-finish") {
      // The first finish of each record fails; everything else is real.
      const call = new Uint8Array(await request.arrayBuffer());
      if (call[0] === 2 && !this.failedOnce) {
        this.failedOnce = true;
        return new Response("store exploded", { status: 500 });
      }
      return real().fetch(new Request(request.url, { method: "POST", body: call }));
    }
    if (this.env.MODE === "reset-first-finish" || this.env.MODE === "reset-after-first-begin") {
      // The object resets (as a deploy of new code or an overloaded object
      // resets one) on the first finish of each record, or just after the
      // first begin has reserved the key: that call fails, and so does every
      // later call through a stub that was connected to the object. The reset
      // is remembered in the isolate, since the object's own state goes with it.
      const call = new Uint8Array(await request.arrayBuffer());
      const kind = this.env.MODE === "reset-first-finish" ? 2 : 1;
      const record = this.state.id.name;
      if (call[0] === kind && !resetRecords.has(record)) {
        resetRecords.add(record);
        if (kind === 1) await (await real().fetch(new Request(request.url, { method: "POST", body: call }))).arrayBuffer();
        this.state.abort("the object was reset");
        throw new Error("the object was reset"); // abort() throws already; nothing after it runs
      }
      return real().fetch(new Request(request.url, { method: "POST", body: call }));
    }
    if (this.env.MODE === "flaky") return this.flaky(request, real);
    return new Response("store exploded", { status: 500 });
  }
  // FAIL_RATE of the calls fail: half before reaching the coordinator (no
  // effect), half after it (the call took effect, its answer is lost).
  // Every finish and every failure is noted in one FaultNotes object, which
  // GET /?notes on this worker lists.
  async flaky(request, real) {
    if (request.method === "GET") return real().fetch(request);
    const call = new Uint8Array(await request.arrayBuffer());
    const kind = call[0] === 1 ? "begin" : "finish";
    const view = new DataView(call.buffer);
    const attempt = kind === "finish" ? view.getUint32(21 + 2 * view.getUint32(17)) : null;
    const roll = Math.random();
    const rate = Number(this.env.FAIL_RATE);
    let result = "ok";
    let answer;
    if (roll < rate / 2) result = "failed-before";
    else {
      answer = await real().fetch(new Request(request.url, { method: "POST", body: call }));
      if (roll < rate) { await answer.arrayBuffer(); result = "failed-after"; }
    }
    if (kind === "finish" || result !== "ok") {
      const note = JSON.stringify({ record: this.state.id.name, kind, attempt, result });
      await this.env.NOTES.getByName("all").fetch("https://notes/add", { method: "POST", body: note });
    }
    return result === "ok" ? answer : new Response("store exploded", { status: 500 });
  }
}
export class FaultNotes {
  constructor(state) { this.state = state; }
  async fetch(request) {
    if (request.method === "POST") {
      await this.state.storage.put(crypto.randomUUID(), await request.text());
      return new Response("noted");
    }
    const notes = [...(await this.state.storage.list()).values()].map((n) => JSON.parse(n));
    return Response.json(notes);
  }
}
export default {
  // GET /?notes: every note of the flaky store.
  fetch(request, env) {
    if (new URL(request.url).searchParams.has("notes")) return env.NOTES.getByName("all").fetch("https://notes/list");
    return new Response("faults");
  },
};
`;

// In place of a Workers Analytics Engine dataset, bound as
// IDEMPOTENCY_METRICS: Miniflare's own dataset (`analyticsEngineDatasets`)
// drops every point and offers no way to read them back, so this test double
// (a wrapped binding, as Miniflare's is) prints each point on the runtime's
// stdout, where `start({ metrics: true })` collects them.
const METRICS_DOUBLE = `
export default function () {
  return {
    writeDataPoint(point) {
      console.log("${DATA_POINT_MARK}" + JSON.stringify(point));
    },
  };
}
`;

/**
 * Starts a worker: `worker` is "demo" (the default: the layer in front of
 * the embedded shop, with its order book and queue) or "proxy" (the
 * production proxy: only the coordinator and KV; give it an origin through
 * `vars.ORIGIN_URL`, `serviceBindings` or `outboundService`); under
 * ONCEKEY_HOST=js, their JavaScript-host builds;
 * `host` ("rust" or "js") picks one whatever ONCEKEY_HOST says.
 * `vars` override that worker's wrangler.toml [vars]; `store`
 * is "real", "fail", "hang", "slow", "hold-finish", "fail-first-finish", "late-first-finish", "lose-first-begin", "lose-attempt-1-finish",
 * "reset-first-finish", "reset-after-first-begin" or "flaky" (the
 * real coordinator behind a store that fails `storeFailRate` of the calls);
 * `quiet` drops the runtime's stdout (keeps stderr); `persist` is a directory for DO and KV
 * state that survives a restart; `extraWorkers` (Miniflare worker options)
 * run in the same workerd, reached through their `routes`; `outboundService`
 * names one of them to receive the worker's own `fetch` calls (its
 * `ORIGIN_URL`). `metrics` binds the test double above as
 * IDEMPOTENCY_METRICS; then `lines()` is every stdout line of the runtime
 * so far and `dataPoints()` every data point written.
 */
export async function start({
  worker = "demo",
  vars = {},
  store = "real",
  persist,
  extraWorkers = [],
  storeFailRate = 0,
  quiet = false,
  outboundService,
  serviceBindings,
  metrics = false,
  host = HOST,
  storeDelayMs,
} = {}) {
  const name = host === "js" ? (ON_JS_HOST[worker] ?? worker) : worker;
  const { build, config } = WORKERS[name];
  // The order book and the event queue are either demo's.
  const demo = name === "demo" || name === "demo-js";
  const queue = demo;
  const durableObjects = {
    IDEMPOTENCY_DO:
      store === "real"
        ? { className: "IdempotencyCoordinator", useSQLite: true }
        : { className: "FaultyStore", scriptName: "faults" },
    ...(demo ? { ORDERS: { className: "Orders", useSQLite: true } } : {}),
  };
  const workers = [
    {
      name: "oncekey",
      modules: true,
      modulesRoot: build,
      scriptPath: join(build, "index.js"),
      modulesRules: [{ type: "CompiledWasm", include: ["**/*.wasm"] }],
      compatibilityDate: COMPATIBILITY_DATE,
      compatibilityFlags: COMPATIBILITY_FLAGS,
      // A var given as `undefined` is left unset.
      bindings: Object.fromEntries(
        Object.entries({ ...defaultVars(config), ...vars }).filter(([, value]) => value !== undefined),
      ),
      kvNamespaces: ["IDEMPOTENCY_KV"],
      durableObjects,
      ...(outboundService ? { outboundService } : {}),
      ...(serviceBindings ? { serviceBindings } : {}),
      ...(metrics ? { wrappedBindings: { IDEMPOTENCY_METRICS: "metrics-double" } } : {}),
      // The demo's event flow on Miniflare's local queue (its
      // wrangler.toml binds the same names), delivered quickly.
      ...(queue
        ? {
            queueProducers: { ORDER_EVENTS: { queueName: QUEUE } },
            queueConsumers: { [QUEUE]: { maxBatchSize: 10, maxBatchTimeout: 0.05, maxRetries: 10 } },
          }
        : {}),
    },
  ];
  if (store !== "real") {
    workers.push({
      name: "faults",
      modules: true,
      script: FAULTY_STORE,
      compatibilityDate: COMPATIBILITY_DATE,
      bindings: { MODE: store, FAIL_RATE: String(storeFailRate), SLOW_MS: String(storeDelayMs ?? "") },
      durableObjects: {
        FAULTY: "FaultyStore",
        NOTES: { className: "FaultNotes", useSQLite: true },
        REAL: { className: "IdempotencyCoordinator", scriptName: "oncekey", useSQLite: true },
      },
    });
  }
  if (metrics) workers.push({ name: "metrics-double", modules: true, script: METRICS_DOUBLE });
  workers.push(...extraWorkers);
  const stdout = [];
  let partial = "";
  const collect = (out, err) => {
    out.setEncoding("utf8");
    out.on("data", (text) => {
      const parts = (partial + text).split("\n");
      partial = parts.pop();
      stdout.push(...parts);
    });
    err.pipe(process.stderr);
  };
  const mf = new Miniflare({
    workers,
    ...(persist ? { durableObjectsPersist: persist, kvPersist: persist } : {}),
    // Load runs: drop the runtime's stdout (a log line per decision), keep
    // its stderr (where workerd reports its own failures, e.g. SQLITE_NOMEM).
    ...(quiet
      ? {
          handleRuntimeStdio: (out, err) => {
            out.resume();
            err.pipe(process.stderr);
          },
        }
      : {}),
    ...(metrics ? { handleRuntimeStdio: collect } : {}),
  });
  const url = await mf.ready;
  /** The stub of the record's coordinator object. */
  const coordinatorOf = async (recordHex) => {
    const ns = await mf.getDurableObjectNamespace("IDEMPOTENCY_DO", "oncekey");
    return ns.get(ns.idFromName(recordHex));
  };
  return {
    mf,
    url,
    /** A request over a real socket, headers exactly as given (fetch drops empty ones). */
    raw: (path, { method = "POST", headers = {}, body = "" } = {}) =>
      new Promise((resolve, reject) => {
        const req = http.request(new URL(path, url), { method, headers, agent: false }, (res) => {
          let text = "";
          res.setEncoding("utf8");
          res.on("data", (chunk) => {
            text += chunk;
          });
          res.on("end", () => resolve({ status: res.statusCode, headers: res.headers, text }));
        });
        req.on("error", reject);
        req.end(body);
      }),
    fetch: (path, init) => mf.dispatchFetch(BASE + path, init),
    /** What the record's coordinator object says of itself: {calls, stored, alarm}. */
    async coordinator(recordHex) {
      const res = await (await coordinatorOf(recordHex)).fetch("https://coordinator/calls");
      return res.json();
    },
    /** Sends an encoded store call to the record's object, as the worker does: the reply's bytes. */
    async storeCall(recordHex, bytes) {
      const res = await (await coordinatorOf(recordHex)).fetch("https://coordinator/call", {
        method: "POST",
        body: bytes,
      });
      if (res.status !== 200) throw new Error(`store call answered ${res.status}`);
      return [...new Uint8Array(await res.arrayBuffer())];
    },
    /** Store calls the record's coordinator object has served. */
    async calls(recordHex) {
      return (await this.coordinator(recordHex)).calls;
    },
    /**
     * Delivers `messages` ({id, body, timestamp?, attempts?}) to the worker's
     * queue handler in workerd, as the queue would: the handler's verdict
     * per message comes back as {acked, retried: Map(id → delay seconds)}.
     */
    async deliver(messages) {
      const worker = await mf.getWorker("oncekey");
      const result = await worker.queue(
        QUEUE,
        messages.map((m) => ({ timestamp: new Date(), attempts: 1, ...m })),
      );
      const retried = new Map((result.retryMessages ?? []).map((r) => [r.msgId, r.delaySeconds]));
      return {
        outcome: result.outcome,
        acked: new Set(result.explicitAcks ?? []),
        retried,
        ackAll: result.ackAll,
        retryAll: result.retryBatch?.retry === true,
      };
    },
    /** The runtime's stdout lines so far (with `metrics`). */
    lines: () => [...stdout],
    /** Every data point written to IDEMPOTENCY_METRICS so far (with `metrics`). */
    dataPoints: () =>
      stdout
        .filter((line) => line.includes(DATA_POINT_MARK))
        .map((line) => JSON.parse(line.slice(line.indexOf(DATA_POINT_MARK) + DATA_POINT_MARK.length))),
    /** Every decision log line so far (with `metrics`), parsed. */
    decisions: () =>
      stdout.flatMap((line) => {
        if (line.includes(DATA_POINT_MARK) || !line.includes("{")) return [];
        try {
          const value = JSON.parse(line.slice(line.indexOf("{")));
          return typeof value.oncekey === "string" && value.oncekey !== "event" ? [value] : [];
        } catch {
          return [];
        }
      }),
    dispose: () => mf.dispose(),
  };
}

/** The demo's event queue (workers/demo/wrangler.toml: queues.producers / consumers). */
export const QUEUE = "oncekey-order-events";

/** The [vars] of a wrangler config (the demo's by default), so tests run with the shipped defaults. */
export function defaultVars(config = WORKERS.demo.config) {
  const toml = readFileSync(config, "utf8");
  // A config with no [vars] (a user's Rust Worker) has no defaults to give.
  const section = (toml.split(/^\[vars\]$/m)[1] ?? "").split(/^\[/m)[0];
  return Object.fromEntries([...section.matchAll(/^([A-Z_]+) = "([^"]*)"$/gm)].map((m) => [m[1], m[2]]));
}

/**
 * A `begin` store call as `core::StoreCall::encode` writes it: kind 1, lease
 * and TTL (u64 ms), no release statuses, a 32-byte fingerprint, the wait
 * (u64 ms) and the reservation number (u64).
 */
export function beginCall({ leaseMs, ttlMs, fingerprintByte = 7, waitMs = 0, reservation = 0 }) {
  const bytes = new Uint8Array(1 + 8 + 8 + 4 + 32 + 8 + 8);
  const view = new DataView(bytes.buffer);
  bytes[0] = 1;
  view.setBigUint64(1, BigInt(leaseMs));
  view.setBigUint64(9, BigInt(ttlMs));
  bytes.fill(fingerprintByte, 21, 53);
  view.setBigUint64(53, BigInt(waitMs));
  view.setBigUint64(61, BigInt(reservation));
  return bytes;
}

/** Polls `probe` until `done(value)` holds: that value. Fails after `timeoutMs`. */
export async function until(probe, done, { timeoutMs = 15000, everyMs = 100, what = "condition" } = {}) {
  const deadline = Date.now() + timeoutMs;
  let value;
  for (;;) {
    value = await probe();
    if (done(value)) return value;
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}; last value: ${JSON.stringify(value)}`);
    await sleep(everyMs);
  }
}

export const tempDir = () => mkdtempSync(join(tmpdir(), "oncekey-edge-"));
export const newKey = () => randomUUID();
export const uniqueItem = (name) => `${name}-${randomUUID().slice(0, 8)}`;
export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** POST /api/orders with a key (unless `key` is null) and a JSON order. */
export function order(worker, { key, item, quantity = 1, amountCents = 500, headers = {}, query = "" }) {
  const h = { "content-type": "application/json", ...headers };
  if (key !== null && key !== undefined) h["idempotency-key"] = key;
  return worker.fetch(`/api/orders${query}`, {
    method: "POST",
    headers: h,
    body: JSON.stringify({ item, quantity, amountCents }),
  });
}

/** Every execution that created an order for `item`. */
export async function ordersOf(worker, item) {
  const res = await worker.fetch(`/api/orders?item=${encodeURIComponent(item)}`);
  return res.json();
}

/**
 * The record name the worker derives (SPEC §2): SHA-256 over length-
 * prefixed parts, written independently of the Rust code.
 */
export function recordName(host, authorization, key) {
  const hash = createHash("sha256");
  const part = (bytes) => {
    const len = Buffer.alloc(8);
    len.writeBigUInt64BE(BigInt(bytes.length));
    hash.update(len);
    hash.update(bytes);
  };
  part(Buffer.from("oncekey/record/1"));
  part(Buffer.from(host.toLowerCase()));
  part(Buffer.from("header:authorization"));
  if (authorization === undefined) part(Buffer.from([0]));
  else {
    part(Buffer.from([1]));
    part(Buffer.from(authorization));
  }
  part(Buffer.from(key));
  return hash.digest("hex");
}

/** Parses a problem+json answer, checking its shape. */
export async function problemOf(res) {
  const type = res.headers.get("content-type");
  if (type !== "application/problem+json") throw new Error(`not a problem: ${res.status} ${type}`);
  const body = await res.json();
  const code = body.type.replace("urn:oncekey:problem:", "");
  // The layer's own problems say it again in the shape of Stripe's errors,
  // which Stripe's SDKs need to see an error at all (the demo origin's don't).
  const { error } = body;
  const layers = body.type.startsWith("urn:oncekey:problem:");
  if (layers && (error?.code !== code || error.message !== body.detail || typeof error.type !== "string")) {
    throw new Error(`problem ${code} without its Stripe-shaped error member: ${JSON.stringify(body)}`);
  }
  return { ...body, code };
}

/**
 * Tier names in Server-Timing, e.g. ["kv", "do"]: the entries with a
 * duration (`finish;desc="after-answer"` says what comes after the answer).
 */
export function tiers(res) {
  const value = res.headers.get("server-timing") ?? "";
  return value
    .split(",")
    .filter((entry) => entry.includes(";dur="))
    .map((entry) => entry.trim().split(";")[0]);
}
