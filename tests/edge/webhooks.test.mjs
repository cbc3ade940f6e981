// Webhook routes (SPEC §13, issue 37) in workerd, on the host ONCEKEY_HOST
// names: the production proxy in front of a receiver (a Node HTTP server
// behind ORIGIN_URL, which counts what reaches it), with one route per
// sender. Deliveries are signed here, in Node, as each sender signs them
// (the signers reproduce the senders' published vectors first): a first
// delivery runs, a resend replays without the receiver; a bad, a missing
// and a stale signature each get 401 and plant nothing, so the real
// delivery with the same id then runs, once; 8 concurrent copies of one
// delivery run once.
import assert from "node:assert/strict";
import { createHash, createHmac, randomBytes, randomUUID } from "node:crypto";
import { after, before, describe, test } from "node:test";
import { BASE, problemOf, sleep, start, until } from "./harness.mjs";
import { serve } from "./origin/server.mjs";

const TOKEN = "operator-secret";

/** Each sender's signing secret, as the sender hands it over. */
const SECRETS = {
  standard: `whsec_${randomBytes(24).toString("base64")}`,
  github: `gh-${randomBytes(12).toString("hex")}`,
  stripe: `whsec_${randomBytes(16).toString("hex")}`,
  shopify: `shpss_${randomBytes(16).toString("hex")}`,
};

/** The secret binding each route names. */
const SECRET_NAMES = {
  standard: "STANDARD_WEBHOOK_SECRET",
  github: "GITHUB_WEBHOOK_SECRET",
  stripe: "STRIPE_WEBHOOK_SECRET",
  shopify: "SHOPIFY_CLIENT_SECRET",
};

/** Where each sender delivers. */
const PATHS = {
  standard: "/hooks/events",
  github: "/hooks/github",
  stripe: "/hooks/stripe/billing",
  shopify: "/hooks/shopify",
};

const ROUTES = JSON.stringify([
  { match: `POST ${PATHS.standard}`, webhook: "standard", secret: SECRET_NAMES.standard },
  { match: `POST ${PATHS.github}`, webhook: "github", secret: SECRET_NAMES.github },
  // Every Stripe endpoint under one route; each remembers its deliveries apart.
  { match: "POST /hooks/stripe/*", webhook: "stripe", secret: SECRET_NAMES.stripe },
  { match: `POST ${PATHS.shopify}`, webhook: "shopify", secret: SECRET_NAMES.shopify },
]);

const hmac = (key, ...parts) => {
  const mac = createHmac("sha256", key);
  for (const part of parts) mac.update(part);
  return mac.digest();
};

/** Unix seconds now. */
const nowSecs = () => Math.floor(Date.now() / 1000);

/**
 * Signers, one per sender, as its documentation says it signs: each gives
 * the headers of a delivery with id `id` and body `body` signed with
 * `secret` at `at` (unix seconds; only Standard Webhooks and Stripe sign a
 * time).
 */
const SIGN = {
  standard: ({ id, body, secret, at }) => ({
    "webhook-id": id,
    "webhook-timestamp": String(at),
    "webhook-signature": `v1,${hmac(Buffer.from(secret.replace(/^whsec_/, ""), "base64"), `${id}.${at}.`, body).toString("base64")}`,
  }),
  github: ({ id, body, secret }) => ({
    "x-github-delivery": id,
    "x-github-event": "push",
    "x-hub-signature-256": `sha256=${hmac(secret, body).toString("hex")}`,
  }),
  stripe: ({ body, secret, at }) => ({
    "stripe-signature": `t=${at},v1=${hmac(secret, `${at}.`, body).toString("hex")}`,
  }),
  shopify: ({ id, body, secret }) => ({
    "x-shopify-webhook-id": id,
    "x-shopify-topic": "orders/create",
    "x-shopify-hmac-sha256": hmac(secret, body).toString("base64"),
  }),
};

/** A fresh delivery id in the sender's style, and its body (Stripe's id is in it). */
function event(sender) {
  const id = {
    standard: `msg_${randomUUID().replaceAll("-", "")}`,
    github: randomUUID(),
    stripe: `evt_${randomUUID().replaceAll("-", "")}`,
    shopify: randomUUID(),
  }[sender];
  const body = JSON.stringify(
    sender === "stripe"
      ? { id, object: "event", type: "payment_intent.succeeded", data: { object: { amount: 500 } } }
      : { type: "order.created", data: { order: id.slice(0, 8), amount: 500 } },
  );
  return { id, body };
}

