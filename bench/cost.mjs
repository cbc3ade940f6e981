// What each request class costs in billable operations (issue 53, `make
// bench-cost`): every operation Cloudflare bills, counted in workerd, for
// both oncekey hosts and for hono-idempotency on a Durable Object with its
// expiry alarm, then priced per million at the published prices (PRICES).
//
// Nothing in the builds is changed. Each implementation runs under a small
// entry module written here, which imports the built module and
//  - hands its fetch an env whose IDEMPOTENCY_KV and IDEMPOTENCY_METRICS
//    count their calls;
//  - exports a subclass of its object class that counts every call into the
//    object and every alarm, and gives the class a state whose `storage`
//    counts rows: a key put or deleted, an alarm set or deleted is a row
//    written, a key read a row read; deleteAll counts the rows it deletes;
//  - counts the bytes of every console line.
// Each count is a marked line on workerd's stdout. The bench marks the start
// of each phase in that stream (a class's setup, the class itself), so a
// count belongs to the phase it falls in — except what an alarm does, which
// belongs to the phase that made the object: a first execution's cost takes
// in the alarms and the delete at expiry. With a 60 s TTL (the minimum), the
// bench waits until every alarm has run.
import { createHmac, randomUUID } from "node:crypto";
import { readdirSync } from "node:fs";
import { cpus, loadavg } from "node:os";
import { join } from "node:path";
import { Miniflare } from "miniflare";
import { COMPATIBILITY_DATE, COMPATIBILITY_FLAGS, defaultVars, WORKERS } from "../tests/edge/harness.mjs";
import { writeSection } from "./results.mjs";
import { HONO_DO } from "./workers.mjs";

/** Keys per request class; each count is averaged over them. */
const KEYS = Number(process.env.BENCH_KEYS ?? 20);
const TTL_SECONDS = 60;
const LEASE_SECONDS = 5;
/** The slow origin of a waited duplicate, and when the duplicate follows the first attempt. */
const SLOW_MS = 300;
const DUPLICATE_AFTER_MS = 100;
const MARK = "oncekey-cost ";
const STRIPE_SECRET = `whsec_${randomUUID().replaceAll("-", "")}`;
const ORIGIN_URL = "http://origin.cost";

/**
 * Cloudflare's prices, marginal (past each plan's included amount), one
 * entry per counted operation: USD per `per` operations. Workers Paid
 * (Standard usage model). Source: developers.cloudflare.com — workers/platform/pricing,
 * durable-objects/platform/pricing (SQLite storage backend), kv/platform/pricing,
 * workers/observability/logs (volume pricing from 1 December 2026, as issue 53
 * quotes it), analytics/analytics-engine/pricing; as of 2026-11-29.
 */
const PRICES = {
  asOf: "2026-11-29",
  workerRequests: { usd: 0.3, per: 1e6, what: "Worker requests", included: "10 M/month" },
  doRequests: {
    usd: 0.15,
    per: 1e6,
    what: "Durable Object requests (calls and alarm invocations)",
    included: "1 M/month",
  },
  rowsRead: { usd: 0.001, per: 1e6, what: "Durable Object rows read", included: "25 billion/month" },
  rowsWritten: { usd: 1.0, per: 1e6, what: "Durable Object rows written", included: "50 M/month" },
  kvReads: { usd: 0.5, per: 1e6, what: "KV reads", included: "10 M/month" },
  kvWrites: { usd: 5.0, per: 1e6, what: "KV writes", included: "1 M/month" },
  kvDeletes: { usd: 5.0, per: 1e6, what: "KV deletes", included: "1 M/month" },
  kvLists: { usd: 5.0, per: 1e6, what: "KV lists", included: "1 M/month" },
  logBytes: {
    usd: 0.25,
    per: 1e9,
    what: "Workers Logs, bytes (per GB, from 1 December 2026)",
    included: "50 GB/month",
  },
  dataPoints: { usd: 0.25, per: 1e6, what: "Analytics Engine data points", included: "10 M/month" },
};
const PRICED = Object.keys(PRICES).filter((k) => k !== "asOf");

