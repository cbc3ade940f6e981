// The JavaScript host's wasm boundary (issue 34), with the real wasm under
// Node: what crosses is typed — wasm-bindgen enums for action kinds, origin
// failures, origin kinds, the request head's flags and the header edits'
// ops — and what crosses packed is packed in one module a side
// (src/js/packed.rs, pkg/src/worker/http.js). The exchange is driven as
// host.js drives it, its store calls answered by the core's own
// coordinator (`CoordinatorCore`). The whole path runs in workerd on both
// hosts in tests/edge.
import assert from "node:assert/strict";
import { createHmac } from "node:crypto";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { wasm } from "./wasm.mjs";

const { applyEdits, start } = await import("../../pkg/src/worker/http.js");
const { within } = await import("../../pkg/src/worker/deadline.js");
const { onCallerGone } = await import("../../pkg/src/worker/disconnect.js");
const { drive } = await import("../../pkg/src/worker/host.js");
const { KvReplay } = await import("../../pkg/src/worker/kv_replay.js");
const { withQueueIdempotency } = await import("../../pkg/src/worker/queue.js");
const { ActionKind, CoordinatorCore, EditOp, HeadFlag, Layer, OriginFailure, OriginKind, countersObject } = wasm;

/** An `env` with the layer's two bindings, as stand-ins of their kinds. */
const BOUND = { IDEMPOTENCY_DO: { idFromName() {} }, IDEMPOTENCY_KV: { put() {} } };

/** A keyed POST, as the runtime hands it over. */
const keyed = (key, headers = {}) =>
  new Request("https://shop.example/orders", {
    method: "POST",
    headers: { "idempotency-key": `"${key}"`, "content-type": "application/json", ...headers },
    body: "{}",
  });

/**
 * Performs `exchange`'s actions as host.js does, up to one of `until`'s
 * kinds (or its end): store calls go to `coordinator`, KV has no copy, the
 * body is read whole. Returns the action kind it stopped at, the status of
 * each answer given on the way, and every kind performed.
 */
async function runTo(exchange, request, coordinator, until) {
  const answered = [];
  const seen = [];
  let kind = exchange.kind;
  let id = 1;
  while (!until.includes(kind) && kind !== ActionKind.Done) {
    const now = Date.now();
    seen.push(kind);
    switch (kind) {
      case ActionKind.ReadBody:
        exchange.bodyChunk(new Uint8Array(await request.clone().arrayBuffer()));
        kind = exchange.bodyEnded(false, now);
        break;
      case ActionKind.Detach:
        kind = exchange.detached(now);
        break;
      case ActionKind.Store: {
        const call = id++;
        const { replies } = coordinator.call(call, exchange.call, now);
        const reply = replies.find(([to]) => to.includes(call));
        assert.ok(reply, "the coordinator answered the call at once");
        kind = exchange.storeAnswered(reply[1], undefined, now);
        break;
      }
      case ActionKind.ReadCopy:
        kind = exchange.copyRead(undefined, undefined, now);
        break;
      case ActionKind.WriteCopy:
        kind = exchange.copyWritten(now);
        break;
      case ActionKind.Respond:
        answered.push(exchange.status);
        kind = exchange.responded(now);
        break;
      case ActionKind.Log:
        kind = exchange.logged(now);
        break;
      case ActionKind.Metric:
        kind = exchange.metricWritten(now);
        break;
      case ActionKind.Pause:
        kind = exchange.paused(now);
        break;
      default:
        assert.fail(`no stop at action ${kind}`);
    }
  }
  return { kind, answered, seen };
}

/** A layer over `env` (`BOUND` by default), its coordinator loaded with no record. */
function layerOf(options = {}, env = BOUND) {
  const layer = new Layer(options, env);
  const coordinator = new CoordinatorCore();
  coordinator.load(undefined);
  return { layer, coordinator, headersRead: layer.headersRead() };
}

