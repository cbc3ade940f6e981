// oncekey/worker in a user's TypeScript worker (SPEC §11): the packed
// package installed in a fresh project, bundled by wrangler, run in workerd.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { createHmac, randomUUID } from "node:crypto";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import http from "node:http";
import { dirname, join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { after, before, test } from "node:test";
import { Miniflare } from "miniflare";
import { dataPointOf } from "../support/data-point.mjs";
import { APP, BASE, DATA_POINT_MARK, ROOT, buildApp, order, startApp } from "./app.mjs";
import { recordName } from "../edge/harness.mjs";
import { allBlocks, block } from "../support/docs.mjs";

let tarball;
let app;
let variants;
let hono;
const logs = [];
const variantLogs = [];

before(async () => {
  tarball = buildApp();
  // The admin token as a wrangler secret arrives (in env), and a metrics
  // dataset bound.
  app = await startApp("index", { logs, vars: { IDEMPOTENCY_ADMIN_TOKEN: "secret" }, metrics: true });
  variants = await startApp("variants", { logs: variantLogs });
  hono = await startApp("hono");
});

after(async () => {
  await app?.dispose();
  await variants?.dispose();
  await hono?.dispose();
});

const item = () => `tea-${randomUUID()}`;

async function problem(res, status, code) {
  assert.equal(res.status, status);
  assert.equal(res.headers.get("content-type"), "application/problem+json");
  const body = await res.json();
  assert.equal(body.type, `urn:oncekey:problem:${code}`);
  return body;
}

test("the packed package ships the worker entry, and wrangler bundles it with no config: the wasm a module of its own", () => {
  const files = execFileSync("tar", ["tzf", join(ROOT, "build", "worker-js", tarball)], { encoding: "utf8" });
  for (const file of [
    "dist/worker.js",
    "dist/worker.d.ts",
    "dist/oncekey_worker_bg.wasm",
    "dist/hono.js",
    "dist/hono.d.ts",
    "dist/proxy.js",
    "dist/proxy.d.ts",
    "dist/oncekey_proxy_bg.wasm",
  ]) {
    assert.ok(files.includes(`package/${file}`), `${file} is in the tarball`);
  }
  const dist = readdirSync(join(APP, "dist"));
  const wasm = dist.find((f) => f.endsWith("oncekey_worker_bg.wasm"));
  assert.ok(wasm, `wrangler emitted the wasm as a module: ${dist}`);
  assert.match(readFileSync(join(APP, "dist", "index.js"), "utf8"), new RegExp(`import \\w+ from "\\./${wasm}"`));
});

test("a retry replays the stored answer (Idempotent-Replayed), and the handler ran once", async () => {
  const it = item();
  const key = randomUUID();
  const first = await app.fetch(...order(it, key));
  assert.equal(first.status, 201);
  const body = await first.json();
  assert.equal(body.attempt, "1", "the handler saw Idempotency-Attempt: 1");
  assert.equal(body.colo, "DFW", "the handler saw the client's cf");
  assert.equal(first.headers.get("idempotent-replayed"), null);
  assert.match(first.headers.get("server-timing"), /\bdo;dur=\d+.*origin;dur=\d+/);
  const again = await app.fetch(...order(it, key));
  assert.equal(again.status, 201);
  assert.equal(again.headers.get("idempotent-replayed"), "true");
  assert.equal(again.headers.get("x-shop"), "yes", "the handler's own headers are replayed");
  assert.deepEqual(await again.json(), body);
  assert.equal((await app.orders(it)).count, 1);
  assert.ok(
    logs.some((line) => line.includes('"oncekey":"replay"') && line.includes('"tier":"do"')),
    "one log line per decision",
  );
});

test("20 concurrent duplicates → exactly one execution; every other answer is 409 or the replay", async () => {
  const it = item();
  const key = randomUUID();
  const answers = await Promise.all(
    Array.from({ length: 20 }, async () => {
      const res = await app.fetch(...order(it, key, { query: "?delay_ms=300" }));
      return { status: res.status, replayed: res.headers.get("idempotent-replayed"), body: await res.json() };
    }),
  );
  assert.equal((await app.orders(it)).count, 1, "one execution");
  const created = answers.filter((a) => a.status === 201);
  assert.ok(created.length >= 1, "the execution's own answer came back");
  assert.equal(new Set(created.map((a) => a.body.orderId)).size, 1, "every 201 is the same order");
  assert.equal(
    created.filter((a) => a.replayed !== "true").length,
    1,
    "one answer is the execution's, the rest replays",
  );
  for (const a of answers.filter((a) => a.status !== 201)) {
    assert.equal(a.status, 409);
    assert.equal(a.body.type, "urn:oncekey:problem:key-in-flight");
  }
});

test("a duplicate waits inside the coordinator for the running attempt: its replay, or its own run after a release", async () => {
  const it = item();
  const key = randomUUID();
  const send = (headers) => app.fetch(...order(it, key, { query: "?delay_ms=500", headers }));
  const first = send();
  await sleep(150);
  const sent = Date.now();
  const duplicate = await send();
  const waited = Date.now() - sent;
  assert.equal(duplicate.status, 201, "not a 409: it waited");
  assert.ok(waited < 2000, `woken by the first attempt's finish, not by its own timer: ${waited} ms`);
  assert.equal(duplicate.headers.get("idempotent-replayed"), "true");
  assert.deepEqual(await duplicate.json(), await (await first).json());
  // The first attempt releases the key (NotSentError): the waiting duplicate runs as attempt 2.
  const key2 = randomUUID();
  const released = app.fetch(...order(it, key2, { query: "?delay_ms=500", headers: { "test-fault": "not-sent" } }));
  await sleep(150);
  const next = await app.fetch(...order(it, key2, { query: "?delay_ms=500" }));
  assert.equal((await released).status, 502);
  assert.equal(next.status, 201);
  assert.equal((await next.json()).attempt, "2");
  assert.equal((await app.orders(it)).count, 2);
});

test("the same key with another body → 422 key-reused; nothing runs", async () => {
  const it = item();
  const key = randomUUID();
  assert.equal((await app.fetch(...order(it, key))).status, 201);
  await problem(await app.fetch(...order(`${it}-other`, key)), 422, "key-reused");
  assert.equal((await app.orders(`${it}-other`)).count, 0);
});

test("a bad key → 400 invalid-key; the handler is not called", async () => {
  const it = item();
  for (const key of ["a,b", "x".repeat(256), '"unterminated', "caf\u00e9"]) {
    const res = await app.fetch(...order(it, key));
    const body = await problem(res, 400, "invalid-key");
    assert.equal(res.headers.get("cache-control"), "no-store");
    assert.equal(body.status, 400);
  }
  assert.equal((await app.orders(it)).count, 0);
});

test("no key → the request passes through: every POST runs", async () => {
  const it = item();
  for (let i = 0; i < 2; i++) {
    const res = await app.fetch(...order(it, undefined, { headers: { "idempotency-attempt": "7" } }));
    assert.equal(res.status, 201);
    assert.equal(res.headers.get("idempotent-replayed"), null);
    assert.equal((await res.json()).attempt, null, "a client-sent Idempotency-Attempt never reaches the handler");
  }
  assert.equal((await app.orders(it)).count, 2);
});

test("a request oncekey does not cover fails as without it: an uncovered GET's and a keyless POST's throw reach the runtime", async () => {
  const it = item();
  for (const [what, send] of [
    ["uncovered GET", () => app.fetch(`/orders?item=${it}`, { headers: { "test-fault": "throw" } })],
    ["keyless POST", () => app.fetch(...order(it, undefined, { headers: { "test-fault": "throw" } }))],
  ]) {
    const before = logs.length;
    const res = await send();
    const text = await res.text();
    assert.equal(res.status, 500, `${what}: the runtime's own answer to a throw`);
    assert.notEqual(
      res.headers.get("content-type"),
      "application/problem+json",
      `${what}: not the layer's problem: ${text}`,
    );
    assert.doesNotMatch(text, /retry with the same key/i, `${what}: no advice about a key it never sent`);
    // Miniflare answers an uncaught throw with its message and stack.
    assert.match(
      text,
      /^Error: (the listing failed|the connection to the database dropped)/,
      `${what}: the runtime has the throw itself`,
    );
    assert.doesNotMatch(logs.slice(before).join("\n"), /"oncekey":"pass-through"/, `${what}: nothing of oncekey's`);
  }
  assert.equal((await app.orders(it)).count, 1, "the keyless POST ran, as it would have");
});

test("a handler that throws → 502, the outcome unknown: the key is held (409) until its lease ends", async () => {
  const it = item();
  const key = randomUUID();
  const failed = await problem(
    await app.fetch(...order(it, key, { headers: { "test-fault": "throw" } })),
    502,
    "origin-unreachable",
  );
  assert.match(
    failed.detail,
    /handler failed; the outcome is unknown/,
    "says what happened: the handler, not an origin",
  );
  assert.equal((await app.orders(it)).count, 1, "it had created the order before it threw");
  const retry = await app.fetch(...order(it, key));
  const body = await problem(retry, 409, "outcome-unknown");
  assert.match(body.detail, /unknown/, "the detail says the outcome is unknown");
  // Marked unknown, not running: Retry-After is the rest of the 30 s lease
  // (a running attempt's is 1).
  const wait = Number(retry.headers.get("retry-after"));
  assert.ok(wait > 1 && wait <= 30, `Retry-After is the rest of the lease: ${wait}`);
  assert.equal((await app.orders(it)).count, 1, "the retry did not run it again");
  assert.ok(
    logs.some((line) => line.includes("the connection to the database dropped")),
    "the error is logged",
  );
  const at = logs.findIndex((line) => line.includes("oncekey: the handler threw; the outcome is unknown"));
  assert.ok(at >= 0, "console.error says what the layer made of it");
  assert.ok(
    logs.slice(at, at + 8).some((line) => /^\s+at /.test(line)),
    "with the handler's stack",
  );
});

test("a handler that throws NotSentError → 502, the key released: the retry runs as attempt 2", async () => {
  const it = item();
  const key = randomUUID();
  const notSent = await problem(
    await app.fetch(...order(it, key, { headers: { "test-fault": "not-sent" } })),
    502,
    "origin-unreachable",
  );
  assert.match(notSent.detail, /not carried out/, "the answer says what the layer knows");
  assert.doesNotMatch(notSent.detail, /unknown/);
  assert.equal((await app.orders(it)).count, 0);
  const retry = await app.fetch(...order(it, key));
  assert.equal(retry.status, 201);
  assert.equal((await retry.json()).attempt, "2", "the attempt number kept rising");
  assert.equal((await app.orders(it)).count, 1);
});

test("a client that hangs up while the handler runs does not strand its key: the attempt is finished and stored", async () => {
  const it = item();
  const key = randomUUID();
  // The same request each time (the query is part of the fingerprint).
  const send = () => order(it, key, { query: "?delay_ms=800" });
  const [path, init] = send();
  await new Promise((resolve) => {
    // The host the other requests carry: the record's name depends on it.
    const headers = { ...init.headers, host: new URL(BASE).host };
    const req = http.request(new URL(path, app.url), { method: "POST", headers, agent: false });
    req.on("error", resolve);
    req.end(init.body);
    setTimeout(() => {
      req.destroy();
      resolve();
    }, 300);
  });
  let retry;
  for (let i = 0; i < 30; i++) {
    await sleep(200);
    retry = await app.fetch(...send());
    if (retry.status !== 409) break;
    await retry.arrayBuffer();
  }
  assert.equal(retry.status, 201, `the retry got ${retry.status}`);
  assert.equal(retry.headers.get("idempotent-replayed"), "true", "the abandoned attempt was stored");
  assert.equal((await retry.json()).attempt, "1");
  assert.equal((await app.orders(it)).count, 1);
});

test("admin paths (SPEC §12): an unknown outcome inspected, released by the operator, and the retry runs as attempt 2; 401 without the token", async () => {
  const it = item();
  const key = randomUUID();
  const record = recordName(new URL(BASE).hostname, undefined, key);
  const path = `/.well-known/oncekey/records/${record}`;
  const operator = { authorization: "Bearer secret" };
  await problem(await app.fetch(...order(it, key, { headers: { "test-fault": "throw" } })), 502, "origin-unreachable");
  const seen = await app.fetch(path, { headers: operator });
  assert.equal(seen.status, 200);
  const state = await seen.json();
  assert.deepEqual([state.record, state.kind, state.attempt, state.outcomeUnknown], [record, "in-flight", 1, true]);
  assert.ok(Date.parse(state.leaseExpiresAt) > Date.now());
  await problem(await app.fetch(path, { headers: { authorization: "Bearer wrong" } }), 401, "unauthorized");
  await problem(await app.fetch(`${path}/release`, { method: "POST" }), 401, "unauthorized");
  const released = await app.fetch(`${path}/release`, { method: "POST", headers: operator });
  assert.equal(released.status, 200);
  assert.deepEqual([(await released.json()).kind], ["released"]);
  const retry = await app.fetch(...order(it, key));
  assert.equal(retry.status, 201, "no wait for the lease");
  assert.equal((await retry.json()).attempt, "2");
  const refused = await problem(
    await app.fetch(`${path}/release`, { method: "POST", headers: operator }),
    409,
    "not-in-flight",
  );
  assert.match(refused.detail, /completed/);
  await problem(
    await app.fetch(`/.well-known/oncekey/records/${"0".repeat(64)}`, { headers: operator }),
    404,
    "record-not-found",
  );
  assert.ok(
    logs.some((line) => line.includes('"oncekey":"release"') && line.includes(record)),
    "logged with the full record name",
  );
});

test("metrics (SPEC §12): one data point per decision to IDEMPOTENCY_METRICS, the log line's fields", async () => {
  const it = item();
  const key = randomUUID();
  assert.equal((await app.fetch(...order(it, key))).status, 201);
  assert.equal((await app.fetch(...order(it, key))).status, 201);
  const record = recordName(new URL(BASE).hostname, undefined, key);
  const points = () =>
    logs.filter((l) => l.startsWith(DATA_POINT_MARK)).map((l) => JSON.parse(l.slice(DATA_POINT_MARK.length)));
  const decisions = () =>
    logs.filter((l) => l.startsWith("{") && l.includes(`"record":"${record}"`)).map((l) => JSON.parse(l));
  for (let i = 0; i < 50 && points().filter((p) => p.blobs[3] === record).length < 2; i++) await sleep(100);
  const mine = points().filter((p) => p.blobs[3] === record);
  assert.equal(mine.length, 2, "one point per decision");
  // The execution logs once its finish has landed, which the replay waited
  // for: the two lines may come in either order.
  for (const line of decisions()) {
    assert.equal(line.record, record);
    assert.deepEqual(
      mine.find((p) => p.blobs[0] === line.oncekey),
      dataPointOf(line),
    );
  }
  assert.deepEqual(mine.map((p) => p.blobs[0]).sort(), ["execute", "replay"]);
});

test("npx --no-install oncekey record (the packed package's command): the record name the layer uses, from host, identity and key", () => {
  const run = (args, { stdin, env } = {}) =>
    execFileSync("npx", ["--no-install", "oncekey", "record", ...args], {
      cwd: APP,
      encoding: "utf8",
      input: stdin ?? "",
      env: { ...process.env, ...env },
      stdio: "pipe",
    });
  const cli = (args, options) => run(args, options).trim();
  // The identity from standard input, or from the environment: never the command line.
  assert.equal(
    cli(["--host", "shop.example", "--key", "k1", "--identity-stdin"], { stdin: "Authorization: Bearer alice\n" }),
    recordName("shop.example", "Bearer alice", "k1"),
  );
  assert.equal(
    cli(["--host", "shop.example", "--key", "k1"], { env: { ONCEKEY_IDENTITY: "authorization: Bearer alice" } }),
    recordName("shop.example", "Bearer alice", "k1"),
  );
  assert.equal(
    cli(["--host", "https://Shop.Example:8443/api/orders", "--key", "order-7"]),
    recordName("shop.example", undefined, "order-7"),
    "a URL, any case, no identity",
  );
  const key = randomUUID();
  assert.equal(
    cli(["--host", "shop.test", "--key", `"${key}"`]),
    recordName("shop.test", undefined, key),
    "a quoted key is the same key",
  );
  assert.notEqual(
    cli(["--host", "a.example", "--key", "k", "--scope", "cookie:session", "--identity-stdin"], {
      stdin: "Cookie: session=1\n",
    }),
    recordName("a.example", undefined, "k"),
  );
  // A secret on the command line is refused, and never echoed back.
  for (const option of ["--authorization", "--cookie", "--header"]) {
    assert.throws(
      () => run(["--host", "a.example", "--key", "k", option, "sk_live_secret"]),
      (error) =>
        /would put a secret on the command line/.test(error.stderr) && !error.stderr.includes("sk_live_secret"),
      option,
    );
  }
  assert.throws(
    () => run(["--host", "a.example", "--key", "k", "--identity-stdin"], { stdin: "sk_live_no_colon\n" }),
    (error) => /identity line 1 is not/.test(error.stderr) && !error.stderr.includes("sk_live"),
  );
  assert.throws(() => run(["--host", "a.example", "--key", "a,b"]), /not a valid Idempotency-Key/);
  assert.throws(() => run(["--key", "k"]), /--host is required/);
  // A webhook delivery's record: its path in canonical form and its id, never
  // the host nor an identity; the body too for GitHub and Shopify (docs/webhooks.md).
  const delivery = (path, id, more = []) => cli(["--path", path, "--delivery", id, ...more]);
  assert.match(delivery("/hooks/stripe", "evt_1"), /^[0-9a-f]{64}$/);
  assert.equal(delivery("/hooks/stripe", "evt_1"), delivery("/Hooks//stripe/", "evt_1"), "any spelling of the path");
  assert.notEqual(delivery("/hooks/stripe", "evt_1"), delivery("/hooks/billing", "evt_1"), "one record per endpoint");
  assert.notEqual(delivery("/hooks/stripe", "evt_1"), cli(["--host", "api.example", "--key", "evt_1"]));
  const bodyFile = join(mkdtempSync(join(tmpdir(), "oncekey-body-")), "body.json");
  writeFileSync(bodyFile, '{"action":"opened"}');
  const withBody = delivery("/hooks/github", "d-1", ["--body-file", bodyFile]);
  assert.match(withBody, /^[0-9a-f]{64}$/);
  assert.notEqual(withBody, delivery("/hooks/github", "d-1"), "a GitHub delivery's body names its record too");
  assert.throws(() => run(["--delivery", "evt_1"]), /--delivery needs --path/);
  assert.throws(() => run(["--host", "a.example", "--path", "/h", "--delivery", "e"]), /not named by its host/);
  assert.throws(() => run(["--path", "/h", "--delivery", "e", "--key", "k"]), /give one/);
  assert.throws(() => run(["--host", "a.example", "--path", "/h", "--key", "k"]), /--path goes with --delivery/);
  assert.throws(() => run(["--path", "h", "--delivery", "e"]), /must begin with \//);
  assert.throws(() => run(["--path", "/h", "--delivery", "e", "--body-file", "/no/such/file"]), /no such file/);
  assert.throws(() => run(["--path", "/h", "--delivery", "two words"]), /not a valid delivery id/);
});

test("options are validated by the core: a bad or unknown one answers 500 misconfigured naming it, and logs it", async () => {
  const res = await variants.fetch(...order(item(), randomUUID(), { prefix: "/bad-ttl" }));
  const body = await problem(res, 500, "misconfigured");
  assert.match(body.detail, /ttlSeconds/);
  assert.match(body.detail, /IDEMPOTENCY_TTL_SECONDS/);
  assert.equal(res.headers.get("cache-control"), "no-store");
  const unknown = await problem(
    await variants.fetch(...order(item(), randomUUID(), { prefix: "/unknown-option" })),
    500,
    "misconfigured",
  );
  assert.match(unknown.detail, /ttlSecond\b/);
  assert.ok(
    variantLogs.some((line) => line.includes('"oncekey":"misconfigured"') && line.includes("IDEMPOTENCY_TTL_SECONDS")),
    "the bad option is logged",
  );
});

test("logSample: 0 writes no line for executions and replays, and still one for a refusal", async () => {
  const seen = variantLogs.length;
  const key = randomUUID();
  const it = item();
  assert.equal((await variants.fetch(...order(it, key, { prefix: "/quiet" }))).status, 201);
  const again = await variants.fetch(...order(it, key, { prefix: "/quiet" }));
  assert.equal(again.headers.get("idempotent-replayed"), "true");
  await problem(await variants.fetch(...order(`${it}-other`, key, { prefix: "/quiet" })), 422, "key-reused");
  const lines = () => variantLogs.slice(seen).filter((line) => line.includes('"path":"/quiet/'));
  for (let i = 0; i < 50 && lines().length === 0; i++) await sleep(100);
  await sleep(300); // the two routine lines, were they written, come before it
  assert.deepEqual(
    lines().map((line) => JSON.parse(line.slice(line.indexOf("{"))).oncekey),
    ["key-reused"],
  );
});

test("a handler called with an env of its own makes its layer from that env, not from the module's env it was made from at load", async () => {
  // The module's IDEMPOTENCY_PATHS ("/vars/*") leaves /own-env/ uncovered;
  // the env the handler is called with covers it, and a key is required.
  await problem(await variants.fetch(...order(item(), undefined, { prefix: "/own-env" })), 400, "missing-key");
  const key = randomUUID();
  const it = item();
  assert.equal((await variants.fetch(...order(it, key, { prefix: "/own-env" }))).status, 201);
  const again = await variants.fetch(...order(it, key, { prefix: "/own-env" }));
  assert.equal(again.headers.get("idempotent-replayed"), "true", "covered: replayed");
});

test("env vars fill what the options leave out, and the bindings can be renamed", async () => {
  const it = item();
  // IDEMPOTENCY_PATHS from [vars] with `required: true` from the options.
  await problem(await variants.fetch(...order(it, undefined, { prefix: "/vars" })), 400, "missing-key");
  assert.equal(
    (await variants.fetch(...order(it, undefined, { prefix: "/elsewhere" }))).status,
    201,
    "uncovered: passes through",
  );
  // Reservations in LOCKS, copies in ANSWERS.
  const key = randomUUID();
  const first = await variants.fetch(...order(it, key, { prefix: "/vars" }));
  assert.equal(first.status, 201);
  const again = await variants.fetch(...order(it, key, { prefix: "/vars" }));
  assert.equal(again.headers.get("idempotent-replayed"), "true");
  assert.equal((await variants.orders(it, "/elsewhere")).count, 2);
  // IDEMPOTENCY_IN_FLIGHT_WAIT_MS = "0" from [vars]: a duplicate is told 409 at once.
  const key2 = randomUUID();
  const running = variants.fetch(...order(it, key2, { prefix: "/vars", query: "?delay_ms=500" }));
  await sleep(150);
  await problem(
    await variants.fetch(...order(it, key2, { prefix: "/vars", query: "?delay_ms=500" })),
    409,
    "key-in-flight",
  );
  assert.equal((await running).status, 201);
  const kv = await variants.mf.getKVNamespace("ANSWERS");
  const { keys } = await kv.list();
  assert.ok(keys.length >= 1, "the completed answer was copied to the renamed KV namespace");
});

test("the Hono middleware: replay, one run of 10 concurrent duplicates, 422, bad and missing keys", async () => {
  const it = item();
  const key = randomUUID();
  const first = await hono.fetch(...order(it, key, { prefix: "/api" }));
  assert.equal(first.status, 201);
  const body = await first.json();
  assert.equal(body.attempt, "1", "the route saw the attempt through c.req");
  const again = await hono.fetch(...order(it, key, { prefix: "/api" }));
  assert.equal(again.headers.get("idempotent-replayed"), "true");
  assert.deepEqual(await again.json(), body);
  const it2 = item();
  const key2 = randomUUID();
  const statuses = await Promise.all(
    Array.from({ length: 10 }, async () => (await hono.fetch(...order(it2, key2, { prefix: "/api" }))).status),
  );
  assert.ok(
    statuses.every((s) => s === 201 || s === 409),
    `${statuses}`,
  );
  assert.equal((await hono.orders(it, "/api")).count, 1);
  assert.equal((await hono.orders(it2, "/api")).count, 1);
  await problem(await hono.fetch(...order(`${it}-other`, key, { prefix: "/api" })), 422, "key-reused");
  await problem(await hono.fetch(...order(it, "a,b", { prefix: "/api" })), 400, "invalid-key");
  assert.equal((await hono.fetch(...order(it, undefined, { prefix: "/api" }))).status, 201, "no key: passes through");
  assert.equal((await hono.orders(it, "/api")).count, 2);
});

test("the Hono middleware: a route's throw is an unknown outcome even through onError; NotSentError releases", async () => {
  const it = item();
  const key = randomUUID();
  await problem(
    await hono.fetch(...order(it, key, { prefix: "/api", headers: { "test-fault": "throw" } })),
    502,
    "origin-unreachable",
  );
  await problem(await hono.fetch(...order(it, key, { prefix: "/api" })), 409, "outcome-unknown");
  assert.equal((await hono.orders(it, "/api")).count, 1);
  const key2 = randomUUID();
  await problem(
    await hono.fetch(...order(it, key2, { prefix: "/api", headers: { "test-fault": "not-sent" } })),
    502,
    "origin-unreachable",
  );
  const retry = await hono.fetch(...order(it, key2, { prefix: "/api" }));
  assert.equal(retry.status, 201);
  assert.equal((await retry.json()).attempt, "2");
  assert.equal((await hono.orders(it, "/api")).count, 2);
});

test("the Hono middleware fails as Hono does where oncekey is not involved: an uncovered HTTPException(404) and a keyless throw reach app.onError", async () => {
  const covered = await hono.fetch("/api/items/x");
  const open = await hono.fetch("/open/items/x");
  assert.deepEqual(
    [covered.status, await covered.text()],
    [open.status, await open.text()],
    "as the same route without the middleware",
  );
  assert.equal(open.status, 404);
  const keyless = await hono.fetch(...order(item(), undefined, { prefix: "/api", headers: { "test-fault": "throw" } }));
  assert.equal(keyless.status, 500);
  assert.deepEqual(await keyless.json(), { error: "failed after the insert" }, "the app's own error answer");
});

test("the Hono middleware: HTTPException(402) on a keyed POST is the answer — stored, replayed, one execution", async () => {
  const it = item();
  const key = randomUUID();
  const first = await hono.fetch(...order(it, key, { prefix: "/api", headers: { "test-fault": "declined" } }));
  assert.equal(first.status, 402);
  const text = await first.text();
  assert.equal(text, "card declined");
  const retry = await hono.fetch(...order(it, key, { prefix: "/api", headers: { "test-fault": "declined" } }));
  assert.deepEqual([retry.status, retry.headers.get("idempotent-replayed"), await retry.text()], [402, "true", text]);
  assert.equal((await hono.orders(it, "/api")).count, 1);
});

test("a missing or mistyped binding, and a typo'd IDEMPOTENCY_ variable: 500 misconfigured naming it, never a retryable 503", async () => {
  const cases = [
    [
      "a typo'd variable",
      { IDEMPOTENCY_TTL: "60" },
      /IDEMPOTENCY_TTL: not a variable of the layer \(did you mean IDEMPOTENCY_TTL_SECONDS\?\)/,
    ],
  ];
  for (const [what, vars, named] of cases) {
    const misconfigured = await startApp("index", { vars });
    try {
      const body = await problem(await misconfigured.fetch(...order(item(), randomUUID())), 500, "misconfigured");
      assert.match(body.detail, named, what);
    } finally {
      await misconfigured.dispose();
    }
  }
  const renamed = await problem(
    await variants.fetch(...order(item(), randomUUID(), { prefix: "/missing-binding" })),
    500,
    "misconfigured",
  );
  assert.match(
    renamed.detail,
    /NOPE: no Durable Object namespace \(class IdempotencyCoordinator\) is bound under this name/,
  );
  const wrong = await problem(
    await variants.fetch(...order(item(), randomUUID(), { prefix: "/wrong-binding" })),
    500,
    "misconfigured",
  );
  assert.match(
    wrong.detail,
    /IDEMPOTENCY_PATHS: the binding is not a Durable Object namespace/,
    "a variable where the namespace should be",
  );
  assert.ok(
    variantLogs.some((line) => line.includes("NOPE")),
    "and logged with console.error",
  );
});

test("queue consumer options are validated by the core: a bad or unknown one makes the batch throw, naming it; nothing runs", async () => {
  const cases = [
    ["bad-key", /option `key` must be/],
    ["unknown-option", /unknown option `keyy`/],
    ["bad-delay", /option `maxRetryDelaySeconds` must be a whole number of seconds from 1 to 43200/],
    ["short-ttl", /option `ttlSeconds` \(IDEMPOTENCY_TTL_SECONDS/],
  ];
  const worker = await variants.mf.getWorker();
  for (const [queue, named] of cases) {
    const seen = variantLogs.length;
    const result = await worker.queue(queue, [{ id: `m-${queue}`, timestamp: new Date(), attempts: 1, body: "{}" }]);
    assert.notEqual(result.outcome, "ok", queue);
    assert.deepEqual(result.explicitAcks ?? [], [], `${queue}: nothing acknowledged`);
    // The runtime's log arrives on its own stream: wait for it a little.
    for (let i = 0; i < 40 && !variantLogs.slice(seen).some((line) => named.test(line)); i++) await sleep(50);
    assert.ok(
      variantLogs.slice(seen).some((line) => named.test(line)),
      `${queue}: the error names the option\n${variantLogs.slice(seen).join("\n")}`,
    );
  }
  const res = await variants.fetch("/queue-handled");
  assert.deepEqual(await res.json(), { handled: 0 });
});

test("tsc --noEmit: the app type-checks against the package's .d.ts, and a misuse does not", () => {
  const tsc = join(ROOT, "node_modules", ".bin", "tsc");
  execFileSync(tsc, ["-p", join(APP, "tsconfig.json")], { encoding: "utf8" });
  const misuse = join(APP, "src", "misuse.ts");
  writeFileSync(
    misuse,
    `import { withIdempotency } from "oncekey/worker";
export const a = withIdempotency(async () => new Response("ok"), { ttlSeconds: true });
export const b = withIdempotency(async () => "not a response");
export const c = withIdempotency(async () => new Response("ok"), { kvReplay: "sometimes" });
export const d = withIdempotency(async () => new Response("ok"), { releaseOn: 503 });
import { proxy } from "oncekey/proxy";
export const e = proxy({ ttlSeconds: true });
export const f = proxy({ forms: "inject" });
export { withQueueIdempotency } from "oncekey/proxy";
`,
  );
  let output = "";
  try {
    execFileSync(tsc, ["-p", join(APP, "tsconfig.json")], { encoding: "utf8" });
  } catch (error) {
    output = error.stdout;
  }
  for (const line of [2, 3, 4, 7, 9])
    assert.match(output, new RegExp(`misuse\\.ts\\(${line},`), `line ${line} of the misuse is an error`);
  assert.doesNotMatch(output, /misuse\.ts\(5,/, "releaseOn takes a number, as the runtime does");
  assert.doesNotMatch(output, /misuse\.ts\(8,/, "oncekey/proxy takes oncekey/worker's options");
  assert.doesNotMatch(output, /index\.ts|variants\.ts|shop\.ts/, "only the misuse is an error");
});

/**
 * A fresh project in build/worker-js/`name` from `files` (path → text), as a
 * user makes one: the packed package installed, then `steps` ([command,
 * args]) run in it, then wrangler bundles it into dist/. Its directory.
 */
function docsProject(name, files, steps = []) {
  const dir = join(ROOT, "build", "worker-js", name);
  rmSync(dir, { recursive: true, force: true });
  for (const path of Object.keys(files)) mkdirSync(dirname(join(dir, path)), { recursive: true });
  writeFileSync(join(dir, "package.json"), JSON.stringify({ name, private: true, type: "module" }));
  for (const [path, text] of Object.entries(files)) writeFileSync(join(dir, path), text);
  const quiet = { ...process.env, WRANGLER_SEND_METRICS: "false", WRANGLER_SEND_ERROR_REPORTS: "false" };
  const run = (command, args) => {
    try {
      return execFileSync(command, args, { cwd: dir, env: quiet, encoding: "utf8" });
    } catch (error) {
      throw new Error(`${command} ${args.join(" ")} failed in ${dir}:\n${error.stdout}${error.stderr}`);
    }
  };
  run("npm", [
    "install",
    "--offline",
    "--no-audit",
    "--no-fund",
    "--silent",
    join(ROOT, "build", "worker-js", tarball),
  ]);
  for (const [command, args] of steps) run(command, args);
  run(join(ROOT, "node_modules", ".bin", "wrangler"), ["deploy", "--dry-run", "--outdir", "dist"]);
  return dir;
}

/** What `npm create cloudflare` gives a TypeScript worker: strict, the runtime's types. */
const STRICT_TSCONFIG = JSON.stringify({
  compilerOptions: {
    target: "es2022",
    module: "es2022",
    moduleResolution: "bundler",
    lib: ["es2022"],
    types: ["./worker-configuration.d.ts"],
    strict: true,
    noEmit: true,
    skipLibCheck: false,
  },
  include: ["src/**/*.ts"],
});

/** A documented project's steps of a TypeScript worker: its runtime types, then strict `tsc`. */
const TYPE_CHECK = [
  [join(ROOT, "node_modules", ".bin", "wrangler"), ["types"]],
  [join(ROOT, "node_modules", ".bin", "tsc"), ["-p", "tsconfig.json"]],
];

/** A documented project's bundle in workerd, with the coordinator and KV its `config` binds, and `bindings`. */
function startBundle(dir, config, bindings = {}) {
  const flags = /^compatibility_flags = (\[[^\]]*\])/m.exec(config)?.[1];
  return new Miniflare({
    modules: true,
    modulesRoot: join(dir, "dist"),
    scriptPath: join(dir, "dist", "index.js"),
    modulesRules: [{ type: "CompiledWasm", include: ["**/*.wasm"] }],
    compatibilityDate: /^compatibility_date = "([^"]+)"/m.exec(config)[1],
    compatibilityFlags: flags ? JSON.parse(flags) : [],
    kvNamespaces: ["IDEMPOTENCY_KV"],
    durableObjects: { IDEMPOTENCY_DO: { className: "IdempotencyCoordinator", useSQLite: true } },
    bindings,
  });
}

test("docs/typescript.md's oncekey/worker example: its two files as written, with the packed package, type-check (strict tsc), bundle with wrangler and run in workerd", async () => {
  const config = block("toml", "# wrangler.toml — the same bindings as the proxy's");
  assert.match(config, /^compatibility_flags = \["enable_request_signal"\]/m, "the example learns of disconnects");
  const dir = docsProject(
    "my-worker",
    { "src/index.ts": block("ts", "// src/index.ts"), "wrangler.toml": config, "tsconfig.json": STRICT_TSCONFIG },
    TYPE_CHECK,
  );
  const mf = startBundle(dir, config);
  try {
    const key = randomUUID();
    const send = () =>
      mf.dispatchFetch(`${BASE}/orders`, {
        method: "POST",
        headers: { "content-type": "application/json", "idempotency-key": key },
        body: JSON.stringify({ item: "tea" }),
      });
    const first = await send();
    assert.equal(first.status, 201);
    const created = await first.json();
    const retry = await send();
    assert.deepEqual(
      [retry.status, retry.headers.get("idempotent-replayed"), await retry.json()],
      [201, "true", created],
    );
    // The README's curl (-d amount=100): not JSON. The handler answers 400,
    // an answer stored and replayed, rather than throwing and holding the key.
    const curlKey = randomUUID();
    const curl = () =>
      mf.dispatchFetch(`${BASE}/v1/charges`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded", "idempotency-key": curlKey },
        body: "amount=100",
      });
    const refused = await curl();
    assert.equal(refused.status, 400, await refused.clone().text());
    const again = await curl();
    assert.deepEqual([again.status, again.headers.get("idempotent-replayed")], [400, "true"]);
  } finally {
    await mf.dispose();
  }
});

test("docs/webhooks.md's receiver inside a Worker: as written, with the packed package, type-checks, bundles, and handles a Stripe-signed event once (a resend replays, a forged one is 401)", async () => {
  const config = block("toml", "# wrangler.toml — the same bindings as the proxy's");
  const dir = docsProject(
    "my-webhooks",
    { "src/index.ts": block("ts", "// src/webhooks.ts"), "wrangler.toml": config, "tsconfig.json": STRICT_TSCONFIG },
    TYPE_CHECK,
  );
  const secret = "whsec_docs_receiver_secret";
  const mf = startBundle(dir, config, { STRIPE_WEBHOOK_SECRET: secret });
  try {
    const event = JSON.stringify({ id: `evt_${randomUUID()}`, type: "checkout.session.completed" });
    // Signed as Stripe signs: t=<unix seconds>,v1=<hex HMAC-SHA256 of "t.body" keyed by the whole secret>.
    const deliver = (body, key = secret) => {
      const t = Math.floor(Date.now() / 1000);
      const v1 = createHmac("sha256", key).update(`${t}.${body}`).digest("hex");
      return mf.dispatchFetch(`${BASE}/hooks/stripe`, {
        method: "POST",
        headers: { "content-type": "application/json", "stripe-signature": `t=${t},v1=${v1}` },
        body,
      });
    };
    const first = await deliver(event);
    assert.equal(first.status, 200, await first.clone().text());
    const handled = await first.json();
    assert.equal(handled.event, JSON.parse(event).id);
    const resend = await deliver(event);
    assert.deepEqual([resend.status, resend.headers.get("idempotent-replayed")], [200, "true"]);
    assert.deepEqual(await resend.json(), handled);
    const forged = await deliver(JSON.stringify({ id: `evt_${randomUUID()}`, type: "x" }), "whsec_someone_else");
    assert.equal(forged.status, 401);
    assert.equal((await forged.json()).type, "urn:oncekey:problem:webhook-signature");
    // `oncekey record --delivery` names the record the delivery is kept in:
    // that object holds it and served both deliveries; the same id at another
    // path names an object that holds nothing.
    const named = (path) =>
      execFileSync("npx", ["--no-install", "oncekey", "record", "--path", path, "--delivery", handled.event], {
        cwd: APP,
        encoding: "utf8",
        stdio: "pipe",
      }).trim();
    const objects = await mf.getDurableObjectNamespace("IDEMPOTENCY_DO");
    const state = async (name) => (await objects.get(objects.idFromName(name)).fetch("http://coordinator/")).json();
    const record = named("/hooks/stripe");
    assert.match(record, /^[0-9a-f]{64}$/);
    const kept = await state(record);
    assert.equal(kept.stored, true);
    assert.ok(kept.calls >= 2, `the first delivery's begin and finish, the resend's begin: ${kept.calls}`);
    assert.equal((await state(named("/hooks/other"))).stored, false);
  } finally {
    await mf.dispose();
  }
});

test("docs/queues.md's queue consumer: its two files as written, with the packed package, type-check (strict tsc), bundle with wrangler, and run 20 events delivered 3 times each in workerd: each runs once", async () => {
  const config = block("toml", "# wrangler.toml — a queue consumer");
  const dir = docsProject(
    "my-consumer",
    { "src/queue.ts": block("ts", "// src/queue.ts"), "wrangler.toml": config, "tsconfig.json": STRICT_TSCONFIG },
    TYPE_CHECK,
  );
  const queue = /^queue = "([^"]+)"/m.exec(config)[1];
  const mf = new Miniflare({
    modules: true,
    modulesRoot: join(dir, "dist"),
    scriptPath: join(dir, "dist", "queue.js"),
    modulesRules: [{ type: "CompiledWasm", include: ["**/*.wasm"] }],
    compatibilityDate: /^compatibility_date = "([^"]+)"/m.exec(config)[1],
    kvNamespaces: ["AWARDS"],
    durableObjects: { IDEMPOTENCY_DO: { className: "IdempotencyCoordinator", useSQLite: true } },
    queueConsumers: { [queue]: { maxRetries: 10 } },
  });
  try {
    const worker = await mf.getWorker();
    // 20 events; each sent three ways: its message redelivered, and the same
    // event published again under a new message id with a later publishedAt.
    const events = Array.from({ length: 20 }, (_, i) => ({
      orderId: `order-${i}-${randomUUID().slice(0, 8)}`,
      customerId: `c-${i % 3}`,
      amountCents: 100 * (i + 1),
    }));
    const copy = (event, id, at) => ({
      id,
      timestamp: new Date(),
      attempts: 1,
      body: { ...event, publishedAt: new Date(Date.UTC(2026, 10, 25, 0, 0, at)).toISOString() },
    });
    const rounds = [0, 1, 2].map((round) =>
      events.map((event, i) => copy(event, round === 2 ? `m-${i}-republished` : `m-${i}`, round)),
    );
    for (const messages of rounds) {
      const result = await worker.queue(queue, messages);
      assert.equal(result.outcome, "ok");
      assert.deepEqual(
        new Set(result.explicitAcks),
        new Set(messages.map((m) => m.id)),
        "every delivery is acknowledged by the wrapper itself",
      );
    }
    const awards = await mf.getKVNamespace("AWARDS");
    const keys = (await awards.list()).keys.map((k) => k.name);
    const runs = new Map();
    for (const key of keys) runs.set(key.split("/")[0], (runs.get(key.split("/")[0]) ?? 0) + 1);
    assert.equal(keys.length, 20, `${keys.length} awards for 20 events delivered 3 times each`);
    assert.deepEqual([...runs.values()], Array(20).fill(1));
    assert.deepEqual(new Set(runs.keys()), new Set(events.map((e) => e.orderId)));
  } finally {
    await mf.dispose();
  }
});

