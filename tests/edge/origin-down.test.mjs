// An origin that is down must not hold or poison keys (SPEC §3), on the
// production proxy. On Cloudflare an origin that cannot be reached is
// answered by the edge itself, with its own 52x marked `Server: cloudflare`:
// those that say the origin was never reached release the key (a retry runs
// at once), 520 and 524 are an unknown outcome, and none is ever stored as
// the API's answer. What local workerd's fetch reports for a refused port,
// an unresolvable name or a failed TLS handshake cannot be told from a
// connection lost after the request left (measured: "Network connection
// lost." and "internal error"), so there the outcome is unknown
// (docs/http.md lists which failure is which, per runtime). A name that
// does not resolve ("internal error" too, measured once by hand) is left out:
// its lookup would leave this machine.
import assert from "node:assert/strict";
import http from "node:http";
import net from "node:net";
import { after, before, describe, test } from "node:test";
import { start } from "./harness.mjs";

const PAGE = "<!doctype html><title>Web server is down</title><h1>Error code 521</h1>";

describe("Cloudflare's own 52x answers", () => {
  let api;
  let proxy;
  // What the edge answers for each path's first call; the API's own answer after.
  const runs = new Map();
  before(async () => {
    api = http.createServer((req, res) => {
      req.resume();
      const [, status, mark] = req.url.split("/");
      const key = req.headers["idempotency-key"];
      const n = (runs.get(key) ?? 0) + 1;
      runs.set(key, n);
      if (n === 1) {
        const headers = { "content-type": "text/html" };
        if (mark === "marked") Object.assign(headers, { server: "cloudflare", "cf-ray": "8f1a2b3c4d5e6f70-LHR" });
        res.writeHead(Number(status), headers);
        return res.end(PAGE);
      }
      res.writeHead(201, { "content-type": "application/json" });
      res.end('{"orderId":"o1"}');
    });
    await new Promise((resolve) => api.listen(0, "127.0.0.1", resolve));
    proxy = await start({
      worker: "proxy",
      vars: { ORIGIN_URL: `http://127.0.0.1:${api.address().port}`, IDEMPOTENCY_IN_FLIGHT_WAIT_MS: "0" },
    });
  });
  after(async () => {
    await proxy?.dispose();
    api?.close();
  });

  const send = (path, key) =>
    proxy.fetch(path, {
      method: "POST",
      headers: { "content-type": "application/json", "idempotency-key": key },
      body: "{}",
    });

  for (const status of [521, 522, 523, 525, 526, 530]) {
    test(`${status} from the edge: the origin was never reached, so the key is free and the retry runs at once`, async () => {
      const key = crypto.randomUUID();
      const first = await send(`/${status}/marked`, key);
      assert.equal(first.status, 502);
      const problem = await first.json();
      assert.match(problem.detail, /not carried out/);
      const retry = await send(`/${status}/marked`, key);
      assert.equal(retry.status, 201, "run again at once, as attempt 2");
      assert.equal(retry.headers.get("idempotent-replayed"), null);
      assert.equal(runs.get(key), 2);
      const replay = await send(`/${status}/marked`, key);
      assert.equal(replay.headers.get("idempotent-replayed"), "true", "the API's own answer is the one stored");
      assert.equal(runs.get(key), 2);
    });
  }

  for (const status of [520, 524]) {
    test(`${status} from the edge: the origin got the request, so the outcome is unknown, never a stored answer`, async () => {
      const key = crypto.randomUUID();
      assert.equal((await send(`/${status}/marked`, key)).status, 502);
      const dup = await send(`/${status}/marked`, key);
      assert.equal(dup.status, 409);
      assert.equal((await dup.json()).type, "urn:oncekey:problem:outcome-unknown");
      assert.equal(runs.get(key), 1, "not run again within the lease");
    });
  }

  test("an unmarked 521 is the origin's own answer: stored and replayed like any other", async () => {
    const key = crypto.randomUUID();
    const first = await send("/521/plain", key);
    assert.equal(first.status, 521);
    assert.equal(await first.text(), PAGE);
    const replay = await send("/521/plain", key);
    assert.equal(replay.status, 521);
    assert.equal(replay.headers.get("idempotent-replayed"), "true");
    assert.equal(runs.get(key), 1);
  });
});

describe("local workerd: failures its fetch cannot place", () => {
  const proxies = [];
  let plain;
  before(async () => {
    plain = http.createServer((_, res) => res.end("plain http"));
    await new Promise((resolve) => plain.listen(0, "127.0.0.1", resolve));
  });
  after(async () => {
    for (const proxy of proxies) await proxy.dispose();
    plain?.close();
  });

  const cases = [
    // Port 1: below the ephemeral range, so no server this suite (or the
    // machine) starts is ever handed it, unlike a port freed after a probe.
    ["a refused port (an API restarting)", () => "http://127.0.0.1:1"],
    ["a TLS handshake that fails", () => `https://127.0.0.1:${plain.address().port}`],
  ];
  for (const [what, origin] of cases) {
    test(`${what}: 502, the outcome unknown, the key held for its lease and never stored`, async () => {
      const proxy = await start({
        worker: "proxy",
        quiet: true,
        vars: { ORIGIN_URL: origin(), IDEMPOTENCY_IN_FLIGHT_WAIT_MS: "0" },
      });
      proxies.push(proxy);
      const key = crypto.randomUUID();
      const post = () => proxy.fetch("/v1/orders", { method: "POST", headers: { "idempotency-key": key }, body: "{}" });
      const first = await post();
      assert.equal(first.status, 502);
      assert.equal((await first.json()).type, "urn:oncekey:problem:origin-unreachable");
      const dup = await post();
      assert.equal(dup.status, 409);
      assert.equal((await dup.json()).type, "urn:oncekey:problem:outcome-unknown");
      assert.ok(Number(dup.headers.get("retry-after")) > 100, "the rest of the lease");
    });
  }
});

