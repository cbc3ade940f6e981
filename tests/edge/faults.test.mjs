// Unknown outcomes, crashes and store failures (SPEC §3–4).
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { newKey, order, ordersOf, problemOf, sleep, start, tempDir, uniqueItem } from "./harness.mjs";

describe("unknown outcome with a short lease", () => {
  let worker;
  before(async () => {
    worker = await start({
      vars: {
        IDEMPOTENCY_LEASE_SECONDS: "2",
        IDEMPOTENCY_ORIGIN_TIMEOUT_SECONDS: "1",
        IDEMPOTENCY_IN_FLIGHT_WAIT_MS: "0",
      },
    });
  });
  after(() => worker?.dispose());

  test("Demo-Fault: drop → 502, 409 while the lease lives, then the retry reclaims as attempt 2", async () => {
    const item = uniqueItem("drop");
    const key = newKey();
    const dropped = await order(worker, { key, item, headers: { "demo-fault": "drop" } });
    assert.equal(dropped.status, 502);
    assert.equal((await problemOf(dropped)).code, "origin-unreachable");
    assert.equal((await ordersOf(worker, item)).count, 1, "the order was created");
    const early = await order(worker, { key, item });
    assert.equal(early.status, 409);
    assert.ok(["1", "2"].includes(early.headers.get("retry-after")), "the rest of the 2 s lease");
    assert.match((await problemOf(early)).detail, /outcome is unknown/);
    await sleep(2200);
    const retry = await order(worker, { key, item });
    assert.equal(retry.status, 201);
    assert.equal((await retry.json()).attempt, 2);
    const { count, orders } = await ordersOf(worker, item);
    assert.equal(count, 2);
    assert.deepEqual(
      orders.map((o) => o.attempt),
      [1, 2],
    );
  });
});

describe("an unknown outcome's 409 is honest", () => {
  let worker;
  before(async () => {
    worker = await start({
      vars: {
        IDEMPOTENCY_LEASE_SECONDS: "30",
        IDEMPOTENCY_ORIGIN_TIMEOUT_SECONDS: "1",
        IDEMPOTENCY_IN_FLIGHT_WAIT_MS: "0",
      },
    });
  });
  after(() => worker?.dispose());

  test("after Demo-Fault: drop, a duplicate is told the outcome is unknown and to come back when the lease ends", async () => {
    const item = uniqueItem("unknown");
    const key = newKey();
    const dropped = await order(worker, { key, item, headers: { "demo-fault": "drop" } });
    assert.equal(dropped.status, 502);
    const early = await order(worker, { key, item });
    assert.equal(early.status, 409);
    const retryAfter = Number(early.headers.get("retry-after"));
    assert.ok(retryAfter >= 28 && retryAfter <= 30, `Retry-After ${retryAfter}: the rest of the 30 s lease, not 1`);
    const problem = await problemOf(early);
    assert.equal(problem.code, "outcome-unknown");
    assert.match(problem.detail, /outcome is unknown/);
    // While an attempt still runs, a duplicate is told to come back in a second.
    const slowKey = newKey();
    const slowItem = uniqueItem("running");
    const slow = order(worker, { key: slowKey, item: slowItem, query: "?delay_ms=800" });
    await sleep(300);
    const running = await order(worker, { key: slowKey, item: slowItem, query: "?delay_ms=800" });
    assert.equal(running.status, 409);
    assert.equal(running.headers.get("retry-after"), "1");
    assert.doesNotMatch((await problemOf(running)).detail, /unknown/);
    assert.equal((await slow).status, 201);
  });
});

describe("a real crash", () => {
  test("stop the runtime mid-attempt, restart on the same state, the retry reclaims after the lease", async () => {
    const persist = tempDir();
    // No waiting: the duplicate must see the persisted lease as a 409.
    const vars = {
      IDEMPOTENCY_LEASE_SECONDS: "3",
      IDEMPOTENCY_ORIGIN_TIMEOUT_SECONDS: "2",
      IDEMPOTENCY_IN_FLIGHT_WAIT_MS: "0",
    };
    const item = uniqueItem("crash");
    const key = newKey();
    let worker = await start({ vars, persist });
    const query = "?delay_ms=1500"; // part of the request: every retry sends it too
    const inFlight = order(worker, { key, item, query }).catch((e) => e);
    await sleep(500); // begin has committed; the origin is waiting
    await worker.dispose(); // the runtime dies with the attempt in flight
    const lost = await inFlight;
    assert.ok(lost instanceof Error || lost.status >= 500, "the first caller got no answer");

    worker = await start({ vars, persist });
    try {
      const early = await order(worker, { key, item, query });
      assert.equal(early.status, 409, "the persisted lease still holds the key");
      await sleep(3200);
      const retry = await order(worker, { key, item, query });
      assert.equal(retry.status, 201);
      assert.equal((await retry.json()).attempt, 2);
      assert.equal((await ordersOf(worker, item)).count, 1, "the crashed attempt never created its order");
      const replay = await order(worker, { key, item, query });
      assert.equal(replay.headers.get("idempotent-replayed"), "true");
    } finally {
      await worker.dispose();
    }
  });
});

