// IDEMPOTENCY_LOG_SAMPLE (SPEC §5) on the production proxy in workerd, in
// front of a counting Node origin: routine decisions (a stored first
// execution, a replay) are sampled after the decision; refusals, conflicts,
// releases and failures are always logged; data points never sampled.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { newKey, problemOf, start, until } from "./harness.mjs";
import { countingOrigin, post } from "./proxy-fixture.mjs";
import { serve } from "./origin/server.mjs";

/** The proxy with `vars` and the metrics double, before a counting origin (503 for items named `busy-…`). */
function sampledProxy(vars) {
  const live = {};
  let server;
  before(async () => {
    live.origin = countingOrigin((item) => ({ status: item.startsWith("busy") ? 503 : 201 }));
    server = await serve(live.origin.handle);
    live.worker = await start({ worker: "proxy", metrics: true, vars: { ORIGIN_URL: server.url, ...vars } });
  });
  after(async () => {
    await live.worker?.dispose();
    await server?.close();
  });
  return live;
}

/** 10 first executions and their 10 replays, 10 at a time. */
async function executionsAndReplays(worker, tag) {
  const keys = Array.from({ length: 10 }, () => newKey());
  const firsts = await Promise.all(keys.map((key, i) => post(worker, key, `${tag}-${i}`)));
  const replays = await Promise.all(keys.map((key, i) => post(worker, key, `${tag}-${i}`)));
  assert.deepEqual(
    firsts.map((r) => [r.status, r.replayed]),
    keys.map(() => [201, false]),
  );
  assert.deepEqual(
    replays.map((r) => [r.status, r.replayed]),
    keys.map(() => [201, true]),
  );
  return keys;
}

describe("IDEMPOTENCY_LOG_SAMPLE=0", () => {
  const live = sampledProxy({ IDEMPOTENCY_LOG_SAMPLE: "0" });

  test("10 first executions and 10 replays write no line; every refusal, release and conflict does; every data point is written", async () => {
    const { worker, origin } = live;
    await executionsAndReplays(worker, "quiet");
    // The unusual ones: a bad key, a key reused for another body, a release.
    const reusedKey = newKey();
    assert.equal((await post(worker, reusedKey, "reused-a")).status, 201);
    const reused = await post(worker, reusedKey, "reused-b");
    assert.equal(reused.status, 422);
    const bad = await worker.fetch("/v1/orders", {
      method: "POST",
      headers: { "content-type": "application/json", "idempotency-key": "a,b" },
      body: "{}",
    });
    assert.equal(bad.status, 400);
    assert.equal((await post(worker, newKey(), "busy-1")).status, 503);
    // 20 + 1 (reused-a) routine decisions, 3 unusual ones: a point each.
    const points = await until(
      () => worker.dataPoints(),
      (all) => all.length >= 24,
      { what: "24 data points" },
    );
    assert.equal(points.length, 24, "one data point per decision, none sampled");
    assert.equal(points.filter((p) => p.blobs[0] === "execute").length, 12);
    assert.equal(points.filter((p) => p.blobs[0] === "replay").length, 10);
    const lines = worker.decisions();
    assert.deepEqual(lines.map((l) => [l.oncekey, l.finish ?? null]).sort(), [
      ["execute", "released"],
      ["invalid-key", null],
      ["key-reused", null],
    ]);
    assert.equal(origin.runs("quiet-0").length, 1, "sampling changes nothing but the line");
  });
});

describe("IDEMPOTENCY_LOG_SAMPLE unset (every line)", () => {
  const live = sampledProxy({});

  test("each of 10 executions and 10 replays writes its line", async () => {
    await executionsAndReplays(live.worker, "loud");
    const lines = await until(
      () => live.worker.decisions(),
      (all) => all.length >= 20,
      { what: "20 log lines" },
    );
    assert.deepEqual(
      ["execute", "replay"].map((o) => lines.filter((l) => l.oncekey === o).length),
      [10, 10],
    );
  });
});

describe("IDEMPOTENCY_LOG_SAMPLE=0.25", () => {
  const live = sampledProxy({ IDEMPOTENCY_LOG_SAMPLE: "0.25" });

  test("a share of the routine lines, drawn per request", async () => {
    const { worker } = live;
    for (let round = 0; round < 4; round++) await executionsAndReplays(worker, `share-${round}`);
    await until(
      () => worker.dataPoints(),
      (all) => all.length >= 80,
      { what: "80 data points" },
    );
    const logged = worker.decisions().length;
    // 80 routine decisions at 1 in 4: 20 expected; below 5 or above 40 is
    // under one in a million (binomial tails).
    assert.ok(logged >= 5 && logged <= 40, `${logged} of 80 logged`);
  });
});

test("a share that is not a number from 0 to 1 is misconfigured, named, never quoted", async () => {
  const server = await serve(() => new Response("never", { status: 500 }));
  const worker = await start({
    worker: "proxy",
    quiet: true,
    vars: { ORIGIN_URL: server.url, IDEMPOTENCY_LOG_SAMPLE: "1.5" },
  });
  try {
    const res = await worker.fetch("/v1/orders", { method: "POST", body: "{}" });
    assert.equal(res.status, 500);
    const problem = await problemOf(res);
    assert.equal(problem.type, "urn:oncekey:problem:misconfigured");
    assert.match(problem.detail, /IDEMPOTENCY_LOG_SAMPLE/);
    assert.doesNotMatch(problem.detail, /1\.5/);
  } finally {
    await worker.dispose();
    await server.close();
  }
});

test("a queue consumer at 0: a message run once and its duplicate write no line; a reused key does", async () => {
  // Issue 53: the consumer's lines follow IDEMPOTENCY_LOG_SAMPLE too (the
  // demo's consumer, keyed by order id).
  const worker = await start({
    vars: { DEMO_LOYALTY_GUARD: "false", DEMO_EVENT_KEY: "order-id", IDEMPOTENCY_LOG_SAMPLE: "0" },
    metrics: true,
  });
  try {
    const orderId = crypto.randomUUID();
    const body = {
      type: "OrderPlaced",
      eventId: orderId,
      orderId,
      customerId: `quiet-${orderId.slice(0, 8)}`,
      amountCents: 800,
    };
    const [m1, m2] = [crypto.randomUUID(), crypto.randomUUID()];
    assert.ok((await worker.deliver([{ id: m1, body }])).acked.has(m1), "run once");
    assert.ok((await worker.deliver([{ id: m1, body, attempts: 2 }])).acked.has(m1), "its duplicate");
    const other = { ...body, eventId: crypto.randomUUID(), amountCents: 90_000 };
    assert.ok((await worker.deliver([{ id: m2, body: other }])).retried.has(m2), "the key reused: retried");
    const events = await until(
      () => worker.lines().filter((line) => line.includes('"oncekey":"event"')),
      (found) => found.length >= 1,
      { what: "the key-reused line" },
    );
    assert.equal(events.length, 1, events.join("\n"));
    assert.match(events[0], /"delivery":"key-reused"/);
  } finally {
    await worker.dispose();
  }
});
