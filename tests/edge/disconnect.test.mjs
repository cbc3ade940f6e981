// An attempt the store has started must be finished (SPEC §3): from
// the first store call on, the attempt runs under waitUntil, so it is
// finished even when the runtime cancels the request's own handler.
import { test } from "node:test";
import assert from "node:assert/strict";
import http from "node:http";
import { newKey, ordersOf, sleep, start, uniqueItem, until } from "./harness.mjs";

/** Sends a keyed order over a socket and cuts the connection after `cutMs`. */
function sendAndHangUp(url, key, body, cutMs) {
  return new Promise((resolve) => {
    const req = http.request(new URL("/api/orders", url), {
      method: "POST",
      headers: { "content-type": "application/json", "idempotency-key": key },
      agent: false,
    });
    req.on("error", () => resolve());
    req.end(body);
    setTimeout(() => {
      req.destroy();
      resolve();
    }, cutMs);
  });
}

test("a client that hangs up while the store decides does not strand its key", async () => {
  // Every store call takes 500 ms: the hang-up lands between `begin`
  // being sent and its answer.
  const worker = await start({ store: "slow" });
  try {
    const key = newKey();
    const item = uniqueItem("hangup");
    const body = JSON.stringify({ item, quantity: 1, amountCents: 500 });
    await sendAndHangUp(worker.url, key, body, 200);

    // The abandoned attempt still runs and is finished: a retry replays it.
    let last;
    for (let i = 0; i < 20; i++) {
      await sleep(500);
      last = await worker.raw("/api/orders", {
        headers: { "content-type": "application/json", "idempotency-key": key },
        body,
      });
      if (last.status !== 409) break;
    }
    assert.equal(last.status, 201, `retry got ${last.status}: ${last.text}`);
    assert.equal(last.headers["idempotent-replayed"], "true");
    const { count } = await ordersOf(worker, item);
    assert.equal(count, 1);
  } finally {
    await worker.dispose();
  }
});

test("a finish the store fails once is repeated, so the key is not held for a lease", async () => {
  const worker = await start({ store: "fail-first-finish" });
  try {
    const key = newKey();
    const item = uniqueItem("refinish");
    const body = JSON.stringify({ item, quantity: 1, amountCents: 500 });
    const send = () =>
      worker.raw("/api/orders", { headers: { "content-type": "application/json", "idempotency-key": key }, body });
    const first = await send();
    assert.equal(first.status, 201, first.text);
    // Recorded despite the failure: the retry is a replay, not a 409.
    const retry = await send();
    assert.equal(retry.status, 201, `retry got ${retry.status}: ${retry.text}`);
    assert.equal(retry.headers["idempotent-replayed"], "true");
    assert.equal((await ordersOf(worker, item)).count, 1);
  } finally {
    await worker.dispose();
  }
});

test("a finish that lands just after its lease ended still stores the answer when nobody reclaimed", async () => {
  // A 2 s lease; the origin answers at 0.9 s, and the caller has its answer
  // then (SPEC §4); the first finish is held 1.5 s and fails, so its repeat
  // lands after the lease (SPEC §3). Thrown away, the next retry would
  // reclaim the key and create a second order.
  const worker = await start({
    store: "late-first-finish",
    metrics: true,
    vars: {
      IDEMPOTENCY_LEASE_SECONDS: "2",
      IDEMPOTENCY_ORIGIN_TIMEOUT_SECONDS: "1",
      IDEMPOTENCY_IN_FLIGHT_WAIT_MS: "0",
    },
  });
  try {
    const key = newKey();
    const item = uniqueItem("late-finish");
    const body = JSON.stringify({ item, quantity: 1, amountCents: 500 });
    const send = () =>
      worker.raw("/api/orders?delay_ms=900", {
        headers: { "content-type": "application/json", "idempotency-key": key },
        body,
      });
    const first = await send();
    assert.equal(first.status, 201, first.text);
    // This worker's one execution.
    const line = await until(
      () => worker.decisions().find((l) => l.oncekey === "execute"),
      (l) => l !== undefined,
      { what: "the execution's log line, written once finish has landed" },
    );
    assert.equal(line.finish, "stored");
    // Answered at ~0.9 s into the 2 s lease; the repeat ~1.6 s after that.
    assert.ok(
      line.origin_ms + line.after_answer_ms > 2000,
      `the repeat landed after the lease (${JSON.stringify(line)})`,
    );
    const retry = await send();
    assert.equal(retry.status, 201, `retry got ${retry.status}: ${retry.text}`);
    assert.equal(retry.headers["idempotent-replayed"], "true", "the late finish was stored");
    assert.equal((await ordersOf(worker, item)).count, 1);
  } finally {
    await worker.dispose();
  }
});