/** SHA-256 over length-prefixed parts, as the core hashes names. */
function partHash(parts) {
  const hash = createHash("sha256");
  for (const part of parts) {
    const len = Buffer.alloc(8);
    len.writeBigUInt64BE(BigInt(Buffer.byteLength(part)));
    hash.update(len);
    hash.update(part);
  }
  return hash.digest();
}

/**
 * The record of a delivery (SPEC §13), written apart from the Rust code: its
 * endpoint's canonical path and its id, never the host — and its body's
 * digest for the senders whose signature leaves the id out (GitHub, Shopify).
 */
function deliveryRecord(sender, path, { id, body }) {
  const parts = ["oncekey/record/webhook/2", path, id];
  if (sender === "github" || sender === "shopify") parts.push(partHash(["oncekey/webhook/body/1", body]));
  return partHash(parts).toString("hex");
}

/**
 * A receiver that counts each delivery that reaches it, by path and
 * `Idempotency-Key`, and answers 200 — or, for a delivery given a script,
 * its statuses in turn, after `delayMs`.
 */
function receiver() {
  const seen = new Map();
  const scripts = new Map();
  const handle = async (request) => {
    const path = new URL(request.url).pathname;
    const key = request.headers.get("idempotency-key");
    const runs = seen.get(`${path} ${key}`) ?? [];
    runs.push({
      attempt: request.headers.get("idempotency-attempt"),
      headers: request.headers,
      body: await request.text(),
    });
    seen.set(`${path} ${key}`, runs);
    const script = scripts.get(key) ?? {};
    if (script.delayMs) await sleep(script.delayMs);
    const status = script.statuses?.shift() ?? 200;
    return Response.json({ received: key, run: runs.length }, { status });
  };
  return {
    handle,
    runs: (path, key) => seen.get(`${path} ${key}`) ?? [],
    /** Every request that reached the receiver, whatever its path and key. */
    total: () => [...seen.values()].reduce((n, runs) => n + runs.length, 0),
    script: (key, script) => scripts.set(key, script),
  };
}

