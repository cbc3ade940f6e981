// Operations (SPEC §12) through the demo worker in workerd: the admin paths
// (a record's state, releasing an attempt) with IDEMPOTENCY_ADMIN_TOKEN set,
// the same paths passing through to the origin without it, and one
// Analytics Engine data point per decision.
//
// Miniflare 4's own Analytics Engine dataset (`analyticsEngineDatasets`)
// drops every data point and has no way to read them back, so the harness
// binds a test double as IDEMPOTENCY_METRICS in its place (a wrapped
// binding, like Miniflare's, printing each point on stdout).
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, before, describe, test } from "node:test";
import { dataPointOf } from "../support/data-point.mjs";
import { BASE, newKey, order, ordersOf, problemOf, recordName, sleep, start, uniqueItem, until } from "./harness.mjs";

const TOKEN = "secret";
const HOST = new URL(BASE).hostname;
const bearer = (token = TOKEN) => ({ authorization: `Bearer ${token}` });
const recordPath = (record) => `/.well-known/oncekey/records/${record}`;

/** GET the record's state, as an operator with the token. */
async function inspect(worker, record, headers = bearer()) {
  return worker.fetch(recordPath(record), { headers });
}

/** POST …/release, as an operator with the token. */
async function release(worker, record, headers = bearer()) {
  return worker.fetch(`${recordPath(record)}/release`, { method: "POST", headers });
}

/** A state answer: 200 JSON, never cached, its fields checked against SPEC §12. */
async function stateOf(res) {
  assert.equal(res.status, 200, await res.clone().text());
  assert.equal(res.headers.get("content-type"), "application/json");
  assert.equal(res.headers.get("cache-control"), "no-store");
  const state = await res.json();
  const allowed = { "in-flight": ["leaseExpiresAt", "outcomeUnknown"], completed: ["status"], released: [] }[
    state.kind
  ];
  assert.ok(allowed, `kind ${state.kind}`);
  assert.deepEqual(Object.keys(state).sort(), ["attempt", "expiresAt", "kind", "record", ...allowed].sort());
  assert.ok(Date.parse(state.expiresAt) > Date.now(), `expiresAt ${state.expiresAt}`);
  return state;
}

