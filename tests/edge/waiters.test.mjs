// Many duplicates waiting on one key (SPEC §3), on the production proxy in
// workerd in front of a real Node HTTP origin: a slow first attempt with
// eight or more duplicates parked in the key's Durable Object, ended in
// each way a key can be released or completed. Exactly one next attempt
// runs; every waiter ends with that attempt's answer (or an honest 409);
// the origin's own count of executions agrees. Each case runs several
// rounds in one test: the race it guards against hides from a single try.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { BASE, newKey, recordName, sleep, uniqueItem } from "./harness.mjs";
import { post, proxyBefore } from "./proxy-fixture.mjs";

const WAITERS = 8;
const ROUNDS = 3;
const TOKEN = "operator-secret";

/** A first attempt, then WAITERS duplicates once it is running: all answers. */
async function firstAndWaiters(worker, key, item, { afterParked } = {}) {
  const first = post(worker, key, item);
  await sleep(300);
  const waiters = Array.from({ length: WAITERS }, () => post(worker, key, item));
  await sleep(300);
  await afterParked?.();
  return { first: await first, waiters: await Promise.all(waiters) };
}

describe(`${WAITERS} duplicates waiting on one key`, () => {
  const live = proxyBefore(
    (item, attempt) => {
      if (item.startsWith("release") && attempt === 1) return { status: 503, delayMs: 1500 };
      if (item.startsWith("forced") && attempt === 1) return { status: 201, delayMs: 2500 };
      if (item.startsWith("complete") && attempt === 1) return { status: 201, delayMs: 1500 };
      if (item.startsWith("reset") && attempt === 1) return { reset: true, delayMs: 1500 };
      return { status: 201 };
    },
    { vars: { IDEMPOTENCY_ADMIN_TOKEN: TOKEN } },
  );

  test("the first attempt stores its answer: every waiter replays it, the origin ran once", async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const item = uniqueItem("complete");
      const { first, waiters } = await firstAndWaiters(live.worker, newKey(), item);
      assert.equal(first.status, 201);
      for (const w of waiters) {
        assert.deepEqual([w.status, w.replayed, w.text], [201, true, first.text], `round ${round}`);
      }
      assert.deepEqual(live.origin.runs(item), [1], `round ${round}: one execution`);
    }
  });

  test("a RELEASE_ON status (503) wakes them all: exactly one runs attempt 2, the rest replay its answer", async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const item = uniqueItem("release");
      const { first, waiters } = await firstAndWaiters(live.worker, newKey(), item);
      assert.equal(first.status, 503, "the first caller gets the origin's own answer");
      assert.deepEqual(live.origin.runs(item), [1, 2], `round ${round}: the 503, then one attempt 2`);
      const ran = waiters.filter((w) => !w.replayed);
      assert.equal(ran.length, 1, `round ${round}: one waiter ran attempt 2`);
      assert.equal(JSON.parse(ran[0].text).attempt, 2);
      for (const w of waiters) assert.deepEqual([w.status, w.text], [201, ran[0].text], `round ${round}`);
    }
  });

  test("an unknown outcome (the origin's connection breaks): every waiter gets the honest 409, nobody runs again", async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const item = uniqueItem("reset");
      const { first, waiters } = await firstAndWaiters(live.worker, newKey(), item);
      assert.equal(first.status, 502);
      for (const w of waiters) {
        assert.equal(w.status, 409, `round ${round}`);
        assert.match(JSON.parse(w.text).detail, /outcome is unknown/);
        assert.ok(Number(w.res.headers.get("retry-after")) > 100, "Retry-After: the rest of the lease");
      }
      assert.deepEqual(live.origin.runs(item), [1], `round ${round}: one execution`);
    }
  });

  test("an operator's forced release: exactly one waiter runs attempt 2, the rest replay it; attempt 1's late answer changes nothing", async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const item = uniqueItem("forced");
      const key = newKey();
      const record = recordName(new URL(BASE).hostname, undefined, key);
      const { first, waiters } = await firstAndWaiters(live.worker, key, item, {
        afterParked: async () => {
          const res = await live.worker.fetch(`/.well-known/oncekey/records/${record}/release?force=true`, {
            method: "POST",
            headers: { authorization: `Bearer ${TOKEN}` },
          });
          assert.equal(res.status, 200, await res.clone().text());
        },
      });
      assert.deepEqual(
        live.origin.runs(item),
        [1, 2],
        `round ${round}: attempt 1 and one attempt 2 — the risk force takes`,
      );
      const ran = waiters.filter((w) => !w.replayed);
      assert.equal(ran.length, 1, `round ${round}: one waiter ran attempt 2`);
      for (const w of waiters) assert.deepEqual([w.status, w.text], [201, ran[0].text], `round ${round}`);
      assert.equal(first.status, 201, "attempt 1's caller still gets its own answer");
      const again = await post(live.worker, key, item);
      assert.deepEqual([again.replayed, again.text], [true, ran[0].text], "attempt 2's answer is the one kept");
    }
  });
});

