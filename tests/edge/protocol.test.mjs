// The protocol of SPEC §1–5 against the built worker and the embedded demo
// origin, on real local KV and Durable Objects.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import {
  beginCall,
  defaultVars,
  newKey,
  order,
  ordersOf,
  problemOf,
  recordName,
  sleep,
  start,
  tiers,
  uniqueItem,
  until,
} from "./harness.mjs";

describe("with the default configuration", () => {
  let worker;
  before(async () => {
    worker = await start();
  });
  after(() => worker?.dispose());

  test("replay: same key and body twice → same answer, the second marked, the origin ran once", async () => {
    const item = uniqueItem("replay");
    const key = newKey();
    const first = await order(worker, { key, item });
    const firstBody = await first.text();
    assert.equal(first.status, 201);
    assert.equal(first.headers.get("idempotent-replayed"), null);
    const second = await order(worker, { key, item });
    assert.equal(second.status, 201);
    assert.equal(second.headers.get("idempotent-replayed"), "true");
    assert.equal(second.headers.get("cache-control"), "no-store");
    assert.equal(await second.text(), firstBody);
    const { count, orders } = await ordersOf(worker, item);
    assert.equal(count, 1);
    assert.equal(orders[0].orderId, JSON.parse(firstBody).orderId);
    assert.equal(orders[0].attempt, 1);
  });

  test("422 key-reused while the first request is in flight and after it completed", async () => {
    const item = uniqueItem("reuse");
    const key = newKey();
    const slow = order(worker, { key, item, query: "?delay_ms=1500" });
    await sleep(300);
    const during = await order(worker, { key, item, quantity: 2, query: "?delay_ms=1500" });
    assert.equal(during.status, 422);
    assert.equal((await problemOf(during)).code, "key-reused");
    assert.equal((await slow).status, 201);
    const afterwards = await order(worker, { key, item, quantity: 3 });
    assert.equal(afterwards.status, 422);
    assert.equal((await problemOf(afterwards)).code, "key-reused");
    assert.equal((await ordersOf(worker, item)).count, 1);
  });

  test("a duplicate while the first is in flight waits for it and gets its answer (one execution)", async () => {
    const item = uniqueItem("inflight");
    const key = newKey();
    const slow = order(worker, { key, item, query: "?delay_ms=1000" });
    await sleep(300);
    const dup = await order(worker, { key, item, query: "?delay_ms=1000" });
    const first = await slow;
    assert.equal(first.status, 201);
    assert.equal(dup.status, 201, "the wait ended with the first attempt's answer");
    assert.equal(dup.headers.get("idempotent-replayed"), "true");
    assert.deepEqual(await dup.json(), await first.json());
    assert.equal((await ordersOf(worker, item)).count, 1);
  });

  test("bad keys → 400 invalid-key, and the origin is not called", async () => {
    const item = uniqueItem("badkey");
    const cases = {
      empty: "",
      "256 characters": "k".repeat(256),
      "control character": "ab\tcd",
      "non-ASCII": "caf\u00e9",
      "broken quotes": '"abc',
      "junk after the quoted string": '"abc"x',
    };
    const body = JSON.stringify({ item, quantity: 1, amountCents: 1 });
    const send = (headers) =>
      worker.raw("/api/orders", { headers: { "content-type": "application/json", ...headers }, body });
    for (const [why, key] of Object.entries(cases)) {
      const res = await send({ "idempotency-key": Buffer.from(key, "latin1").toString("latin1") });
      assert.equal(res.status, 400, why);
      assert.equal(res.headers["content-type"], "application/problem+json", why);
      const problem = JSON.parse(res.text);
      assert.equal(problem.type, "urn:oncekey:problem:invalid-key", why);
      assert.equal(problem.status, 400, why);
    }
    const twice = await send({ "idempotency-key": ["one", "two"] });
    assert.equal(twice.status, 400, "two headers");
    assert.equal(JSON.parse(twice.text).type, "urn:oncekey:problem:invalid-key");
    // 255 characters is fine, quoted or bare.
    assert.equal((await order(worker, { key: "k".repeat(255), item })).status, 201);
    assert.equal((await order(worker, { key: `"k${"q".repeat(200)}"`, item })).status, 201);
    assert.equal((await ordersOf(worker, item)).count, 2);
  });

  test("quoted and bare spellings of a key are the same key", async () => {
    const item = uniqueItem("spelling");
    const key = `k-${newKey()}`;
    assert.equal((await order(worker, { key, item })).status, 201);
    const quoted = await order(worker, { key: `"${key}"`, item });
    assert.equal(quoted.headers.get("idempotent-replayed"), "true");
  });

  test("no key on a covered method passes through (keys are opt-in)", async () => {
    const item = uniqueItem("nokey");
    assert.equal((await order(worker, { key: null, item })).status, 201);
    assert.equal((await order(worker, { key: null, item })).status, 201);
    assert.equal((await ordersOf(worker, item)).count, 2);
  });

  test("no key, and the handler fails: its error reaches the runtime as without oncekey, never the layer's 502", async () => {
    const item = uniqueItem("nokey-fails");
    const res = await order(worker, { key: null, item, headers: { "demo-fault": "drop" } });
    const text = await res.text();
    assert.equal(res.status, 500, text);
    assert.notEqual(res.headers.get("content-type"), "application/problem+json", "not the layer's answer");
    // workerd reports a JavaScript throw with its message; workers-rs answers
    // its own 500 for an Err from the fetch event.
    assert.match(
      text,
      /Demo-Fault: drop|^INTERNAL SERVER ERROR$/,
      "the handler's own error, as the runtime reports it",
    );
    assert.equal((await ordersOf(worker, item)).count, 1, "the handler ran, once, as it would have");
  });

  test("Demo-Fault: unavailable (503) releases the key; the retry runs again as attempt 2", async () => {
    const item = uniqueItem("release");
    const key = newKey();
    const first = await order(worker, { key, item, headers: { "demo-fault": "unavailable" } });
    assert.equal(first.status, 503);
    assert.equal(first.headers.get("idempotent-replayed"), null);
    assert.equal((await ordersOf(worker, item)).count, 0);
    const retry = await order(worker, { key, item });
    assert.equal(retry.status, 201);
    assert.equal(retry.headers.get("idempotent-replayed"), null);
    assert.equal((await retry.json()).attempt, 2);
    assert.equal((await ordersOf(worker, item)).count, 1);
  });

  test("a 500 is an answer: stored and replayed, not run again", async () => {
    const item = uniqueItem("error");
    const key = newKey();
    const first = await order(worker, { key, item, headers: { "demo-fault": "error" } });
    assert.equal(first.status, 500);
    const body = await first.text();
    const retry = await order(worker, { key, item });
    assert.equal(retry.status, 500);
    assert.equal(retry.headers.get("idempotent-replayed"), "true");
    assert.equal(await retry.text(), body);
    assert.equal((await ordersOf(worker, item)).count, 1);
  });

  test("a client-sent Idempotency-Attempt never reaches the origin", async () => {
    const item = uniqueItem("forged");
    const keyed = await order(worker, { key: newKey(), item, headers: { "idempotency-attempt": "99" } });
    assert.equal((await keyed.json()).attempt, 1);
    const unkeyed = await order(worker, { key: null, item, headers: { "idempotency-attempt": "99" } });
    assert.equal((await unkeyed.json()).attempt, null);
  });

  test("scope: the same key under two Authorization values → two executions, no cross-replay", async () => {
    const item = uniqueItem("scope");
    const key = newKey();
    const alice = await order(worker, { key, item, headers: { authorization: "Bearer alice" } });
    const bob = await order(worker, { key, item, headers: { authorization: "Bearer bob" } });
    assert.equal(alice.status, 201);
    assert.equal(bob.status, 201);
    assert.equal(bob.headers.get("idempotent-replayed"), null);
    assert.notEqual((await alice.json()).orderId, (await bob.json()).orderId);
    const aliceAgain = await order(worker, { key, item, headers: { authorization: "Bearer alice" } });
    assert.equal(aliceAgain.headers.get("idempotent-replayed"), "true");
    assert.equal((await ordersOf(worker, item)).count, 2);
  });

  test("the object's expiry alarm is set to the record's expiry, an absolute time", async () => {
    const { IDEMPOTENCY_LEASE_SECONDS: lease = 120, IDEMPOTENCY_TTL_SECONDS: ttl = 86_400 } = defaultVars();
    const lives = (Number(lease) + Number(ttl)) * 1000; // an in-flight record: lease, then TTL
    const key = newKey();
    const before = Date.now();
    const res = await order(worker, { key, item: uniqueItem("alarm") });
    const after = Date.now();
    assert.equal(res.status, 201);
    const object = await worker.coordinator(recordName("oncekey.test", undefined, key));
    assert.equal(object.stored, true);
    assert.ok(
      object.alarm >= before + lives && object.alarm <= after + lives,
      `alarm at ${object.alarm}, expected within [${before + lives}, ${after + lives}]`,
    );
  });

  test("the expiry alarm fires in workerd: it re-arms for a record that lives longer, then deletes it", async () => {
    // Store calls carry their policy, so one sent straight to an object (as
    // the worker sends them) can ask for a short life. Times are checked as
    // ranges and waited for by polling, so a slow machine does not fail it.
    const name = `alarm-${newKey()}`;
    const begin = async (policy) => {
      const sent = Date.now();
      const reply = await worker.storeCall(name, beginCall(policy));
      return { reply, sent, answered: Date.now() };
    };
    const within = (at, call, lives, what) =>
      assert.ok(
        at >= call.sent + lives && at <= call.answered + lives,
        `${what} at ${at - call.sent} ms after the call, expected ${lives} ms`,
      );
    const first = await begin({ leaseMs: 400, ttlMs: 600 });
    assert.deepEqual(first.reply, [1, 0, 0, 0, 1, 0], "attempt 1, fresh");
    const armed = await worker.coordinator(name);
    assert.equal(armed.stored, true);
    within(armed.alarm, first, 1000, "alarm");
    await sleep(first.answered + 500 - Date.now()); // the lease is over, the record still remembered
    const second = await begin({ leaseMs: 400, ttlMs: 2000 });
    assert.deepEqual(second.reply, [1, 0, 0, 0, 2, 1], "attempt 2, reclaimed: the record lives on");
    const object = () => worker.coordinator(name);
    const rearmed = await until(
      object,
      (o) => o.alarm !== armed.alarm && (o.alarm !== null || !o.stored), // not mid-alarm
      { what: "the first alarm to run", timeoutMs: 10_000, everyMs: 50 },
    );
    assert.equal(rearmed.stored, true, "the alarm kept a record that is still live");
    within(rearmed.alarm, second, 2400, "re-armed");
    const gone = await until(object, (o) => !o.stored, {
      what: "the record's deletion",
      timeoutMs: 10_000,
      everyMs: 50,
    });
    assert.equal(gone.alarm, null, "no alarm left");
    assert.ok(Date.now() >= second.sent + 2400, "deleted no earlier than its expiry");
    assert.deepEqual(
      (await begin({ leaseMs: 400, ttlMs: 600 })).reply,
      [1, 0, 0, 0, 1, 0],
      "forgotten: numbering starts over",
    );
  });

  test("methods that are not covered pass through untouched, key or not", async () => {
    const item = uniqueItem("get");
    for (const key of ["valid-key", "a b"]) {
      const res = await worker.fetch(`/api/orders?item=${item}`, { headers: { "idempotency-key": key } });
      assert.equal(res.status, 200, key);
      assert.equal(res.headers.get("idempotent-replayed"), null);
      assert.deepEqual(tiers(res), ["origin"]);
    }
  });

  test("Server-Timing on a pass-through names only the origin", async () => {
    const res = await worker.fetch(`/api/orders?item=${uniqueItem("timing")}`);
    assert.equal(res.status, 200);
    assert.deepEqual(tiers(res), ["origin"]);
  });

  test("the layer's errors are problem+json, never a bare string", async () => {
    const res = await order(worker, { key: "a b", item: "x" });
    const problem = await problemOf(res);
    assert.equal(problem.type, "urn:oncekey:problem:invalid-key");
    assert.ok(problem.title && problem.detail);
  });
});

