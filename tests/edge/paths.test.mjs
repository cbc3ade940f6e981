// IDEMPOTENCY_PATHS and IDEMPOTENCY_REQUIRED_PATHS (SPEC §1, §6) against the
// demo, whose origin takes POST /api/orders (and answers 404 elsewhere).
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { newKey, order, ordersOf, problemOf, start, tiers, uniqueItem } from "./harness.mjs";

/** Starts the demo with `vars`, for the tests of one describe block. */
function withWorker(vars) {
  const ref = {};
  before(async () => {
    ref.worker = await start({ vars });
  });
  after(() => ref.worker?.dispose());
  return ref;
}

describe("a path matched by a prefix pattern ending in /*", () => {
  // `/api/orders/*` also matches `/api/orders` itself.
  const w = withWorker({ IDEMPOTENCY_PATHS: "/api/payments, /api/orders/*" });

  test("is covered: a keyed request runs once, then is replayed", async () => {
    const item = uniqueItem("covered");
    const key = newKey();
    const first = await order(w.worker, { key, item });
    assert.equal(first.status, 201);
    assert.equal(first.headers.get("idempotent-replayed"), null);
    assert.ok(tiers(first).includes("do"), "the coordinator decided");
    const again = await order(w.worker, { key, item });
    assert.equal(again.status, 201);
    assert.equal(again.headers.get("idempotent-replayed"), "true");
    assert.equal(await again.text(), await first.text());
    assert.equal((await ordersOf(w.worker, item)).count, 1);
  });

  test("without a key it passes through (keys are not required)", async () => {
    const item = uniqueItem("covered-nokey");
    const res = await order(w.worker, { key: null, item });
    assert.equal(res.status, 201);
    assert.equal((await ordersOf(w.worker, item)).count, 1);
  });
});

describe("a path IDEMPOTENCY_PATHS does not match", () => {
  // Neither an exact path that is a prefix of it nor another prefix matches.
  const w = withWorker({ IDEMPOTENCY_PATHS: "/api/order,/api/payments/*,/api/orders/x" });

  test("passes through with a key: two requests, two orders, no replay", async () => {
    const item = uniqueItem("uncovered");
    const key = newKey();
    for (let i = 0; i < 2; i++) {
      const res = await order(w.worker, { key, item });
      assert.equal(res.status, 201);
      assert.equal(res.headers.get("idempotent-replayed"), null);
      assert.deepEqual(tiers(res), ["origin"], "the layer only forwarded it");
    }
    assert.equal((await ordersOf(w.worker, item)).count, 2);
  });

  test("passes through untouched without a key, or with a malformed one", async () => {
    const item = uniqueItem("uncovered-nokey");
    assert.equal((await order(w.worker, { key: null, item })).status, 201);
    assert.equal((await order(w.worker, { key: "a b", item })).status, 201, "the key is not even read");
    assert.equal((await ordersOf(w.worker, item)).count, 2);
  });
});

describe("a path in IDEMPOTENCY_REQUIRED_PATHS", () => {
  // Required paths are covered even where IDEMPOTENCY_PATHS does not list them.
  const w = withWorker({ IDEMPOTENCY_PATHS: "/api/payments/*", IDEMPOTENCY_REQUIRED_PATHS: "/api/orders" });

  test("without a key → 400 missing-key, and the origin is not called", async () => {
    const item = uniqueItem("required");
    const res = await order(w.worker, { key: null, item });
    assert.equal(res.status, 400);
    assert.equal((await problemOf(res)).code, "missing-key");
    assert.equal((await ordersOf(w.worker, item)).count, 0);
  });

  test("with a key → protected: runs once, then is replayed", async () => {
    const item = uniqueItem("required-keyed");
    const key = newKey();
    assert.equal((await order(w.worker, { key, item })).status, 201);
    const again = await order(w.worker, { key, item });
    assert.equal(again.headers.get("idempotent-replayed"), "true");
    assert.equal((await ordersOf(w.worker, item)).count, 1);
  });

  test("every spelling of the path is the path: no variant reaches a looser rule (SPEC §13)", async () => {
    const item = uniqueItem("spelled");
    for (const path of ["/API/Orders", "/api/orders/", "/api//orders", "/api/%6Frders", "/api/orders;x"]) {
      const res = await w.worker.fetch(path, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ item, quantity: 1, amountCents: 100 }),
      });
      assert.equal(res.status, 400, path);
      assert.equal((await problemOf(res)).code, "missing-key", path);
    }
    assert.equal((await ordersOf(w.worker, item)).count, 0);
  });

  test("other paths and uncovered methods need no key", async () => {
    const elsewhere = await w.worker.fetch("/api/elsewhere", { method: "POST", body: "{}" });
    assert.equal(elsewhere.status, 404, "the origin's own answer");
    assert.equal((await problemOf(elsewhere)).code, "urn:oncekey:demo:not-found");
    const list = await w.worker.fetch(`/api/orders?item=${uniqueItem("get")}`);
    assert.equal(list.status, 200);
  });
});

describe("a bad path pattern", () => {
  const cases = [
    ["IDEMPOTENCY_PATHS", ""],
    ["IDEMPOTENCY_PATHS", "api/orders"],
    ["IDEMPOTENCY_PATHS", "/api/*/orders"],
    ["IDEMPOTENCY_PATHS", "/api/orders?x=1"],
    ["IDEMPOTENCY_PATHS", "/api/orders#x"],
    ["IDEMPOTENCY_PATHS", "/api/my orders"],
    ["IDEMPOTENCY_PATHS", "/api/orders,,/api/payments"],
    ["IDEMPOTENCY_REQUIRED_PATHS", "api/orders"],
    ["IDEMPOTENCY_REQUIRED_PATHS", "/api/orders,"],
    ["IDEMPOTENCY_REQUIRED_PATHS", "/api/**"],
  ];
  for (const [variable, value] of cases) {
    test(`${variable}=${JSON.stringify(value)} → 500 misconfigured naming it`, async () => {
      const worker = await start({ vars: { [variable]: value } });
      try {
        const res = await order(worker, { key: newKey(), item: uniqueItem("badpath") });
        assert.equal(res.status, 500);
        const problem = await problemOf(res);
        assert.equal(problem.code, "misconfigured");
        assert.ok(problem.detail.includes(`misconfigured: ${variable}: `), problem.detail);
      } finally {
        await worker.dispose();
      }
    });
  }
});
