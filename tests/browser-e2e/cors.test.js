// Cross-origin in headless Chromium (issue 20, SPEC §3): a page on one
// origin calls an API on another, behind the production proxy in workerd,
// the API answering CORS itself and IDEMPOTENCY_CORS_ORIGINS unset (the
// usual setup). The first answer is lost on its way back (the request
// reaches the API; the browser sees a reset), so the page retries
// with the same key — and the replay must be readable by the page: without
// the API's CORS on it, a browser blocks it and the retry fails too.
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { after, before, test } from "node:test";
import { start } from "../edge/harness.mjs";
import { launchChromium } from "../support/chromium.mjs";

let api;
let page;
let proxy;
let browser;
let pageOrigin;
let hop;
let lossy;
/** POSTs whose answer the lossy hop dropped. */
let lost = 0;
/** `Idempotent-Replayed` of each POST answer the hop delivered. */
const delivered = [];
const runs = new Map();

/** Starts `server` on a free loopback port; its origin. */
async function listen(server) {
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return `http://127.0.0.1:${server.address().port}`;
}

before(async () => {
  // The API: its own CORS for the page's origin, Location exposed.
  api = createServer((req, res) => {
    const cors = {
      "access-control-allow-origin": req.headers.origin ?? "*",
      "access-control-expose-headers": "Location",
      vary: "Origin",
    };
    if (req.method === "OPTIONS") {
      res.writeHead(204, {
        ...cors,
        "access-control-allow-methods": "POST",
        "access-control-allow-headers": "content-type, idempotency-key",
      });
      return res.end();
    }
    req.resume();
    req.on("end", () => {
      const key = req.headers["idempotency-key"];
      runs.set(key, (runs.get(key) ?? 0) + 1);
      res.writeHead(201, { ...cors, "content-type": "application/json", location: "/orders/o1" });
      res.end(JSON.stringify({ orderId: "o1", key }));
    });
  });
  const apiOrigin = await listen(api);
  // The production proxy as the root wrangler.toml deploys it (the JavaScript host).
  proxy = await start({ worker: "proxy", host: "js", vars: { ORIGIN_URL: apiOrigin } });
  // The page's own origin: a page that posts an order cross-origin and
  // retries a network failure with the same key, as any client does.
  page = createServer((_req, res) => {
    res.writeHead(200, { "content-type": "text/html" });
    res.end(`<!doctype html><script>
      window.order = async (url, key) => {
        const errors = [];
        for (let attempt = 1; attempt <= 3; attempt++) {
          try {
            const res = await fetch(url, {
              method: "POST",
              headers: { "content-type": "application/json", "idempotency-key": key },
              body: JSON.stringify({ item: "tea" }),
            });
            return {
              status: res.status,
              replayed: res.headers.get("idempotent-replayed"),
              location: res.headers.get("location"),
              body: await res.json(),
              errors,
            };
          } catch (error) {
            errors.push(String(error));
          }
        }
        return { errors };
      };
    </script>`);
  });
  pageOrigin = await listen(page);
  // The network between the browser and the worker, which loses the answer
  // to the next POST once the worker has given it: the request was carried
  // out, the browser sees a reset. No browser interception is involved, so
  // Chromium checks the CORS of every answer it does get.
  hop = createServer(async (req, res) => {
    const chunks = [];
    for await (const chunk of req) chunks.push(chunk);
    // Hop-by-hop and framing headers stay with their hop (fetch decodes the
    // body, so its content-encoding goes too).
    const hopByHop = ["host", "connection", "content-length", "content-encoding", "keep-alive", "transfer-encoding"];
    const headers = Object.fromEntries(Object.entries(req.headers).filter(([name]) => !hopByHop.includes(name)));
    const upstream = await fetch(new URL(req.url, proxy.url), {
      method: req.method,
      headers,
      body: chunks.length > 0 ? Buffer.concat(chunks) : undefined,
    });
    const body = Buffer.from(await upstream.arrayBuffer());
    if (req.method === "POST" && lost === 0) {
      lost++;
      return req.socket.destroy();
    }
    if (req.method === "POST") delivered.push(upstream.headers.get("idempotent-replayed"));
    const answer = [...upstream.headers].filter(([name]) => !hopByHop.includes(name));
    res.writeHead(upstream.status, Object.fromEntries(answer));
    res.end(body);
  });
  lossy = await listen(hop);
  browser = await launchChromium();
});

after(async () => {
  await browser?.close();
  await proxy?.dispose();
  api?.close();
  page?.close();
  hop?.close();
});

test("Chromium: a first answer lost on the way back, the retry's replay is readable cross-origin; the API ran once", async () => {
  const tab = await browser.newPage();
  await tab.goto(`${pageOrigin}/`);
  const url = new URL("/v1/orders", lossy).href;
  lost = 0;
  const key = crypto.randomUUID();
  const result = await tab.evaluate(([u, k]) => window.order(u, k), [url, key]);
  assert.equal(lost, 1, "the first answer was lost");
  // The retry is the browser's own (Chromium resends a request whose
  // reused connection reset) or the page's: either way, with the same key.
  assert.ok(result.errors.length <= 1, `at most one failure seen by the page: ${result.errors}`);
  assert.deepEqual(delivered, ["true"], "the answer the page got is the replay");
  assert.equal(result.status, 201);
  // Idempotent-Replayed is not exposed here: the API exposes Location only,
  // and the layer adds its own names only with IDEMPOTENCY_CORS_ORIGINS.
  assert.equal(result.replayed, null);
  assert.equal(result.location, "/orders/o1", "the API's exposed header is readable on the replay");
  assert.deepEqual(result.body, { orderId: "o1", key });
  assert.equal(runs.get(key), 1, "the API ran once");
});

test("Chromium: a page on another origin cannot read that replay", async () => {
  const tab = await browser.newPage();
  await tab.goto(`${pageOrigin}/`);
  lost = 1; // nothing dropped
  const url = new URL("/v1/orders", lossy).href;
  const key = crypto.randomUUID();
  // The first answer went to another site's page (its Origin stored with it).
  const first = await fetch(url, {
    method: "POST",
    headers: { origin: "https://other.example", "content-type": "application/json", "idempotency-key": key },
    body: JSON.stringify({ item: "tea" }),
  });
  assert.equal(first.status, 201);
  await first.arrayBuffer();
  const result = await tab.evaluate(([u, k]) => window.order(u, k), [url, key]);
  assert.equal(result.status, undefined, "blocked by the browser");
  assert.equal(result.errors.length, 3);
  assert.equal(runs.get(key), 1);
});