describe("an interim 1xx handed back as the origin's answer", () => {
  // A fifth red team: workerd's fetch gave a 103 (Early Hints) or a 100 (a
  // client's `Expect: 100-continue`) as the response. The JavaScript host
  // stored it and answered 500 to every retry for the TTL; the Rust host
  // panicked building it. Both now take it as no answer: the outcome is
  // unknown, nothing stored, nothing built with the interim status.
  let api;
  let proxy;
  let runs = 0;
  before(async () => {
    api = http.createServer((req, res) => {
      req.resume();
      runs += 1;
      if (req.url === "/early-hints") res.writeEarlyHints({ link: "</app.css>; rel=preload; as=style" });
      res.writeHead(201, { "content-type": "application/json" });
      res.end('{"orderId":"o1"}');
    });
    await new Promise((resolve) => api.listen(0, "127.0.0.1", resolve));
    proxy = await start({
      worker: "proxy",
      quiet: true,
      vars: { ORIGIN_URL: `http://127.0.0.1:${api.address().port}`, IDEMPOTENCY_IN_FLIGHT_WAIT_MS: "0" },
    });
  });
  after(async () => {
    await proxy?.dispose();
    await new Promise((resolve) => api?.close(resolve));
  });

  test("a keyed request: never stored, never built, a 502 and then a 409 for the key's lease", async () => {
    const key = crypto.randomUUID();
    const send = () => proxy.fetch("/early-hints", { method: "POST", headers: { "idempotency-key": key }, body: "{}" });
    const first = await send();
    const body = await first.text();
    // Local workerd hands over the 103 (measured); the origin did run.
    assert.equal(first.status, 502, body);
    assert.match(first.headers.get("content-type"), /problem\+json/);
    const retry = await send();
    assert.equal(retry.status, 409, "the outcome is unknown, not a stored 103");
    assert.equal((await retry.json()).type, "urn:oncekey:problem:outcome-unknown");
    const passed = await proxy.fetch("/early-hints");
    assert.equal(passed.status, 502, "a pass-through: no answer, never a 1xx built");
    await passed.arrayBuffer();
    assert.equal(runs, 2, "the keyed request ran once, the pass-through once");
  });
});

describe("a 101 with no WebSocket from a broken origin", () => {
  // A sixth red team: a pass-through request answered `101 Switching
  // Protocols` with no WebSocket made the Rust host panic building the
  // response, which took a keyed request in flight on the same instance
  // with it (its finish never ran: the key held, the retry a second run).
  let api;
  let proxy;
  let slowRuns = 0;
  before(async () => {
    api = net.createServer((socket) => {
      socket.once("data", async (chunk) => {
        const line = chunk.toString("latin1").split("\r\n")[0];
        if (line.includes("/boom")) return socket.end("HTTP/1.1 101 Switching Protocols\r\n\r\n");
        slowRuns += 1;
        await new Promise((resolve) => setTimeout(resolve, 800));
        socket.end(
          'HTTP/1.1 201 Created\r\ncontent-type: application/json\r\ncontent-length: 16\r\n\r\n{"orderId":"o1"}',
        );
      });
    });
    await new Promise((resolve) => api.listen(0, "127.0.0.1", resolve));
    proxy = await start({
      worker: "proxy",
      quiet: true,
      vars: { ORIGIN_URL: `http://127.0.0.1:${api.address().port}`, IDEMPOTENCY_PATHS: "/slow" },
    });
  });
  after(async () => {
    await proxy?.dispose();
    await new Promise((resolve) => api?.close(resolve));
  });

  test("the pass-through is a 502 problem, and a keyed request in flight beside it completes once", async () => {
    const key = crypto.randomUUID();
    const keyed = proxy.fetch("/slow", { method: "POST", headers: { "idempotency-key": key }, body: "{}" });
    await new Promise((resolve) => setTimeout(resolve, 200));
    const boom = await proxy.fetch("/boom", { method: "POST", body: "{}" });
    assert.equal(boom.status, 502, await boom.clone().text());
    assert.equal((await boom.json()).type, "urn:oncekey:problem:origin-unreachable");
    const first = await keyed;
    assert.equal(first.status, 201, await first.clone().text());
    await first.arrayBuffer();
    const retry = await proxy.fetch("/slow", { method: "POST", headers: { "idempotency-key": key }, body: "{}" });
    assert.equal(retry.status, 201);
    assert.equal(retry.headers.get("idempotent-replayed"), "true");
    await retry.arrayBuffer();
    assert.equal(slowRuns, 1, "one run");
  });
});
