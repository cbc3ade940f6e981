// How the Rust host reaches its coordinator. Built with workers/rust-entry.mjs
// as its entry (the proxy and the demo are), the coordinator class is a
// DurableObject subclass and each store call is one RPC call; a worker
// whose entry is workers-rs' own module (a Rust user's worker as
// worker-build makes it) exports a plain class, which refuses RPC, and the
// layer goes over `fetch` instead, saying so once. Either way: one execution
// per key under concurrent duplicates, the same stored answer, the object's
// own count of the calls it served. The JavaScript host's class is always a
// DurableObject subclass, so this is the Rust host's alone.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { count, createOrigin } from "./origin/app.mjs";
import { serve } from "./origin/server.mjs";
import { HOST, newKey, recordName, start, uniqueItem } from "./harness.mjs";

const skip = HOST === "js" && "the Rust host's transport: run by the Rust host's suite";
const FETCH_ONLY = "IDEMPOTENCY_DO's class takes no RPC calls";
const CALLERS = 8;
const KEYS = 6;

let api;
const handle = createOrigin("api");
before(async () => {
  if (!skip) api = await serve(handle);
});
after(() => api?.close());

for (const [entry, over] of [
  ["index.js", "RPC"],
  ["workers-rs.mjs", "fetch"],
]) {
  test(`the Rust host started from ${entry} reaches its objects over ${over}: ${KEYS} keys × ${CALLERS} concurrent callers, one execution each`, {
    skip,
  }, async () => {
    const worker = await start({
      worker: "proxy",
      host: "rust",
      entry,
      metrics: true,
      vars: { ORIGIN_URL: api.url },
    });
    try {
      const item = uniqueItem(`transport-${over}`);
      const keys = Array.from({ length: KEYS }, () => newKey());
      const post = (key) =>
        worker.fetch("/v1/orders?delay_ms=100", {
          method: "POST",
          headers: { "content-type": "application/json", "idempotency-key": key },
          body: JSON.stringify({ item }),
        });
      const answers = await Promise.all(
        keys.flatMap((key) =>
          Array.from({ length: CALLERS }, async () => {
            const res = await post(key);
            return { key, status: res.status, body: await res.json() };
          }),
        ),
      );
      for (const key of keys) {
        const mine = answers.filter((a) => a.key === key);
        assert.deepEqual(
          mine.map((a) => a.status),
          Array(CALLERS).fill(201),
          `every caller of one key gets the stored answer: ${JSON.stringify(mine.map((a) => a.body))}`,
        );
        assert.equal(new Set(mine.map((a) => a.body.orderId)).size, 1, "one order per key");
      }
      assert.equal(await count(handle, item), KEYS, "the origin ran once per key");

      const replay = await post(keys[0]);
      assert.equal(replay.status, 201);
      assert.equal(replay.headers.get("idempotent-replayed"), "true");
      // Each key's object served its calls: the first's begin and finish, the duplicates' begins, the replay's.
      const object = await worker.coordinator(recordName("oncekey.test", undefined, keys[0]));
      assert.ok(object.stored, "the record is stored");
      assert.ok(object.calls >= CALLERS + 2, `the object served every call: ${JSON.stringify(object)}`);

      const warnings = [...worker.errorLines(), ...worker.lines()].filter((line) => line.includes(FETCH_ONLY));
      assert.equal(
        warnings.length,
        over === "fetch" ? 1 : 0,
        `${over === "fetch" ? "one warning per isolate" : "no warning"}: ${warnings.join(" | ")}`,
      );
    } finally {
      await worker.dispose();
    }
  });
}
