// IDEMPOTENCY_ROUTES (SPEC §13, issue 37) in workerd, on the host
// ONCEKEY_HOST names: the production proxy in front of a Node HTTP origin
// that counts each run by path and key. The first route that matches a
// request holds it to its own key sources, fingerprint selection and
// policy; a request no route matches follows the variables; bad routes
// answer 500 misconfigured naming the route.
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, before, describe, test } from "node:test";
import { BASE, newKey, problemOf, recordName, start, until } from "./harness.mjs";
import { serve } from "./origin/server.mjs";

const HOST = new URL(BASE).hostname;
const TOKEN = "operator-secret";

const ROUTES = [
  { match: "POST /v1/payments/refunds", ttlSeconds: 3600 },
  {
    match: "POST,PATCH /v1/payments/*",
    key: ["header:idempotency-key", "json:/request_id"],
    fingerprint: { ignore: ["/client_ts"] },
    ttlSeconds: 7200,
  },
  { match: "POST /v1/password-resets", ttlSeconds: 600, releaseOn: [409] },
  { match: "POST /v1/payouts", ttlSeconds: 604800 },
];

/**
 * An origin that counts each request that reaches it by path and
 * `Idempotency-Key`, and answers 201 — or, for a path given statuses, those
 * in turn (`"drop"`: the connection breaks, no answer).
 */
function counter() {
  const seen = new Map();
  const scripts = new Map();
  const handle = async (request) => {
    const path = new URL(request.url).pathname;
    const key = request.headers.get("idempotency-key");
    const n = (seen.get(`${path} ${key}`) ?? 0) + 1;
    seen.set(`${path} ${key}`, n);
    const status = scripts.get(path)?.shift() ?? 201;
    if (status === "drop") throw new Error("the connection breaks");
    return Response.json({ key, run: n, body: await request.text() }, { status });
  };
  return {
    handle,
    runs: (path, key) => seen.get(`${path} ${key}`) ?? 0,
    /** Every request that reached the origin. */
    total: () => [...seen.values()].reduce((n, runs) => n + runs, 0),
    script: (path, statuses) => scripts.set(path, statuses),
  };
}

/**
 * The production proxy with `vars` in front of a counter, started for the
 * tests of one describe block: `{ origin, worker }` once they run.
 */
function countedProxy(vars) {
  const at = {};
  before(async () => {
    at.origin = counter();
    at.server = await serve(at.origin.handle);
    at.worker = await start({ worker: "proxy", vars: { ORIGIN_URL: at.server.url, ...vars } });
  });
  after(async () => {
    await at.worker?.dispose();
    await at.server?.close();
  });
  return at;
}

/** Seconds from now until an RFC 3339 time. */
const secondsUntil = (time) => (Date.parse(time) - Date.now()) / 1000;

