// The queue consumer wrapper and the demo's loyalty flow (SPEC §7), in
// workerd: orders published to Miniflare's local queue, or messages handed
// to the worker's queue() handler directly where a test needs to choose
// message ids, redeliver, or kill the runtime mid-handler.
import assert from "node:assert/strict";
import { createHash, randomUUID } from "node:crypto";
import { after, before, describe, test } from "node:test";
import { sleep, start, tempDir, until } from "./harness.mjs";

const customer = (name) => `${name}-${randomUUID().slice(0, 8)}`;

/** An OrderPlaced body as the demo publishes it. */
function orderPlaced(customerId, amountCents, extra = {}) {
  const orderId = randomUUID();
  return {
    type: "OrderPlaced",
    eventId: orderId,
    orderId,
    customerId,
    amountCents,
    publishedAt: new Date().toISOString(),
    ...extra,
  };
}

async function loyalty(worker, customerId) {
  const res = await worker.fetch(`/api/loyalty/${encodeURIComponent(customerId)}`);
  assert.equal(res.status, 200);
  return res.json();
}

async function stats(worker) {
  const res = await worker.fetch("/api/consumer/stats");
  assert.equal(res.status, 200);
  return res.json();
}

/** Counter changes since `before`. */
function delta(now, then) {
  return Object.fromEntries(
    Object.keys(now)
      .filter((k) => typeof now[k] === "number")
      .map((k) => [k, now[k] - then[k]]),
  );
}

/** POST /api/orders for a customer. */
function placeOrder(worker, { key, customerId, amountCents, fault }) {
  const headers = { "content-type": "application/json", "idempotency-key": key };
  if (fault) headers["demo-fault"] = fault;
  return worker.fetch("/api/orders", {
    method: "POST",
    headers,
    body: JSON.stringify({ item: "tea", quantity: 1, amountCents, customerId }),
  });
}

/** The event record's name (core::event_record_name), written independently. */
function eventRecord(consumer, key) {
  const hash = createHash("sha256");
  for (const part of ["oncekey/event-record/1", consumer, key]) {
    const bytes = Buffer.from(part);
    const len = Buffer.alloc(8);
    len.writeBigUInt64BE(BigInt(bytes.length));
    hash.update(len);
    hash.update(bytes);
  }
  return hash.digest("hex");
}

