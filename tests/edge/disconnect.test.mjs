// An attempt the store has started must be finished (SPEC §3): from
// the first store call on, the attempt runs under waitUntil, so it is
// finished even when the runtime cancels the request's own handler.
import { test } from "node:test";
import assert from "node:assert/strict";
import http from "node:http";
import { newKey, ordersOf, sleep, start, uniqueItem } from "./harness.mjs";

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
  // A 2 s lease; the origin answers at 0.9 s; the first finish is held
  // 1.5 s and fails, so its repeat lands after the lease (SPEC §3). Thrown
  // away, the next retry would reclaim the key and create a second order.
  const worker = await start({
    store: "late-first-finish",
    vars: { IDEMPOTENCY_LEASE_SECONDS: "2", IDEMPOTENCY_ORIGIN_TIMEOUT_SECONDS: "1", IDEMPOTENCY_IN_FLIGHT_WAIT_MS: "0" },
  });
  try {
    const key = newKey();
    const item = uniqueItem("late-finish");
    const body = JSON.stringify({ item, quantity: 1, amountCents: 500 });
    const send = () => worker.raw("/api/orders?delay_ms=900", {
      headers: { "content-type": "application/json", "idempotency-key": key },
      body,
    });
    const started = Date.now();
    const first = await send();
    assert.equal(first.status, 201, first.text);
    assert.ok(Date.now() - started > 2000, `the repeat landed after the lease (${Date.now() - started} ms)`);
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
  ["reset-after-first-begin", "a begin whose object was reset after it reserved the key is abandoned through a fresh stub"],
]) {
  test(what, async () => {
    const worker = await start({ store, vars: { IDEMPOTENCY_IN_FLIGHT_WAIT_MS: "0" } });
    try {
      const key = newKey();
      const item = uniqueItem(store);
      const body = JSON.stringify({ item, quantity: 1, amountCents: 500 });
      const send = () => worker.raw("/api/orders", { headers: { "content-type": "application/json", "idempotency-key": key }, body });
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
    for (let i = 0; i < 10; i++) { // the repeats run after the answer, under waitUntil
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