// The entry module of one implementation. INNER is the built module,
// CLASS its object class, METHODS the object's methods a caller reaches
// (each call one object request).
const ENTRY = ({ worker, inner, className, methods }) => `
import { DurableObject } from "cloudflare:workers";
import * as inner from "./${inner}";
const WORKER = ${JSON.stringify(worker)};
const raw = console.log.bind(console);
const emit = (event) => raw(${JSON.stringify(MARK)} + JSON.stringify({ w: WORKER, ...event }));
const encoder = new TextEncoder();
const textOf = (value) => {
  if (typeof value === "string") return value;
  if (value instanceof Error) return String(value.stack ?? value);
  try { return JSON.stringify(value) ?? String(value); } catch { return String(value); }
};
// Log volume: the bytes of each line the worker or its objects write.
for (const level of ["log", "info", "warn", "error", "debug"]) {
  const original = console[level].bind(console);
  console[level] = (...args) => {
    emit({ op: "logBytes", n: encoder.encode(args.map(textOf).join(" ")).length });
    original(...args);
  };
}

// A binding whose named methods count; everything else (its constructor,
// which workers-rs checks) as it is.
const counting = (binding, ops) =>
  new Proxy(binding, {
    get(target, prop) {
      const value = target[prop];
      const op = ops[prop];
      if (op === undefined || typeof value !== "function") return value;
      return (...args) => {
        emit({ op, n: Array.isArray(args[0]) && prop.startsWith("get") ? args[0].length : 1 });
        return value.apply(target, args);
      };
    },
  });
const KV_OPS = { get: "kvReads", getWithMetadata: "kvReads", put: "kvWrites", delete: "kvDeletes", list: "kvLists" };
const METRICS_OPS = { writeDataPoint: "dataPoints" };
const envs = new WeakMap();
const countedEnv = (env) => {
  let counted = envs.get(env);
  if (counted === undefined) {
    const wrapped = new Map();
    counted = new Proxy(env, {
      get(target, prop) {
        const value = target[prop];
        const ops = prop === "IDEMPOTENCY_KV" ? KV_OPS : prop === "IDEMPOTENCY_METRICS" ? METRICS_OPS : undefined;
        if (ops === undefined || value === undefined) return value;
        if (!wrapped.has(prop)) wrapped.set(prop, counting(value, ops));
        return wrapped.get(prop);
      },
    });
    envs.set(env, counted);
  }
  return counted;
};

// The bench marks each phase with GET /__cost/phase?name=…; not a request.
const control = (request) => {
  const url = new URL(request.url);
  if (url.pathname !== "/__cost/phase") return undefined;
  emit({ op: "phase", name: url.searchParams.get("name") });
  return new Response(null, { status: 204 });
};
let entry;
if (typeof inner.default === "function") {
  // workers-rs exports a WorkerEntrypoint class: its fetch reads this.env.
  entry = class extends inner.default {
    constructor(ctx, env) {
      super(ctx, countedEnv(env));
    }
    fetch(request) {
      const answer = control(request);
      if (answer) return answer;
      emit({ op: "workerRequests", n: 1 });
      return super.fetch(request);
    }
  };
} else {
  entry = {
    fetch(request, env, ctx) {
      const answer = control(request);
      if (answer) return answer;
      emit({ op: "workerRequests", n: 1 });
      return inner.default.fetch(request, countedEnv(env), ctx);
    },
  };
}
export default entry;

// The object's storage, counted. \`box.alarm\` says an alarm is running, so
// what it does is charged to the phase that made the object.
const STORAGE = new Set(["get", "put", "delete", "deleteAll", "list", "setAlarm", "getAlarm", "deleteAlarm"]);
const countedStorage = (storage, obj, box) => {
  const known = new Set();
  const note = (op, via, n, extra = {}) => emit({ op, via, n, obj, alarm: box.alarm, ...extra });
  return new Proxy(storage, {
    get(target, prop) {
      const value = target[prop];
      if (prop === "sql" || prop === "transaction" || prop === "transactionSync") {
        note("uncounted", prop, 1);
        return typeof value === "function" ? value.bind(target) : value;
      }
      if (typeof value !== "function") return value;
      if (!STORAGE.has(prop)) return value.bind(target);
      return (...args) => {
        const [key] = args;
        const keys = typeof key === "string" ? [key] : Array.isArray(key) ? key : key && typeof key === "object" ? Object.keys(key) : [];
        if (prop === "get") {
          note("rowsRead", "get", keys.length);
          return value.apply(target, args).then((found) => {
            if (typeof key === "string") {
              if (found !== undefined) known.add(key);
            } else for (const k of found.keys()) known.add(k);
            return found;
          });
        }
        if (prop === "list") {
          return value.apply(target, args).then((found) => {
            note("rowsRead", "list", found.size);
            for (const k of found.keys()) known.add(k);
            return found;
          });
        }
        if (prop === "put") {
          note("rowsWritten", "put", keys.length);
          for (const k of keys) known.add(k);
        } else if (prop === "delete") {
          note("rowsWritten", "delete", keys.length);
          for (const k of keys) known.delete(k);
        } else if (prop === "deleteAll") {
          // The rows it deletes: read synchronously where the SQLite
          // backend allows (no await: the object's step stays atomic),
          // else the keys this instance has seen.
          let rows = known.size;
          let exact = false;
          if (typeof target.kv?.list === "function") {
            rows = [...target.kv.list()].length;
            exact = true;
          }
          note("rowsWritten", "deleteAll", rows, { exact });
          known.clear();
        } else if (prop === "setAlarm") {
          note("rowsWritten", "setAlarm", 1, { at: Number(key) });
        } else if (prop === "deleteAlarm") {
          note("rowsWritten", "deleteAlarm", 1);
        } else if (prop === "getAlarm") {
          note("rowsRead", "getAlarm", 1);
        }
        return value.apply(target, args);
      };
    },
  });
};
const countedState = (state, obj, box) => {
  const storage = countedStorage(state.storage, obj, box);
  return new Proxy(state, {
    get(target, prop) {
      if (prop === "storage") return storage;
      const value = target[prop];
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
};

const Parent = inner[${JSON.stringify(className)}];
/** Each object instance: its id, and whether its alarm is running. */
const instances = new WeakMap();
const metaOf = (self) => instances.get(self) ?? { obj: "unknown", box: { alarm: false } };
// A class built on DurableObject must hand the base the real state: a
// class slipped in between gives the object the counted one before the
// class's own fields read it.
let base = Parent;
while (base && Object.getPrototypeOf(base) !== DurableObject) base = Object.getPrototypeOf(base);
if (base) {
  class Counted extends DurableObject {
    constructor(ctx, env) {
      super(ctx, env);
      const meta = { obj: ctx.id.toString(), box: { alarm: false } };
      instances.set(this, meta);
      Object.defineProperty(this, "ctx", { value: countedState(ctx, meta.obj, meta.box), writable: true, configurable: true, enumerable: true });
    }
  }
  Object.setPrototypeOf(base, Counted);
  Object.setPrototypeOf(base.prototype, Counted.prototype);
}
class CountedCoordinator extends Parent {
  constructor(state, env) {
    const meta = { obj: state.id.toString(), box: { alarm: false } };
    super(base ? state : countedState(state, meta.obj, meta.box), env);
    if (!instances.has(this)) instances.set(this, meta);
  }
  alarm(...args) {
    const { obj, box } = metaOf(this);
    emit({ op: "doRequests", via: "alarm", n: 1, obj, alarm: true });
    box.alarm = true;
    const done = () => {
      box.alarm = false;
      emit({ op: "alarmDone", obj });
    };
    return Promise.resolve(Parent.prototype.alarm.apply(this, args)).finally(done);
  }
}
// oncekey's store calls say what they are in their first byte (begin,
// finish, …): read from the bytes (RPC) or a copy of the body (fetch),
// the call itself not held back.
const KINDS = ["?", "begin", "finish", "abandon", "inspect", "release"];
const kindOf = (arg) => {
  if (arg instanceof Uint8Array) return Promise.resolve(KINDS[arg[0]]);
  if (arg instanceof Request && arg.method === "POST") {
    return arg.clone().arrayBuffer().then((bytes) => KINDS[new Uint8Array(bytes)[0]]);
  }
  return Promise.resolve(undefined);
};
for (const method of ${JSON.stringify(methods)}) {
  CountedCoordinator.prototype[method] = function (...args) {
    const { obj } = metaOf(this);
    const noted = ${JSON.stringify(worker)} === "hono" ? Promise.resolve(method) : kindOf(args[0]);
    noted.then((kind) => emit({ op: "doRequests", via: kind ?? method, n: 1, obj, alarm: false }));
    return Parent.prototype[method].apply(this, args);
  };
}
export { CountedCoordinator as ${className} };
`;