describe("the wrapper alone (handler-side check off)", () => {
  let hashed;
  let byId;
  before(async () => {
    hashed = await start({ vars: { DEMO_LOYALTY_GUARD: "false", DEMO_EVENT_KEY: "content-hash" } });
    byId = await start({ vars: { DEMO_LOYALTY_GUARD: "false", DEMO_EVENT_KEY: "message-id" } });
  });
  after(async () => {
    await hashed?.dispose();
    await byId?.dispose();
  });

  test("the same message delivered twice → points awarded once, the second acknowledged unrun", async () => {
    for (const worker of [hashed, byId]) {
      const c = customer("twice");
      const body = orderPlaced(c, 1299);
      const before = await stats(worker);
      const first = await worker.deliver([{ id: "m-twice", body }]);
      assert.ok(first.acked.has("m-twice"), "first delivery acknowledged");
      const second = await worker.deliver([{ id: "m-twice", body, attempts: 2 }]);
      assert.ok(second.acked.has("m-twice"), "redelivery acknowledged");
      assert.equal(second.retried.size, 0);
      const account = await loyalty(worker, c);
      assert.equal(account.points, 12);
      assert.equal(account.orders.length, 1);
      const d = delta(await stats(worker), before);
      assert.equal(d.firstRuns, 1);
      assert.equal(d.duplicatesSkipped, 1);
    }
  });

  test("different message ids, same content: content-hash → once; message-id → twice (by design)", async () => {
    const run = async (worker) => {
      const c = customer("same-content");
      const body = orderPlaced(c, 500);
      const later = { ...body, publishedAt: new Date(Date.now() + 1000).toISOString() }; // an ignored field
      const a = await worker.deliver([{ id: randomUUID(), body }]);
      const b = await worker.deliver([{ id: randomUUID(), body: later }]);
      assert.equal(a.acked.size + b.acked.size, 2, "both acknowledged");
      return loyalty(worker, c);
    };
    const once = await run(hashed);
    assert.equal(once.points, 5);
    assert.equal(once.orders.length, 1);
    const twice = await run(byId);
    assert.equal(twice.points, 10, "two message ids are two events to the message-id strategy");
    assert.equal(twice.orders.length, 2);
  });

  test("a string body and the object it spells are two events to the content hash, never one acked as the other", async () => {
    const c = customer("string-object");
    const body = orderPlaced(c, 700);
    const [object, text] = [randomUUID(), randomUUID()];
    const before = await stats(hashed);
    const first = await hashed.deliver([{ id: object, body }]);
    // A producer that sends the event as JSON text: the same characters
    // the object's JSON has, so a hash of the text alone would call it a copy.
    const second = await hashed.deliver([{ id: text, body: JSON.stringify(body) }]);
    assert.ok(first.acked.has(object) && second.acked.has(text), "both acknowledged");
    const d = delta(await stats(hashed), before);
    assert.deepEqual([d.firstRuns, d.duplicatesSkipped], [2, 0], "each ran: two events");
    assert.equal((await loyalty(hashed, c)).points, 14, "the handler read both (guard off): 7 points twice");
  });

  test("Demo-Fault: redeliver publishes the event twice; the content-hash key skips the copy", async () => {
    const c = customer("redeliver");
    const before = await stats(hashed);
    const res = await placeOrder(hashed, { key: randomUUID(), customerId: c, amountCents: 4250, fault: "redeliver" });
    assert.equal(res.status, 201);
    await until(
      () => stats(hashed),
      (s) => s.firstRuns + s.duplicatesSkipped - before.firstRuns - before.duplicatesSkipped >= 2,
      {
        what: "both copies consumed",
      },
    );
    const account = await loyalty(hashed, c);
    assert.equal(account.points, 42);
    assert.equal(account.orders.length, 1);
    assert.equal(delta(await stats(hashed), before).duplicatesSkipped, 1);
  });

  test("without the handler's own check, a handler that fails after its write awards twice", async () => {
    const c = customer("fail-unguarded");
    const body = orderPlaced(c, 700, { demoFault: "consumer-fail" });
    const first = await byId.deliver([{ id: "m-fail", body }]);
    assert.ok(!first.acked.has("m-fail"));
    assert.equal(first.retried.get("m-fail"), 1, "released and retried after 1 s");
    const second = await byId.deliver([{ id: "m-fail", body, attempts: 2 }]);
    assert.ok(second.acked.has("m-fail"));
    assert.equal((await loyalty(byId, c)).points, 14, "the wrapper cannot undo the first run's write");
  });
});

