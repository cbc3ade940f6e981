// IDEMPOTENCY_KV_REPLAY (SPEC §4): `fallback` (the default) reads the KV
// copies only when the coordinator fails, `read-first` also reads them before
// it, `off` writes none; and IDEMPOTENCY_KV_COPY: a copy is written once a
// key is asked for again (`on-retry`, the default), or at completion
// (`always`).
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import {
  newKey,
  order,
  ordersOf,
  problemOf,
  recordName,
  sleep,
  start,
  tempDir,
  tiers,
  uniqueItem,
  until,
} from "./harness.mjs";

const HOST = "oncekey.test";

/** The bytes of the record's KV copy, or null. */
async function copyOf(worker, key) {
  const kv = await worker.mf.getKVNamespace("IDEMPOTENCY_KV");
  return kv.get(recordName(HOST, undefined, key), "arrayBuffer");
}

/** Waits for the copy written after the answer (off the critical path). */
function copyWritten(worker, key) {
  return until(
    () => copyOf(worker, key),
    (copy) => copy !== null,
    { what: "the KV copy" },
  );
}

describe("fallback (the default), coordinator up", () => {
  let worker;
  before(async () => {
    worker = await start();
  });
  after(() => worker?.dispose());

  test("a first execution touches no KV; its first replay comes from the object and writes the copy, once", async () => {
    const item = uniqueItem("fallback");
    const key = newKey();
    const first = await order(worker, { key, item });
    assert.equal(first.status, 201);
    assert.deepEqual(tiers(first), ["do", "origin"]);
    // SPEC §4: most keys are never retried, so no copy at completion.
    await sleep(300);
    assert.equal(await copyOf(worker, key), null, "no KV write for a key not asked for again");
    const name = recordName(HOST, undefined, key);
    const calls = await worker.calls(name);
    const replay = await order(worker, { key, item });
    assert.equal(replay.headers.get("idempotent-replayed"), "true");
    assert.deepEqual(tiers(replay), ["do"], "a live object is asked, never KV");
    assert.equal(await worker.calls(name), calls + 1);
    await copyWritten(worker, key);
  });

  test("KV writes are paid for retries only: 10 first executions, 3 of them retried (one 3 times) → 3 copies", async () => {
    const item = uniqueItem("pay-for-retries");
    const keys = Array.from({ length: 10 }, () => newKey());
    for (const key of keys) assert.equal((await order(worker, { key, item })).status, 201);
    for (const [i, times] of [
      [0, 1],
      [4, 3],
      [9, 1],
    ]) {
      for (let n = 0; n < times; n++) {
        assert.equal((await order(worker, { key: keys[i], item })).headers.get("idempotent-replayed"), "true");
      }
    }
    for (const i of [0, 4, 9]) await copyWritten(worker, keys[i]);
    await sleep(300);
    const copies = await Promise.all(keys.map((key) => copyOf(worker, key)));
    assert.deepEqual(
      copies.map((copy, i) => (copy === null ? null : i)).filter((i) => i !== null),
      [0, 4, 9],
      "a copy for each retried key, none for the rest",
    );
  });
});

describe("fallback, coordinator down", () => {
  // A first run with the real coordinator leaves an answer and its KV copy
  // in `persist`; each later run binds a failing or hanging stand-in.
  const persist = tempDir();
  const item = uniqueItem("fallback-down");
  const key = newKey();
  let body;

  before(async () => {
    const worker = await start({ persist });
    try {
      const first = await order(worker, { key, item });
      assert.equal(first.status, 201);
      body = await first.text();
      // Its first retry writes the copy (none is written at completion).
      assert.equal((await order(worker, { key, item })).headers.get("idempotent-replayed"), "true");
      await copyWritten(worker, key);
    } finally {
      await worker.dispose();
    }
  });

  for (const store of ["fail", "hang"]) {
    test(`store ${store}: the answer is replayed from its copy; anything else → 503`, async () => {
      const worker = await start({ store, persist, vars: { IDEMPOTENCY_STORE_TIMEOUT_MS: "300" } });
      try {
        const replay = await order(worker, { key, item });
        assert.equal(replay.status, 201);
        assert.equal(replay.headers.get("idempotent-replayed"), "true");
        assert.equal(await replay.text(), body);
        assert.deepEqual(tiers(replay), ["kv", "do"]);
        // The same key with another request: the copy does not answer for it.
        const other = await order(worker, { key, item, quantity: 2 });
        assert.equal(other.status, 503);
        assert.equal((await problemOf(other)).code, "store-unavailable");
        // A key with no copy.
        const fresh = await order(worker, { key: newKey(), item });
        assert.equal(fresh.status, 503);
        assert.equal((await problemOf(fresh)).code, "store-unavailable");
        assert.equal((await ordersOf(worker, item)).count, 1);
      } finally {
        await worker.dispose();
      }
    });
  }

  test("with IDEMPOTENCY_FAIL_OPEN=true the copy still answers first", async () => {
    const worker = await start({ store: "fail", persist, vars: { IDEMPOTENCY_FAIL_OPEN: "true" } });
    try {
      const replay = await order(worker, { key, item });
      assert.equal(replay.headers.get("idempotent-replayed"), "true");
      assert.equal(await replay.text(), body);
      const fresh = await order(worker, { key: newKey(), item });
      assert.equal(fresh.status, 201, "no copy: forwarded unprotected");
      assert.equal((await ordersOf(worker, item)).count, 2);
    } finally {
      await worker.dispose();
    }
  });

  test("off: the copy is not read → 503", async () => {
    const worker = await start({ store: "fail", persist, vars: { IDEMPOTENCY_KV_REPLAY: "off" } });
    try {
      assert.notEqual(await copyOf(worker, key), null, "the copy is there");
      const res = await order(worker, { key, item });
      assert.equal(res.status, 503);
      assert.equal((await problemOf(res)).code, "store-unavailable");
      assert.deepEqual(tiers(res), ["do"]);
    } finally {
      await worker.dispose();
    }
  });
});

