// IDEMPOTENCY_CONSISTENCY=kv: replay only, no Durable Object.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { newKey, order, ordersOf, problemOf, sleep, start, tiers, uniqueItem } from "./harness.mjs";

let worker;
before(async () => {
  // The coordinator binding is a failing stand-in: KV mode must not need it.
  worker = await start({ store: "fail", vars: { IDEMPOTENCY_CONSISTENCY: "kv" } });
});
after(() => worker?.dispose());

test("sequential duplicates replay from KV", async () => {
  const item = uniqueItem("kvmode");
  const key = newKey();
  const first = await order(worker, { key, item });
  assert.equal(first.status, 201);
  const body = await first.text();
  assert.ok(!tiers(first).includes("do"));
  let second;
  for (let i = 0; i < 40; i++) {
    second = await order(worker, { key, item });
    if (second.headers.get("idempotent-replayed") === "true") break;
    await sleep(50); // KV is written after the answer
  }
  assert.equal(second.status, 201);
  assert.equal(second.headers.get("idempotent-replayed"), "true");
  assert.equal(await second.text(), body);
  const third = await order(worker, { key, item });
  assert.equal(third.headers.get("idempotent-replayed"), "true");
  assert.equal((await ordersOf(worker, item)).count, 1);
  const reused = await order(worker, { key, item, quantity: 9 });
  assert.equal(reused.status, 422);
  assert.equal((await problemOf(reused)).code, "key-reused");
});