// The origin every implementation calls: 201 for an order (after ?slow=ms),
// 503 the first time a body comes with ?fail=once, 200 for a webhook.
const ORIGIN = `
const seen = new Map();
export default {
  async fetch(request) {
    const url = new URL(request.url);
    const body = await request.text();
    const runs = (seen.get(body) ?? 0) + 1;
    seen.set(body, runs);
    const slow = Number(url.searchParams.get("slow") ?? 0);
    if (slow > 0) await new Promise((resolve) => setTimeout(resolve, slow));
    if (url.searchParams.get("fail") === "once" && runs === 1) {
      return new Response("busy", { status: 503, headers: { "retry-after": "0" } });
    }
    const status = url.pathname.startsWith("/hooks/") ? 200 : 201;
    return Response.json({ ok: true, runs }, { status });
  },
};`;

/** The Analytics Engine dataset the oncekey hosts write to: it keeps nothing (the entry counts the calls). */
const METRICS = "export default function () { return { writeDataPoint() {} }; }";

/** A build's modules: its .js as ES modules, its .wasm compiled, the entry first. */
function modulesOf(dir, entry, only) {
  const files = readdirSync(dir).filter((f) => (only ? f === only : /\.(js|wasm)$/.test(f)));
  return [
    { type: "ESModule", path: join(dir, "cost-entry.js"), contents: entry },
    ...files.map((f) => ({ type: f.endsWith(".wasm") ? "CompiledWasm" : "ESModule", path: join(dir, f) })),
  ];
}

