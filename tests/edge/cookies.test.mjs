// An answer's cookies (SPEC §3): a double-submitted sign-in signs the person
// in — the duplicate's replay carries the session cookie — and nobody else
// ever receives that session: not another browser with the same key, not
// another site's request, not a KV copy. The production proxy in front of a
// real Node server that signs people in; and a scope read from a cookie,
// which a tossed cookie cannot share (SPEC §2).
import assert from "node:assert/strict";
import http from "node:http";
import { after, before, describe, test } from "node:test";
import { newKey, order, recordName, start, uniqueItem } from "./harness.mjs";

describe("Set-Cookie on replays", () => {
  let api;
  let proxy;
  let signIns = 0;
  before(async () => {
    api = http.createServer((req, res) => {
      req.resume();
      req.on("end", () => {
        signIns += 1;
        // Slow, as a password hash is: the double click arrives meanwhile.
        setTimeout(() => {
          res.writeHead(303, {
            location: "/home",
            "set-cookie": [`sid=session-${signIns}; HttpOnly; Path=/`, "theme=dark; Path=/"],
          });
          res.end();
        }, 300);
      });
    });
    await new Promise((resolve) => api.listen(0, "127.0.0.1", resolve));
    proxy = await start({ worker: "proxy", vars: { ORIGIN_URL: `http://127.0.0.1:${api.address().port}` } });
  });
  after(async () => {
    await proxy?.dispose();
    api?.close();
  });

  const signIn = (key, headers) =>
    proxy.fetch("/sign-in", {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", "idempotency-key": key, ...headers },
      body: "user=ada&password=x",
      redirect: "manual",
    });
  const cookiesOf = (res) => res.headers.getSetCookie();
  const browser = { "sec-fetch-site": "same-origin", origin: "http://oncekey.test", cookie: "csrf=ada-token" };

  test("8 concurrent submits from one browser: one sign-in, every answer carries its session", async () => {
    const key = crypto.randomUUID();
    const before = signIns;
    const answers = await Promise.all(Array.from({ length: 8 }, () => signIn(key, browser)));
    assert.equal(signIns, before + 1, "one sign-in");
    const session = `sid=session-${before + 1}; HttpOnly; Path=/`;
    for (const res of answers) {
      assert.equal(res.status, 303);
      assert.deepEqual(cookiesOf(res), [session, "theme=dark; Path=/"], "signed in, whichever answer it got");
    }
    assert.equal(answers.filter((res) => res.headers.get("idempotent-replayed") === "true").length, 7);
  });

  test("the same key from another browser, another site or no cookies: the answer, never the session", async () => {
    const key = crypto.randomUUID();
    await (await signIn(key, browser)).arrayBuffer();
    const others = [
      ["another browser's cookies", { ...browser, cookie: "csrf=eve-token" }],
      ["no cookies (curl)", {}],
      [
        "the same cookies from another site",
        { ...browser, "sec-fetch-site": "cross-site", origin: "https://evil.example" },
      ],
    ];
    for (const [who, headers] of others) {
      const res = await signIn(key, headers);
      assert.equal(res.headers.get("idempotent-replayed"), "true", who);
      assert.equal(res.headers.get("location"), "/home", who);
      assert.deepEqual(cookiesOf(res), [], `${who}: no session`);
    }
  });

  test("an answer to another site's request keeps no cookie; no KV copy holds a session", async () => {
    const key = crypto.randomUUID();
    const cross = { ...browser, "sec-fetch-site": "cross-site", origin: "https://evil.example" };
    const first = await signIn(key, cross);
    assert.equal(cookiesOf(first).length, 2, "the first answer goes as the origin sent it");
    const replay = await signIn(key, browser);
    assert.equal(replay.headers.get("idempotent-replayed"), "true");
    assert.deepEqual(cookiesOf(replay), [], "never kept, so never replayed");
    // The copies written so far (defaults: at completion) hold no cookie.
    const kv = await proxy.mf.getKVNamespace("IDEMPOTENCY_KV");
    const { keys } = await kv.list();
    assert.ok(keys.length > 0, "copies were written");
    for (const { name } of keys) {
      const bytes = Buffer.from(await kv.get(name, "arrayBuffer"));
      assert.ok(!bytes.includes("sid=") && !bytes.includes("set-cookie"), `${name}: no session in KV`);
    }
    assert.ok(
      keys.some(({ name }) => name === recordName("oncekey.test", undefined, key)),
      "this key's copy among them",
    );
  });
});

describe("a scope read from a cookie (IDEMPOTENCY_SCOPE=cookie:session)", () => {
  let worker;
  before(async () => {
    worker = await start({ vars: { IDEMPOTENCY_SCOPE: "cookie:session" } });
  });
  after(() => worker?.dispose());

  test("a tossed cookie shares no record: every occurrence counts, in order and as sent (SPEC §2)", async () => {
    // Another origin of the site tosses `session=tossed` into the victim's
    // browser, which then sends both; the tosser sends its own.
    const key = newKey();
    const item = uniqueItem("tossed");
    const victim = await order(worker, { key, item, headers: { cookie: "session=tossed; session=victim" } });
    assert.equal(victim.status, 201);
    for (const cookie of ["session=tossed", "session=victim", 'session="tossed"; session=victim']) {
      const other = await order(worker, { key, item, headers: { cookie } });
      assert.equal(other.headers.get("idempotent-replayed"), null, `${cookie}: never the victim's answer`);
    }
    const again = await order(worker, { key, item, headers: { cookie: "session=tossed; session=victim" } });
    assert.equal(again.headers.get("idempotent-replayed"), "true", "the victim's own retry replays");
  });
});