describe("with IDEMPOTENCY_REQUIRED=true and a small body limit", () => {
  let worker;
  before(async () => {
    worker = await start({ vars: { IDEMPOTENCY_REQUIRED: "true", IDEMPOTENCY_MAX_BODY_BYTES: "1024" } });
  });
  after(() => worker?.dispose());

  test("a covered request without a key → 400 missing-key; GET still passes", async () => {
    const item = uniqueItem("required");
    const res = await order(worker, { key: null, item });
    assert.equal(res.status, 400);
    assert.equal((await problemOf(res)).code, "missing-key");
    assert.equal((await ordersOf(worker, item)).count, 0);
  });

  test("a body over the limit → 413, counted on bytes read (no Content-Length)", async () => {
    const big = new TextEncoder().encode(
      JSON.stringify({ item: "x", quantity: 1, amountCents: 1, pad: "p".repeat(2000) }),
    );
    const stream = new ReadableStream({
      start(controller) {
        for (let i = 0; i < big.length; i += 256) controller.enqueue(big.slice(i, i + 256));
        controller.close();
      },
    });
    const res = await worker.fetch("/api/orders", {
      method: "POST",
      headers: { "idempotency-key": newKey(), "content-type": "application/json" },
      body: stream,
      duplex: "half",
    });
    assert.equal(res.status, 413);
    assert.equal((await problemOf(res)).code, "body-too-large");
    const fits = await order(worker, { key: newKey(), item: uniqueItem("fits") });
    assert.equal(fits.status, 201);
  });
});

