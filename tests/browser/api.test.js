// idempotentFetch against a real local HTTP server (node:http): every
// retry carries the same key, and only what SPEC §8 allows is retried.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { execFileSync } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  idempotentFetch,
  isReplayed,
  newKey,
  NetworkError,
  OnceKeyError,
  OptionsError,
  OutcomeUnknownError,
  ready,
} from "../../pkg/dist/oncekey.node.js";

const IN_FLIGHT = { type: "urn:oncekey:problem:key-in-flight", title: "Key in flight", status: 409, detail: "busy" };
const UNKNOWN = {
  type: "urn:oncekey:problem:outcome-unknown",
  title: "Outcome unknown",
  status: 409,
  detail: "it may have been carried out",
};
const fast = { delay: 1, jitter: false };

// A server whose answer to the n-th request (from 1) is `respond(n, req, res)`.
async function serve(respond) {
  const requests = [];
  const server = createServer((req, res) => {
    let body = "";
    req.on("data", (c) => (body += c));
    req.on("end", () => {
      requests.push({ method: req.method, key: req.headers["idempotency-key"], body, at: Date.now() });
      respond(requests.length, req, res);
    });
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  const url = `http://127.0.0.1:${server.address().port}/api/orders`;
  return {
    url,
    requests,
    close: () =>
      new Promise((r) => {
        server.closeAllConnections();
        server.close(r);
      }),
  };
}

const json = (res, status, value, headers = {}) => {
  res.writeHead(status, { "content-type": "application/json", ...headers });
  res.end(JSON.stringify(value));
};
const drop = (res) => res.socket.destroy();
const post = (url, options) => idempotentFetch(url, { method: "POST", body: '{"item":"tea"}' }, options);

test("503 with Retry-After, then success: the same key every attempt, the wait honoured", async (t) => {
  const s = await serve((n, req, res) =>
    n === 1 ? json(res, 503, {}, { "retry-after": "1" }) : json(res, 201, { ok: true }),
  );
  t.after(s.close);
  const response = await post(s.url, { retry: fast });
  assert.equal(response.status, 201);
  assert.equal(s.requests.length, 2);
  const [first, second] = s.requests;
  assert.match(first.key, /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  assert.equal(second.key, first.key);
  assert.equal(second.body, first.body);
  assert.ok(second.at - first.at >= 950, `waited ${second.at - first.at} ms for Retry-After: 1`);
});

test("an unknown outcome (502, then 409 outcome-unknown) ends the call with OutcomeUnknownError: the key and Retry-After, no two-minute wait", async (t) => {
  const s = await serve((n, req, res) =>
    n === 1
      ? json(
          res,
          502,
          { type: "urn:oncekey:problem:origin-unreachable" },
          { "content-type": "application/problem+json" },
        )
      : json(res, 409, UNKNOWN, { "content-type": "application/problem+json", "retry-after": "120" }),
  );
  t.after(s.close);
  const started = Date.now();
  const error = await post(s.url, { retry: fast }).then(
    () => assert.fail("resolved"),
    (e) => e,
  );
  assert.ok(error instanceof OutcomeUnknownError && error instanceof OnceKeyError, String(error));
  assert.equal(error.name, "OutcomeUnknownError");
  assert.equal(error.key, s.requests[0].key);
  assert.equal(error.retryAfterMs, 120_000);
  assert.equal(error.response.status, 409);
  assert.equal(s.requests.length, 2, "no poll of the unknown outcome");
  assert.ok(Date.now() - started < 2000);
});

test("retry.waitUnknown: true waits the unknown outcome out and sends again as the next attempt", async (t) => {
  const s = await serve((n, req, res) =>
    n === 1
      ? json(res, 409, UNKNOWN, { "content-type": "application/problem+json", "retry-after": "1" })
      : json(res, 201, { attempt: 2 }),
  );
  t.after(s.close);
  const response = await post(s.url, { retry: { ...fast, waitUnknown: true } });
  assert.equal(response.status, 201);
  assert.equal(s.requests.length, 2);
  assert.equal(s.requests[1].key, s.requests[0].key);
  assert.ok(s.requests[1].at - s.requests[0].at >= 950, "after its Retry-After");
});

test("409 key-in-flight is polled past the retry limit, then the replay", async (t) => {
  const s = await serve((n, req, res) =>
    n <= 4
      ? json(res, 409, IN_FLIGHT, { "content-type": "application/problem+json", "retry-after": "0" })
      : json(res, 201, { orderId: "o1" }, { "idempotent-replayed": "true" }),
  );
  t.after(s.close);
  const retries = [];
  const response = await post(s.url, { retry: { ...fast, limit: 1 }, onRetry: (i) => retries.push(i) });
  assert.equal(response.status, 201);
  assert.ok(isReplayed(response));
  assert.deepEqual(await response.json(), { orderId: "o1" }, "the body is still readable");
  assert.equal(s.requests.length, 5, "four polls, more than limit 1");
  assert.equal(new Set(s.requests.map((r) => r.key)).size, 1);
  assert.deepEqual(
    retries.map((r) => [r.attempt, r.delay]),
    [
      [1, 0],
      [2, 0],
      [3, 0],
      [4, 0],
    ],
  );
});

test("key-in-flight polling stops at maxInFlightWait and returns the 409", async (t) => {
  const s = await serve((n, req, res) =>
    json(res, 409, IN_FLIGHT, { "content-type": "application/problem+json", "retry-after": "1" }),
  );
  t.after(s.close);
  const response = await post(s.url, { retry: { ...fast, maxInFlightWait: 1500, maxRetryAfter: 100 } });
  assert.equal(response.status, 409);
  assert.equal(s.requests.length, 16, "15 polls of 100 ms fit in 1500 ms");
});

test("a 409 that is not key-in-flight is final", async (t) => {
  const s = await serve((n, req, res) =>
    json(res, 409, { type: "about:blank", title: "Conflict" }, { "content-type": "application/problem+json" }),
  );
  t.after(s.close);
  assert.equal((await post(s.url, { retry: fast })).status, 409);
  assert.equal(s.requests.length, 1);
});

// Other servers' in-flight answers, each as that server sends it (the
// sources are cited in src/core/client/answer.rs).
const OTHER_SERVERS = {
  // draft-ietf-httpapi-idempotency-key-header, "Error Handling": its 409.
  "IETF draft": [
    {
      type: "https://developer.example.com/idempotency",
      title: "A request is outstanding for this Idempotency-Key",
      detail: "A request with the same Idempotency-Key for the same operation is being processed or is outstanding.",
    },
    { "content-type": "application/problem+json", "content-language": "en" },
  ],
  // api.stripe.com, as captured in stripe/stripe-go#647: no Retry-After.
  Stripe: [
    {
      error: {
        code: "idempotency_key_in_use",
        doc_url: "https://stripe.com/docs/error-codes/idempotency-key-in-use",
        message:
          "There is currently another in-progress request using this Idempotent Key (that probably means you submitted twice, and the other request is still going through): 770434815mw69wd8iuv. Please try again later.",
        type: "invalid_request_error",
      },
    },
    {},
  ],
  // hono-idempotency 0.9.1: IdempotencyErrors.conflict(), with Retry-After: 1.
  "hono-idempotency": [
    {
      type: "https://hono-idempotency.dev/errors/conflict",
      title: "A request is outstanding for this idempotency key",
      status: 409,
      detail: "A request with the same idempotency key is currently being processed",
      code: "CONFLICT",
    },
    { "content-type": "application/problem+json; charset=utf-8", "retry-after": "1" },
  ],
};

// The first request with the key runs through two attempts, then the 201.
async function pollsOtherServer(t, server) {
  const [problem, headers] = OTHER_SERVERS[server];
  const s = await serve((n, req, res) =>
    n <= 2 ? json(res, 409, problem, headers) : json(res, 201, { orderId: "o1" }),
  );
  t.after(s.close);
  const retries = [];
  const seen = [];
  const onRetry = async (info) => {
    retries.push(info.delay);
    seen.push(await info.response.json()); // reading it to classify it did not consume it
  };
  const response = await post(s.url, { retry: { ...fast, limit: 0, maxRetryAfter: 50 }, onRetry });
  assert.equal(response.status, 201, "polled past limit 0");
  assert.deepEqual(await response.json(), { orderId: "o1" });
  assert.equal(s.requests.length, 3);
  assert.equal(new Set(s.requests.map((r) => r.key)).size, 1, "one key");
  // Retry-After's wait (or 1 s without one), capped by maxRetryAfter: never the backoff of 1 ms.
  assert.deepEqual(retries, [50, 50]);
  assert.deepEqual(seen, [problem, problem]);
}

test("IETF draft: its in-flight 409 is polled until the 201", (t) => pollsOtherServer(t, "IETF draft"));

test("Stripe: its idempotency_key_in_use 409 is polled until the 201", (t) => pollsOtherServer(t, "Stripe"));

test("hono-idempotency: its conflict 409 is polled until the 201", (t) => pollsOtherServer(t, "hono-idempotency"));

test("an in-flight 409 returned after maxInFlightWait is whole", async (t) => {
  const [problem, headers] = OTHER_SERVERS["hono-idempotency"];
  const s = await serve((n, req, res) => json(res, 409, problem, headers));
  t.after(s.close);
  const response = await post(s.url, { retry: { ...fast, maxInFlightWait: 100, maxRetryAfter: 50 } });
  assert.equal(response.status, 409);
  assert.equal(s.requests.length, 3, "two polls of 50 ms");
  assert.deepEqual(await response.json(), problem, "its body was read from a clone");
});

test("a bare 409 with an unrelated JSON body is returned at once", async (t) => {
  const conflict = { error: "This seat is already taken", seat: "14C" };
  const s = await serve((n, req, res) => json(res, 409, conflict, { "retry-after": "1" }));
  t.after(s.close);
  const response = await post(s.url, { retry: fast });
  assert.equal(response.status, 409);
  assert.equal(s.requests.length, 1, "not retried");
  assert.deepEqual(await response.json(), conflict, "the body is still readable");
});

test("Idempotency-Replayed: true is a replay, final whatever its status", async (t) => {
  const s = await serve((n, req, res) => json(res, 503, { stored: true }, { "idempotency-replayed": "true" }));
  t.after(s.close);
  const response = await post(s.url, { retry: fast });
  assert.ok(isReplayed(response));
  assert.equal(response.status, 503);
  assert.equal(s.requests.length, 1, "a replay is never retried");
  assert.ok(isReplayed(new Response(null, { headers: { "Idempotent-Replayed": "true" } })));
  assert.ok(!isReplayed(new Response(null, { headers: { "Idempotency-Replayed": "false" } })));
  assert.ok(!isReplayed(new Response(null)));
});

test("a replayed 500 is not retried; a fresh 500 is", async (t) => {
  const s = await serve((n, req, res) => json(res, 500, {}, n === 1 ? { "idempotent-replayed": "true" } : {}));
  t.after(s.close);
  const replayed = await post(s.url, { retry: fast });
  assert.equal(replayed.status, 500);
  assert.equal(s.requests.length, 1);
  const fresh = await post(s.url, { retry: { ...fast, limit: 2 } });
  assert.equal(fresh.status, 500, "the final answer resolves, like fetch");
  assert.equal(s.requests.length, 1 + 3);
});

test("connection dropped after the server did the work: the retry gets the replay", async (t) => {
  const orders = new Map();
  const s = await serve((n, req, res) => {
    const key = req.headers["idempotency-key"];
    if (orders.has(key)) return json(res, 201, orders.get(key), { "idempotent-replayed": "true" });
    orders.set(key, { orderId: `o${orders.size + 1}` });
    drop(res);
  });
  t.after(s.close);
  const response = await post(s.url, { retry: fast });
  assert.equal(response.status, 201);
  assert.ok(isReplayed(response));
  assert.equal(orders.size, 1, "one order");
  assert.equal(s.requests.length, 2);
  assert.equal(s.requests[1].key, s.requests[0].key);
});

test("offline: nothing is sent until the online event, then once", async (t) => {
  const s = await serve((n, req, res) => json(res, 201, {}));
  t.after(s.close);
  const events = new EventTarget();
  const saved = Object.getOwnPropertyDescriptor(globalThis, "navigator");
  const nav = { onLine: false };
  Object.defineProperty(globalThis, "navigator", { value: nav, configurable: true, writable: true });
  globalThis.addEventListener = events.addEventListener.bind(events);
  globalThis.removeEventListener = events.removeEventListener.bind(events);
  t.after(() => {
    delete globalThis.addEventListener;
    delete globalThis.removeEventListener;
    if (saved) Object.defineProperty(globalThis, "navigator", saved);
    else delete globalThis.navigator;
  });
  const pending = post(s.url, { retry: fast });
  await new Promise((r) => setTimeout(r, 200));
  assert.equal(s.requests.length, 0, "held while offline");
  nav.onLine = true;
  events.dispatchEvent(new Event("online"));
  assert.equal((await pending).status, 201);
  assert.equal(s.requests.length, 1);
});

test("abort stops: during the wait, and during an attempt", async (t) => {
  const s = await serve((n, req, res) => (n === 1 ? json(res, 503, {}, { "retry-after": "5" }) : null));
  t.after(s.close);
  const controller = new AbortController();
  const started = Date.now();
  const waiting = post(s.url, {
    retry: fast,
    signal: controller.signal,
    onRetry: () => setTimeout(() => controller.abort(), 50),
  });
  await assert.rejects(waiting, { name: "AbortError" });
  assert.ok(Date.now() - started < 2000, "did not sit out Retry-After");
  assert.equal(s.requests.length, 1);

  // The second request hangs; abort it through init.signal.
  const hanging = new AbortController();
  const attempt = idempotentFetch(s.url, { method: "POST", body: "x", signal: hanging.signal }, { retry: fast });
  setTimeout(() => hanging.abort(), 100);
  await assert.rejects(attempt, { name: "AbortError" });
  await new Promise((r) => setTimeout(r, 100));
  assert.equal(s.requests.length, 2, "no retry after the abort");
});

test("422 and other 4xx are not retried", async (t) => {
  for (const status of [400, 401, 403, 404, 413, 422]) {
    const s = await serve((n, req, res) => json(res, status, {}));
    const response = await post(s.url, { retry: fast });
    assert.equal(response.status, status);
    assert.equal(s.requests.length, 1, `${status} sent once`);
    await s.close();
  }
});

test("retryable statuses are retried up to the limit with backoff", async (t) => {
  for (const status of [408, 425, 429, 502, 503, 504]) {
    const s = await serve((n, req, res) => (n < 3 ? json(res, status, {}) : json(res, 200, {})));
    const response = await post(s.url, { retry: fast });
    assert.equal(response.status, 200, `${status} retried`);
    assert.equal(s.requests.length, 3);
    await s.close();
  }
});

test("attempts exhausted without an answer: NetworkError", async (t) => {
  const s = await serve((n, req, res) => drop(res));
  t.after(s.close);
  const error = await post(s.url, { retry: { ...fast, limit: 3 } }).catch((e) => e);
  assert.ok(error instanceof NetworkError);
  assert.ok(error instanceof OnceKeyError);
  assert.equal(error.name, "NetworkError");
  assert.equal(error.attempts, 4);
  assert.equal(error.key, s.requests[0].key);
  assert.ok(error.cause instanceof Error);
  assert.equal(s.requests.length, 4);
  assert.equal(new Set(s.requests.map((r) => r.key)).size, 1);
});

test("keys: POST and PATCH get one, an existing key is kept, GET gets none", async (t) => {
  const s = await serve((n, req, res) => json(res, 200, {}));
  t.after(s.close);
  await idempotentFetch(s.url, { method: "PATCH", body: "x" });
  await idempotentFetch(s.url, { method: "POST", headers: { "Idempotency-Key": "mine" }, body: "x" });
  await idempotentFetch(s.url, { method: "POST", body: "x" }, { key: "given" });
  await idempotentFetch(s.url);
  assert.match(s.requests[0].key, /^[0-9a-f-]{36}$/);
  assert.deepEqual(
    s.requests.slice(1).map((r) => r.key),
    ["mine", "given", undefined],
  );
});

test("bad retry options throw OptionsError", async () => {
  await assert.rejects(
    idempotentFetch("http://127.0.0.1:9/", { method: "POST" }, { retry: { limit: -1 } }),
    OptionsError,
  );
  await assert.rejects(
    idempotentFetch("http://127.0.0.1:9/", { method: "POST" }, { retry: { delay: NaN } }),
    /retry\.delay/,
  );
});

test("mistyped options and statuses outside 100–599 throw OptionsError; nothing is sent", async (t) => {
  const server = await serve((n, req, res) => res.writeHead(201).end());
  t.after(server.close);
  const bad = [
    [{ retry: "3" }, /retry must be a number or an object/],
    [{ retry: { limit: "3" } }, /retry\.limit must be a number, not "3"/],
    [{ retry: { jitter: "no" } }, /retry\.jitter must be true or false/],
    [{ retry: { statusCodes: "503" } }, /retry\.statusCodes must be an array of numbers/],
    [{ retry: { statusCodes: [503, "429"] } }, /retry\.statusCodes must be an array of numbers/],
    [{ retry: { statusCodes: [99] } }, /retry\.statusCodes must hold whole HTTP statuses from 100 to 599/],
    [{ retry: { statusCodes: [503, 600] } }, /from 100 to 599/],
    [{ retry: { statusCodes: [503.5] } }, /from 100 to 599/],
    [{ retry: { statusCodes: [65_736] } }, /from 100 to 599/], // 200 as a 16-bit number
  ];
  for (const [options, message] of bad) {
    const sent = idempotentFetch(server.url, { method: "POST" }, options);
    await assert.rejects(sent, OptionsError, JSON.stringify(options));
    await assert.rejects(sent, message);
  }
  assert.equal(server.requests.length, 0);
  // Within range, and every type right: sent.
  await idempotentFetch(
    server.url,
    { method: "POST" },
    { retry: { limit: 1, statusCodes: [100, 599], jitter: false } },
  );
  assert.equal(server.requests.length, 1);
});

// The edge's rules for a key (SPEC §1), from the core: the browser refuses
// what the edge would, before sending.
test("a key the edge would refuse is refused before sending, given as `key` or as a header", async (t) => {
  const server = await serve((n, req, res) => res.writeHead(201).end());
  t.after(server.close);
  const refused = [
    ["a,b", /comma/],
    ["", /empty/],
    ["x".repeat(256), /longer than 255/],
    ["two words", /outside visible ASCII/],
    ["caf\u00e9", /outside visible ASCII/],
    ['"unclosed', /structured-field string/],
  ];
  for (const [key, why] of refused) {
    const sent = idempotentFetch(server.url, { method: "POST" }, { key });
    await assert.rejects(sent, OptionsError, JSON.stringify(key));
    await assert.rejects(sent, why);
  }
  await assert.rejects(
    idempotentFetch(server.url, { method: "POST", headers: { "Idempotency-Key": "a,b" } }),
    /the Idempotency-Key header would be refused by the edge: a comma/,
  );
  await assert.rejects(idempotentFetch(server.url, { method: "POST" }, { key: 42 }), /key must be a string/);
  assert.equal(server.requests.length, 0);
  // What the edge takes is sent as given: the longest key, a quoted one.
  for (const key of ["x".repeat(255), "order:42_~!", '"quoted"']) {
    await idempotentFetch(server.url, { method: "POST" }, { key });
  }
  assert.deepEqual(
    server.requests.map((r) => r.key),
    ["x".repeat(255), "order:42_~!", '"quoted"'],
  );
});

test("Node loads the wasm on first use, by import and by require, with no await; ready() is idempotent", async () => {
  // A fresh process each: the first newKey() loads the wasm at once.
  const dist = new URL("../../pkg/dist/", import.meta.url).pathname;
  const run = (args, cwd) => execFileSync(process.execPath, args, { encoding: "utf8", cwd }).trim();
  const esm = run([
    "--input-type=module",
    "-e",
    `const m = await import(${JSON.stringify(`${dist}oncekey.node.js`)});
     const a = m.ready(), b = m.ready();
     console.log(m.newKey(), a === b);`,
  ]);
  assert.match(esm, /^[0-9a-f-]{36} true$/);
  const cjs = run(["-e", `console.log(require(${JSON.stringify(`${dist}oncekey.node.cjs`)}).newKey())`]);
  assert.match(cjs, /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  // Importing touches no wasm: with none beside the build, the import
  // still works and only the first use fails, with LoadError.
  const bare = mkdtempSync(join(tmpdir(), "oncekey-no-wasm-"));
  for (const f of ["oncekey.node.js", "oncekey.node.cjs"]) copyFileSync(join(dist, f), join(bare, f));
  const probe = `
    import { createRequire } from "node:module";
    let m; try { m = await import('./oncekey.node.js'); } catch (e) { console.log('import threw', e.message); process.exit(); }
    const sync = (() => { try { m.newKey(); return 'no error'; } catch (e) { return e.name; } })();
    const later = await m.ready().then(() => 'resolved', (e) => e.name);
    const viaRequire = (() => { try { return typeof createRequire(import.meta.url)('./oncekey.node.cjs').newKey; } catch (e) { return 'require threw'; } })();
    console.log(sync, later, viaRequire);`;
  writeFileSync(join(bare, "probe.mjs"), probe);
  writeFileSync(join(bare, "package.json"), '{"type":"module"}');
  assert.equal(run([join(bare, "probe.mjs")], bare), "LoadError LoadError function");
  // A server bundle moved away from the package (Vite SSR, a Next.js
  // build deployed elsewhere) finds the wasm from the working directory.
  const app = mkdtempSync(join(tmpdir(), "oncekey-app-"));
  mkdirSync(join(app, "node_modules"));
  symlinkSync(new URL("../../pkg", import.meta.url).pathname, join(app, "node_modules/oncekey"));
  const key = run(
    [
      "--input-type=module",
      "-e",
      `console.log((await import(${JSON.stringify(join(bare, "oncekey.node.js"))})).newKey())`,
    ],
    app,
  );
  assert.match(key.split("\n").pop(), /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  await ready();
  await ready();
});

test("newKey: strictly increasing, in one task and across tasks", async () => {
  let last = "";
  for (let round = 0; round < 5; round++) {
    for (let i = 0; i < 10_000; i++) {
      const key = newKey();
      assert.ok(key > last);
      last = key;
    }
    await new Promise((r) => setTimeout(r, 2));
  }
  // A later task: its key carries at least the time that task reads, not
  // the earlier batch's. (Compared with the clock read in that task: Node
  // may fire a 5 ms timer less than 5 ms of Date.now() after it was set.)
  const before = Date.now();
  await new Promise((r) => setTimeout(r, 5));
  const now = Date.now();
  const ms = parseInt(newKey().replace(/-/g, "").slice(0, 12), 16);
  assert.ok(now > before, "the timer moved the clock");
  assert.ok(ms >= now, `a key made in a later task carries that task's time: ${ms} < ${now}`);
});