test("docs/typescript.md's Hono app, its worker and their tests: app.request() and fetch in workerd with the Workers Vitest integration, as written (its tsconfig too), pass (and type-check)", () => {
  const config = block("toml", "# wrangler.toml — the same bindings as the proxy's").replace(
    'main = "src/index.ts"',
    'main = "src/app.ts"',
  );
  const install = block("sh", "npm pkg set type=module");
  // The pair the page pins is the pair make test runs.
  const dev = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")).devDependencies;
  for (const name of ["vitest", "@cloudflare/vitest-pool-workers"])
    assert.ok(install.includes(`${name}@${dev[name]} `), `the page pins ${name}@${dev[name]}`);
  const hono = JSON.parse(readFileSync(join(ROOT, "tests", "worker-js", "app", "package.json"), "utf8")).dependencies
    .hono;
  const tsconfig = block("jsonc", "// tsconfig.json");
  const bin = (name) => join(ROOT, "node_modules", ".bin", name);
  const report = join(ROOT, "build", "worker-js", "my-hono-app-vitest.json");
  // vitest and the pool resolve from this repository's node_modules (the
  // project sits inside it), at the versions just checked.
  const dir = docsProject(
    "my-hono-app",
    {
      "src/app.ts": block("ts", "// src/app.ts"),
      "test/app.test.ts": block("ts", "// test/app.test.ts"),
      "src/index.ts": block("ts", "// src/index.ts"),
      "test/index.test.ts": block("ts", "// test/index.test.ts"),
      "vitest.config.ts": block("ts", "// vitest.config.ts"),
      "wrangler.toml": config,
      "tsconfig.json": tsconfig,
    },
    [
      ["npm", ["install", "--prefer-offline", "--no-audit", "--no-fund", "--silent", `hono@${hono}`]],
      [bin("wrangler"), ["types"]],
      [bin("tsc"), ["-p", "tsconfig.json"]],
      [bin("vitest"), ["run", "--reporter=json", `--outputFile=${report}`]],
    ],
  );
  const { numTotalTests, numPassedTests, numFailedTests } = JSON.parse(readFileSync(report, "utf8"));
  const its = ["app.test.ts", "index.test.ts"]
    .map((file) => readFileSync(join(dir, "test", file), "utf8").match(/^it\(/gm).length)
    .reduce((a, b) => a + b);
  assert.ok(its >= 5, "the page shows several tests, of the Hono app and the plain worker");
  assert.deepEqual(
    { numTotalTests, numPassedTests, numFailedTests },
    { numTotalTests: its, numPassedTests: its, numFailedTests: 0 },
  );
});

test("every TypeScript block of the documentation is one the tests above compile and run", () => {
  const firstLines = [...new Set(allBlocks("ts").map((text) => text.split("\n")[0].split(" — ")[0]))];
  assert.deepEqual(firstLines.sort(), [
    "// src/app.ts",
    "// src/index.ts",
    "// src/queue.ts",
    "// src/webhooks.ts",
    "// test/app.test.ts",
    "// test/index.test.ts",
    "// vitest.config.ts",
  ]);
});

test("every TOML block of the documentation parses, and wrangler takes each fragment where its comment puts it (dry run, no warning)", () => {
  const blocks = allBlocks("toml");
  assert.ok(blocks.length >= 7, `${blocks.length} TOML blocks`);
  const parse = (text) =>
    JSON.parse(
      execFileSync("python3", ["-c", "import json, sys, tomllib; print(json.dumps(tomllib.loads(sys.stdin.read())))"], {
        input: text,
        encoding: "utf8",
      }),
    );
  // Each fragment goes into docs/deploying.md's own proxy-from-npm config.
  const base = parse(block("toml", "# wrangler.toml of the proxy deployed from npm"));
  const dir = join(ROOT, "build", "worker-js", "readme-toml");
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(join(dir, "src"), { recursive: true });
  writeFileSync(
    join(dir, "src", "index.js"),
    "export class IdempotencyCoordinator {}\nexport default { fetch: () => new Response('ok') };",
  );
  const cargo = readFileSync(join(ROOT, "Cargo.toml"), "utf8");
  let checked = 0;
  for (const block of blocks) {
    if (/^\[dependencies\]/m.test(block)) {
      // A Cargo.toml fragment: the worker crate it names is the one oncekey builds with.
      const { worker } = parse(block).dependencies;
      assert.ok(
        cargo.includes(`worker = { version = "${worker}"`) || cargo.includes(`worker = "${worker}"`),
        `worker ${worker} is the crate's`,
      );
      continue;
    }
    // Lines after "# in [vars]" belong in [vars]; the rest at the top level.
    // A whole config (it has a name) stands alone.
    const [top, vars = ""] = block.split(/^# in \[vars\].*$/m);
    const whole = parse(top).name !== undefined;
    const config = whole ? {} : structuredClone(base);
    // A table the config already has (the same binding, name or tag) is
    // replaced, as a user pasting the fragment would; others are added.
    const id = (table) => table.binding ?? table.name ?? table.tag;
    for (const [field, value] of Object.entries(parse(top))) {
      config[field] =
        Array.isArray(value) && Array.isArray(config[field])
          ? [...config[field].filter((old) => !value.some((row) => id(row) === id(old))), ...value]
          : value;
    }
    config.vars = { ...config.vars, ...parse(vars) };
    config.main = "src/index.js";
    // A Rust Worker's build (docs/rust.md: worker-build) is built and run
    // by `make test-crate` on tests/consumer, whose config it is; here the
    // rest of its config is checked against the stand-in module.
    if (/^worker-build\b/.test(config.build?.command ?? "")) delete config.build;
    writeFileSync(join(dir, "wrangler.json"), JSON.stringify(config));
    const quiet = {
      ...process.env,
      WRANGLER_SEND_METRICS: "false",
      WRANGLER_SEND_ERROR_REPORTS: "false",
      FORCE_COLOR: "0",
    };
    const output = execFileSync(
      join(ROOT, "node_modules", ".bin", "wrangler"),
      ["deploy", "--dry-run", "--config", "wrangler.json", "--outdir", "dist"],
      { cwd: dir, env: quiet, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] },
    );
    assert.doesNotMatch(output, /WARNING|Unexpected fields/, `wrangler takes\n${block}\n${output}`);
    checked++;
  }
  assert.ok(checked >= 6, `${checked} configurations dry-run`);
});

test("npx --no-install oncekey check: the docs' proxy config is sound; a broken one fails naming each problem, never a value", () => {
  const config = block("toml", "# wrangler.toml of the proxy deployed from npm");
  const dir = docsProject("checked-proxy", {
    "src/index.js": block("js", "// src/index.js"),
    "wrangler.toml": config,
    "broken.toml": config
      .replace(
        'ORIGIN_URL = "https://api.example.com"',
        'ORIGIN_URL = "ftp://10.1.2.3/internal"\nIDEMPOTENCY_TTL = "60"',
      )
      .replace(/\[\[kv_namespaces\]\]\nbinding = "IDEMPOTENCY_KV"\n/, "")
      .concat('IDEMPOTENCY_CORS_ORIGINS = "*"\nIDEMPOTENCY_CORS_CREDENTIALS = "true"\n'),
    "no-origin.toml": config.replace('ORIGIN_URL = "https://api.example.com"', 'ORIGIN_URL = ""'),
    "routes.toml": config.concat(
      `IDEMPOTENCY_ROUTES = '[{"match": "POST /hooks/github", "webhook": "github", "secret": "GITHUB_WEBHOOK_SECRET"}, {"match": "POST /v1/*"}, {"match": "POST /v1/x"}]'\n`,
    ),
  });
  const checkWith = (env, ...args) => {
    try {
      return {
        code: 0,
        out: execFileSync("npx", ["--no-install", "oncekey", "check", ...args], {
          cwd: dir,
          encoding: "utf8",
          stdio: "pipe",
          env: { ...process.env, ...env },
        }),
      };
    } catch (error) {
      return { code: error.status, out: `${error.stdout}${error.stderr}` };
    }
  };
  const check = (...args) => checkWith({}, ...args);
  const sound = check();
  assert.equal(sound.code, 0, sound.out);
  assert.match(sound.out, /sound \(the proxy\)/, "main imports oncekey/proxy: checked as the proxy");
  const broken = check("broken.toml");
  assert.equal(broken.code, 1, broken.out);
  for (const problem of [
    /ORIGIN_URL: not an http:\/\/ or https:\/\/ URL/,
    /IDEMPOTENCY_TTL: not a variable of the layer \(did you mean IDEMPOTENCY_TTL_SECONDS\?\)/,
    /IDEMPOTENCY_CORS_CREDENTIALS: cannot be true with IDEMPOTENCY_CORS_ORIGINS=\*/,
    /IDEMPOTENCY_KV: no KV namespace is bound/,
  ]) {
    assert.match(broken.out, problem);
  }
  assert.match(broken.out, /4 problems/);
  assert.ok(!broken.out.includes("10.1.2.3"), "never the value");
  const empty = check("no-origin.toml");
  assert.equal(empty.code, 1);
  assert.match(empty.out, /ORIGIN_URL: no origin configured/, "the empty ORIGIN_URL a dry run lets through");
  // A secret's value is checked when the shell has it; its name alone otherwise.
  const token = check("--secret", "IDEMPOTENCY_ADMIN_TOKEN");
  assert.equal(token.code, 0, token.out);
  // Seal keys (SPEC §4): a name alone passes; a bad value in the shell is named, never shown.
  const seal = ["--secret", "IDEMPOTENCY_SEAL_KEYS"];
  assert.equal(check(...seal).code, 0);
  const good = Buffer.alloc(32, 7).toString("base64");
  assert.equal(
    checkWith({ IDEMPOTENCY_SEAL_KEYS: `${good}, ${Buffer.alloc(32, 8).toString("base64")}` }, ...seal).code,
    0,
  );
  const short = checkWith({ IDEMPOTENCY_SEAL_KEYS: `${good},c2hvcnQ=` }, ...seal);
  assert.equal(short.code, 1, short.out);
  assert.match(short.out, /IDEMPOTENCY_SEAL_KEYS: key 2 is 5 bytes, not 32/);
  assert.ok(!short.out.includes(good) && !short.out.includes("c2hvcnQ"), "never a key");
  // Routes (SPEC §13): each bad route named, and a webhook route's secret must be one of the worker's.
  const routes = check("routes.toml");
  assert.equal(routes.code, 1, routes.out);
  assert.match(routes.out, /IDEMPOTENCY_ROUTES: route 3 \(POST \/v1\/x\) can never match/);
  const secret = ["routes.toml", "--secret", "GITHUB_WEBHOOK_SECRET"];
  const fixed = config.concat(
    `IDEMPOTENCY_ROUTES = '[{"match": "POST /hooks/github", "webhook": "github", "secret": "GITHUB_WEBHOOK_SECRET"}]'\n`,
  );
  writeFileSync(join(dir, "routes.toml"), fixed);
  const unbound = check("routes.toml");
  assert.equal(unbound.code, 1, unbound.out);
  assert.match(unbound.out, /route 1 \(POST \/hooks\/github\): its webhook secret is not bound/);
  assert.equal(check(...secret).code, 0, "bound by name: sound");
});

test("docs/deploying.md's proxy from npm: its three files with the packed package, bundled by wrangler, in front of a local API (a 3 MB answer streamed whole, stored without its body)", async () => {
  const config = block("toml", "# wrangler.toml of the proxy deployed from npm");
  const dir = docsProject("my-proxy", {
    "src/index.js": block("js", "// src/index.js"),
    "wrangler.toml": config,
  });
  // The API: counts executions per item, answers every other path itself.
  const executions = new Map();
  const api = http.createServer((req, res) => {
    let body = "";
    req.on("data", (chunk) => {
      body += chunk;
    });
    req.on("end", () => {
      if (req.method === "POST" && req.url === "/v1/export") {
        // 3 MB, over the 1 MB default IDEMPOTENCY_MAX_RESPONSE_BYTES.
        executions.set("export", (executions.get("export") ?? 0) + 1);
        res.writeHead(200, { "content-type": "text/csv" });
        for (let i = 0; i < 48; i++) res.write(Buffer.alloc(64 * 1024, i));
        res.end();
      } else if (req.method === "POST") {
        const { item } = JSON.parse(body);
        executions.set(item, (executions.get(item) ?? 0) + 1);
        res.writeHead(201, { "content-type": "application/json" });
        res.end(JSON.stringify({ item, attempt: req.headers["idempotency-attempt"], order: randomUUID() }));
      } else {
        res.writeHead(200, { "content-type": "application/json" });
        res.end(JSON.stringify({ api: true, path: req.url }));
      }
    });
  });
  await new Promise((resolve) => api.listen(0, "127.0.0.1", resolve));
  const vars = Object.fromEntries(
    [...config.split("[vars]")[1].matchAll(/^([A-Z_]+) = "([^"]*)"$/gm)].map((m) => [m[1], m[2]]),
  );
  const start = (bindings) => startBundle(dir, config, bindings);
  const mf = start({ ...vars, ORIGIN_URL: `http://127.0.0.1:${api.address().port}` });
  const bare = start({});
  try {
    const page = await mf.dispatchFetch(`${BASE}/index.html?x=1`);
    assert.deepEqual(await page.json(), { api: true, path: "/index.html?x=1" }, "every path reaches the API");
    const tea = item();
    const key = randomUUID();
    const send = () =>
      mf.dispatchFetch(`${BASE}/v1/orders`, {
        method: "POST",
        headers: { "content-type": "application/json", "idempotency-key": key },
        body: JSON.stringify({ item: tea }),
      });
    const first = await send();
    assert.equal(first.status, 201);
    const retry = await send();
    assert.equal(retry.headers.get("idempotent-replayed"), "true");
    assert.deepEqual(await retry.json(), await first.json());
    assert.equal(executions.get(tea), 1);
    // An answer over the limit streams to the caller whole and is stored without its body.
    const exportKey = randomUUID();
    const exporting = () =>
      mf.dispatchFetch(`${BASE}/v1/export`, { method: "POST", headers: { "idempotency-key": exportKey } });
    const big = new Uint8Array(await (await exporting()).arrayBuffer());
    assert.equal(big.length, 48 * 64 * 1024, "every byte reached the caller");
    assert.ok(
      big.subarray(47 * 64 * 1024).every((b) => b === 47),
      "in order",
    );
    const again = await exporting();
    assert.equal(again.headers.get("idempotent-body-omitted"), "true");
    assert.equal((await again.arrayBuffer()).byteLength, 0);
    assert.equal(executions.get("export"), 1);
    const none = await bare.dispatchFetch(`${BASE}/`);
    const problem = await none.json();
    assert.equal(none.status, 500);
    assert.match(problem.detail, /ORIGIN_URL/, "no origin: misconfigured, naming ORIGIN_URL");
  } finally {
    await mf.dispose();
    await bare.dispose();
    await new Promise((resolve) => api.close(resolve));
  }
});