const ROUTES = JSON.stringify([{ match: "POST /hooks/stripe/*", webhook: "stripe", secret: "STRIPE_WEBHOOK_SECRET" }]);
const oncekeyVars = (config) => ({
  ...defaultVars(config),
  ORIGIN_URL,
  IDEMPOTENCY_TTL_SECONDS: String(TTL_SECONDS),
  IDEMPOTENCY_LEASE_SECONDS: String(LEASE_SECONDS),
  IDEMPOTENCY_ORIGIN_TIMEOUT_SECONDS: String(LEASE_SECONDS - 2),
  IDEMPOTENCY_ROUTES: ROUTES,
  STRIPE_WEBHOOK_SECRET: STRIPE_SECRET,
});

/** The implementations: label, Miniflare worker, the object methods callers reach, the replay header. */
const IMPLS = [
  {
    name: "rust",
    label: "oncekey, Rust host",
    replayHeader: "idempotent-replayed",
    worker: () => ({
      modulesRoot: WORKERS.proxy.build,
      modules: modulesOf(
        WORKERS.proxy.build,
        ENTRY({ worker: "rust", inner: "index.js", className: "IdempotencyCoordinator", methods: ["fetch"] }),
      ),
      compatibilityFlags: COMPATIBILITY_FLAGS,
      bindings: oncekeyVars(WORKERS.proxy.config),
      kvNamespaces: { IDEMPOTENCY_KV: "rust-kv" },
      durableObjects: { IDEMPOTENCY_DO: { className: "IdempotencyCoordinator", useSQLite: true } },
      wrappedBindings: { IDEMPOTENCY_METRICS: "cost-metrics" },
    }),
  },
  {
    name: "js",
    label: "oncekey, JavaScript host",
    replayHeader: "idempotent-replayed",
    worker: () => ({
      modulesRoot: WORKERS["proxy-js"].build,
      modules: modulesOf(
        WORKERS["proxy-js"].build,
        ENTRY({ worker: "js", inner: "index.js", className: "IdempotencyCoordinator", methods: ["call", "fetch"] }),
      ),
      compatibilityFlags: COMPATIBILITY_FLAGS,
      bindings: oncekeyVars(WORKERS["proxy-js"].config),
      kvNamespaces: { IDEMPOTENCY_KV: "js-kv" },
      durableObjects: { IDEMPOTENCY_DO: { className: "IdempotencyCoordinator", useSQLite: true } },
      wrappedBindings: { IDEMPOTENCY_METRICS: "cost-metrics" },
    }),
  },
  {
    name: "hono",
    label: "hono-idempotency on a Durable Object, expiry alarm",
    replayHeader: "idempotency-replayed",
    webhooks: false,
    worker: () => ({
      modulesRoot: join(HONO_DO, ".."),
      modules: modulesOf(
        join(HONO_DO, ".."),
        ENTRY({
          worker: "hono",
          inner: "hono-do.js",
          className: "Coordinator",
          methods: ["get", "lock", "complete", "delete"],
        }),
        "hono-do.js",
      ),
      bindings: { ORIGIN_URL, EXPIRY: "1", TTL_SECONDS: String(TTL_SECONDS) },
      durableObjects: { IDEMPOTENCY_DO: { className: "Coordinator", useSQLite: true } },
    }),
  },
];

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const lines = [];
let partial = "";
const mf = new Miniflare({
  workers: [
    ...IMPLS.map((impl) => ({
      name: impl.name,
      modules: true,
      compatibilityDate: COMPATIBILITY_DATE,
      outboundService: "origin",
      modulesRules: [{ type: "CompiledWasm", include: ["**/*.wasm"] }],
      ...impl.worker(),
    })),
    { name: "origin", modules: true, script: ORIGIN, compatibilityDate: COMPATIBILITY_DATE },
    { name: "cost-metrics", modules: true, script: METRICS },
  ],
  handleRuntimeStdio: (out, err) => {
    out.setEncoding("utf8");
    out.on("data", (text) => {
      const parts = (partial + text).split("\n");
      partial = parts.pop();
      lines.push(...parts);
    });
    err.pipe(process.stderr);
  },
});
await mf.ready;
const workers = Object.fromEntries(await Promise.all(IMPLS.map(async (i) => [i.name, await mf.getWorker(i.name)])));