test("originFailed takes only an OriginFailure: a typo'd member, the old string kinds or another number is refused with an error, never taken for one", async () => {
  const { layer, coordinator, headersRead } = layerOf();
  const request = keyed("typo");
  const exchange = start(layer, request, headersRead, false);
  assert.equal((await runTo(exchange, request, coordinator, [ActionKind.CallOrigin])).kind, ActionKind.CallOrigin);
  // `OriginFailure.NotSnet` is undefined; "not-sent" was the kind before the enum.
  for (const bad of [OriginFailure.NotSnet, "not-sent", "no-answer", 3, -1, 0.5, Number.NaN]) {
    assert.throws(() => exchange.originFailed(bad, "refused", Date.now()), /invalid enum value/, String(bad));
    assert.equal(exchange.kind, ActionKind.CallOrigin, `${String(bad)}: the exchange still waits for the origin's end`);
  }
  exchange.originFailed(OriginFailure.NotSent, "refused", Date.now());
  const { answered } = await runTo(exchange, request, coordinator, []);
  assert.equal(answered.length, 1);
  exchange.free();
});

test("each OriginFailure reaches the core as itself: NotSent releases the key, NoAnswer and HandlerThrew hold it as an unknown outcome, each answered as such", async () => {
  const seen = {};
  for (const failure of ["NotSent", "NoAnswer", "HandlerThrew"]) {
    const { layer, coordinator, headersRead } = layerOf();
    const request = keyed(failure);
    const first = start(layer, request, headersRead, false);
    await runTo(first, request, coordinator, [ActionKind.CallOrigin]);
    first.originFailed(OriginFailure[failure], "the origin failed", Date.now());
    const { answered } = await runTo(first, request, coordinator, []);
    first.free();
    // The same key again: a released key runs as the next attempt; a held one is in flight.
    const retry = keyed(failure);
    const again = start(layer, retry, headersRead, false);
    const next = await runTo(again, retry, coordinator, [ActionKind.CallOrigin]);
    seen[failure] = { answered: answered[0], retry: next.kind === ActionKind.CallOrigin ? "runs" : next.answered[0] };
    again.free();
    layer.free();
  }
  assert.equal(seen.NotSent.retry, "runs", "a request never sent releases its key");
  assert.equal(seen.NoAnswer.retry, 409, "no answer: the key is held");
  assert.equal(seen.HandlerThrew.retry, 409, "a handler's throw: the key is held");
  assert.ok(seen.NotSent.answered >= 500 && seen.NoAnswer.answered >= 500, JSON.stringify(seen));
});

test("proxyOrigin answers an OriginKind: a Worker bound as bindings.origin, else ORIGIN_URL or the request's own URL; none is an error naming ORIGIN_URL", () => {
  const cases = [
    [{}, { ...BOUND, ORIGIN: { fetch() {} } }, OriginKind.Service],
    [{ bindings: { origin: "API" } }, { ...BOUND, API: { fetch() {} } }, OriginKind.Service],
    [{ originUrl: "https://api.example" }, BOUND, OriginKind.Url],
    [{ originUrl: "request" }, BOUND, OriginKind.SameUrl],
  ];
  for (const [options, env, kind] of cases) {
    const layer = new Layer(options, env);
    assert.equal(layer.proxyOrigin(env), kind, JSON.stringify(options));
    layer.free();
  }
  const layer = new Layer({}, BOUND);
  assert.throws(() => layer.proxyOrigin(BOUND), /ORIGIN_URL/);
  layer.free();
});