describe('a key function (DEMO_EVENT_KEY=order-id: "OrderPlaced:" + orderId), handler-side check off', () => {
  let worker;
  before(async () => {
    worker = await start({ vars: { DEMO_LOYALTY_GUARD: "false", DEMO_EVENT_KEY: "order-id" }, metrics: true });
  });
  after(() => worker?.dispose());

  test("a republish of the same body under the function's key → the handler runs once, the copy acked unrun", async () => {
    const c = customer("key-fn-same");
    const body = orderPlaced(c, 800);
    // Another publish of the same event: a new message id, the same content
    // (its members in another order: the same JSON to the record).
    const republished = Object.fromEntries(Object.entries(body).reverse());
    const [m1, m2] = [randomUUID(), randomUUID()];
    const before = await stats(worker);
    const first = await worker.deliver([{ id: m1, body }]);
    const second = await worker.deliver([{ id: m2, body: republished }]);
    assert.ok(first.acked.has(m1), "the first is acknowledged");
    assert.ok(second.acked.has(m2), "the second is acknowledged unrun");
    assert.equal(second.retried.size, 0);
    const account = await loyalty(worker, c);
    assert.equal(account.points, 8, "without the handler's own check a second run would show 16");
    assert.equal(account.orders.length, 1);
    const d = delta(await stats(worker), before);
    assert.deepEqual([d.firstRuns, d.duplicatesSkipped, d.keysReused], [1, 1, 0]);
    // Both deliveries went to the record the function's key names: begin,
    // finish, then the duplicate's begin; none to a message id's record.
    assert.equal(await worker.calls(eventRecord("loyalty", `OrderPlaced:${body.orderId}`)), 3);
    for (const id of [m1, m2]) assert.equal(await worker.calls(eventRecord("loyalty", id)), 0);
  });

  test("the function's key reused for other content → retried until it dead-letters, logged and counted, never acked", async () => {
    const c = customer("key-fn-reused");
    const body = orderPlaced(c, 800);
    // The same order id with other content: a new eventId and amount. As
    // HTTP answers a key reused for another body 422, this is no duplicate.
    const other = { ...body, eventId: randomUUID(), amountCents: 90_000 };
    const [m1, m2] = [randomUUID(), randomUUID()];
    const before = await stats(worker);
    assert.ok((await worker.deliver([{ id: m1, body }])).acked.has(m1));
    for (let attempt = 1; attempt <= 3; attempt++) {
      const again = await worker.deliver([{ id: m2, body: other, attempts: attempt }]);
      assert.ok(again.retried.has(m2) && !again.acked.has(m2), `attempt ${attempt}: retried, not acked`);
    }
    const account = await loyalty(worker, c);
    assert.equal(account.points, 8, "the handler never ran for the other content");
    const d = delta(await stats(worker), before);
    assert.deepEqual([d.firstRuns, d.duplicatesSkipped, d.keysReused], [1, 0, 3]);
    const lines = await until(
      () => worker.lines().filter((line) => line.includes('"delivery":"key-reused"') && line.includes(m2)),
      (found) => found.length >= 3,
      { what: "three key-reused lines" },
    );
    assert.equal(lines.length, 3, worker.lines().join("\n"));
    assert.match(lines[0], /other content/);
  });

  test("different order ids → the handler runs twice, once under each key", async () => {
    const c = customer("key-fn-different");
    const a = orderPlaced(c, 800);
    const b = { ...a, orderId: randomUUID() }; // same eventId and publishedAt: only the business key differs
    const [m1, m2] = [randomUUID(), randomUUID()];
    const before = await stats(worker);
    const first = await worker.deliver([{ id: m1, body: a }]);
    const second = await worker.deliver([{ id: m2, body: b }]);
    assert.ok(first.acked.has(m1) && second.acked.has(m2), "both acknowledged");
    const account = await loyalty(worker, c);
    assert.equal(account.points, 16);
    assert.deepEqual(account.orders.map((o) => o.orderId).sort(), [a.orderId, b.orderId].sort());
    const d = delta(await stats(worker), before);
    assert.deepEqual([d.firstRuns, d.duplicatesSkipped], [2, 0]);
    for (const order of [a, b])
      assert.equal(await worker.calls(eventRecord("loyalty", `OrderPlaced:${order.orderId}`)), 2);
  });
});

