// The production proxy (build/proxy, the root wrangler.toml) in front of
// each kind of origin (SPEC §6, §10), in workerd with its real coordinator
// and KV: a URL (a Node HTTP server on loopback), another Worker (service
// binding ORIGIN), and the request's own URL (ORIGIN_URL=request, the
// outbound fetch routed by Miniflare as the zone's origin). Each must show
// the origin on every path, the demo on none, and the same protocol.
import assert from "node:assert/strict";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { after, before, describe, test } from "node:test";
import { COMPATIBILITY_DATE, BASE, newKey, problemOf, sleep, start, uniqueItem } from "./harness.mjs";
import { count, createOrigin } from "./origin/app.mjs";
import { serve } from "./origin/server.mjs";

const ORIGIN_DIR = join(dirname(fileURLToPath(import.meta.url)), "origin");
// Duplicates in these tests must see the 409 at once, not wait for the first.
const NO_WAIT = { IDEMPOTENCY_IN_FLIGHT_WAIT_MS: "0" };

const MODES = {
  async url() {
    const handle = createOrigin("url");
    const server = await serve(handle);
    return {
      options: { vars: { ORIGIN_URL: server.url, ...NO_WAIT } },
      count: (item) => count(handle, item),
      close: server.close,
    };
  },
  async service() {
    return {
      options: {
        // The binding wins over ORIGIN_URL, here a port nothing listens on.
        vars: { ORIGIN_URL: "http://127.0.0.1:9", ...NO_WAIT },
        serviceBindings: { ORIGIN: "api" },
        extraWorkers: [
          {
            name: "api",
            modules: true,
            modulesRoot: ORIGIN_DIR,
            scriptPath: join(ORIGIN_DIR, "worker.mjs"),
            compatibilityDate: COMPATIBILITY_DATE,
          },
        ],
      },
      count: async (item, worker) => {
        const api = await worker.mf.getWorker("api");
        return (await (await api.fetch(`http://api/__count?item=${encodeURIComponent(item)}`)).json()).count;
      },
      close: async () => {},
    };
  },
  async request() {
    const handle = createOrigin("zone");
    return {
      options: { vars: { ORIGIN_URL: "request", ...NO_WAIT }, outboundService: (request) => handle(request) },
      count: (item) => count(handle, item),
      close: async () => {},
    };
  },
};

const ORIGIN_NAME = { url: "url", service: "service", request: "zone" };