test("the Layer finds its bindings in env itself, under the core's names or the options': missing, of another kind, or a name that is not a string is an error naming it", () => {
  const layer = new Layer({}, BOUND);
  assert.deepEqual(
    { ...layer.bindings },
    { coordinator: "IDEMPOTENCY_DO", kv: "IDEMPOTENCY_KV", metrics: "IDEMPOTENCY_METRICS", origin: "ORIGIN" },
  );
  layer.free();
  const renamed = new Layer(
    { bindings: { coordinator: "LOCKS" } },
    { LOCKS: BOUND.IDEMPOTENCY_DO, IDEMPOTENCY_KV: BOUND.IDEMPOTENCY_KV },
  );
  assert.equal(renamed.bindings.coordinator, "LOCKS");
  renamed.free();
  const refused = [
    [{}, {}, /IDEMPOTENCY_DO: no Durable Object namespace/],
    [
      {},
      { ...BOUND, IDEMPOTENCY_DO: BOUND.IDEMPOTENCY_KV },
      /IDEMPOTENCY_DO: the binding is not a Durable Object namespace/,
    ],
    [{}, { ...BOUND, IDEMPOTENCY_KV: "a variable" }, /IDEMPOTENCY_KV: the binding is not a KV namespace/],
    [{}, { ...BOUND, IDEMPOTENCY_TTL: "60" }, /IDEMPOTENCY_TTL: not a variable of the layer/],
    [{ bindings: { coordinator: 5 } }, BOUND, /option `bindings\.coordinator` must be a binding's name/],
  ];
  for (const [options, env, reason] of refused) {
    assert.throws(() => new Layer(options, env), reason);
  }
});

test("a queue consumer in a worker whose webhook route names an IDEMPOTENCY_ secret: the secret is the worker's own, not a typo'd variable; a typo still is", () => {
  const routes = JSON.stringify([
    { match: "POST /hooks/github", webhook: "github", secret: "IDEMPOTENCY_GITHUB_SECRET" },
  ]);
  const env = { IDEMPOTENCY_DO: BOUND.IDEMPOTENCY_DO, IDEMPOTENCY_ROUTES: routes, IDEMPOTENCY_GITHUB_SECRET: "s3cret" };
  const consumer = new wasm.Consumer({}, env, "orders");
  assert.equal(consumer.bindings.coordinator, "IDEMPOTENCY_DO");
  consumer.free();
  assert.throws(
    () => new wasm.Consumer({}, { ...env, IDEMPOTENCY_GITHUB_SECRETS: "s3cret" }, "orders"),
    /IDEMPOTENCY_GITHUB_SECRETS: not a variable of the layer/,
  );
  // Without the route, the same name is a typo.
  const { IDEMPOTENCY_ROUTES: _, ...unrouted } = env;
  assert.throws(
    () => new wasm.Consumer({}, unrouted, "orders"),
    /IDEMPOTENCY_GITHUB_SECRET: not a variable of the layer/,
  );
});

test("routes (SPEC §13): the `routes` option takes an array of objects, IDEMPOTENCY_ROUTES a JSON string; a webhook route's secret is read from env by the name it gives, and the headers it reads cross: a forged delivery is 401 before any store call, a signed one reaches the handler", async () => {
  const routes = [
    { match: "POST /hooks/github", webhook: "github", secret: "IDEMPOTENCY_GITHUB_SECRET" },
    { match: "POST /orders", key: ["json:/request_id"] },
  ];
  const secret = "It's a Secret to Everybody";
  // The secret's name is the layer's own, never a typo of one of its variables.
  const env = { ...BOUND, IDEMPOTENCY_GITHUB_SECRET: secret };
  const body = '{"zen":"Keep it logically awesome."}';
  const delivery = (signature) =>
    new Request("https://shop.example/hooks/github", {
      method: "POST",
      headers: {
        "x-github-delivery": "d-1",
        "x-hub-signature-256": `sha256=${signature}`,
        "content-type": "application/json",
      },
      body,
    });
  const signed = createHmac("sha256", secret).update(body).digest("hex");
  {
    // Its secret unbound, the route fails alone (SPEC §6): the layer is made,
    // the route's deliveries are 500 misconfigured before any store call.
    const { layer, coordinator, headersRead } = layerOf({ routes }, BOUND);
    const unbound = delivery(signed);
    const refused = start(layer, unbound, headersRead, false);
    const { answered, seen } = await runTo(refused, unbound, coordinator, []);
    assert.deepEqual(answered, [500]);
    assert.ok(!seen.includes(ActionKind.Store), "no store call");
    refused.free();
    layer.free();
  }
  for (const [options, vars] of [
    [{ routes }, env],
    [{}, { ...env, IDEMPOTENCY_ROUTES: JSON.stringify(routes) }],
  ]) {
    const { layer, coordinator, headersRead } = layerOf(options, vars);
    for (const name of ["x-hub-signature-256", "x-github-delivery"]) assert.ok(headersRead.includes(name), name);
    const forged = delivery("00".repeat(32));
    const refused = start(layer, forged, headersRead, false);
    const { answered, seen } = await runTo(refused, forged, coordinator, []);
    assert.deepEqual(answered, [401]);
    assert.ok(!seen.includes(ActionKind.Store), "no store call");
    refused.free();
    const real = delivery(signed);
    const running = start(layer, real, headersRead, false);
    assert.equal((await runTo(running, real, coordinator, [ActionKind.CallOrigin])).kind, ActionKind.CallOrigin);
    assert.match(running.edits, /Idempotency-Key\nd-1/);
    running.free();
    layer.free();
  }
});

test("configProblems (oncekey check) names each bad route and each webhook route whose secret is not bound, never a secret", () => {
  const routes = JSON.stringify([
    { match: "POST /hooks/stripe", webhook: "stripe", secret: "STRIPE_SECRET" },
    { match: "POST /hooks/github", webhook: "github", secret: "GITHUB_SECRET" },
  ]);
  const problems = wasm.configProblems(
    { ...BOUND, IDEMPOTENCY_ROUTES: routes, STRIPE_SECRET: "sk_live_hunter2" },
    false,
  );
  assert.deepEqual(problems, [
    "IDEMPOTENCY_ROUTES: route 1 (POST /hooks/stripe): its webhook secret (the one its `secret` names): the secret is not a Stripe signing secret (`whsec_…`)",
    "IDEMPOTENCY_ROUTES: route 2 (POST /hooks/github): its webhook secret is not bound: `wrangler secret put` the name its `secret` gives",
  ]);
  const sound = { ...BOUND, IDEMPOTENCY_ROUTES: routes, STRIPE_SECRET: "whsec_x", GITHUB_SECRET: "s" };
  assert.deepEqual(wasm.configProblems(sound, false), []);
  const shadowed = JSON.stringify([{ match: "POST /v1/*" }, { match: "POST /v1/x" }]);
  const [problem] = wasm.configProblems({ ...BOUND, IDEMPOTENCY_ROUTES: shadowed }, false);
  assert.match(problem, /^IDEMPOTENCY_ROUTES: route 2 \(POST \/v1\/x\) can never match/);
});

test("the request head crosses packed, its HeadFlags from the wasm: each flag a bit of its own, each part the core's as sent", async () => {
  const flags = Object.keys(HeadFlag)
    .filter((name) => Number.isNaN(Number(name)))
    .map((name) => HeadFlag[name]);
  assert.equal(flags.length, 6);
  assert.equal(
    flags.reduce((all, flag) => all | flag, 0),
    63,
    "six distinct bits",
  );
  const { layer, coordinator, headersRead } = layerOf({ corsOrigins: "https://app.example" });
  // No key: forwarded, the Idempotency-Attempt header removed by an edit.
  const keyless = new Request("https://shop.example/orders", {
    method: "POST",
    headers: { "idempotency-attempt": "3", "x-kept": "1" },
    body: "{}",
  });
  const forward = start(layer, keyless, headersRead, false);
  assert.equal((await runTo(forward, keyless, coordinator, [ActionKind.Forward])).kind, ActionKind.Forward);
  const sent = new Headers(keyless.headers);
  applyEdits(sent, forward.edits);
  assert.equal(sent.get("idempotency-attempt"), null);
  assert.equal(sent.get("x-kept"), "1");
  forward.free();
  // A key: the attempt; with the dataset bound, a data point for its decision.
  for (const metrics of [false, true]) {
    const request = keyed(`metrics-${metrics}`);
    const exchange = start(layer, request, headersRead, metrics);
    assert.equal((await runTo(exchange, request, coordinator, [ActionKind.CallOrigin])).kind, ActionKind.CallOrigin);
    exchange.originFailed(OriginFailure.NotSent, "not sent", Date.now());
    const { seen } = await runTo(exchange, request, coordinator, []);
    assert.equal(seen.includes(ActionKind.Metric), metrics, `metrics ${metrics}`);
    exchange.free();
  }
  // A CORS preflight: Origin and both Access-Control-Request-* fields.
  const preflight = new Request("https://shop.example/orders", {
    method: "OPTIONS",
    headers: {
      origin: "https://app.example",
      "access-control-request-method": "POST",
      "access-control-request-headers": "idempotency-key, content-type",
    },
  });
  const answer = start(layer, preflight, headersRead, false);
  assert.equal(answer.kind, ActionKind.Respond);
  const allowed = answer.headers;
  assert.match(allowed, /access-control-allow-origin\nhttps:\/\/app\.example\n/);
  assert.match(allowed, /access-control-allow-headers\n[^\n]*idempotency-key/i);
  answer.free();
  layer.free();
});

test("header edits cross packed with EditOp numbers; an op that is none is refused loudly", () => {
  const headers = new Headers({ "x-gone": "1" });
  applyEdits(headers, `${EditOp.Set}\nidempotency-key\nk\n${EditOp.Remove}\nx-gone\n\n`);
  assert.equal(headers.get("idempotency-key"), "k");
  assert.equal(headers.get("x-gone"), null);
  applyEdits(headers, undefined);
  assert.throws(() => applyEdits(headers, "set\nx-a\n1\n"), /not a header edit/);
});

test("storage keys and object names are the core's, the Rust host's too", () => {
  assert.equal(CoordinatorCore.recordKey, "record");
  assert.equal(CoordinatorCore.countsKey, "consumer-stats");
  assert.equal(countersObject("loyalty"), "consumer-counters:loyalty");
});

/** What `fn` writes with console.warn while it runs. */
async function warnings(fn) {
  const warned = [];
  const warn = console.warn;
  console.warn = (line) => warned.push(line);
  try {
    await fn();
  } finally {
    console.warn = warn;
  }
  return warned;
}

/** A dataset whose writes fail with `error`. */
const failingDataset = (error) => ({
  writeDataPoint() {
    throw new Error(error);
  },
});

/**
 * Each kind of tests/support/host-texts.tsv: what the JavaScript host's
 * files write for its subject and error.
 */
const WRITTEN = {
  async NoAnswerWithin(ms) {
    const error = await within(new Promise(() => {}), Number(ms)).catch((e) => e);
    return error.message;
  },
  async CallerGone(ms) {
    const cut = new AbortController();
    const stop = onCallerGone({ signal: AbortSignal.abort() }, { callerGone: () => Number(ms) }, cut);
    await new Promise((resolve) => cut.signal.addEventListener("abort", resolve, { once: true }));
    stop();
    return cut.signal.reason.message;
  },
  async NoKvBound(binding) {
    return (await new KvReplay({}, binding).read("k", 10))[1];
  },
  async Unanswered() {
    const exchange = { kind: ActionKind.Done, free() {} };
    const error = await drive(exchange, {
      handler() {},
      bindings: {},
      request: new Request("https://x.example/"),
      env: {},
    }).catch((e) => e);
    return error.message;
  },
  async DataPointNotWritten(_, reason) {
    const exchange = {
      kind: ActionKind.Metric,
      point: { blobs: [], doubles: [], indexes: [] },
      metricWritten: () => ActionKind.Done,
      free() {},
    };
    const env = { IDEMPOTENCY_METRICS: failingDataset(reason) };
    const bindings = { metrics: "IDEMPOTENCY_METRICS" };
    const [line] = await warnings(() =>
      drive(exchange, { handler() {}, bindings, request: new Request("https://x.example/"), env }).catch(() => {}),
    );
    return line;
  },
  async CountersNotSaved(consumer, reason) {
    return (await consumerWarnings(consumer, { counters: reason }))[0];
  },
  async ConsumerDataPointNotWritten(consumer, reason) {
    return (await consumerWarnings(consumer, { dataPoint: reason }))[0];
  },
};

/**
 * What a consumer named `consumer` warns of after a batch of one message,
 * its store calls answered by a CoordinatorCore, when saving its counters
 * or writing its data point fails with the reason `fails` gives.
 */
async function consumerWarnings(consumer, fails) {
  const coordinator = new CoordinatorCore();
  coordinator.load(undefined);
  let id = 0;
  const stub = {
    async call(bytes) {
      const call = ++id;
      const { replies } = coordinator.call(call, bytes, Date.now());
      return replies.find(([to]) => to.includes(call))[1];
    },
    async counters() {
      if (fails.counters) throw new Error(fails.counters);
    },
  };
  const env = {
    IDEMPOTENCY_DO: { idFromName: (name) => name, get: () => stub },
    ...(fails.dataPoint ? { IDEMPOTENCY_METRICS: failingDataset(fails.dataPoint) } : {}),
  };
  const message = { id: "m-1", body: "{}", timestamp: new Date(0), ack() {}, retry() {} };
  const queue = withQueueIdempotency(async () => {}, { name: consumer });
  return warnings(() => queue({ queue: "orders", messages: [message] }, env, {}));
}

test("the texts the hosts write in their own words: the JavaScript host's files write each line of tests/support/host-texts.tsv, as the core renders it for the Rust host", async () => {
  const rows = readFileSync(new URL("../support/host-texts.tsv", import.meta.url), "utf8")
    .split("\n")
    .filter((line) => line !== "" && !line.startsWith("#"))
    .map((line) => line.split("\t"));
  assert.deepEqual(rows.map(([kind]) => kind).sort(), Object.keys(WRITTEN).sort(), "a way to write each kind");
  for (const [kind, subject, error, text] of rows) {
    assert.equal(await WRITTEN[kind](subject, error), text, kind);
  }
});