describe("waiting for the first attempt (IDEMPOTENCY_IN_FLIGHT_WAIT_MS)", () => {
  let worker;
  before(async () => {
    worker = await start({
      vars: {
        IDEMPOTENCY_IN_FLIGHT_WAIT_MS: "500",
        IDEMPOTENCY_LEASE_SECONDS: "5",
        IDEMPOTENCY_ORIGIN_TIMEOUT_SECONDS: "4",
      },
    });
  });
  after(() => worker?.dispose());

  test("a wait that ends before the first attempt → 409 key-in-flight with Retry-After: 1", async () => {
    const item = uniqueItem("wait-ends");
    const key = newKey();
    const slow = order(worker, { key, item, query: "?delay_ms=2000" });
    await sleep(300);
    const started = Date.now();
    const dup = await order(worker, { key, item, query: "?delay_ms=2000" });
    const waited = Date.now() - started;
    assert.equal(dup.status, 409);
    assert.equal(dup.headers.get("retry-after"), "1");
    assert.equal(dup.headers.get("cache-control"), "no-store");
    assert.equal((await problemOf(dup)).code, "key-in-flight");
    // A 409 at all means the wait ended before the 2 s attempt (else: the replay).
    assert.ok(waited >= 450, `waited ${waited} ms: at least the configured 500`);
    assert.equal((await slow).status, 201);
    assert.equal((await ordersOf(worker, item)).count, 1);
  });

  test("a duplicate of an attempt that releases the key runs next, as attempt 2", async () => {
    const item = uniqueItem("wait-release");
    const key = newKey();
    const first = order(worker, { key, item, query: "?delay_ms=300", headers: { "demo-fault": "unavailable" } });
    await sleep(100);
    const dup = await order(worker, { key, item, query: "?delay_ms=300", headers: { "demo-fault": "unavailable" } });
    assert.equal((await first).status, 503, "released: the origin was unavailable");
    // Woken by the release, the duplicate ran as the next attempt (it also
    // met the fault: Demo-Fault is not part of the fingerprint).
    assert.equal(dup.status, 503);
    const after = await order(worker, { key, item });
    assert.equal(after.status, 201);
    assert.equal((await after.json()).attempt, 3, "attempts 1 and 2 released the key");
  });
});