for (const [mode, setUp] of Object.entries(MODES)) {
  describe(`the proxy in front of ${mode === "url" ? "ORIGIN_URL (a Node server)" : mode === "service" ? "a Worker (service binding ORIGIN)" : "the request's own URL (ORIGIN_URL=request)"}`, () => {
    let origin;
    let worker;
    before(async () => {
      origin = await setUp();
      worker = await start({ worker: "proxy", ...origin.options });
    });
    after(async () => {
      await worker?.dispose();
      await origin?.close();
    });

    const post = (key, body, query = "") =>
      worker.fetch(`/v1/orders${query}`, {
        method: "POST",
        headers: { "content-type": "application/json", ...(key ? { "idempotency-key": key } : {}) },
        body: JSON.stringify(body),
      });

    test("GET / and static-looking paths reach the origin, never a demo page", async () => {
      for (const path of [
        "/",
        "/index.html",
        "/app.js",
        "/style.css",
        "/favicon.ico",
        "/vendor/oncekey/oncekey.js?v=1",
      ]) {
        const res = await worker.fetch(path);
        assert.equal(res.status, 200, path);
        const body = await res.json();
        assert.equal(body.origin, ORIGIN_NAME[mode], path);
        assert.equal(body.path, path);
        if (mode === "request") assert.equal(body.url, BASE + path, "forwarded to its own URL");
      }
    });

    test("methods the runtime's request types do not name reach the origin as sent (PROPFIND, QUERY, PURGE), keyed or not", async () => {
      for (const method of ["PROPFIND", "QUERY", "PURGE", "PUT"]) {
        for (const headers of [{}, { "idempotency-key": newKey(), "idempotency-attempt": "7" }]) {
          const res = await worker.fetch("/dav/item", { method, headers });
          assert.equal(res.status, 200, method);
          const body = await res.json();
          assert.deepEqual([body.origin, body.method], [ORIGIN_NAME[mode], method], `the origin saw ${body.method}`);
        }
      }
    });

    if (mode === "service")
      test("a Worker origin sees the client's `cf`, keyed or not, as without oncekey", async () => {
        for (const headers of [{}, { "idempotency-key": newKey() }]) {
          const res = await worker.fetch("/where", { method: "PUT", headers, body: "{}" });
          assert.equal(res.status, 200);
          const body = await res.json();
          assert.equal(body.origin, "service");
          assert.equal(body.colo, "DFW", `the origin saw no client cf (${JSON.stringify(headers)})`);
        }
      });

    test("a bare `?` reaches the origin as sent: an empty query is not dropped", async () => {
      const res = await worker.fetch("/search?");
      assert.equal(res.status, 200);
      const body = await res.json();
      assert.equal(body.origin, ORIGIN_NAME[mode]);
      assert.ok(body.url.endsWith("/search?"), `the origin saw ${body.url}`);
    });

    test("a redirect from the origin is handed back, not followed, with a key or without", async () => {
      const unkeyed = await worker.fetch("/moved", { redirect: "manual" });
      assert.equal(unkeyed.status, 302);
      assert.equal(unkeyed.headers.get("location"), "/elsewhere");
      const key = newKey();
      const keyed = () =>
        worker.fetch("/moved", { method: "POST", redirect: "manual", headers: { "idempotency-key": key }, body: "{}" });
      const first = await keyed();
      assert.equal(first.status, 302);
      assert.equal(first.headers.get("location"), "/elsewhere");
      const retry = await keyed();
      assert.equal(retry.status, 302, "the stored answer is the redirect");
      assert.equal(retry.headers.get("idempotent-replayed"), "true");
    });

    test("a keyed POST runs once; its retry is the stored answer", async () => {
      const item = uniqueItem(mode);
      const key = newKey();
      const first = await post(key, { item });
      assert.equal(first.status, 201);
      const created = await first.json();
      assert.equal(created.origin, ORIGIN_NAME[mode]);
      assert.deepEqual([created.key, created.attempt], [key, "1"], "the origin sees the key and attempt 1");
      const retry = await post(key, { item });
      assert.equal(retry.status, 201);
      assert.equal(retry.headers.get("idempotent-replayed"), "true");
      assert.deepEqual(await retry.json(), created);
      assert.equal(await origin.count(item, worker), 1);
    });

    test("a duplicate while the first runs → 409 key-in-flight, and still one order", async () => {
      const item = uniqueItem(mode);
      const key = newKey();
      const first = post(key, { item }, "?delay_ms=1500");
      await sleep(300);
      const duplicate = await post(key, { item }, "?delay_ms=1500");
      assert.equal(duplicate.status, 409);
      assert.equal((await problemOf(duplicate)).code, "key-in-flight");
      assert.equal((await first).status, 201);
      assert.equal(await origin.count(item, worker), 1);
    });

    test("the same key with another body → 422 key-reused, nothing run", async () => {
      const item = uniqueItem(mode);
      const key = newKey();
      assert.equal((await post(key, { item })).status, 201);
      const reused = await post(key, { item: `${item}-other` });
      assert.equal(reused.status, 422);
      assert.equal((await problemOf(reused)).code, "key-reused");
      assert.equal(await origin.count(`${item}-other`, worker), 0);
    });

    test("an unkeyed POST passes through every time", async () => {
      const item = uniqueItem(mode);
      assert.equal((await post(null, { item })).status, 201);
      assert.equal((await post(null, { item })).status, 201);
      assert.equal(await origin.count(item, worker), 2);
    });
  });
}

describe("the proxy with no origin, or a bad one", () => {
  for (const [what, vars] of [
    ["none configured", { ORIGIN_URL: undefined }],
    ["ORIGIN_URL empty", { ORIGIN_URL: "" }],
    ["ORIGIN_URL not a URL", { ORIGIN_URL: "api.example.com" }],
  ]) {
    test(`${what} → 500 misconfigured naming ORIGIN_URL on every request`, async () => {
      const worker = await start({ worker: "proxy", vars });
      try {
        for (const [path, init] of [
          ["/", {}],
          ["/index.html", {}],
          ["/v1/orders", { method: "POST", headers: { "idempotency-key": newKey() }, body: "{}" }],
        ]) {
          const res = await worker.fetch(path, init);
          assert.equal(res.status, 500, path);
          const problem = await problemOf(res);
          assert.equal(problem.code, "misconfigured");
          assert.match(problem.detail, /ORIGIN_URL/);
        }
      } finally {
        await worker.dispose();
      }
    });
  }
});
