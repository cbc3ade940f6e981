// Switching a deployed proxy between its two hosts (the root config's
// JavaScript host and workers/proxy's Rust host) keeps every record: both
// coordinator classes have one name and keep one record per object under
// the same storage key in the same encoding. Here each host reads the
// records the other wrote, from the same persisted Durable Object state.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { createOrigin, count } from "./origin/app.mjs";
import { serve } from "./origin/server.mjs";
import { newKey, problemOf, sleep, start, tempDir, tiers, uniqueItem } from "./harness.mjs";

let api;
const handle = createOrigin("api");
before(async () => {
  api = await serve(handle);
});
after(() => api?.close());

/** A proxy on `host` over the state in `persist`. */
const proxyOn = (host, persist) =>
  start({ worker: "proxy", host, persist, vars: { ORIGIN_URL: api.url, IDEMPOTENCY_IN_FLIGHT_WAIT_MS: "0" } });

const post = (worker, key, item, query = "") =>
  worker.fetch(`/v1/orders${query}`, {
    method: "POST",
    headers: { "content-type": "application/json", "idempotency-key": key },
    body: JSON.stringify({ item }),
  });

for (const [from, to] of [
  ["rust", "js"],
  ["js", "rust"],
]) {
  test(`records written by the ${from} host: the ${to} host replays the completed one and holds the one in flight`, async () => {
    const persist = tempDir();
    const done = { key: newKey(), item: uniqueItem(`${from}-done`) };
    const running = { key: newKey(), item: uniqueItem(`${from}-running`) };

    let worker = await proxyOn(from, persist);
    let body;
    try {
      const first = await post(worker, done.key, done.item);
      assert.equal(first.status, 201);
      body = await first.text();
      // An attempt still running when this host goes away: its record stays in flight.
      const inFlight = post(worker, running.key, running.item, "?delay_ms=3000").catch(() => null);
      await sleep(500);
      await worker.dispose();
      await inFlight;
    } catch (error) {
      await worker.dispose();
      throw error;
    }

    worker = await proxyOn(to, persist);
    try {
      const replay = await post(worker, done.key, done.item);
      assert.equal(replay.status, 201);
      assert.equal(replay.headers.get("idempotent-replayed"), "true");
      assert.deepEqual(tiers(replay), ["do"], "the object decoded the other host's record (not the KV copy)");
      assert.equal(await replay.text(), body);
      assert.equal(await count(handle, done.item), 1);

      const duplicate = await post(worker, running.key, running.item, "?delay_ms=3000");
      assert.equal(duplicate.status, 409, "the other host's attempt still holds its key");
      assert.equal((await problemOf(duplicate)).code, "key-in-flight");
    } finally {
      await worker.dispose();
    }
  });
}