describe("admin paths with IDEMPOTENCY_ADMIN_TOKEN set", () => {
  let worker;
  before(async () => {
    worker = await start({
      metrics: true,
      vars: { IDEMPOTENCY_ADMIN_TOKEN: TOKEN, IDEMPOTENCY_IN_FLIGHT_WAIT_MS: "0" },
    });
  });
  after(() => worker?.dispose());

  test("a completed record: its status, attempt and expiry — never its body or headers; the log line names it in full", async () => {
    const key = newKey();
    const item = uniqueItem("completed");
    const created = await order(worker, { key, item });
    assert.equal(created.status, 201);
    const answer = await created.json();
    const record = recordName(HOST, undefined, key);
    const res = await inspect(worker, record);
    const text = await res.clone().text();
    for (const secret of [answer.orderId, answer.chargeId, key, item, "set-cookie", "content-type"]) {
      assert.ok(!text.includes(secret), `the state holds no ${secret}`);
    }
    const state = await stateOf(res);
    assert.deepEqual(
      { ...state, expiresAt: undefined },
      { record, kind: "completed", attempt: 1, status: 201, expiresAt: undefined },
    );
    const ttl = Date.parse(state.expiresAt) - Date.now();
    assert.ok(ttl > 86_000_000 && ttl <= 86_400_000, `expires with the 24 h TTL: ${ttl} ms`);
    const logged = await until(
      () => worker.decisions(),
      (lines) => lines.some((l) => l.oncekey === "execute" && l.record === record),
      {
        what: "the execute log line naming the record",
      },
    );
    assert.ok(
      logged.every((l) => l.record === null || /^[0-9a-f]{64}$/.test(l.record)),
      "every log line names the record in full",
    );
  });

  test("an attempt in flight: its lease, outcome running", async () => {
    const key = newKey();
    const item = uniqueItem("running");
    const slow = order(worker, { key, item, query: "?delay_ms=1500" });
    await sleep(400);
    const state = await stateOf(await inspect(worker, recordName(HOST, undefined, key)));
    assert.equal(state.kind, "in-flight");
    assert.equal(state.attempt, 1);
    assert.equal(state.outcomeUnknown, false);
    const lease = Date.parse(state.leaseExpiresAt) - Date.now();
    assert.ok(lease > 110_000 && lease <= 120_000, `the 120 s lease: ${lease} ms`);
    assert.equal((await slow).status, 201);
  });

  test("an unknown outcome is shown as such; the operator releases it and the next retry runs as attempt 2", async () => {
    const key = newKey();
    const item = uniqueItem("unknown");
    const record = recordName(HOST, undefined, key);
    assert.equal((await order(worker, { key, item, headers: { "demo-fault": "drop" } })).status, 502);
    const unknown = await stateOf(await inspect(worker, record));
    assert.deepEqual([unknown.kind, unknown.attempt, unknown.outcomeUnknown], ["in-flight", 1, true]);
    const held = await order(worker, { key, item });
    assert.equal(held.status, 409, "held until the lease ends");
    assert.match((await problemOf(held)).detail, /outcome is unknown/);

    // The operator checked with the payment provider: settled by hand.
    const released = await stateOf(await release(worker, record));
    assert.deepEqual([released.kind, released.attempt, released.record], ["released", 1, record]);
    assert.equal((await stateOf(await inspect(worker, record))).kind, "released");
    const retry = await order(worker, { key, item });
    assert.equal(retry.status, 201, "no wait for the lease");
    assert.equal((await retry.json()).attempt, 2);
    assert.deepEqual(
      (await ordersOf(worker, item)).orders.map((o) => o.attempt),
      [1, 2],
    );
    assert.deepEqual((await stateOf(await inspect(worker, record))).attempt, 2);
  });

  test("a running attempt is not released (409 attempt-running) unless forced with ?force=true", async () => {
    const key = newKey();
    const item = uniqueItem("running");
    const record = recordName(HOST, undefined, key);
    const slow = order(worker, { key, item, query: "?delay_ms=1500" });
    await sleep(300);
    const refused = await release(worker, record);
    assert.equal(refused.status, 409);
    const problem = await problemOf(refused);
    assert.equal(problem.code, "attempt-running");
    assert.match(problem.detail, /Attempt 1 is running.*force=true/);
    const running = await stateOf(await inspect(worker, record));
    assert.deepEqual(
      [running.kind, running.attempt, running.outcomeUnknown],
      ["in-flight", 1, false],
      "nothing written",
    );
    const forced = await worker.fetch(`${recordPath(record)}/release?force=true`, {
      method: "POST",
      headers: bearer(),
    });
    assert.deepEqual([(await stateOf(forced)).kind], ["released"]);
    assert.equal((await slow).status, 201, "attempt 1's caller still gets its answer");
    const next = await order(worker, { key, item });
    assert.equal((await next.json()).attempt, 2, "attempt 1's late finish found the key released and wrote nothing");
  });

  test("a record released by a 503 (Demo-Fault: unavailable) reads as released; releasing it again is refused", async () => {
    const key = newKey();
    const item = uniqueItem("unavailable");
    const record = recordName(HOST, undefined, key);
    assert.equal((await order(worker, { key, item, headers: { "demo-fault": "unavailable" } })).status, 503);
    const state = await stateOf(await inspect(worker, record));
    assert.deepEqual([state.kind, state.attempt], ["released", 1]);
    const again = await release(worker, record);
    assert.equal(again.status, 409);
    const problem = await problemOf(again);
    assert.equal(problem.code, "not-in-flight");
    assert.match(problem.detail, /already released.*attempt 2/);
  });

  test("release is refused for a completed record: 409 saying so, and the answer still replays", async () => {
    const key = newKey();
    const item = uniqueItem("done");
    const record = recordName(HOST, undefined, key);
    assert.equal((await order(worker, { key, item })).status, 201);
    const refused = await release(worker, record);
    assert.equal(refused.status, 409);
    const problem = await problemOf(refused);
    assert.equal(problem.code, "not-in-flight");
    assert.match(problem.detail, /completed.*201/);
    const replay = await order(worker, { key, item });
    assert.equal(replay.headers.get("idempotent-replayed"), "true");
    assert.equal((await ordersOf(worker, item)).count, 1);
  });

  test("no record → 404; a wrong or missing token → 401 and nothing about the record; a malformed name → 404; another method → 405", async () => {
    const absent = recordName(HOST, "Bearer nobody", randomUUID());
    const none = await inspect(worker, absent);
    assert.equal(none.status, 404);
    assert.equal((await problemOf(none)).code, "record-not-found");
    const noneReleased = await release(worker, absent);
    assert.equal((await problemOf(noneReleased)).code, "record-not-found");
    for (const headers of [
      {},
      bearer("wrong"),
      bearer(`${TOKEN}x`),
      { authorization: `Basic ${TOKEN}` },
      { authorization: TOKEN },
    ]) {
      for (const res of [await inspect(worker, absent, headers), await release(worker, absent, headers)]) {
        assert.equal(res.status, 401, JSON.stringify(headers));
        assert.equal(res.headers.get("www-authenticate"), "Bearer");
        const problem = await problemOf(res);
        assert.equal(problem.code, "unauthorized");
        assert.ok(!JSON.stringify(problem).includes(absent));
      }
    }
    for (const bad of [absent.toUpperCase(), absent.slice(1), `${absent}/delete`, "nope"]) {
      const res = await inspect(worker, bad);
      assert.equal(res.status, 404, bad);
      assert.equal((await problemOf(res)).code, "record-not-found");
    }
    const wrongMethod = await worker.fetch(recordPath(absent), { method: "DELETE", headers: bearer() });
    assert.equal(wrongMethod.status, 405);
    assert.equal(wrongMethod.headers.get("allow"), "GET");
    assert.equal((await problemOf(wrongMethod)).code, "method-not-allowed");
    const lines = worker.lines().join("\n");
    assert.ok(!lines.includes(`Bearer ${TOKEN}`) && !lines.includes(`"${TOKEN}"`), "the token is never logged");
  });

  test("the admin token on any other path is refused, never forwarded: it never leaves the layer (SPEC §12)", async () => {
    for (const path of ["/.well-known/oncekey/record/x", "/.well-known/oncekey", "/api/orders"]) {
      const res = await worker.fetch(path, { headers: { authorization: `Bearer ${TOKEN}` } });
      assert.equal(res.status, 404, path);
      const problem = await problemOf(res);
      assert.equal(problem.code, "record-not-found", path);
      assert.match(problem.detail, /no admin path/, path);
    }
    // In any form: another scheme, a tab, the bare token, the query.
    for (const [path, authorization] of [
      ["/api/orders", `Token ${TOKEN}`],
      ["/api/orders", `Bearer\t${TOKEN}`],
      ["/api/orders", TOKEN],
      [`/api/orders?token=${TOKEN}`, undefined],
    ]) {
      const res = await worker.fetch(path, { headers: authorization ? { authorization } : {} });
      assert.equal(res.status, 404, `${path} ${authorization}`);
      assert.match((await problemOf(res)).detail, /no admin path/);
    }
    // Any spelling of an admin path is one.
    const spelled = await worker.fetch(`/.WELL-KNOWN/oncekey//records/${"ab".repeat(32)}/`, {
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    assert.equal(spelled.status, 404, "no such record: the admin path was read");
    assert.doesNotMatch((await problemOf(spelled)).detail, /no admin path/);
    // A caller's own token is the origin's business.
    const own = await worker.fetch("/api/orders?item=x", { headers: { authorization: "Bearer a-user" } });
    assert.equal(own.status, 200);
  });

  test("metrics: one data point per decision, its fields the log line's (outcome, tier, finish, record; attempt, status, durations, wait, finish after the answer)", async () => {
    const before = worker.decisions().length;
    const key = newKey();
    const item = uniqueItem("metrics");
    assert.equal((await order(worker, { key, item })).status, 201);
    assert.equal((await order(worker, { key, item })).status, 201);
    assert.equal((await order(worker, { key, item: `${item}-other` })).status, 422);
    assert.equal((await order(worker, { key: "a,b", item })).status, 400);
    await ordersOf(worker, item); // a pass-through: no decision, no point
    const lines = await until(
      () => worker.decisions(),
      (all) => all.length >= before + 4,
      { what: "four log lines" },
    );
    const points = await until(
      () => worker.dataPoints(),
      (all) => all.length >= lines.length,
      { what: "a data point per log line" },
    );
    assert.equal(points.length, lines.length, "exactly one point per decision, in the same order");
    for (const [i, line] of lines.entries()) {
      assert.deepEqual(points[i], dataPointOf(line), JSON.stringify(line));
    }
    // This test's points: those of its record, and its bad key's (which has
    // none). A line of the test before may still arrive after `before`.
    const record = recordName(HOST, undefined, key);
    const mine = points
      .slice(before)
      .filter((p) => p.blobs[3] === record || p.blobs[0] === "invalid-key")
      .map((p) => [p.blobs[0], p.blobs[2], p.doubles[1]]);
    // The execution logs once its finish has landed (SPEC §4), which the
    // replay waited for: those two may come in either order.
    const expected = [
      ["execute", "stored", 201],
      ["replay", "", 201],
      ["key-reused", "", 422],
      ["invalid-key", "", 400],
    ];
    assert.deepEqual(mine.sort(), expected.sort());
  });

  test("metrics: a queue consumer batch writes one data point with its counts", async () => {
    const customerId = `metrics-${randomUUID().slice(0, 8)}`;
    const orderId = randomUUID();
    const body = {
      type: "OrderPlaced",
      eventId: orderId,
      orderId,
      customerId,
      amountCents: 700,
      publishedAt: new Date().toISOString(),
    };
    const result = await worker.deliver([
      { id: randomUUID(), body },
      { id: randomUUID(), body: { ...body, publishedAt: "later" } },
    ]);
    assert.equal(result.acked.size, 2);
    const batches = await until(
      () =>
        worker.dataPoints().filter((p) => p.blobs[0] === "consumer-batch" && p.doubles[0] === 1 && p.doubles[1] === 1),
      (found) => found.length >= 1,
      { what: "the batch's data point" },
    );
    assert.deepEqual(batches.at(-1), {
      blobs: ["consumer-batch", "loyalty"],
      doubles: [1, 1, 0, 0, 0, 0],
      indexes: ["consumer-batch"],
    });
  });
});

describe("admin paths without IDEMPOTENCY_ADMIN_TOKEN", () => {
  let worker;
  before(async () => {
    worker = await start();
  });
  after(() => worker?.dispose());

  test("they pass through to the origin like any other path: the demo origin's own 404, not oncekey's", async () => {
    const key = newKey();
    assert.equal((await order(worker, { key, item: uniqueItem("off") })).status, 201);
    const record = recordName(HOST, undefined, key);
    for (const res of [
      await inspect(worker, record),
      await release(worker, record),
      await inspect(worker, record, {}),
    ]) {
      assert.equal(res.status, 404);
      const body = await res.json();
      assert.equal(body.type, "urn:oncekey:demo:not-found", "the origin answered");
      assert.equal(res.headers.get("server-timing")?.includes("origin"), true);
    }
  });
});