// SPEC §11: an event is never taken for another. A key function that gives
// no key for an event (a missing field: undefined, or ""), or throws, leaves
// that message alone unacked and retried, naming it; the rest of the batch
// runs, and two keyless events are never merged into one.
describe("a key function that gives no key for some events", () => {
  const modes = process.env.ONCEKEY_HOST === "js" ? ["order-id-raw", "order-id-throws"] : ["order-id-raw"];
  for (const mode of modes) {
    test(`DEMO_EVENT_KEY=${mode}: keyless events are retried alone, never acked as duplicates; the rest runs`, async () => {
      const worker = await start({ vars: { DEMO_LOYALTY_GUARD: "false", DEMO_EVENT_KEY: mode }, metrics: true });
      try {
        const c = customer(`keyless-${mode}`);
        const good = orderPlaced(c, 500);
        const keyless = () => {
          const { orderId: _, ...rest } = orderPlaced(c, 700);
          return rest;
        };
        const [k1, k2, g] = [randomUUID(), randomUUID(), randomUUID()];
        for (let round = 0; round < 3; round++) {
          const batch =
            round === 0
              ? [
                  { id: k1, body: keyless() },
                  { id: g, body: good },
                  { id: k2, body: keyless() },
                ]
              : [
                  { id: k1, body: keyless() },
                  { id: k2, body: keyless() },
                ];
          const result = await worker.deliver(batch);
          assert.ok(result.retried.has(k1) && result.retried.has(k2), `round ${round}: both keyless retried`);
          assert.ok(!result.acked.has(k1) && !result.acked.has(k2), `round ${round}: neither acked`);
          if (round === 0) assert.ok(result.acked.has(g), "the keyed event of the same batch runs and is acked");
        }
        const account = await loyalty(worker, c);
        assert.equal(account.points, 5, "only the keyed event ran");
        const lines = worker.lines().filter((line) => line.includes('"delivery":"no-key"'));
        assert.ok(
          lines.some((line) => line.includes(`message ${k1}`)),
          "the log line names the message",
        );
        assert.ok(lines.every((line) => line.includes('"settle":"retry"')));
      } finally {
        await worker.dispose();
      }
    });
  }
});

// SPEC §11: a batch's messages run concurrently up to the bound the user
// sets; one key's deliveries never run at once.
describe("DEMO_QUEUE_CONCURRENCY=4: a batch's messages run at once, one key's never", () => {
  test("4 slow messages of 4 keys overlap; two copies of one event in the batch run once", async () => {
    const worker = await start({ vars: { DEMO_LOYALTY_GUARD: "false", DEMO_QUEUE_CONCURRENCY: "4" } });
    try {
      const c = customer("concurrent");
      // consumer-slow: each handler run takes 1.5 s.
      const events = Array.from({ length: 4 }, () => orderPlaced(c, 100, { demoFault: "consumer-slow" }));
      const copy = { ...events[0], publishedAt: new Date(Date.now() + 1).toISOString() };
      const batch = [...events.map((body) => ({ id: randomUUID(), body })), { id: randomUUID(), body: copy }];
      const startedAt = Date.now();
      const result = await worker.deliver(batch);
      const took = Date.now() - startedAt;
      for (const { id } of batch) assert.ok(result.acked.has(id), `${id} acknowledged`);
      // One after another they would take 6 s; at once, about 1.5 s. The copy
      // waits for its key's first delivery and is acked as its duplicate.
      assert.ok(took < 4_500, `the batch took ${took} ms`);
      const account = await loyalty(worker, c);
      assert.equal(account.points, 4, "each event once; the copy of the first was a duplicate");
      assert.equal(account.orders.length, 4);
    } finally {
      await worker.dispose();
    }
  });
});

describe("a consumer's configuration, checked alike by both hosts", () => {
  test("a typo'd variable (IDEMPOTENCY_TTL): nothing runs, nothing is acknowledged", async () => {
    const worker = await start({ vars: { DEMO_LOYALTY_GUARD: "false", IDEMPOTENCY_TTL: "60" }, metrics: true });
    try {
      const id = randomUUID();
      const result = await worker.deliver([{ id, body: orderPlaced(customer("typo"), 400) }]);
      assert.ok(!result.acked.has(id), "not acknowledged");
      const retried = result.retried.has(id) || result.retryAll || result.outcome !== "ok";
      assert.ok(retried && !result.ackAll, `left to the queue's retries: ${JSON.stringify(result)}`);
      // The consumer's misconfiguration goes to stderr; no event line means no delivery began.
      assert.deepEqual(
        worker.lines().filter((line) => line.includes('"oncekey":"event"')),
        [],
        "no message was delivered to the handler",
      );
    } finally {
      await worker.dispose();
    }
  });
});