describe("more duplicates than an object parks", () => {
  const live = proxyBefore(() => ({ status: 201, delayMs: 1500 }));

  test("past the bound (64 per key) a duplicate gets 409 key-in-flight at once; the parked ones replay", async () => {
    const item = uniqueItem("storm");
    const key = newKey();
    const first = post(live.worker, key, item);
    await sleep(300);
    const parked = Array.from({ length: 64 }, () => post(live.worker, key, item));
    await sleep(300);
    const startedAt = Date.now();
    const over = await post(live.worker, key, item);
    assert.equal(over.status, 409);
    assert.ok(Date.now() - startedAt < 1000, "answered at once, not after the wait");
    assert.equal(JSON.parse(over.text).type, "urn:oncekey:problem:key-in-flight");
    const answers = await Promise.all(parked);
    assert.equal((await first).status, 201);
    assert.ok(
      answers.every((a) => a.status === 201 && a.replayed),
      "every parked duplicate replayed",
    );
    assert.deepEqual(live.origin.runs(item), [1]);
  });
});

describe("a lease that ends with duplicates waiting (attempt 1's finish never lands)", () => {
  const live = proxyBefore((item, attempt) => ({ status: 201, delayMs: attempt === 1 ? 500 : 0 }), {
    store: "lose-attempt-1-finish",
    // The origin limit leaves the lease room for a 1 s finish try.
    vars: { IDEMPOTENCY_LEASE_SECONDS: "3", IDEMPOTENCY_ORIGIN_TIMEOUT_SECONDS: "1" },
  });

  test("at the lease's end exactly one waiter reclaims as attempt 2; the rest replay its answer", async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const item = uniqueItem("lease");
      const { first, waiters } = await firstAndWaiters(live.worker, newKey(), item);
      assert.equal(first.status, 201, "attempt 1's caller got its answer; only its finish was lost");
      assert.deepEqual(live.origin.runs(item), [1, 2], `round ${round}: one reclaim`);
      const ran = waiters.filter((w) => !w.replayed);
      assert.equal(ran.length, 1, `round ${round}: one waiter ran attempt 2`);
      assert.equal(JSON.parse(ran[0].text).attempt, 2);
      for (const w of waiters) assert.deepEqual([w.status, w.text], [201, ran[0].text], `round ${round}`);
    }
  });
});

describe("a finish that lands in the last second of the lease, with duplicates waiting", () => {
  // Lease 3 s, origin limit unset: it leaves the lease room for finish
  // (1.5 s for the origin, 1.5 s for a finish try). Every store call
  // reaches the object 800 ms late, so a finish sent when the origin
  // answers near its limit lands in the lease's last second.
  const live = proxyBefore((item, attempt) => ({ status: 201, delayMs: attempt === 1 ? 1400 : 0 }), {
    store: "slow",
    storeDelayMs: 800,
    vars: { IDEMPOTENCY_LEASE_SECONDS: "3", IDEMPOTENCY_ORIGIN_TIMEOUT_SECONDS: undefined },
  });

  test("it lands: every waiter replays attempt 1's answer and nobody runs attempt 2", async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const item = uniqueItem("last-second");
      const { first, waiters } = await firstAndWaiters(live.worker, newKey(), item);
      assert.equal(first.status, 201);
      for (const w of waiters)
        assert.deepEqual([w.status, w.replayed, w.text], [201, true, first.text], `round ${round}`);
      assert.deepEqual(live.origin.runs(item), [1], `round ${round}: one execution`);
    }
  });
});