describe("read-first", () => {
  let worker;
  before(async () => {
    worker = await start({ vars: { IDEMPOTENCY_KV_REPLAY: "read-first" } });
  });
  after(() => worker?.dispose());

  test("after completion a replay is served from KV without touching the Durable Object", async () => {
    const item = uniqueItem("kvtier");
    const key = newKey();
    const first = await order(worker, { key, item });
    assert.equal(first.status, 201);
    assert.deepEqual(tiers(first), ["kv", "do", "origin"]);
    const name = recordName(HOST, undefined, key);
    const callsAfterFirst = await worker.calls(name);
    assert.equal(callsAfterFirst, 2, "begin and finish");
    let replay;
    for (let i = 0; i < 50; i++) {
      // the KV copy is written just after the answer
      replay = await order(worker, { key, item });
      if (tiers(replay).join() === "kv") break;
      await sleep(50);
    }
    assert.equal(replay.headers.get("idempotent-replayed"), "true");
    assert.deepEqual(tiers(replay), ["kv"]);
    const callsNow = await worker.calls(name);
    const viaObject = (await worker.calls(name)) - callsNow; // reading the count is not a store call
    assert.equal(viaObject, 0);
    const again = await order(worker, { key, item });
    assert.deepEqual(tiers(again), ["kv"]);
    assert.equal(await worker.calls(name), callsNow, "the replay did not reach the object");
  });
});

describe("IDEMPOTENCY_KV_COPY=always", () => {
  let worker;
  before(async () => {
    worker = await start({ vars: { IDEMPOTENCY_KV_COPY: "always" } });
  });
  after(() => worker?.dispose());

  test("every answer's copy is written at completion, before any retry, and replays write no other", async () => {
    const item = uniqueItem("kv-always");
    const key = newKey();
    assert.equal((await order(worker, { key, item })).status, 201);
    const copy = Buffer.from(await copyWritten(worker, key));
    assert.equal((await order(worker, { key, item })).headers.get("idempotent-replayed"), "true");
    await sleep(300);
    assert.deepEqual(Buffer.from(await copyOf(worker, key)), copy, "the same copy, not written again");
  });
});

describe("off", () => {
  let worker;
  before(async () => {
    worker = await start({ vars: { IDEMPOTENCY_KV_REPLAY: "off" } });
  });
  after(() => worker?.dispose());

  test("nothing is read from or written to KV", async () => {
    const item = uniqueItem("kv-off");
    const key = newKey();
    const first = await order(worker, { key, item });
    assert.equal(first.status, 201);
    assert.deepEqual(tiers(first), ["do", "origin"]);
    const replay = await order(worker, { key, item });
    assert.equal(replay.headers.get("idempotent-replayed"), "true");
    assert.deepEqual(tiers(replay), ["do"]);
    await sleep(1000); // longer than a copy takes to land under `fallback`
    const kv = await worker.mf.getKVNamespace("IDEMPOTENCY_KV");
    assert.deepEqual((await kv.list()).keys, []);
  });
});

describe("a value of the old boolean form", () => {
  for (const value of ["true", "false", "Fallback"]) {
    test(`IDEMPOTENCY_KV_REPLAY=${value} → 500 misconfigured naming it`, async () => {
      const worker = await start({ vars: { IDEMPOTENCY_KV_REPLAY: value } });
      try {
        const res = await order(worker, { key: newKey(), item: uniqueItem("kv-bad") });
        assert.equal(res.status, 500);
        const problem = await problemOf(res);
        assert.equal(problem.code, "misconfigured");
        assert.ok(problem.detail.includes("misconfigured: IDEMPOTENCY_KV_REPLAY: "), problem.detail);
      } finally {
        await worker.dispose();
      }
    });
  }
});