describe("a consumer in a worker whose webhook route names an IDEMPOTENCY_ secret", () => {
  test("the secret is the worker's own, not a typo'd variable: the event runs once and is acknowledged", async () => {
    const routes = [{ match: "POST /hooks/github", webhook: "github", secret: "IDEMPOTENCY_GITHUB_SECRET" }];
    const worker = await start({
      vars: {
        DEMO_LOYALTY_GUARD: "false",
        IDEMPOTENCY_ROUTES: JSON.stringify(routes),
        IDEMPOTENCY_GITHUB_SECRET: "It's a Secret to Everybody",
      },
      metrics: true,
    });
    try {
      const id = randomUUID();
      const c = customer("routed");
      const result = await worker.deliver([{ id, body: orderPlaced(c, 400) }]);
      assert.ok(result.acked.has(id) || result.ackAll, `acknowledged: ${JSON.stringify(result)}`);
      assert.equal((await loyalty(worker, c)).points, 4);
    } finally {
      await worker.dispose();
    }
  });
});

describe("a content hash of bodies JSON cannot stand for (DEMO_EVENT_KEY=content-hash)", () => {
  test("a Map, a Set, a BigInt, NaN, an infinity, an undefined member, a RegExp and an Error are retried alone, never hashed alike and acked as one event", async () => {
    const worker = await start({ vars: { DEMO_LOYALTY_GUARD: "false" }, metrics: true });
    try {
      const c = customer("unhashable");
      const good = orderPlaced(c, 300);
      // Each would read as another body in JSON: {} for the collections,
      // null for NaN and the infinities, no member for undefined (null in
      // an array), {} for a RegExp and an Error (SPEC §11).
      const bodies = [
        new Map([["orderId", "a"]]),
        new Map([["orderId", "b"]]),
        new Set([1]),
        { n: 10n },
        { orderId: "o", points: Number.NaN },
        { orderId: "o", points: Number.POSITIVE_INFINITY },
        { orderId: "o", note: undefined },
        { orderId: "o", tags: [undefined] },
        { orderId: "o", match: /x/ },
        { orderId: "o", error: new Error("boom") },
      ];
      const ids = bodies.map(() => randomUUID());
      const g = randomUUID();
      const result = await worker.deliver([...bodies.map((body, i) => ({ id: ids[i], body })), { id: g, body: good }]);
      for (const id of ids) {
        assert.ok(result.retried.has(id) && !result.acked.has(id), `${id}: retried, not acked`);
      }
      assert.ok(result.acked.has(g), "the rest of the batch runs");
      assert.equal((await loyalty(worker, c)).points, 3);
      const lines = worker.lines().filter((line) => line.includes('"delivery":"no-key"'));
      assert.equal(lines.length, bodies.length, lines.join("\n"));
      assert.ok(
        lines.every((line) => line.includes("cannot be hashed")),
        lines.join("\n"),
      );
    } finally {
      await worker.dispose();
    }
  });
});

