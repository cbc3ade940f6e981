// The answer goes first (SPEC §4): a first execution answers the caller as
// soon as the origin has answered, and records the outcome (`finish`) after,
// under waitUntil. On the production proxy, both hosts, in front of a real
// Node HTTP origin that counts its executions, with every `finish` held on
// its way to the key's object. Ordering, not timing, is what is asserted:
// the record is still running when the caller already has its answer.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { BASE, newKey, recordName, uniqueItem, until } from "./harness.mjs";
import { post, proxyBefore } from "./proxy-fixture.mjs";

const TOKEN = "operator-secret";
const DUPLICATES = 8;
const ROUNDS = 3;
const HOLD_MS = 1500;

/** What the admin path says of `key`'s record right now (its `kind`, `attempt`, ...). */
async function recordOf(worker, key) {
  const record = recordName(new URL(BASE).hostname, undefined, key);
  const res = await worker.fetch(`/.well-known/oncekey/records/${record}`, {
    headers: { authorization: `Bearer ${TOKEN}` },
  });
  assert.equal(res.status, 200, `inspect answered ${res.status}`);
  return res.json();
}

/** The decision log line of `key`'s execution, once written. */
function executionLine(worker, key) {
  const record = recordName(new URL(BASE).hostname, undefined, key);
  return until(
    () => worker.decisions().find((line) => line.record === record && line.oncekey.startsWith("execute")),
    (line) => line !== undefined,
    { what: "the execution's log line" },
  );
}

describe(`every finish held ${HOLD_MS} ms on its way to the object`, () => {
  const live = proxyBefore(() => ({ status: 201 }), {
    store: "hold-finish",
    storeDelayMs: HOLD_MS,
    metrics: true,
    vars: { IDEMPOTENCY_ADMIN_TOKEN: TOKEN },
  });

  test("the caller's answer does not wait for finish; duplicates sent right after it wait and replay it; one execution; the KV copy is written", async () => {
    const kv = await live.worker.mf.getKVNamespace("IDEMPOTENCY_KV", "oncekey");
    for (let round = 0; round < ROUNDS; round++) {
      const item = uniqueItem("answer-first");
      const key = newKey();
      const first = await post(live.worker, key, item);
      assert.equal(first.status, 201);
      assert.match(first.res.headers.get("server-timing"), /finish;desc="after-answer"/);
      // The caller has its answer, and the attempt is still running: finish has not landed.
      const running = await recordOf(live.worker, key);
      assert.deepEqual(
        [running.kind, running.attempt, running.outcomeUnknown],
        ["in-flight", 1, false],
        `round ${round}: ${JSON.stringify(running)}`,
      );
      const duplicates = await Promise.all(Array.from({ length: DUPLICATES }, () => post(live.worker, key, item)));
      for (const d of duplicates)
        assert.deepEqual([d.status, d.replayed, d.text], [201, true, first.text], `round ${round}`);
      assert.deepEqual(live.origin.runs(item), [1], `round ${round}: one execution`);
      // The log line comes after finish, and says how it ended and how long it took.
      const line = await executionLine(live.worker, key);
      assert.equal(line.finish, "stored");
      assert.ok(line.after_answer_ms >= HOLD_MS - 50, `finish took ${line.after_answer_ms} ms after the answer`);
      const record = recordName(new URL(BASE).hostname, undefined, key);
      await until(
        () => kv.get(record, "arrayBuffer"),
        (copy) => copy !== null,
        { what: "the KV copy" },
      );
      assert.equal((await recordOf(live.worker, key)).kind, "completed");
    }
  });
});

describe("every finish of attempt 1 lost after the answer", () => {
  // Lease 3 s, origin limit 1 s: room for one finish try after the origin.
  const live = proxyBefore(() => ({ status: 201 }), {
    store: "lose-attempt-1-finish",
    metrics: true,
    vars: { IDEMPOTENCY_ADMIN_TOKEN: TOKEN, IDEMPOTENCY_LEASE_SECONDS: "3", IDEMPOTENCY_ORIGIN_TIMEOUT_SECONDS: "1" },
  });

  test("the caller has the origin's answer; the attempt stays running, not unknown, until its lease ends; then a retry runs attempt 2", async () => {
    const item = uniqueItem("finish-lost");
    const key = newKey();
    const first = await post(live.worker, key, item);
    assert.equal(first.status, 201, "the answer went before finish failed");
    const line = await executionLine(live.worker, key);
    assert.equal(line.finish, "store-failed", "given up after its repeats");
    assert.ok(line.error, "and says why");
    assert.equal(line.status, 201);
    const left = await recordOf(live.worker, key);
    assert.deepEqual([left.kind, left.attempt, left.outcomeUnknown], ["in-flight", 1, false], JSON.stringify(left));
    const retry = await until(
      () => post(live.worker, key, item),
      (r) => r.status === 201,
      { timeoutMs: 10_000, everyMs: 500, what: "the reclaim" },
    );
    assert.equal(JSON.parse(retry.text).attempt, 2);
    assert.deepEqual(live.origin.runs(item), [1, 2]);
  });
});
