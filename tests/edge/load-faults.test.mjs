// A small run of the load-and-faults check (make load runs it at 10,000
// keys): 300 keys × 5 clients while the origin fails at random, the store
// fails some calls and the runtime is stopped once mid-run.
import assert from "node:assert/strict";
import { test } from "node:test";
import { runLoad } from "./load.mjs";

test("300 keys × 5 under faults: one order per known outcome, extra orders only for unknown ones, with rising attempts, no 2xx lost", async () => {
  const r = await runLoad({
    keys: 300,
    duplicates: 5,
    concurrency: 32,
    faults: { unavailable: 0.05, error: 0.05, drop: 0.03 },
    storeFailRate: 0.05,
    kills: 1,
    vars: {
      IDEMPOTENCY_LEASE_SECONDS: "3",
      IDEMPOTENCY_ORIGIN_TIMEOUT_SECONDS: "2",
      IDEMPOTENCY_IN_FLIGHT_WAIT_MS: "0",
    },
    deadlineMs: 60_000,
  });
  const summary = { ...r, problems: r.problems.slice(0, 10) };
  assert.deepEqual(r.problems, [], JSON.stringify(summary));
  assert.equal(r.unsettled, 0, "every client got a final answer");
  assert.equal(r.lost2xx, 0);
  assert.equal(r.knownKeys + r.unknownKeys, 300);
  assert.ok(r.orders >= 300 && r.orders === 300 + r.extraOrders, JSON.stringify(summary));
  // Only the outcomes that are really unknown may run twice.
  if (r.unknownKeys === 0) assert.equal(r.extraOrders, 0);
  assert.deepEqual(
    Object.keys(r.otherFailures).filter((k) => !/origin-unreachable|store-unavailable|demo:unavailable/.test(k)),
    [],
  );
});