// The first begin reserves the key, but its reply never comes back — lost
// on the way, or the object reset before answering: the caller gets 503 and
// the origin is not called. The layer then gives the reservation back (SPEC
// §3) — after a reset through a fresh stub, as the old one stays broken — so
// the retry runs at once as attempt 2 instead of meeting a 409 for the whole
// 120 s lease.
for (const [store, what] of [
  ["lose-first-begin", "a begin whose reply was lost is abandoned: the 503 does not hold the key for a lease"],
  [
    "reset-after-first-begin",
    "a begin whose object was reset after it reserved the key is abandoned through a fresh stub",
  ],
]) {
  test(what, async () => {
    const worker = await start({ store, vars: { IDEMPOTENCY_IN_FLIGHT_WAIT_MS: "0" } });
    try {
      const key = newKey();
      const item = uniqueItem(store);
      const body = JSON.stringify({ item, quantity: 1, amountCents: 500 });
      const send = () =>
        worker.raw("/api/orders", { headers: { "content-type": "application/json", "idempotency-key": key }, body });
      const first = await send();
      assert.equal(first.status, 503, first.text);
      assert.equal((await ordersOf(worker, item)).count, 0, "the origin was not called");
      await sleep(300); // the abandon runs after the answer, under waitUntil
      const retry = await send();
      assert.equal(retry.status, 201, `retry got ${retry.status}: ${retry.text}`);
      assert.equal(JSON.parse(retry.text).attempt, 2, "the abandoned reservation was attempt 1");
      assert.equal((await ordersOf(worker, item)).count, 1);
    } finally {
      await worker.dispose();
    }
  });
}

test("a finish whose coordinator object was reset is repeated through a fresh stub, so the key is not held for a lease", async () => {
  // The object resets on the first finish (a deploy, an overload): that call
  // fails, and a stub that was connected to the object stays broken. The
  // repeat must reach the object anew; through the old stub it would fail
  // every time, and the answer would never be recorded.
  const worker = await start({ store: "reset-first-finish", vars: { IDEMPOTENCY_IN_FLIGHT_WAIT_MS: "0" } });
  try {
    const key = newKey();
    const item = uniqueItem("reset-finish");
    const body = JSON.stringify({ item, quantity: 1, amountCents: 500 });
    const send = () =>
      worker.raw("/api/orders", { headers: { "content-type": "application/json", "idempotency-key": key }, body });
    const first = await send();
    assert.equal(first.status, 201, first.text);
    let retry;
    for (let i = 0; i < 10; i++) {
      // the repeats run after the answer, under waitUntil
      retry = await send();
      if (retry.status !== 409) break;
      await sleep(200);
    }
    assert.equal(retry.status, 201, `retry got ${retry.status}: ${retry.text}`);
    assert.equal(retry.headers["idempotent-replayed"], "true", "the repeated finish was stored");
    assert.equal((await ordersOf(worker, item)).count, 1);
  } finally {
    await worker.dispose();
  }
});

// Workers keeps waitUntil work about 30 s after the caller has gone; the
// origin call may run 100 s. A caller that disconnects during a long origin
// call must not leave an attempt "running" that nobody will finish: the
// layer learns of it from request.signal (compatibility flag
// enable_request_signal), bounds the rest of the call to what the platform
// allows (30 s less a whole finish), and records the outcome as unknown.
// workerd does not abort request.signal when a socket closes locally
// (workerd PR #5062), so the caller here is another Worker whose call over a
// service binding is aborted: that does abort the layer's signal.
/**
 * A caller that hangs up `abortAfterMs` into its request, in front of an
 * origin that answers after 60 s, through `store`; checks the layer cut the
 * origin call within `cutWithin` ms of its start (30 s after the disconnect
 * less a whole finish) and recorded the outcome as unknown.
 */