/** The counted events so far, parsed. */
const events = () =>
  lines.flatMap((line) => {
    const at = line.indexOf(MARK);
    return at < 0 ? [] : [JSON.parse(line.slice(at + MARK.length))];
  });

/** Waits until no new line has come for `quietMs` (the answers' waitUntil work done). */
async function settle(quietMs = 400) {
  let seen = -1;
  while (seen !== lines.length) {
    seen = lines.length;
    await sleep(quietMs);
  }
}

const phase = async (impl, name) => {
  await workers[impl.name].fetch(`http://cost.test/__cost/phase?name=${encodeURIComponent(name)}`);
  await settle(100);
};

/** A POST to `impl`: the status, whether it was a replay, the body. */
async function post(impl, path, { headers = {}, body }) {
  const res = await workers[impl.name].fetch(`http://cost.test${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body,
  });
  return { status: res.status, replayed: res.headers.get(impl.replayHeader) === "true", text: await res.text() };
}
const order = (impl, key, query = "") =>
  post(impl, `/api/orders${query}`, {
    headers: { "idempotency-key": key },
    body: JSON.stringify({ item: key, quantity: 1, amountCents: 1200 }),
  });
/** A Stripe event delivered as Stripe signs it (its id in the body keys it). */
const stripeDelivery = (id) => {
  const body = JSON.stringify({
    id,
    object: "event",
    type: "payment_intent.succeeded",
    data: { object: { amount: 500 } },
  });
  return (impl) => {
    const at = Math.floor(Date.now() / 1000);
    const v1 = createHmac("sha256", STRIPE_SECRET).update(`${at}.${body}`).digest("hex");
    return post(impl, "/hooks/stripe/billing", { headers: { "stripe-signature": `t=${at},v1=${v1}` }, body });
  };
};

const expect = (impl, what, res, ok) => {
  if (!ok) throw new Error(`${impl.name}, ${what}: ${res.status} replayed=${res.replayed} ${res.text.slice(0, 300)}`);
};

/**
 * The request classes: what one key of the class sends (`run`, counted),
 * after what it needs done first (`setup`, not counted), the Worker
 * requests that makes, and whether it applies to hono.
 */
const CLASSES = [
  {
    name: "first",
    label: "first execution (and its expiry)",
    run: async (impl, key) => {
      const res = await order(impl, key);
      expect(impl, "first", res, res.status === 201 && !res.replayed);
    },
  },
  {
    name: "replay",
    label: "replay, the key's first",
    setup: (impl, key) => order(impl, key),
    run: async (impl, key) => {
      const res = await order(impl, key);
      expect(impl, "replay", res, res.status === 201 && res.replayed);
    },
  },
  {
    name: "replay-again",
    label: "replay, a later one",
    setup: async (impl, key) => {
      await order(impl, key);
      await order(impl, key);
    },
    run: async (impl, key) => {
      const res = await order(impl, key);
      expect(impl, "replay-again", res, res.status === 201 && res.replayed);
    },
  },
  {
    name: "waited",
    label: `first attempt (origin ${SLOW_MS} ms) + a duplicate sent ${DUPLICATE_AFTER_MS} ms later`,
    run: async (impl, key) => {
      const first = order(impl, key, `?slow=${SLOW_MS}`);
      await sleep(DUPLICATE_AFTER_MS);
      const duplicate = await order(impl, key, `?slow=${SLOW_MS}`);
      const answered = await first;
      expect(impl, "waited first", answered, answered.status === 201 && !answered.replayed);
      // hono-idempotency does not wait: a duplicate in flight gets 409 at once.
      const ok = impl.name === "hono" ? duplicate.status === 409 : duplicate.status === 201 && duplicate.replayed;
      expect(impl, "waited duplicate", duplicate, ok);
    },
  },
  {
    name: "release",
    label: "origin 503 (key released) + the retry, which runs",
    run: async (impl, key) => {
      const failed = await order(impl, key, "?fail=once");
      expect(impl, "release 503", failed, failed.status === 503);
      const retry = await order(impl, key, "?fail=once");
      expect(impl, "release retry", retry, retry.status === 201 && !retry.replayed);
    },
  },
  {
    name: "webhook",
    label: "Stripe webhook delivery, first (and its expiry)",
    webhook: true,
    run: async (impl, key) => {
      const res = await stripeDelivery(`evt_${key.replaceAll("-", "")}`)(impl);
      expect(impl, "webhook", res, res.status === 200 && !res.replayed);
    },
  },
  {
    name: "webhook-again",
    label: "Stripe webhook redelivery (replayed)",
    webhook: true,
    setup: (impl, key) => stripeDelivery(`evt_${key.replaceAll("-", "")}`)(impl),
    run: async (impl, key) => {
      const res = await stripeDelivery(`evt_${key.replaceAll("-", "")}`)(impl);
      expect(impl, "webhook-again", res, res.status === 200 && res.replayed);
    },
  },
];
const applies = (impl, cls) => !cls.webhook || impl.webhooks !== false;

const started = new Date();
const loadStart = loadavg();
for (const impl of IMPLS) {
  for (const cls of CLASSES.filter((c) => applies(impl, c))) {
    const keys = Array.from({ length: KEYS }, () => randomUUID());
    if (cls.setup) {
      await phase(impl, `${cls.name}:setup`);
      for (const key of keys) await cls.setup(impl, key);
      await settle();
    }
    await phase(impl, cls.name);
    for (const key of keys) await cls.run(impl, key);
    await settle();
  }
  await phase(impl, "idle");
}

/**
 * Waits until every alarm has run: an object whose last alarm set has
 * not been followed by an alarm invocation is pending until its time has
 * passed by 5 s (then it was deleted with its rows, or never fires).
 */
async function alarmsDone(timeoutMs = 240_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const scheduled = new Map();
    let running = 0;
    for (const e of events()) {
      const obj = `${e.w} ${e.obj}`;
      if (e.op === "rowsWritten" && e.via === "setAlarm") scheduled.set(obj, e.at);
      if (e.op === "rowsWritten" && e.via === "deleteAlarm") scheduled.delete(obj);
      if (e.op === "doRequests" && e.via === "alarm") {
        scheduled.delete(obj);
        running++;
      }
      if (e.op === "alarmDone") running--;
    }
    const waiting = [...scheduled.values()].filter((at) => at + 5000 > Date.now());
    if (waiting.length === 0 && running === 0) return;
    if (Date.now() > deadline) throw new Error(`alarms still pending after ${timeoutMs / 1000} s: ${waiting.length}`);
    process.stderr.write(
      `bench-cost: ${waiting.length} alarms pending, the last in ${Math.ceil((Math.max(...waiting) - Date.now()) / 1000)} s\n`,
    );
    await sleep(Math.min(10_000, Math.max(1000, Math.max(...waiting) - Date.now() + 500)));
  }
}
await alarmsDone();
await settle(1000);
const loadEnd = loadavg();
await mf.dispose();

// Each event to its phase: what an alarm does to the phase that made the object.
const tally = {};
const uncounted = [];
let inexactDeletes = 0;
{
  const current = {};
  const owner = new Map();
  for (const e of events()) {
    if (e.op === "phase") {
      current[e.w] = e.name;
      continue;
    }
    if (e.op === "alarmDone") continue;
    const obj = e.obj === undefined ? undefined : `${e.w} ${e.obj}`;
    if (obj !== undefined && !owner.has(obj) && !e.alarm) owner.set(obj, current[e.w]);
    const at = e.alarm ? (owner.get(obj) ?? "unowned") : current[e.w];
    if (e.op === "uncounted") {
      uncounted.push(`${e.w}: storage.${e.via}`);
      continue;
    }
    if (e.via === "deleteAll" && !e.exact) inexactDeletes++;
    tally[e.w] ??= {};
    tally[e.w][at] ??= {};
    const t = tally[e.w][at];
    t[e.op] = (t[e.op] ?? 0) + e.n;
    if (e.op === "doRequests") {
      t[`request:${e.via}`] = (t[`request:${e.via}`] ?? 0) + e.n;
      if (e.via === "alarm") t.alarms = (t.alarms ?? 0) + e.n;
    }
    if (e.op === "rowsWritten") t[`written:${e.via}`] = (t[`written:${e.via}`] ?? 0) + e.n;
    if (e.op === "logBytes") t.logLines = (t.logLines ?? 0) + 1;
  }
}

const per = (impl, cls, metric) => (tally[impl.name]?.[cls.name]?.[metric] ?? 0) / KEYS;
const usdPerMillion = (impl, cls) =>
  PRICED.reduce((sum, m) => sum + (per(impl, cls, m) * PRICES[m].usd * 1e6) / PRICES[m].per, 0);
const num = (x) => (Number.isInteger(x) ? String(x) : x.toFixed(2).replace(/\.?0+$/, ""));
const usd = (x) => `$${x.toFixed(x < 1 ? 3 : 2)}`;

const rows = [];
const writeRows = [];
for (const impl of IMPLS) {
  for (const cls of CLASSES) {
    if (!applies(impl, cls)) {
      rows.push(`| ${impl.label} | ${cls.label} | n/a (no webhook routes) ||||||||`);
      continue;
    }
    const p = (m) => per(impl, cls, m);
    const kv = `${num(p("kvReads"))} / ${num(p("kvWrites"))} / ${num(p("kvDeletes"))}`;
    rows.push(
      `| ${impl.label} | ${cls.label} | ${num(p("workerRequests"))} | ${num(p("doRequests"))} (${num(p("alarms"))} alarm) | ${num(p("rowsWritten"))} | ${num(p("rowsRead"))} | ${kv} | ${Math.round(p("logBytes"))} (${num(p("logLines"))} ${p("logLines") === 1 ? "line" : "lines"}) | ${num(p("dataPoints"))} | ${usd(usdPerMillion(impl, cls))} |`,
    );
    const w = (via) => num(p(`written:${via}`));
    const calls = Object.keys(tally[impl.name]?.[cls.name] ?? {})
      .filter((m) => m.startsWith("request:"))
      .map((m) => `${m.slice("request:".length)} ${num(p(m))}`)
      .join(", ");
    writeRows.push(
      `| ${impl.label} | ${cls.label} | ${calls} | ${w("put")} | ${w("setAlarm")} | ${w("delete")} | ${w("deleteAll")} | ${w("deleteAlarm")} |`,
    );
  }
}
const priceRows = PRICED.map((m) => {
  const { usd: price, per: unit, what, included } = PRICES[m];
  return `| ${what} | $${price} per ${unit === 1e9 ? "GB (10⁹ bytes)" : "million"} | ${included} |`;
});

const notes = [
  uncounted.length ? `Storage calls this bench does not count were made: ${[...new Set(uncounted)].join(", ")}.` : "",
  inexactDeletes
    ? `${inexactDeletes} deleteAll calls counted from the keys the instance had seen (no synchronous list).`
    : "",
]
  .filter(Boolean)
  .join(" ");

const section = `<!-- cost:start -->
## Cost per request class (make bench-cost)

Command: \`make bench-cost\` (part of \`make bench\`), ${started.toISOString().slice(0, 16).replace("T", " ")} UTC.
Machine: ${cpus().length} cores, load average ${loadStart.map((n) => n.toFixed(1)).join(" ")} → ${loadEnd.map((n) => n.toFixed(1)).join(" ")}.
Every billable operation of each request class, counted in workerd (Miniflare) through a counting entry module
around each build (bench/cost.mjs): Worker requests; Durable Object requests (each call into an object and each
alarm invocation); rows written (a key put or deleted, an alarm set or deleted; \`deleteAll\` counts the rows it
deletes) and rows read (a key read: an object reads its record once per instance) on the object's storage; KV
operations (reads / writes / deletes); log bytes (each console line's message as written, without the
platform's metadata: here the decision's line); Analytics Engine data points (a dataset bound to both oncekey
hosts). ${KEYS} keys per class, one object per key, each count averaged per key. TTL ${TTL_SECONDS} s (the minimum),
lease ${LEASE_SECONDS} s, origin timeout ${LEASE_SECONDS - 2} s, one Stripe webhook route, the rest at each config's defaults. The bench waits until every
alarm has run, and what an alarm does counts to the class that made the object, so a first execution's row
includes its expiry. A class is what one key of it sends: a replay is counted after a first execution (for "a
later one", also a first replay) that is not; the waited and the released classes send two requests each.
"USD per million" prices a million keys of the class at PRICES below. hono-idempotency runs as hono-do
(bench/peers/hono-do.ts) with \`EXPIRY=1\` and \`TTL_SECONDS=${TTL_SECONDS}\`: its lock sets an alarm that deletes the object's
rows at the TTL; it answers a duplicate in flight 409 at once (no wait), writes no log line or data point, and
has no webhook routes. A queue message is not measured here (the production proxy has no consumer).${notes ? ` ${notes}` : ""}

| implementation | class | Worker requests | object requests | rows written | rows read | KV r / w / d | log bytes | data points | USD per million |
|---|---|---:|---:|---:|---:|---:|---:|---:|---:|
${rows.join("\n")}

Object requests and rows written, by operation (per key of the class; oncekey's calls by the store call they
carry, hono's by RPC method):

| implementation | class | object requests | put | setAlarm | delete | deleteAll rows | deleteAlarm |
|---|---|---|---:|---:|---:|---:|---:|
${writeRows.join("\n")}

Prices (USD, past each plan's included amount, Workers Paid, as of ${PRICES.asOf}; from developers.cloudflare.com's
Workers, Durable Objects (SQLite backend), KV, Workers Logs and Analytics Engine pricing pages, Workers Logs' volume
price as issue 53 quotes it from 1 December 2026). Not counted: CPU time ($0.02 per million CPU-ms) and Durable
Object duration.

| operation | price | included per month |
|---|---:|---|
${priceRows.join("\n")}
<!-- cost:end -->`;

writeSection("cost", section);
console.log(section);