describe("with a small IDEMPOTENCY_MAX_RESPONSE_BYTES", () => {
  let worker;
  before(async () => {
    worker = await start({ vars: { IDEMPOTENCY_MAX_RESPONSE_BYTES: "100" } });
  });
  after(() => worker?.dispose());

  test("a large response is answered in full, then replayed with Idempotent-Body-Omitted", async () => {
    const item = uniqueItem("large");
    const key = newKey();
    const first = await order(worker, { key, item });
    assert.equal(first.status, 201);
    assert.ok((await first.text()).length > 100);
    const replay = await order(worker, { key, item });
    assert.equal(replay.status, 201);
    assert.equal(replay.headers.get("idempotent-replayed"), "true");
    assert.equal(replay.headers.get("idempotent-body-omitted"), "true");
    assert.equal(replay.headers.get("content-type"), "application/json");
    assert.equal(await replay.text(), "");
    assert.equal((await ordersOf(worker, item)).count, 1);
  });
});

describe("with CORS origins configured", () => {
  const allowed = "https://shop.example";
  let worker;
  before(async () => {
    worker = await start({ vars: { IDEMPOTENCY_CORS_ORIGINS: allowed } });
  });
  after(() => worker?.dispose());

  test("a preflight with Idempotency-Key is allowed for an allowed origin", async () => {
    const res = await worker.fetch("/api/orders", {
      method: "OPTIONS",
      headers: {
        origin: allowed,
        "access-control-request-method": "POST",
        "access-control-request-headers": "idempotency-key, content-type",
      },
    });
    assert.equal(res.status, 204);
    assert.equal(res.headers.get("access-control-allow-origin"), allowed);
    assert.match(res.headers.get("access-control-allow-methods"), /POST/);
    assert.match(res.headers.get("access-control-allow-headers").toLowerCase(), /idempotency-key/);
  });

  test("a preflight from another origin is not allowed", async () => {
    const res = await worker.fetch("/api/orders", {
      method: "OPTIONS",
      headers: { origin: "https://evil.example", "access-control-request-method": "POST" },
    });
    assert.equal(res.headers.get("access-control-allow-origin"), null);
  });

  test("a replay's Idempotent-Replayed is readable cross-origin", async () => {
    const item = uniqueItem("cors");
    const key = newKey();
    await order(worker, { key, item, headers: { origin: allowed } });
    const replay = await order(worker, { key, item, headers: { origin: allowed } });
    assert.equal(replay.headers.get("idempotent-replayed"), "true");
    assert.equal(replay.headers.get("access-control-allow-origin"), allowed);
    const exposed = replay.headers.get("access-control-expose-headers").toLowerCase();
    for (const h of ["idempotent-replayed", "idempotent-body-omitted", "retry-after"]) {
      assert.ok(exposed.includes(h), h);
    }
  });
});

