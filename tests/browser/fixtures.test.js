// The fixture apps scripts/test-browser-pack.sh built from the packed
// package (build/browser/fixtures.json), in headless Chromium (SPEC §8,
// "Loads anywhere, breaks nothing"): each renders, and a double click on its
// protected form is one order at its origin, with one key. Where the wasm
// cannot run — a Content-Security-Policy without 'wasm-unsafe-eval', a 404
// — the page still renders, the double click is still one order (sent
// without a key), and the failure is reported: `oncekey:error` with a
// LoadError on the form and a console warning naming the cause.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { createServer, request as httpRequest } from "node:http";
import { extname, join } from "node:path";
import { launchChromium } from "../support/chromium.mjs";
import { freePort } from "../support/free-port.mjs";

const ROOT = new URL("../../", import.meta.url).pathname;
const BUILT = join(ROOT, "build/browser/fixtures.json");
const V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const TYPES = { ".html": "text/html", ".js": "text/javascript", ".wasm": "application/wasm" };
const STRICT_CSP = "script-src 'self'";

function built(name) {
  assert.ok(existsSync(BUILT), "run scripts/test-browser-pack.sh first");
  const dir = JSON.parse(readFileSync(BUILT, "utf8"))[name];
  assert.ok(dir, `${name} was not built: run scripts/test-browser-pack.sh`);
  return dir;
}

let browser;
before(async () => {
  browser = await launchChromium();
});
after(() => browser?.close());