test("the signers sign as the senders do: Standard Webhooks' and GitHub's published vectors", () => {
  // standard-webhooks/standard-webhooks, libraries/javascript/src/webhook.test.ts ("sign function works").
  const standard = SIGN.standard({
    id: "msg_p5jXN8AQM9LWM0D4loKWxJek",
    body: '{"test": 2432232314}',
    secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
    at: 1614265330,
  });
  assert.equal(standard["webhook-signature"], "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
  // docs.github.com, "Validating webhook deliveries".
  const github = SIGN.github({ id: "x", body: "Hello, World!", secret: "It's a Secret to Everybody" });
  assert.equal(
    github["x-hub-signature-256"],
    "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17",
  );
});

describe("webhook routes", () => {
  let origin;
  let server;
  let worker;
  before(async () => {
    origin = receiver();
    server = await serve(origin.handle);
    const secrets = Object.fromEntries(Object.entries(SECRET_NAMES).map(([sender, name]) => [name, SECRETS[sender]]));
    worker = await start({
      worker: "proxy",
      metrics: true,
      vars: { ORIGIN_URL: server.url, IDEMPOTENCY_ROUTES: ROUTES, IDEMPOTENCY_ADMIN_TOKEN: TOKEN, ...secrets },
    });
  });
  after(async () => {
    await worker?.dispose();
    await server?.close();
  });

  /** Delivers `id`'s `body` to `path` as `sender` signs it (`secret`, `at` and `headers` override). */
  function deliver(
    sender,
    { id, body },
    { path = PATHS[sender], secret = SECRETS[sender], at = nowSecs(), headers } = {},
  ) {
    const signed = { "content-type": "application/json", ...SIGN[sender]({ id, body, secret, at }), ...headers };
    for (const [name, value] of Object.entries(signed)) if (value === undefined) delete signed[name];
    return worker.fetch(path, { method: "POST", headers: signed, body });
  }

  async function inspect(sender, path, delivery) {
    const res = await worker.fetch(`/.well-known/oncekey/records/${deliveryRecord(sender, path, delivery)}`, {
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    return { status: res.status, state: await res.json() };
  }

  for (const sender of ["standard", "github", "stripe", "shopify"]) {
    const path = PATHS[sender];
    describe(sender, () => {
      test("a first delivery runs, keyed by its delivery id; a resend replays without the receiver", async () => {
        const delivery = event(sender);
        const first = await deliver(sender, delivery);
        assert.equal(first.status, 200, await first.clone().text());
        assert.equal(first.headers.get("idempotent-replayed"), null);
        const [run] = origin.runs(path, delivery.id);
        assert.equal(run.attempt, "1");
        assert.equal(run.body, delivery.body, "the body as signed, for the receiver to check too");
        const signature = Object.keys(SIGN[sender]({ ...delivery, secret: "x", at: 1 })).find((h) =>
          /sig|hmac/.test(h),
        );
        assert.ok(run.headers.get(signature), `the receiver gets ${signature}`);
        // The sender's retry: signed again (a new timestamp where it signs one).
        await sleep(sender === "standard" || sender === "stripe" ? 1100 : 0);
        const resend = await deliver(sender, delivery);
        assert.equal(resend.status, 200);
        assert.equal(resend.headers.get("idempotent-replayed"), "true");
        assert.deepEqual(await resend.json(), { received: delivery.id, run: 1 });
        assert.equal(origin.runs(path, delivery.id).length, 1, "the receiver ran once");
      });

      const forgeries = {
        bad: { secret: sender === "standard" ? `whsec_${randomBytes(24).toString("base64")}` : "not-the-secret" },
        missing: {
          headers: Object.fromEntries(
            Object.keys(SIGN[sender]({ id: "x", body: "", secret: "x", at: 1 }))
              .filter((h) => /sig|hmac/.test(h))
              .map((h) => [h, undefined]),
          ),
        },
        // Only senders that sign a time can be stale (5 minutes either way).
        ...(sender === "standard" || sender === "stripe" ? { stale: { at: nowSecs() - 301 } } : {}),
      };
      test(`a ${Object.keys(forgeries).join(", a ")} signature each get 401 and plant nothing; the real delivery then runs once`, async () => {
        const delivery = event(sender);
        for (const [what, forged] of Object.entries(forgeries)) {
          const res = await deliver(sender, delivery, forged);
          assert.equal(res.status, 401, `${what}: ${res.status}`);
          const problem = await problemOf(res);
          assert.equal(problem.code, "webhook-signature", what);
          assert.equal(res.headers.get("cache-control"), "no-store");
          assert.equal((await inspect(sender, path, delivery)).status, 404, `${what}: no record planted`);
        }
        assert.equal(origin.runs(path, delivery.id).length, 0, "the receiver never saw a forgery");
        const real = await deliver(sender, delivery);
        assert.equal(real.status, 200);
        assert.equal(real.headers.get("idempotent-replayed"), null, "not an answer planted by a forgery");
        assert.equal(origin.runs(path, delivery.id).length, 1);
        const { status, state } = await inspect(sender, path, delivery);
        assert.deepEqual([status, state.kind, state.status], [200, "completed", 200]);
      });

      test("8 concurrent copies of one delivery run once", async () => {
        const delivery = event(sender);
        origin.script(delivery.id, { delayMs: 400 });
        const copies = await Promise.all(Array.from({ length: 8 }, () => deliver(sender, delivery)));
        assert.deepEqual(
          copies.map((res) => res.status),
          Array(8).fill(200),
        );
        const fresh = copies.filter((res) => res.headers.get("idempotent-replayed") === null);
        assert.equal(fresh.length, 1, "one ran; the others waited for it and got its answer");
        assert.equal(origin.runs(path, delivery.id).length, 1, "the receiver ran once");
      });
    });
  }

  test("a refusal is logged with its reason and its route, never the secret", async () => {
    const delivery = event("github");
    await deliver("github", delivery, { secret: "not-the-secret" });
    // Found by the id it claimed, marked unverified: an on-call engineer
    // finds it. (A line reaches the runtime's stdout after the answer.)
    const line = await until(
      () => worker.decisions().find((l) => l.oncekey === "webhook-signature" && l.delivery?.id === delivery.id),
      (found) => found !== undefined,
      { what: "the refusal's line" },
    );
    assert.equal(line.status, 401);
    assert.equal(line.route, "route 2 (POST /hooks/github)");
    assert.match(line.reason, /no signature matches the delivery/);
    assert.ok(!JSON.stringify(worker.decisions()).includes(SECRETS.github), "no secret in any line");
    const executed = worker.decisions().find((l) => l.oncekey === "execute" && l.path === PATHS.shopify);
    assert.equal(executed?.route, "route 4 (POST /hooks/shopify)");
    assert.equal(line.path, PATHS.github);
    assert.deepEqual(line.delivery, { event: "push", id: delivery.id, verified: false });
  });

  test("each delivery's line carries its id and event type, as each sender names them (SPEC §12)", async () => {
    const types = {
      standard: "order.created",
      github: "push",
      stripe: "payment_intent.succeeded",
      shopify: "orders/create",
    };
    for (const sender of Object.keys(types)) {
      const delivery = event(sender);
      assert.equal((await deliver(sender, delivery)).status, 200);
      assert.equal((await deliver(sender, delivery)).headers.get("idempotent-replayed"), "true");
      const lines = await until(
        () => worker.decisions().filter((l) => l.delivery?.id === delivery.id),
        (found) => found.length >= 2,
        { what: `${sender}'s two lines` },
      );
      assert.deepEqual(
        lines.map((l) => [l.oncekey, l.delivery]),
        [
          ["execute", { event: types[sender], id: delivery.id, verified: true }],
          ["replay", { event: types[sender], id: delivery.id, verified: true }],
        ],
        sender,
      );
    }
    // A Svix-branded delivery missing its signature is told which header, and logged with its claimed id.
    const svix = event("standard");
    const res = await worker.fetch(PATHS.standard, {
      method: "POST",
      headers: { "content-type": "application/json", "svix-id": svix.id, "svix-timestamp": String(nowSecs()) },
      body: svix.body,
    });
    assert.equal(res.status, 401);
    assert.match((await problemOf(res)).detail, /svix-signature header is missing/);
    const refused = await until(
      () => worker.decisions().find((l) => l.delivery?.id === svix.id),
      (found) => found !== undefined,
      { what: "the Svix refusal's line" },
    );
    assert.deepEqual(refused?.delivery, { event: "order.created", id: svix.id, verified: false });
  });

  test("no spelling or method of a webhook route reaches the receiver unsigned (SPEC §13)", async () => {
    const before = origin.total();
    const forged = event("stripe");
    // Spellings every server reads as the route's path: held to the route.
    const governed = [
      "/hooks/stripe/billing",
      "/hooks/stripe/billing/",
      "/hooks//stripe/billing",
      "/Hooks/Stripe/Billing",
      "/hooks/%73tripe/billing",
      "/hooks/stripe/billing.json",
    ];
    // Spellings servers read apart (`;params`, `%3B`, `%2F`, `%5C`, and a
    // `..` once those are read: five red teams), which other rules govern
    // in other readings: refused as ambiguous, or held to the route.
    const readApart = [
      "/hooks/stripe/billing;x",
      "/HOOKS/stripe//billing/;v=1",
      "/hooks%2Fstripe%2fbilling",
      "/hooks%5Cstripe/billing",
      "/hooks/stripe/x/%2e%2e%2fbilling",
      "/hooks/stripe/billing;%2F..",
      "/hooks;%2F../stripe/billing",
      "/x;%2F..%2Fhooks%2Fstripe%2Fbilling",
      "/hooks/x;%2F..%2Fstripe/billing",
      "/hooks/stripe/billing%2F..%2F..%2Fx",
      "/hooks/stripe/billing%3B",
      "/hooks/stripe/billing%3Bjsessionid=1",
    ];
    for (const path of [...governed, ...readApart]) {
      const apart = readApart.includes(path);
      const unsigned = await worker.fetch(path, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: forged.body,
      });
      const { code } = await problemOf(unsigned);
      const refusals = apart ? ["webhook-signature", "ambiguous-request"] : ["webhook-signature"];
      assert.ok(refusals.includes(code), `POST ${path}: ${unsigned.status} ${code}`);
      assert.equal(unsigned.status, code === "ambiguous-request" ? 400 : 401, `POST ${path}`);
      for (const method of ["PATCH", "PUT", "DELETE", "GET"]) {
        const res = await worker.fetch(path, {
          method,
          headers: { "content-type": "application/json" },
          body: method === "GET" ? undefined : forged.body,
        });
        const { code } = await problemOf(res);
        const refusals = apart ? ["method-not-allowed", "ambiguous-request"] : ["method-not-allowed"];
        assert.ok(refusals.includes(code), `${method} ${path}: ${res.status} ${code}`);
        if (code === "method-not-allowed") assert.equal(res.headers.get("allow"), "POST", `${method} ${path}`);
      }
    }
    assert.equal(origin.total(), before, "nothing reached the receiver");
  });

  test("a path that climbs out of a route once `%2F` is read, or a method override, is refused (SPEC §13)", async () => {
    const before = origin.total();
    // The eighth red team: Hono, Express and Rails keep `%2F` in a segment,
    // so `..` after it reaches /x at oncekey and /hooks/stripe/billing/… at them.
    for (const path of ["/hooks/stripe/billing%2F..%2F..%2Fx", "/hooks/stripe/billing%5C..%5C..%5Cx"]) {
      const res = await deliver("stripe", event("stripe"), { path, secret: "not the secret" });
      assert.equal(res.status, 400, path);
      assert.equal((await problemOf(res)).code, "ambiguous-request", path);
    }
    // A POST that method-override middleware would run as PATCH at a webhook path.
    for (const headers of [{ "x-http-method-override": "PATCH" }, { "x-method-override": "put" }]) {
      const res = await deliver("stripe", event("stripe"), { headers });
      assert.equal(res.status, 200, "a webhook route governs every method alike: verified, and run");
    }
    assert.equal(origin.total(), before + 2);
  });

  test("one signed delivery runs once whatever spelling of its path or hostname carries it", async () => {
    for (const sender of ["standard", "github", "stripe", "shopify"]) {
      const delivery = event(sender);
      const path = PATHS[sender];
      const carriers = [
        `${BASE}${path}`,
        `http://oncekey-proxy.someone.workers.dev${path}`,
        `http://API.Example${path.toUpperCase()}/`,
        `https://other.example${path.replace("/hooks/", "/hooks//")}`,
      ];
      // A route that matches a prefix takes Rails' format suffixes too, to one record.
      if (sender === "stripe") carriers.push(`${BASE}${path}.json`, `${BASE}${path}.xml`, `${BASE}${path}.`);
      // Spellings servers read apart: refused where another rule governs a
      // reading (here, every path is covered), else the route's; never a second run.
      const apart = [`${BASE}${path};x`, `${BASE}${path.replace("/hooks/", "/hooks%2F")}`, `${BASE}${path};%2F..`];
      for (const url of [...carriers, ...apart]) {
        const signed = {
          "content-type": "application/json",
          ...SIGN[sender]({ ...delivery, secret: SECRETS[sender], at: nowSecs() }),
        };
        const res = await worker.mf.dispatchFetch(url, { method: "POST", headers: signed, body: delivery.body });
        const expected = apart.includes(url) ? [200, 400] : [200];
        assert.ok(expected.includes(res.status), `${sender} at ${url}: ${res.status} ${await res.clone().text()}`);
      }
      const runs = [...new Set([...carriers, ...apart].map((url) => new URL(url).pathname))].flatMap((p) =>
        origin.runs(p, delivery.id),
      );
      assert.equal(runs.length, 1, `${sender}: the receiver ran once for one delivery`);
      const { state } = await inspect(sender, path, delivery);
      assert.equal(state.kind, "completed", `${sender}: one record, named by the canonical path and the id`);
    }
  });

  test("a captured GitHub delivery resent under a future delivery's id never blocks that delivery", async () => {
    // GitHub signs the body, not X-GitHub-Delivery: anyone who saw one
    // delivery can resend it under any id.
    const captured = event("github");
    const future = event("github");
    const replayedUnderFutureId = await deliver("github", { id: future.id, body: captured.body });
    assert.equal(replayedUnderFutureId.status, 200);
    const real = await deliver("github", future);
    assert.equal(real.status, 200, await real.clone().text());
    assert.equal(real.headers.get("idempotent-replayed"), null, "the real delivery ran, not a 422 or a replay");
    assert.deepEqual(
      origin.runs(PATHS.github, future.id).map((run) => run.body),
      [captured.body, future.body],
    );
  });

  test("one Stripe event delivered to two endpoints runs at each once", async () => {
    const delivery = event("stripe");
    for (const to of ["/hooks/stripe/billing", "/hooks/stripe/analytics", "/hooks/stripe/billing"]) {
      assert.equal((await deliver("stripe", delivery, { path: to })).status, 200);
    }
    assert.equal(origin.runs("/hooks/stripe/billing", delivery.id).length, 1);
    assert.equal(origin.runs("/hooks/stripe/analytics", delivery.id).length, 1);
  });

  test("a receiver's 500 releases the delivery: the sender's retry runs it as the next attempt", async () => {
    const delivery = event("standard");
    origin.script(delivery.id, { statuses: [500] });
    assert.equal((await deliver("standard", delivery)).status, 500);
    const retry = await deliver("standard", delivery);
    assert.equal(retry.status, 200);
    assert.equal(retry.headers.get("idempotent-replayed"), null);
    assert.deepEqual(
      origin.runs(PATHS.standard, delivery.id).map((r) => r.attempt),
      ["1", "2"],
    );
  });

  test("any answer outside 2xx releases the delivery (a receiver's 400 fixed later): the retry runs again", async () => {
    for (const [sender, status] of [
      ["standard", 400],
      ["github", 404],
      ["stripe", 409],
      ["shopify", 422],
      ["stripe", 501],
      ["github", 302],
    ]) {
      const delivery = event(sender);
      origin.script(delivery.id, { statuses: [status] });
      assert.equal((await deliver(sender, delivery)).status, status, `${sender} ${status}`);
      const retry = await deliver(sender, delivery);
      assert.equal(retry.status, 200, `${sender} after ${status}: the fixed receiver runs it`);
      assert.equal(retry.headers.get("idempotent-replayed"), null);
      assert.deepEqual(
        origin.runs(PATHS[sender], delivery.id).map((r) => r.attempt),
        ["1", "2"],
        `${sender} ${status}`,
      );
      // The 200 is the delivery handled: stored and replayed.
      assert.equal((await deliver(sender, delivery)).headers.get("idempotent-replayed"), "true");
    }
  });

  test("a redelivery during a slow first run gets its 409 while the sender still listens (GitHub 10 s, Shopify 5 s)", async () => {
    // (sender, how long the first run takes, the sender's timeout)
    for (const [sender, firstRunMs, timeoutMs] of [
      ["github", 12_000, 10_000],
      ["shopify", 6_000, 5_000],
    ]) {
      const delivery = event(sender);
      origin.script(delivery.id, { delayMs: firstRunMs });
      const first = deliver(sender, delivery);
      await sleep(200);
      const started = Date.now();
      const redelivery = await deliver(sender, delivery);
      const waited = Date.now() - started;
      assert.equal(redelivery.status, 409, `${sender}: ${await redelivery.text()}`);
      assert.ok(
        waited < timeoutMs - 500,
        `${sender}: answered after ${waited} ms, before the sender's ${timeoutMs} ms`,
      );
      assert.ok(waited >= timeoutMs - 2_000, `${sender}: it waited for the first run first (${waited} ms)`);
      assert.equal((await first).status, 200);
      assert.equal(origin.runs(PATHS[sender], delivery.id).length, 1, `${sender}: the receiver ran once`);
    }
  });

  test("an answered delivery forgotten with release?completed=true runs again on its redelivery, as the next attempt", async () => {
    const delivery = event("stripe");
    assert.equal((await deliver("stripe", delivery)).status, 200);
    const record = deliveryRecord("stripe", PATHS.stripe, delivery);
    const release = (query) =>
      worker.fetch(`/.well-known/oncekey/records/${record}/release${query}`, {
        method: "POST",
        headers: { authorization: `Bearer ${TOKEN}` },
      });
    const plain = await release("");
    assert.equal(plain.status, 409, "a plain release leaves an answer alone");
    assert.match((await plain.json()).detail, /\?completed=true/);
    const forgot = await release("?completed=true");
    assert.equal(forgot.status, 200);
    const state = await forgot.json();
    assert.deepEqual([state.kind, state.attempt], ["released", 1], "the answer's attempt kept");
    const redelivered = await deliver("stripe", delivery);
    assert.equal(redelivered.status, 200);
    assert.equal(redelivered.headers.get("idempotent-replayed"), null);
    assert.deepEqual(
      origin.runs(PATHS.stripe, delivery.id).map((r) => r.attempt),
      ["1", "2"],
      "attempt numbers keep rising",
    );
  });
});
