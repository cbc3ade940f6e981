// The demo page in headless Chromium against the worker (wrangler dev on a
// fresh state directory, or BASE_URL if one is already running). The apps
// built from the packed package run in tests/browser/fixtures.test.js.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, mkdirSync, existsSync } from "node:fs";
import { launchChromium } from "../support/chromium.mjs";
import { freePort } from "../support/free-port.mjs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";

const ROOT = new URL("../../", import.meta.url).pathname;
const ARTIFACTS = join(ROOT, "test-results/browser");
const V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

let base = process.env.BASE_URL;
let worker;
let browser;

function spawnWorker(port) {
  const state = mkdtempSync(join(tmpdir(), "oncekey-e2e-"));
  const child = spawn(
    join(ROOT, "node_modules/.bin/wrangler"),
    [
      "dev",
      "--config",
      "workers/demo/wrangler.toml",
      "--ip",
      "127.0.0.1",
      "--port",
      String(port),
      "--persist-to",
      state,
      "--show-interactive-dev-session=false",
      // A short lease, so an attempt whose outcome the edge lost is reclaimed
      // within the test's patience (see the reload test) instead of after 120 s.
      "--var",
      "IDEMPOTENCY_LEASE_SECONDS:8",
      "--var",
      "IDEMPOTENCY_ORIGIN_TIMEOUT_SECONDS:6",
    ],
    { cwd: ROOT, stdio: ["ignore", "pipe", "pipe"], detached: true },
  );
  let log = "";
  const ready = new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`wrangler dev did not start:\n${log}`)), 60_000);
    const seen = (chunk) => {
      log += chunk;
      if (/Ready on/.test(log)) {
        clearTimeout(timer);
        resolve();
      }
    };
    child.stdout.on("data", seen);
    child.stderr.on("data", seen);
    child.on("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`wrangler dev exited ${code}:\n${log}`));
    });
  });
  return { child, ready };
}

async function startWorker() {
  // Another process can take the free port before wrangler binds it: try
  // again on a new one, a few times, for that reason only.
  for (let tries = 1; ; tries++) {
    const port = await freePort();
    const { child, ready } = spawnWorker(port);
    try {
      await ready;
      worker = child;
      return `http://127.0.0.1:${port}`;
    } catch (error) {
      if (tries >= 3 || !/Address already in use/.test(error.message)) throw error;
    }
  }
}

before(async () => {
  mkdirSync(ARTIFACTS, { recursive: true });
  base ??= await startWorker();
  browser = await chromium.launchPersistentContext(mkdtempSync(join(tmpdir(), "oncekey-chromium-")), {
    executablePath: "/usr/bin/chromium",
    headless: true,
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-background-networking",
      "--disable-component-update",
      "--no-first-run",
      "--disable-sync",
      "--disable-quic",
    ],
    viewport: { width: 1320, height: 900 },
  });
});

after(async () => {
  await browser?.close();
  if (worker) process.kill(-worker.pid, "SIGTERM");
});

const uniqueItem = (name) => `e2e-${name}-${Date.now()}-${Math.random().toString(36).slice(2, 8)}`;

async function ordersOf(item) {
  const res = await fetch(`${base}/api/orders?item=${encodeURIComponent(item)}`);
  return (await res.json()).count;
}

// A fresh page on the demo, with the keys of every POST it sends recorded.
async function openDemo(item, fault = "none") {
  const page = await browser.newPage();
  const keys = [];
  page.on("request", (r) => {
    if (r.method() === "POST" && new URL(r.url()).pathname === "/api/orders") keys.push(r.headers()["idempotency-key"]);
  });
  page.on("pageerror", (e) => assert.fail(`page error: ${e.message}`));
  await page.goto(`${base}/?item=${encodeURIComponent(item)}`);
  await page.check(`input[name=fault][value=${fault}]`);
  return { page, keys };
}

async function done(page) {
  try {
    await page.waitForSelector("#status.ok", { timeout: 30_000 });
  } catch (e) {
    const state = await page.evaluate(() =>
      ["status", "answer", "key", "attempts"].map((id) => document.getElementById(id).textContent).join(" | "),
    );
    throw new Error(`no success: ${state}`, { cause: e });
  }
}

test("three fast clicks on Buy: one submission, one order", async () => {
  const item = uniqueItem("clicks");
  const { page, keys } = await openDemo(item, "slow");
  const box = await (await page.$("#buy")).boundingBox();
  const [x, y] = [box.x + box.width / 2, box.y + box.height / 2];
  await page.mouse.click(x, y);
  await page.mouse.click(x, y);
  await page.mouse.click(x, y);
  // Submits that get past the disabled button (Enter, script) send nothing either.
  await page.evaluate(() => {
    const f = document.getElementById("checkout");
    f.requestSubmit();
    f.requestSubmit();
  });
  assert.equal(await page.getAttribute("#checkout", "aria-busy"), "true");
  assert.equal(await page.isDisabled("#buy"), true);
  await done(page);
  assert.equal(keys.length, 1, "one request sent");
  assert.match(keys[0], V7);
  assert.equal(await ordersOf(item), 1);
  await page.waitForFunction(() => document.getElementById("orders").textContent === "1");
  assert.equal(await page.isDisabled("#buy"), false);
  await page.close();
});

test("first answer lost after the server did the work: same-key retry, replay, one order", async () => {
  const item = uniqueItem("lost");
  const { page, keys } = await openDemo(item, "lost");
  await page.click("#buy");
  await done(page);
  assert.equal(keys.length, 2, "the lost attempt and one retry");
  assert.equal(keys[1], keys[0], "the retry carries the same key");
  assert.match(await page.textContent("#answer"), /replayed/);
  assert.equal(await ordersOf(item), 1);
  assert.equal(await page.textContent("#key"), keys[0]);
  await page.close();
});