async function hangUpScenario({ abortAfterMs, store = "real", storeDelayMs, storeTimeoutMs, cutWithin, waitMs }) {
  const runs = [];
  let originCutAt;
  const origin = http.createServer((req, res) => {
    const startedAt = Date.now();
    runs.push(req.headers["idempotency-attempt"]);
    // Answers after 60 s, unless the layer cuts the call first.
    const timer = setTimeout(() => res.end(JSON.stringify({ late: true })), 60_000);
    res.on("close", () => {
      clearTimeout(timer);
      if (!res.writableFinished) originCutAt = Date.now() - startedAt;
    });
  });
  await new Promise((resolve) => origin.listen(0, "127.0.0.1", resolve));
  const client = `
    export default {
      async fetch(request, env) {
        const hangUp = new AbortController();
        setTimeout(() => hangUp.abort(), ${abortAfterMs});
        try {
          const res = await env.LAYER.fetch("http://oncekey.test/v1/orders", {
            method: "POST", headers: request.headers, body: await request.text(), signal: hangUp.signal,
          });
          return new Response("answered " + res.status);
        } catch (error) {
          return new Response("hung up: " + error.name);
        }
      },
    };`;
  const worker = await start({
    worker: "proxy",
    quiet: true,
    store,
    storeDelayMs,
    vars: {
      ORIGIN_URL: `http://127.0.0.1:${origin.address().port}`,
      IDEMPOTENCY_STORE_TIMEOUT_MS: String(storeTimeoutMs),
    },
    extraWorkers: [
      {
        name: "client",
        modules: true,
        script: client,
        routes: ["client.test/*"],
        serviceBindings: { LAYER: "oncekey" },
      },
    ],
  });
  try {
    const key = newKey();
    const send = () =>
      worker.mf.dispatchFetch("http://client.test/", {
        method: "POST",
        headers: { "content-type": "application/json", "idempotency-key": key },
        body: '{"item":"slow"}',
      });
    assert.equal(await (await send()).text(), "hung up: AbortError");
    await sleep(waitMs);
    assert.ok(
      originCutAt >= cutWithin[0] && originCutAt < cutWithin[1],
      `the layer ended the origin call at ${originCutAt} ms`,
    );
    const dup = await worker.fetch("/v1/orders", {
      method: "POST",
      headers: { "content-type": "application/json", "idempotency-key": key },
      body: '{"item":"slow"}',
    });
    assert.equal(dup.status, 409);
    const problem = await dup.json();
    assert.match(problem.detail, /outcome is unknown/, "the honest 409: it may have been carried out");
    const retryAfter = Number(dup.headers.get("retry-after"));
    assert.ok(retryAfter > 70 && retryAfter <= 120, `Retry-After ${retryAfter}: the rest of the 120 s lease`);
    assert.deepEqual(runs, ["1"], "the origin ran once");
  } finally {
    await worker.dispose();
    origin.closeAllConnections();
    await new Promise((resolve) => origin.close(resolve));
  }
}

test("a caller that disconnects during a long origin call: within the platform's limit the outcome is recorded as unknown", () =>
  // A short store limit keeps the test short: a whole finish is then 3.5 s,
  // so the call is cut at 26.5 s.
  hangUpScenario({ abortAfterMs: 500, storeTimeoutMs: 1000, cutWithin: [25_000, 29_000], waitMs: 28_500 }));

test("a caller gone before the origin call starts (while begin was on its way): the call is bounded as well", () =>
  // The caller hangs up at 0.3 s; begin lands at 1 s, so the origin call
  // starts with the signal already aborted — no abort event will come. A
  // whole finish is 3 x 1.5 s + 0.5 s: the call is cut 25 s after it starts.
  hangUpScenario({
    abortAfterMs: 300,
    store: "slow",
    storeDelayMs: 1000,
    storeTimeoutMs: 1500,
    cutWithin: [23_000, 27_000],
    waitMs: 28_000,
  }));
