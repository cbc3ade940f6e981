// 200 keys × 10 concurrent duplicates → exactly 200 orders, and every
// duplicate, having waited for its first attempt (SPEC §3), gets its answer.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { newKey, order, ordersOf, start, uniqueItem } from "./harness.mjs";

let worker;
before(async () => {
  worker = await start();
});
after(() => worker?.dispose());

test("200 keys × 10 concurrent duplicates → exactly 200 orders; every duplicate waits and gets the stored answer", async () => {
  const item = uniqueItem("concurrent");
  const keys = Array.from({ length: 200 }, () => newKey());
  const answers = await Promise.all(
    keys.flatMap((key) =>
      Array.from({ length: 10 }, async () => {
        const res = await order(worker, { key, item, query: "?delay_ms=50" });
        return { key, status: res.status, retryAfter: res.headers.get("retry-after"), body: await res.json() };
      }),
    ),
  );
  const byKey = new Map();
  for (const a of answers) {
    assert.ok(a.status < 500, `no 5xx: got ${a.status} ${JSON.stringify(a.body)}`);
    assert.equal(
      a.status,
      201,
      `a duplicate waits out a 50 ms attempt (10 s allowed): got ${a.status} ${JSON.stringify(a.body)}`,
    );
    const seen = byKey.get(a.key);
    if (seen) assert.equal(a.body.orderId, seen, "every success for a key is the same stored answer");
    else byKey.set(a.key, a.body.orderId);
  }
  const { count, orders } = await ordersOf(worker, item);
  assert.equal(count, 200);
  assert.equal(new Set(orders.map((o) => o.orderId)).size, 200);
  for (const [, orderId] of byKey) assert.ok(orders.some((o) => o.orderId === orderId));
});