test("503s from a busy provider: retried with the same key after Retry-After, one order", async () => {
  const item = uniqueItem("busy");
  const { page, keys } = await openDemo(item, "unavailable");
  await page.click("#buy");
  await done(page);
  assert.equal(keys.length, 3);
  assert.equal(new Set(keys).size, 1);
  assert.equal(await ordersOf(item), 1);
  await page.close();
});

test("reload while a submission is pending, then submit again: same key, one order", async (t) => {
  const item = uniqueItem("reload");
  const { page, keys } = await openDemo(item, "slow");
  await page.click("#buy");
  await page.waitForSelector("#checkout[aria-busy=true]");
  const key = await page.textContent("#key");
  assert.match(key, V7);
  await page.waitForTimeout(500); // the server has the request
  await page.reload();
  await page.waitForSelector("#status.wait"); // "your last order was interrupted"
  await page.click("#buy");
  await done(page);
  assert.equal(await page.textContent("#key"), key, "the pending key survived the reload");
  // SPEC §3 wants the first attempt finished under waitUntil despite the
  // reload; when the runtime cancels it instead, the key stays in flight
  // until the lease ends and the retry reclaims it as attempt 2. Either
  // way: one key, one order. Which one happened is reported.
  t.diagnostic(`answer after the reload: ${await page.textContent("#answer")}`);
  assert.ok(keys.length >= 2 && keys.every((k) => k === key), `every request carried ${key}: ${keys}`);
  assert.equal(await ordersOf(item), 1);
  // The submission is over: the next one is new.
  await page.check("input[name=fault][value=none]");
  await page.click("#buy");
  await page.waitForFunction((k) => document.getElementById("key").textContent !== k, key);
  await done(page);
  assert.equal(await ordersOf(item), 2);
  await page.close();
});

test("screenshot of the demo page after an order", async () => {
  const item = uniqueItem("screenshot");
  const { page } = await openDemo(item, "unavailable");
  await page.fill("#customer", "ada@example.com");
  await page.click("#buy");
  await done(page);
  const path = join(ARTIFACTS, "demo.png");
  await page.screenshot({ path, fullPage: true });
  assert.ok(existsSync(path));
  await page.close();
});

/** A phone: 390 px wide, touch, on its own browser (the shared context is a desktop). */
async function onPhone(t) {
  const phone = await launchChromium();
  t.after(() => phone.close());
  const context = await phone.newContext({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true });
  const page = await context.newPage();
  page.on("pageerror", (e) => assert.fail(`page error: ${e.message}`));
  return page;
}

/** What of `page` is wider than its screen, and whether `selector` at its centre is what a tap reaches. */
const layout = (page, selector) =>
  page.evaluate((selector) => {
    const target = document.querySelector(selector);
    target.scrollIntoView({ block: "center" });
    const box = target.getBoundingClientRect();
    const hit = document.elementFromPoint(box.x + box.width / 2, box.y + box.height / 2);
    return {
      width: document.documentElement.scrollWidth,
      screen: window.innerWidth,
      tappable: target === hit || target.contains(hit),
      viewport: document.querySelector('meta[name="viewport"]')?.content ?? null,
    };
  }, selector);

test("the shop on a 390 px phone: no sideways scroll, Buy tapped is one order, the key on one line", async (t) => {
  const page = await onPhone(t);
  const item = uniqueItem("phone");
  await page.goto(`${base}/?item=${encodeURIComponent(item)}`);
  await page.waitForSelector("#checkout[data-protected]", { state: "attached" });
  const seen = await layout(page, "#buy");
  assert.equal(seen.screen, 390);
  assert.ok(seen.width <= seen.screen, `the page is ${seen.width} px wide on a ${seen.screen} px screen`);
  assert.ok(seen.tappable, "Buy is what a tap at its centre reaches");
  await page.tap("#buy");
  await done(page);
  assert.equal(await ordersOf(item), 1);
  // The key is an inline <code>: one box per line it takes.
  const lines = await page.evaluate(() => document.getElementById("key").getClientRects().length);
  assert.equal(lines, 1, `the key takes ${lines} lines`);
  assert.match(await page.textContent("#key"), V7);
  await page.screenshot({ path: join(ARTIFACTS, "demo-phone.png"), fullPage: true });
});

test("/classic on a 390 px phone: a viewport, the shop's look, a tapped order is one order", async (t) => {
  const page = await onPhone(t);
  const item = uniqueItem("phone-classic");
  await page.goto(`${base}/classic`);
  const seen = await layout(page, "form button");
  assert.match(seen.viewport ?? "", /width=device-width/);
  assert.ok(seen.width <= seen.screen, `the page is ${seen.width} px wide on a ${seen.screen} px screen`);
  assert.ok(seen.tappable, "Place order is what a tap at its centre reaches");
  const look = await page.evaluate(() => {
    const button = getComputedStyle(document.querySelector("form button"));
    return { background: button.backgroundColor, height: Number.parseFloat(button.height) };
  });
  assert.equal(look.background, "rgb(107, 63, 36)", "the shop's accent (style.css)");
  assert.ok(look.height >= 44, `a thumb-sized button: ${look.height} px`);
  await page.fill('input[name="item"]', item);
  await page.fill('input[name="quantity"]', "1");
  await page.fill('input[name="amountCents"]', "1800");
  await page.tap("form button");
  await page.waitForURL(/\/classic\/orders\//);
  assert.equal(await ordersOf(item), 1);
  await page.screenshot({ path: join(ARTIFACTS, "classic-phone.png"), fullPage: true });
});