describe("routes", () => {
  let origin;
  let server;
  let worker;
  before(async () => {
    origin = counter();
    server = await serve(origin.handle);
    worker = await start({
      worker: "proxy",
      metrics: true,
      vars: { ORIGIN_URL: server.url, IDEMPOTENCY_ROUTES: JSON.stringify(ROUTES), IDEMPOTENCY_ADMIN_TOKEN: TOKEN },
    });
  });
  after(async () => {
    await worker?.dispose();
    await server?.close();
  });

  const post = (path, body, headers = {}) =>
    worker.fetch(path, {
      method: "POST",
      headers: { "content-type": "application/json", ...headers },
      body: JSON.stringify(body),
    });

  async function expiresIn(key) {
    const res = await worker.fetch(`/.well-known/oncekey/records/${recordName(HOST, undefined, key)}`, {
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    assert.equal(res.status, 200, await res.clone().text());
    return secondsUntil((await res.json()).expiresAt);
  }

  test("a json: pointer key keys a request with no header, and reaches the origin as Idempotency-Key", async () => {
    const key = `r-${randomUUID()}`;
    const body = { request_id: key, amount: 500, client_ts: 1 };
    const first = await post("/v1/payments/pi_1", body);
    assert.equal(first.status, 201);
    assert.equal((await first.json()).key, key);
    const again = await post("/v1/payments/pi_1", body);
    assert.equal(again.headers.get("idempotent-replayed"), "true");
    // The same key in the header (the first source) names the same record.
    const byHeader = await post("/v1/payments/pi_1", body, { "idempotency-key": key });
    assert.equal(byHeader.headers.get("idempotent-replayed"), "true");
    assert.equal(origin.runs("/v1/payments/pi_1", key), 1);
    // A malformed value is refused, naming its source.
    const bad = await post("/v1/payments/pi_1", { request_id: "two words", amount: 1 });
    const problem = await problemOf(bad);
    assert.deepEqual([bad.status, problem.code], [400, "invalid-key"]);
    assert.match(problem.detail, /json:\/request_id/);
    // None: the request goes on unprotected, as without a route.
    const unkeyed = await post("/v1/payments/pi_1", { amount: 1 });
    assert.equal(unkeyed.status, 201);
    assert.equal(origin.runs("/v1/payments/pi_1", null), 1);
    // The data point of each decision names the route as its log line does (docs/operations.md, blob5).
    const record = recordName(HOST, undefined, key);
    const points = await until(
      () => worker.dataPoints().filter((p) => p.blobs[3] === record),
      (mine) => mine.length >= 3,
      { what: "the key's three data points" },
    );
    assert.deepEqual(points.map((p) => [p.blobs[0], p.blobs[4]]).sort(), [
      ["execute", "route 2 (POST,PATCH /v1/payments/*)"],
      ["replay", "route 2 (POST,PATCH /v1/payments/*)"],
      ["replay", "route 2 (POST,PATCH /v1/payments/*)"],
    ]);
  });

  test("a body key from another origin keys nothing: another site, or a sibling of the same site (SPEC §13)", async () => {
    // A text/plain post needs no preflight: any page can send it with the
    // victim's cookies. Its JSON key is another origin's plant.
    const planted = (key, site) =>
      worker.fetch("/v1/payments/pi_9", {
        method: "POST",
        headers: { "content-type": "text/plain", cookie: "session=victim", ...site },
        body: JSON.stringify({ request_id: key, amount: 500 }),
      });
    const others = [
      { "sec-fetch-site": "cross-site", origin: "https://evil.example" },
      { "sec-fetch-site": "same-site", origin: "http://user-content.oncekey.test" },
      { origin: "https://evil.example" },
      { origin: "null" },
    ];
    for (const site of others) {
      const key = `planted-${randomUUID()}`;
      const victim = await planted(key, site);
      assert.equal(victim.status, 201, JSON.stringify(site));
      assert.equal((await victim.json()).key, null, `${JSON.stringify(site)}: not keyed`);
      // The attacker, same key and body, no cookies: its own request, never the victim's answer.
      const attacker = await planted(key, {});
      assert.equal(attacker.headers.get("idempotent-replayed"), null, JSON.stringify(site));
      assert.equal(origin.runs("/v1/payments/pi_9", key), 1, "only the attacker's own request was keyed");
    }
    const own = `own-${randomUUID()}`;
    const site = { "sec-fetch-site": "same-origin", origin: BASE };
    assert.equal((await (await planted(own, site)).json()).key, own);
    assert.equal((await planted(own, site)).headers.get("idempotent-replayed"), "true");
  });

  test("an ignored member that changes between retries replays; a changed amount is 422", async () => {
    const key = newKey();
    const pay = (body) => post("/v1/payments/pi_2", body, { "idempotency-key": key });
    assert.equal((await pay({ amount: 500, client_ts: 1700000000 })).status, 201);
    const retry = await pay({ client_ts: 1700000042, amount: 500 });
    assert.equal(retry.status, 201);
    assert.equal(retry.headers.get("idempotent-replayed"), "true", "only the ignored member (and the order) changed");
    const changed = await pay({ amount: 501, client_ts: 1700000043 });
    assert.deepEqual([changed.status, (await problemOf(changed)).code], [422, "key-reused"]);
    assert.equal(origin.runs("/v1/payments/pi_2", key), 1);
    // Outside the route every byte counts.
    const other = newKey();
    const order = (body) => post("/api/orders", body, { "idempotency-key": other });
    await order({ amount: 500, client_ts: 1 });
    assert.equal((await order({ amount: 500, client_ts: 2 })).status, 422);
  });

  test("each route's TTL, the first that matches winning; the variables' TTL elsewhere", async () => {
    // (path, the TTL it is held to)
    const rows = [
      ["/v1/payments/refunds", 3600],
      ["/v1/payments/pi_3", 7200],
      ["/v1/password-resets", 600],
      ["/api/orders", 86400],
    ];
    for (const [path, ttl] of rows) {
      const key = newKey();
      assert.equal((await post(path, { amount: 1 }, { "idempotency-key": key })).status, 201, path);
      // Its finish lands after the answer: the replay waits for it.
      assert.equal(
        (await post(path, { amount: 1 }, { "idempotency-key": key })).headers.get("idempotent-replayed"),
        "true",
      );
      const left = await expiresIn(key);
      assert.ok(left > ttl - 30 && left <= ttl, `${path}: expires in ${left} s, not ${ttl}`);
    }
    const routeOf = (path) => worker.decisions().find((l) => l.path === path && l.oncekey === "execute")?.route;
    assert.equal(routeOf("/v1/payments/refunds"), "route 1 (POST /v1/payments/refunds)");
    assert.equal(routeOf("/v1/payments/pi_3"), "route 2 (POST,PATCH /v1/payments/*)");
    assert.equal(routeOf("/api/orders"), null, "no route: none in the line");
  });

  test("an operator's release on a route with a week's TTL: the tombstone lasts the week, and the retry is attempt 2", async () => {
    const key = newKey();
    origin.script("/v1/payouts", ["drop"]);
    const payout = () => post("/v1/payouts", { amount: 9 }, { "idempotency-key": key });
    assert.equal((await payout()).status, 502, "no answer: the outcome is unknown");
    const record = recordName(HOST, undefined, key);
    const released = await worker.fetch(`/.well-known/oncekey/records/${record}/release`, {
      method: "POST",
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    const state = await released.json();
    assert.deepEqual([released.status, state.kind, state.attempt], [200, "released", 1]);
    // The release cannot tell the record's route: it keeps the attempt number
    // as long as any route keeps a record, not the variables' 24 h.
    const left = secondsUntil(state.expiresAt);
    assert.ok(left > 604800 - 30 && left <= 604800, `the tombstone expires in ${left} s, not a week`);
    const retry = await payout();
    assert.equal(retry.status, 201);
    assert.equal(origin.runs("/v1/payouts", key), 2);
    const executed = await until(
      () => worker.decisions().filter((l) => l.record === record && l.oncekey === "execute"),
      (lines) => lines.length === 2,
      { what: "the two attempts' log lines" },
    );
    assert.deepEqual(
      executed.map((l) => l.attempt),
      [1, 2],
    );
  });

  test("a route's release statuses: its 409 releases the key and the retry runs; elsewhere a 409 is stored", async () => {
    const key = newKey();
    origin.script("/v1/password-resets", [409]);
    const reset = () => post("/v1/password-resets", { email: "a@example.com" }, { "idempotency-key": key });
    assert.equal((await reset()).status, 409);
    const retry = await reset();
    assert.deepEqual([retry.status, retry.headers.get("idempotent-replayed")], [201, null]);
    assert.equal(origin.runs("/v1/password-resets", key), 2);
    const stored = newKey();
    origin.script("/api/conflicts", [409]);
    const conflict = () => post("/api/conflicts", { x: 1 }, { "idempotency-key": stored });
    assert.equal((await conflict()).status, 409);
    const replay = await conflict();
    assert.deepEqual([replay.status, replay.headers.get("idempotent-replayed")], [409, "true"]);
    assert.equal(origin.runs("/api/conflicts", stored), 1);
  });
});

describe("routes given as a [vars] array (a TOML array of tables)", () => {
  test("the runtime hands them over as a value: read as their JSON", async () => {
    const origin = counter();
    const server = await serve(origin.handle);
    const worker = await start({
      worker: "proxy",
      vars: { ORIGIN_URL: server.url, IDEMPOTENCY_ROUTES: [{ match: "POST /v1/*", key: ["json:/id"] }] },
    });
    try {
      const id = `j-${randomUUID()}`;
      const send = () =>
        worker.fetch("/v1/things", {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ id }),
        });
      assert.equal((await send()).status, 201);
      assert.equal((await send()).headers.get("idempotent-replayed"), "true");
      assert.equal(origin.runs("/v1/things", id), 1);
    } finally {
      await worker.dispose();
      await server.close();
    }
  });
});

describe("a route that can never match", () => {
  test("fails alone: no request is its, every other goes on; the offline check names it", async () => {
    const origin = counter();
    const server = await serve(origin.handle);
    const routes = [{ match: "POST /v1/*" }, { match: "POST /V1/Payments/", required: true }, { match: "GET /x" }];
    const worker = await start({
      worker: "proxy",
      vars: { ORIGIN_URL: server.url, IDEMPOTENCY_ROUTES: JSON.stringify(routes) },
    });
    try {
      for (const [method, path] of [
        ["POST", "/v1/payments"],
        ["GET", "/"],
        ["POST", "/elsewhere"],
      ]) {
        const res = await worker.fetch(path, { method, body: method === "GET" ? undefined : "{}" });
        assert.equal(res.status, 201, `${method} ${path}: ${await res.clone().text()}`);
      }
    } finally {
      await worker.dispose();
      await server.close();
    }
  });
});

describe("bad routes", () => {
  // (what, the variables, the route's path when it fails alone, what the detail names)
  const rows = [
    [
      "a route given two matches",
      { IDEMPOTENCY_ROUTES: '[{"match": "POST /v1/pay", "match": "POST /v1/other", "required": true}]' },
      null,
      /IDEMPOTENCY_ROUTES: route 1: `match` is given twice/,
    ],
    [
      "a policy out of range",
      { IDEMPOTENCY_ROUTES: JSON.stringify([{ match: "POST /x", leaseSeconds: 901 }]) },
      "/x",
      /IDEMPOTENCY_ROUTES: route 1 \(POST \/x\): `leaseSeconds`: not a whole number from 1 to 900/,
    ],
    [
      "an unknown sender",
      { IDEMPOTENCY_ROUTES: JSON.stringify([{ match: "POST /hooks", webhook: "svix", secret: "S" }]) },
      "/hooks",
      /route 1 \(POST \/hooks\): `webhook` is not a webhook sender/,
    ],
    [
      "a webhook route whose secret is not bound",
      {
        IDEMPOTENCY_ROUTES: JSON.stringify([
          { match: "POST /hooks/github", webhook: "github", secret: "GITHUB_SECRET" },
        ]),
      },
      "/hooks/github",
      /IDEMPOTENCY_ROUTES: route 1 \(POST \/hooks\/github\): its webhook secret is not bound: `wrangler secret put` the name its `secret` gives/,
    ],
    [
      "a webhook secret not in its sender's form",
      {
        IDEMPOTENCY_ROUTES: JSON.stringify([
          { match: "POST /hooks/stripe", webhook: "stripe", secret: "STRIPE_SECRET" },
        ]),
        STRIPE_SECRET: "sk_live_hunter2",
      },
      "/hooks/stripe",
      /route 1 \(POST \/hooks\/stripe\): its webhook secret \(the one its `secret` names\): the secret is not a Stripe signing secret/,
    ],
    [
      "a secret's value pasted in place of its name",
      {
        IDEMPOTENCY_ROUTES: JSON.stringify([
          { match: "POST /hooks/stripe", webhook: "stripe", secret: "whsec_hunter2hunter2hunter2" },
        ]),
      },
      "/hooks/stripe",
      /route 1 \(POST \/hooks\/stripe\): `secret` must be the name of a wrangler secret/,
    ],
    [
      // A GitHub secret has no prefix: a hex value reads as a name, and is unbound.
      "a secret's value that reads as a name, pasted in its place",
      {
        IDEMPOTENCY_ROUTES: JSON.stringify([
          { match: "POST /hooks/github", webhook: "github", secret: "hunter2a94a8fe5ccb19ba61c4c0873d391e98" },
        ]),
      },
      "/hooks/github",
      /route 1 \(POST \/hooks\/github\): its webhook secret is not bound/,
    ],
    [
      "not JSON",
      { IDEMPOTENCY_ROUTES: "[{match: POST /x}]" },
      null,
      /IDEMPOTENCY_ROUTES: is not a JSON array of routes/,
    ],
  ];
  for (const [what, vars, path, named] of rows) {
    const scope = path
      ? "its own requests are 500 misconfigured, the rest go on"
      : "every request is 500 misconfigured";
    test(`${what}: ${scope}, naming the route, never a secret`, async () => {
      const origin = counter();
      const server = await serve(origin.handle);
      const worker = await start({ worker: "proxy", vars: { ORIGIN_URL: server.url, ...vars } });
      const send = (method, to) =>
        worker.fetch(to, {
          method,
          headers: { "idempotency-key": `k-${randomUUID()}` },
          body: method === "GET" ? undefined : "{}",
        });
      try {
        const refused = path
          ? [
              ["POST", path],
              ["POST", `${path.toUpperCase()}/`],
            ]
          : [
              ["POST", "/hooks/github"],
              ["POST", "/elsewhere"],
              ["GET", "/v1/anything"],
            ];
        for (const [method, to] of refused) {
          const res = await send(method, to);
          const problem = await problemOf(res);
          assert.deepEqual([res.status, problem.code], [500, "misconfigured"], `${method} ${to}`);
          assert.match(problem.detail, named);
          assert.ok(!problem.detail.includes("hunter2"), "never a secret's value");
        }
        if (path) {
          // SPEC §6: a route's problem is that route's alone.
          assert.equal((await send("POST", "/elsewhere")).status, 201, "the rest of the API goes on");
          assert.equal((await send("GET", "/v1/anything")).status, 201);
          if (path.startsWith("/hooks")) {
            const patch = await send("PATCH", path);
            assert.equal(
              patch.status,
              500,
              "a broken webhook route's path is refused for any method, never passed through",
            );
          }
        }
        assert.equal(origin.total(), path ? 2 : 0);
      } finally {
        await worker.dispose();
        await server.close();
      }
    });
  }
});

describe("a request servers read two ways (SPEC §13, the eighth red team)", () => {
  const routes = [
    { match: "POST /v1/payments/*", required: true },
    { match: "DELETE,PATCH /v1/accounts/*", required: true },
    { match: "POST /v1/*", ttlSeconds: 3600 },
  ];
  const at = countedProxy({ IDEMPOTENCY_ROUTES: JSON.stringify(routes) });

  const send = (path, { method = "POST", headers = {} } = {}) =>
    at.worker.fetch(path, { method, headers: { "content-type": "application/json", ...headers }, body: "{}" });

  test("a `..` after an encoded separator, or readings under two rules, is refused and never forwarded", async () => {
    const key = `k-${randomUUID()}`;
    for (const path of [
      // Hono, Express and Rails keep %2F in the segment: /v1/charges/… to them, /x to a decoder.
      "/v1/charges%2F..%2F..%2Fx",
      "/v1/payments/p1%2F..%2F..%2Fx",
      "/v1/payments/p1%5C..%5C..%5Cx",
      // /v1/payments/p1 to one reading, another route to the other.
      "/v1/payments%2Fp1",
      "/v1/payments;x/p1",
      "/v1/payments%3B/p1",
      "/v1/orders;%2F..%2F..%2Fv1%2Fpayments%2Fp1",
    ]) {
      for (const headers of [{}, { "idempotency-key": key }]) {
        const res = await send(path, { headers });
        assert.equal(res.status, 400, path);
        assert.equal((await problemOf(res)).code, "ambiguous-request", path);
      }
    }
    assert.equal(at.origin.total(), 0, "nothing was forwarded");
    // The plain spelling is governed by its route.
    assert.equal((await problemOf(await send("/v1/payments/p1"))).code, "missing-key");
  });

  test("a POST a method override makes a DELETE or PATCH another rule governs is refused", async () => {
    for (const [path, headers] of [
      ["/v1/accounts/a1", { "x-http-method-override": "DELETE" }],
      ["/v1/accounts/a1", { "x-http-method": "patch" }],
      ["/v1/accounts/a1", { "x-method-override": "Delete" }],
      ["/v1/accounts/a1?_method=DELETE", {}],
    ]) {
      const res = await send(path, { headers });
      assert.equal(res.status, 400, `${path} ${JSON.stringify(headers)}`);
      assert.equal((await problemOf(res)).code, "ambiguous-request");
    }
    assert.equal(at.origin.total(), 0, "nothing was forwarded");
    // An override no rule covers (GET) changes nothing: the POST route's, unkeyed.
    const read = await send("/v1/accounts/a1", { headers: { "x-http-method-override": "GET" } });
    assert.equal(read.status, 201);
    assert.equal(at.origin.total(), 1);
  });
});