describe("with a bad configuration value", () => {
  let worker;
  before(async () => {
    worker = await start({ vars: { IDEMPOTENCY_TTL_SECONDS: "ten" } });
  });
  after(() => worker?.dispose());

  test("every request → 500 misconfigured naming the variable, origin not called", async () => {
    const item = uniqueItem("misconfigured");
    const res = await order(worker, { key: newKey(), item });
    assert.equal(res.status, 500);
    const problem = await problemOf(res);
    assert.equal(problem.code, "misconfigured");
    assert.match(problem.detail, /IDEMPOTENCY_TTL_SECONDS/);
    assert.equal(res.headers.get("cache-control"), "no-store");
  });
});

// wrangler hands a [vars] entry written without quotes (`IDEMPOTENCY_REQUIRED
// = true`, `IDEMPOTENCY_TTL_SECONDS = 5`) to the worker as a JSON value, not a
// string: it must count, never be skipped as if unset.
describe("with unquoted [vars] values: a boolean and a number", () => {
  let worker;
  before(async () => {
    worker = await start({ vars: { IDEMPOTENCY_REQUIRED: true, IDEMPOTENCY_IN_FLIGHT_WAIT_MS: 0 } });
  });
  after(() => worker?.dispose());

  test("they are read as their text: a key is required, and a keyed order runs once", async () => {
    const item = uniqueItem("unquoted");
    const unkeyed = await order(worker, { item });
    assert.equal(unkeyed.status, 400);
    assert.equal((await problemOf(unkeyed)).code, "missing-key");
    const key = newKey();
    assert.equal((await order(worker, { key, item })).status, 201);
    const again = await order(worker, { key, item });
    assert.equal(again.headers.get("idempotent-replayed"), "true");
  });
});