describe("with the handler-side check (the shipped demo)", () => {
  let worker;
  let byId;
  before(async () => {
    worker = await start({ metrics: true });
    byId = await start({ vars: { DEMO_EVENT_KEY: "message-id" } });
  });
  after(async () => {
    await worker?.dispose();
    await byId?.dispose();
  });

  test("the handler fails after writing the points → released, retried by the queue, points once", async () => {
    const c = customer("fail");
    const before = await stats(worker);
    const res = await placeOrder(worker, {
      key: randomUUID(),
      customerId: c,
      amountCents: 1999,
      fault: "consumer-fail",
    });
    assert.equal(res.status, 201);
    // The queue's retry runs the handler again, as attempt 2: a rerun, not a first run.
    const rerun = (line) => line.includes('"delivery":"run"') && line.includes('"attempt":2');
    const ran = worker.lines().filter(rerun).length;
    await until(
      async () => worker.lines().filter(rerun).length,
      (n) => n > ran,
      { what: "the retry to run" },
    );
    const d = delta(await stats(worker), before);
    assert.equal(d.releases, 1, "the failed run released its key");
    assert.equal(d.firstRuns, 1, "a retried message's run is no first run");
    const account = await loyalty(worker, c);
    assert.equal(account.points, 19);
    assert.equal(account.orders.length, 1);
    assert.equal(account.orders[0].attempt, 1, "the points came from the first run, the retry changed nothing");
  });

  test("a message whose key is in flight in another consumer is retried later, never acknowledged", async () => {
    const c = customer("in-flight");
    const id = randomUUID();
    const body = orderPlaced(c, 300, { demoFault: "consumer-slow" });
    const before = await stats(byId);
    const holder = byId.deliver([{ id, body }]);
    const record = eventRecord("loyalty", id);
    await until(
      () => byId.calls(record),
      (n) => n >= 1,
      { what: "the first consumer's begin" },
    );

    const other = await byId.deliver([{ id, body }]);
    assert.equal(other.outcome, "ok");
    assert.ok(!other.acked.has(id), "not acknowledged while the key is held");
    assert.ok(!other.ackAll);
    assert.ok(other.retried.get(id) >= 1, `retried with a delay, got ${other.retried.get(id)}`);
    assert.equal((await loyalty(byId, c)).points, 0, "the second consumer did not run the handler");

    assert.ok((await holder).acked.has(id), "the holder finishes and acknowledges");
    const later = await byId.deliver([{ id, body }]);
    assert.ok(later.acked.has(id), "the retried copy is now a duplicate");
    assert.equal((await loyalty(byId, c)).points, 3);
    const d = delta(await stats(byId), before);
    assert.deepEqual([d.firstRuns, d.inFlightConflicts, d.duplicatesSkipped], [1, 1, 1]);
  });

  test("many orders through the HTTP layer, duplicate submissions and redeliveries → points exactly the sum", async () => {
    const c = customer("many");
    const before = await stats(worker);
    const orders = Array.from({ length: 24 }, (_, i) => ({
      key: randomUUID(),
      amountCents: 150 + i * 137,
      fault: i % 3 === 0 ? "redeliver" : undefined,
    }));
    await Promise.all(
      orders.map(async (o) => {
        const first = await placeOrder(worker, { ...o, customerId: c });
        assert.equal(first.status, 201);
        // The client retries twice at once, and later once more.
        const retries = await Promise.all(
          [0, 1].map(() => placeOrder(worker, { ...o, customerId: c, fault: undefined })),
        );
        const last = await placeOrder(worker, { ...o, customerId: c });
        for (const r of [...retries, last]) {
          assert.equal(r.status, 201);
          assert.equal(r.headers.get("idempotent-replayed"), "true");
        }
      }),
    );
    const published = orders.length + orders.filter((o) => o.fault).length;
    await until(
      () => stats(worker),
      (s) => s.firstRuns + s.duplicatesSkipped - before.firstRuns - before.duplicatesSkipped >= published,
      { what: `${published} events consumed`, timeoutMs: 30000, everyMs: 200 },
    );
    const expected = orders.reduce((sum, o) => sum + Math.floor(o.amountCents / 100), 0);
    const account = await loyalty(worker, c);
    assert.equal(account.points, expected);
    assert.equal(account.orders.length, orders.length);
    assert.equal(new Set(account.orders.map((o) => o.orderId)).size, orders.length);
    const d = delta(await stats(worker), before);
    assert.equal(d.firstRuns, orders.length, "each order's event ran once");
    assert.equal(d.duplicatesSkipped, published - orders.length, "each redelivered copy was skipped by the wrapper");
  });
});