// The shop's origin for a bundled app: its dist/ (index.html from the
// fixture when the bundler writes none), and /api/orders, which records
// each order after 300 ms (a double click lands while the first is out).
// `csp` sets the page's policy; `wasm: false` answers the wasm with a 404;
// `copyWasm` serves the package's wasm beside the bundle, as the docs tell
// Rollup and esbuild users to.
async function serveStatic(dir, { csp, wasm = true, copyWasm = false } = {}) {
  const dist = join(dir, "dist");
  const orders = [];
  const server = createServer((req, res) => {
    const path = new URL(req.url, "http://x").pathname;
    if (path === "/api/orders" && req.method === "POST") {
      let body = "";
      req.on("data", (c) => (body += c));
      req.on("end", () => {
        orders.push({ key: req.headers["idempotency-key"], body });
        setTimeout(() => res.writeHead(201, { "content-type": "application/json" }).end('{"ok":true}'), 300);
      });
      return;
    }
    if (!wasm && path.endsWith(".wasm")) return res.writeHead(404).end("not here");
    let file = join(dist, path === "/" ? "index.html" : path);
    if (path === "/" && !existsSync(file)) file = join(dir, "index.html");
    if (copyWasm && path === "/oncekey_bg.wasm") file = join(dir, "node_modules/oncekey/dist/oncekey_bg.wasm");
    if (!file.startsWith(dir) || !existsSync(file)) return res.writeHead(404).end();
    const headers = { "content-type": TYPES[extname(file)] ?? "application/octet-stream" };
    if (csp) headers["content-security-policy"] = csp;
    res.writeHead(200, headers).end(readFileSync(file));
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  return { url: `http://127.0.0.1:${server.address().port}/`, orders, close: () => server.close() };
}

// `next start` on a free port, for the fixture built in `dir`.
async function startNext(t, dir) {
  const port = await freePort();
  const child = spawn(join(dir, "node_modules/.bin/next"), ["start", "-p", String(port), "-H", "127.0.0.1"], {
    cwd: dir,
    env: { ...process.env, NEXT_TELEMETRY_DISABLED: "1" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let log = "";
  child.stdout.on("data", (c) => (log += c));
  child.stderr.on("data", (c) => (log += c));
  t.after(() => child.kill());
  const url = `http://127.0.0.1:${port}/`;
  for (let i = 0; ; i++) {
    try {
      if ((await fetch(url)).ok) break;
    } catch {}
    assert.ok(i < 100 && child.exitCode === null, `next start did not answer:\n${log}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  return { url, log: () => log };
}

// A front for a running server that sets the page's CSP and can 404 the wasm.
async function front(t, upstream, { csp, wasm = true }) {
  const target = new URL(upstream);
  const server = createServer((req, res) => {
    if (!wasm && req.url.split("?")[0].endsWith(".wasm")) return res.writeHead(404).end("not here");
    const out = httpRequest(
      { host: target.hostname, port: target.port, path: req.url, method: req.method, headers: req.headers },
      (answer) => {
        const headers = { ...answer.headers };
        if (csp) headers["content-security-policy"] = csp;
        res.writeHead(answer.statusCode, headers);
        answer.pipe(res);
      },
    );
    req.pipe(out);
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  t.after(() => server.close());
  return `http://127.0.0.1:${server.address().port}/`;
}

// Opens the page, recording console warnings, page errors and the form's
// events; the page must render (its heading) whatever the wasm does.
async function open(t, url) {
  const page = await browser.newPage();
  t.after(() => page.close());
  const warnings = [];
  const errors = [];
  page.on("console", (m) => m.type() === "warning" && warnings.push(m.text()));
  page.on("pageerror", (e) => errors.push(e.message));
  await page.addInitScript(() => {
    window.events = [];
    for (const type of ["oncekey:pending", "oncekey:success", "oncekey:error"]) {
      document.addEventListener(type, (e) =>
        window.events.push({ type, key: e.detail.key, error: e.detail.error?.name, status: e.detail.response?.status }),
      );
    }
  });
  await page.goto(url);
  assert.equal(await page.textContent("h1"), "Checkout", "the page rendered");
  return { page, warnings, errors };
}

// A double click, then the form settles (its buttons enabled again).
async function doubleClick(page) {
  await page.dblclick("#buy");
  await page.waitForFunction(() => window.events.some((e) => e.type === "oncekey:success"));
  await page.waitForFunction(() => !document.querySelector("#buy").disabled);
}

async function bundledAppOrdersOnce(t, name, options) {
  const site = await serveStatic(built(name), options);
  t.after(site.close);
  const { page, errors } = await open(t, site.url);
  await page.waitForFunction(() => document.getElementById("key").textContent !== "");
  assert.match(await page.textContent("#key"), V7, "newKey() after ready()");
  await doubleClick(page);
  assert.equal(site.orders.length, 1, "a double click is one order");
  assert.match(site.orders[0].key, V7);
  assert.deepEqual(errors, []);
}

// Where the wasm cannot run: one order with no key, reported.
async function bundledAppDegrades(t, name, options, cause) {
  const site = await serveStatic(built(name), options);
  t.after(site.close);
  const { page, warnings, errors } = await open(t, site.url);
  await page.waitForFunction(() => document.getElementById("key").textContent !== "");
  assert.equal(await page.textContent("#key"), "LoadError", "ready() rejects with LoadError");
  await doubleClick(page);
  assert.equal(site.orders.length, 1, "a double click is still one order");
  assert.equal(site.orders[0].key, undefined, "sent without a key");
  assert.equal(site.orders[0].body, "item=tea");
  const events = await page.evaluate(() => window.events);
  assert.deepEqual(
    events.map((e) => [e.type, e.error, e.key]),
    [
      ["oncekey:error", "LoadError", null],
      ["oncekey:success", undefined, null],
    ],
  );
  assert.ok(
    warnings.some((w) => w.includes(cause)),
    `a console warning naming ${cause}: ${JSON.stringify(warnings)}`,
  );
  // The guard is protectForm's, not only the disabled button: two submits
  // in one task, past any button, are one order too.
  await page.evaluate(() => {
    const form = document.getElementById("order");
    form.requestSubmit();
    form.requestSubmit();
  });
  await page.waitForFunction(() => window.events.filter((e) => e.type === "oncekey:success").length === 2);
  assert.equal(site.orders.length, 2, "two submits while one is out: one more order");
  // idempotentFetch cannot send safely without a key: it rejects, nothing sent.
  const fetched = await page.evaluate(() =>
    window.oncekey.idempotentFetch("/api/orders", { method: "POST", body: "x" }).then(
      () => "sent",
      (e) => `${e.name} ${e instanceof window.oncekey.OnceKeyError}`,
    ),
  );
  assert.equal(fetched, "LoadError true");
  assert.equal(site.orders.length, 2);
  assert.deepEqual(errors, [], "no uncaught error");
}

test("Vite 5 (default target): the built app renders, a double click is one order with one key", (t) =>
  bundledAppOrdersOnce(t, "vite5"));

test("Vite 5 under script-src 'self': renders, one keyless order, LoadError and a warning naming 'wasm-unsafe-eval'", (t) =>
  bundledAppDegrades(t, "vite5", { csp: STRICT_CSP }, "'wasm-unsafe-eval'"));

test("Vite 5 with the wasm answering 404: renders, one keyless order, LoadError and a warning naming the 404", (t) =>
  bundledAppDegrades(t, "vite5", { wasm: false }, "answered 404"));

test("Vite 5 with 'wasm-unsafe-eval' in its CSP: protected as usual", (t) =>
  bundledAppOrdersOnce(t, "vite5", { csp: "script-src 'self' 'wasm-unsafe-eval'" }));

test("Vite 8: the built app renders, a double click is one order with one key", (t) =>
  bundledAppOrdersOnce(t, "vite8"));

test("webpack 5: the built app renders (the wasm emitted as an asset), one order with one key", (t) =>
  bundledAppOrdersOnce(t, "webpack"));

test("Rollup, the wasm copied beside the bundle: one order with one key", (t) =>
  bundledAppOrdersOnce(t, "rollup", { copyWasm: true }));

test("esbuild, the wasm copied beside the bundle: one order with one key", (t) =>
  bundledAppOrdersOnce(t, "esbuild", { copyWasm: true }));

// The Next.js app: "/" prerendered with a client component that protects
// its form; /api/orders (a route handler) counts orders by item; /api/key
// (a route handler) makes a key with the package's Node build.
async function nextOrdersOnce(t, name) {
  const dir = built(name);
  assert.ok(existsSync(join(dir, ".next/server/app/index.html")), "/ was prerendered");
  const next = await startNext(t, dir);
  const { key } = await (await fetch(`${next.url}api/key`)).json();
  assert.match(key, V7, "a route handler's newKey()");
  const { page, errors } = await open(t, next.url);
  await page.waitForSelector("form[data-hydrated=true]");
  const item = `tea-${name}-${Date.now()}`;
  await page.fill("input[name=item]", item);
  await doubleClick(page);
  const { orders } = await (await fetch(`${next.url}api/orders`)).json();
  const mine = orders.filter((o) => o.body === `item=${item}`);
  assert.equal(mine.length, 1, "a double click is one order");
  assert.match(mine[0].key, V7);
  await page.click("#fetch");
  await page.waitForFunction(() => document.getElementById("status").textContent.startsWith("fetched"));
  assert.equal(await page.textContent("#status"), "fetched 201");
  assert.deepEqual(errors, []);
}

test("Next.js 16, Turbopack: builds with no config, renders, one order per double click, a route handler makes keys", (t) =>
  nextOrdersOnce(t, "next"));

test("Next.js 16, webpack: builds with no config, renders, one order per double click, a route handler makes keys", (t) =>
  nextOrdersOnce(t, "next-webpack"));

// App Router pages carry inline scripts, so a Next.js CSP without a nonce
// needs 'unsafe-inline'; WebAssembly still needs 'wasm-unsafe-eval'.
test("Next.js under a CSP without 'wasm-unsafe-eval', and with the wasm 404ing: renders, one keyless order, reported", async (t) => {
  const next = await startNext(t, built("next"));
  for (const [options, cause] of [
    [{ csp: "script-src 'self' 'unsafe-inline'" }, "'wasm-unsafe-eval'"],
    [{ wasm: false }, "answered 404"],
  ]) {
    const url = await front(t, next.url, options);
    const { page, warnings, errors } = await open(t, url);
    await page.waitForSelector("form[data-hydrated=true]");
    const item = `tea-degraded-${Date.now()}`;
    await page.fill("input[name=item]", item);
    await doubleClick(page);
    const { orders } = await (await fetch(`${next.url}api/orders`)).json();
    const mine = orders.filter((o) => o.body === `item=${item}`);
    assert.equal(mine.length, 1, "a double click is one order");
    assert.equal(mine[0].key, null, "sent without a key");
    const events = await page.evaluate(() => window.events);
    assert.deepEqual(
      events.map((e) => [e.type, e.error]),
      [
        ["oncekey:error", "LoadError"],
        ["oncekey:success", undefined],
      ],
    );
    assert.ok(
      warnings.some((w) => w.includes(cause)),
      `a warning naming ${cause}: ${JSON.stringify(warnings)}`,
    );
    assert.deepEqual(errors, []);
  }
});