describe("with an unquoted number out of range, and a variable bound to an object", () => {
  for (const [vars, variable, detail] of [
    [{ IDEMPOTENCY_TTL_SECONDS: 5 }, "IDEMPOTENCY_TTL_SECONDS", /not a whole number from 60/],
    [{ IDEMPOTENCY_SCOPE: { header: "authorization" } }, "IDEMPOTENCY_SCOPE", /not a value/],
  ]) {
    test(`${variable} = ${JSON.stringify(vars[variable])}: every request → 500 misconfigured naming it`, async () => {
      const worker = await start({ vars });
      try {
        const res = await order(worker, { key: newKey(), item: uniqueItem("misconfigured") });
        assert.equal(res.status, 500);
        const problem = await problemOf(res);
        assert.equal(problem.code, "misconfigured");
        assert.match(problem.detail, new RegExp(variable));
        assert.match(problem.detail, detail);
      } finally {
        await worker.dispose();
      }
    });
  }
});

// SPEC §6: a misconfigured worker answers every caller; what it answers
// names the variable and the rule, never the value (an internal URL).
describe("with ORIGIN_URL set to an internal address that is not http(s)", () => {
  let worker;
  before(async () => {
    worker = await start({ worker: "proxy", vars: { ORIGIN_URL: "ftp://10.1.2.3/internal" } });
  });
  after(() => worker?.dispose());

  test("every request → 500 misconfigured naming ORIGIN_URL and its rule, never quoting the value", async () => {
    const res = await worker.fetch("/v1/orders", {
      method: "POST",
      headers: { "idempotency-key": newKey() },
      body: "{}",
    });
    assert.equal(res.status, 500);
    const text = await res.text();
    const problem = JSON.parse(text);
    assert.equal(problem.type, "urn:oncekey:problem:misconfigured");
    assert.match(problem.detail, /ORIGIN_URL: not an http:\/\/ or https:\/\/ URL/);
    assert.ok(!text.includes("10.1.2.3") && !text.includes("internal"), text);
  });
});

describe("with a typo'd variable (IDEMPOTENCY_TTL for IDEMPOTENCY_TTL_SECONDS)", () => {
  let worker;
  before(async () => {
    worker = await start({ worker: "proxy", vars: { IDEMPOTENCY_TTL: "60", ORIGIN_URL: "http://127.0.0.1:9" } });
  });
  after(() => worker?.dispose());

  test("every request → 500 misconfigured naming it and the variable it may mean, never silently ignored", async () => {
    const res = await worker.fetch("/v1/orders", {
      method: "POST",
      headers: { "idempotency-key": newKey() },
      body: "{}",
    });
    assert.equal(res.status, 500);
    const problem = await problemOf(res);
    assert.equal(problem.code, "misconfigured");
    assert.match(
      problem.detail,
      /IDEMPOTENCY_TTL: not a variable of the layer \(did you mean IDEMPOTENCY_TTL_SECONDS\?\)/,
    );
  });
});