describe("a consumer that crashes mid-handler", () => {
  test("lease held, never finished → the redelivery waits for the lease, then runs once", async () => {
    const persist = tempDir();
    const vars = {
      IDEMPOTENCY_LEASE_SECONDS: "3",
      IDEMPOTENCY_ORIGIN_TIMEOUT_SECONDS: "2",
      IDEMPOTENCY_IN_FLIGHT_WAIT_MS: "0",
      DEMO_EVENT_KEY: "message-id",
    };
    const c = customer("crash");
    const id = randomUUID();
    const body = orderPlaced(c, 2500, { demoFault: "consumer-crash" });

    let worker = await start({ vars, persist });
    const lost = worker.deliver([{ id, body }]).catch((e) => e);
    await until(
      () => loyalty(worker, c),
      (a) => a.points === 25,
      { what: "the crashing run's write" },
    );
    await worker.dispose(); // the runtime dies with the handler mid-flight
    await lost;

    worker = await start({ vars, persist });
    try {
      const early = await worker.deliver([{ id, body, attempts: 2 }]);
      assert.ok(!early.acked.has(id), "the dead consumer's lease still holds the key");
      assert.ok(early.retried.get(id) >= 1);
      const settled = await until(
        () => worker.deliver([{ id, body, attempts: 3 }]),
        (r) => r.acked.has(id),
        { what: "a redelivery after the lease", timeoutMs: 8000, everyMs: 500 },
      );
      assert.equal(settled.retried.size, 0);
      const account = await loyalty(worker, c);
      assert.equal(account.points, 25, "the reclaimed run did not award again");
      assert.equal(account.orders.length, 1);
      const s = await stats(worker);
      assert.equal(s.reclaims, 1, "the run after the lease took the key over");
      assert.equal(s.firstRuns, 0, "the crashed run's counts died with it; a reclaim is no first run");
      assert.ok(s.inFlightConflicts >= 1);
      const again = await worker.deliver([{ id, body, attempts: 4 }]);
      assert.ok(again.acked.has(id), "done now: a duplicate");
    } finally {
      await worker.dispose();
    }
  });
});

describe("a handler that outlives its time limit", () => {
  test("no longer waited for at the limit: the key stays leased, the message retried, then reclaimed once", async () => {
    const vars = {
      IDEMPOTENCY_LEASE_SECONDS: "3",
      IDEMPOTENCY_ORIGIN_TIMEOUT_SECONDS: "1",
      IDEMPOTENCY_IN_FLIGHT_WAIT_MS: "0",
      DEMO_EVENT_KEY: "message-id",
    };
    const worker = await start({ vars });
    try {
      const c = customer("stuck");
      const id = randomUUID();
      // The first run writes its points, then never returns.
      const body = orderPlaced(c, 2500, { demoFault: "consumer-crash" });
      const before = await stats(worker);
      const started = Date.now();
      const first = await Promise.race([
        worker.deliver([{ id, body }]),
        sleep(6000).then(() => assert.fail("the batch waited for the stuck handler")),
      ]);
      assert.ok(Date.now() - started < 3000, `the batch ended after ${Date.now() - started} ms`);
      assert.ok(!first.acked.has(id), "not acknowledged: the outcome is unknown");
      assert.ok(first.retried.has(id), "retried");
      assert.equal((await loyalty(worker, c)).points, 25, "the stuck run did its work");

      const early = await worker.deliver([{ id, body, attempts: 2 }]);
      assert.ok(early.retried.has(id) && !early.acked.has(id), "the lease still holds the key");
      await sleep(started + 3000 - Date.now()); // about when the lease ends
      // The lease began when the object took the begin, a little after
      // `started` on a loaded machine: redeliver until a run reclaims it.
      const late = await until(
        () => worker.deliver([{ id, body, attempts: 3 }]),
        (result) => result.acked.has(id),
        { timeoutMs: 4000, everyMs: 100, what: "a run after the lease to reclaim the key and finish" },
      );
      assert.ok(late.acked.has(id), "the run after the lease reclaimed the key and finished");
      const account = await loyalty(worker, c);
      assert.equal(account.points, 25, "the reclaimed run did not award again (the handler's own check)");
      const d = delta(await stats(worker), before);
      assert.deepEqual(
        { firstRuns: d.firstRuns, reclaims: d.reclaims, releases: d.releases },
        { firstRuns: 1, reclaims: 1, releases: 0 },
      );
    } finally {
      await worker.dispose();
    }
  });
});