for (const mode of ["fail", "hang"]) {
  describe(`store ${mode === "fail" ? "down" : "hanging"}`, () => {
    let worker;
    before(async () => {
      worker = await start({ store: mode, vars: { IDEMPOTENCY_STORE_TIMEOUT_MS: "300" } });
    });
    after(() => worker?.dispose());

    test("→ 503 store-unavailable within the store timeout, and no order", async () => {
      const item = uniqueItem(`store-${mode}`);
      const started = Date.now();
      const res = await order(worker, { key: newKey(), item });
      const elapsed = Date.now() - started;
      assert.equal(res.status, 503);
      assert.equal(res.headers.get("retry-after"), "1");
      assert.equal((await problemOf(res)).code, "store-unavailable");
      assert.ok(elapsed < 300 + 1500, `answered in ${elapsed} ms`);
      assert.equal((await ordersOf(worker, item)).count, 0);
    });
  });
}

describe("store down with IDEMPOTENCY_FAIL_OPEN=true", () => {
  let worker;
  before(async () => {
    worker = await start({ store: "fail", vars: { IDEMPOTENCY_FAIL_OPEN: "true" } });
  });
  after(() => worker?.dispose());

  test("→ forwarded unprotected", async () => {
    const item = uniqueItem("failopen");
    const res = await order(worker, { key: newKey(), item, headers: { "idempotency-attempt": "7" } });
    assert.equal(res.status, 201);
    assert.equal((await res.json()).attempt, null, "no attempt number: the request is unprotected");
    assert.equal((await ordersOf(worker, item)).count, 1);
  });
});

describe("an origin whose body is still arriving when the time limit passes", () => {
  // The production proxy in front of an origin that sends its head at once
  // and the rest of its body 2.5 s later, with a 1 s origin limit and a 2 s
  // lease.
  let worker;
  const attempts = [];
  before(async () => {
    worker = await start({
      worker: "proxy",
      vars: {
        ORIGIN_URL: "http://origin.test",
        IDEMPOTENCY_LEASE_SECONDS: "2",
        IDEMPOTENCY_ORIGIN_TIMEOUT_SECONDS: "1",
        IDEMPOTENCY_IN_FLIGHT_WAIT_MS: "0",
      },
      outboundService: (request) => {
        attempts.push(request.headers.get("idempotency-attempt"));
        const text = new TextEncoder();
        const body = new ReadableStream({
          async start(controller) {
            controller.enqueue(text.encode('{"orderId":'));
            await sleep(2500);
            controller.enqueue(text.encode('"o1"}'));
            controller.close();
          },
        });
        return new Response(body, { status: 201, headers: { "content-type": "application/json" } });
      },
    });
  });
  after(() => worker?.dispose());

  test("→ 502 at the limit, not when the body ends; the lease is kept, then a retry reclaims as attempt 2", async () => {
    const key = newKey();
    const send = () =>
      worker.fetch("/api/orders", {
        method: "POST",
        headers: { "content-type": "application/json", "idempotency-key": key },
        body: JSON.stringify({ item: "slow-body" }),
      });
    const started = Date.now();
    const first = await send();
    const took = Date.now() - started;
    assert.equal(first.status, 502);
    assert.equal((await problemOf(first)).code, "origin-unreachable");
    assert.ok(took < 2000, `answered after ${took} ms: the limit covers the body`);
    const early = await send();
    assert.equal(early.status, 409, "the outcome is unknown: the lease holds the key");
    await sleep(started + 2200 - Date.now()); // the lease (2 s) is over
    const retry = await send();
    assert.equal(retry.status, 502);
    assert.deepEqual(attempts, ["1", "2"], "one call per attempt, numbered");
  });
});
