// The demo's no-script order form (/classic) in headless Chromium with
// JavaScript disabled (issue 20, SPEC §8), on both hosts in workerd: the
// page is plain server-rendered HTML, protected by IDEMPOTENCY_FORMS=inject
// alone. A double click, back-and-resubmit and a reload after a lost answer
// each make one order and show its confirmation; loading the form again
// makes a new one; an edited resubmit after a validation error is accepted.
// Between the browser and the worker sits a hop that can lose the answer to
// the next form post once the worker has given it.
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { after, before, test } from "node:test";
import { start } from "../edge/harness.mjs";
import { launchChromium } from "../support/chromium.mjs";

let browser;
/** Each host's demo, the hop in front of it, and a browser context with JavaScript off. */
const hosts = {};

/** Starts the demo on `host` behind a hop that records form posts and can lose or hold back an answer. */
async function setUp(host) {
  const at = { host, posts: [], loseNext: false, holdNext: false, lost: 0 };
  at.demo = await start({ worker: "demo", host });
  at.hop = createServer(async (req, res) => {
    const chunks = [];
    for await (const chunk of req) chunks.push(chunk);
    const body = Buffer.concat(chunks);
    if (req.method === "POST") at.posts.push(body.toString());
    const hopByHop = ["host", "connection", "content-length", "content-encoding", "keep-alive", "transfer-encoding"];
    const headers = Object.fromEntries(Object.entries(req.headers).filter(([name]) => !hopByHop.includes(name)));
    const upstream = await fetch(new URL(req.url, at.demo.url), {
      method: req.method,
      headers,
      body: req.method === "POST" ? body : undefined,
      redirect: "manual",
    });
    const answer = Buffer.from(await upstream.arrayBuffer());
    if (req.method === "POST" && at.holdNext) {
      // A slow answer: the user clicks again meanwhile.
      at.holdNext = false;
      await new Promise((resolve) => setTimeout(resolve, 1500));
    }
    if (req.method === "POST" && at.loseNext) {
      at.loseNext = false;
      at.lost++;
      return req.socket.destroy();
    }
    res.writeHead(
      upstream.status,
      Object.fromEntries([...upstream.headers].filter(([name]) => !hopByHop.includes(name))),
    );
    res.end(answer);
  });
  await new Promise((resolve) => at.hop.listen(0, "127.0.0.1", resolve));
  at.base = `http://127.0.0.1:${at.hop.address().port}`;
  at.context = await browser.newContext({ javaScriptEnabled: false });
  hosts[host] = at;
}

before(async () => {
  browser = await launchChromium();
  for (const host of ["rust", "js"]) await setUp(host);
});
after(async () => {
  for (const at of Object.values(hosts)) {
    await at.context?.close();
    await at.demo?.dispose();
    at.hop?.close();
  }
  await browser?.close();
});

const unique = (name) => `${name}-${crypto.randomUUID().slice(0, 8)}`;
const count = async (at, item) =>
  (await (await at.demo.fetch(`/api/orders?item=${encodeURIComponent(item)}`)).json()).count;
const postsOf = (at, item) => at.posts.filter((body) => body.includes(`item=${item}`)).length;

/** Opens the form (unless open) and fills it in; the key the edge gave it. */
async function fill(at, tab, item, quantity = "2") {
  if (!tab.url().endsWith("/classic")) await tab.goto(`${at.base}/classic`);
  await tab.fill('input[name="item"]', item);
  await tab.fill('input[name="quantity"]', quantity);
  await tab.fill('input[name="amountCents"]', "450");
  return tab.getAttribute('input[name="idempotency_key"]', "value");
}

/** Waits for the confirmation of `item`'s order; the order's id. */
async function confirmed(tab, item) {
  // A navigation the next click replaced ends as aborted: wait on for the one that lands.
  for (let tries = 0; ; tries++) {
    try {
      await tab.waitForURL(/\/classic\/orders\//);
      break;
    } catch (error) {
      if (tries >= 2 || !/ERR_ABORTED/.test(String(error))) throw error;
    }
  }
  const text = await tab.textContent("#order");
  assert.ok(text.includes(item), text);
  return text.match(/Order (\S+):/)[1];
}

/** Runs `scenario` on each host, in its own tab. */
async function onEachHost(scenario) {
  for (const at of Object.values(hosts)) {
    const tab = await at.context.newPage();
    try {
      await scenario(at, tab);
    } catch (error) {
      error.message = `${at.host} host: ${error.message}`;
      throw error;
    } finally {
      await tab.close();
    }
  }
}

test("the page has no script and its form a UUIDv7 key", () =>
  onEachHost(async (at, tab) => {
    await tab.goto(`${at.base}/classic`);
    assert.equal(await tab.locator("script").count(), 0);
    const key = await tab.getAttribute('input[name="idempotency_key"]', "value");
    assert.match(key, /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    // The form has an id: its key waits for the page's end (a control
    // anywhere may name the form) and names it; the browser sends it with
    // the form, as the one-order tests below show.
    assert.equal(await tab.getAttribute('input[name="idempotency_key"]', "form"), "order");
  }));

test("a second click while the first is pending makes one order and shows its confirmation", () =>
  onEachHost(async (at, tab) => {
    const item = unique("dbl");
    await fill(at, tab, item);
    at.holdNext = true;
    // The mouse, as a user's: Playwright's click would wait for the first navigation.
    const box = await tab.locator('button[type="submit"]').boundingBox();
    const [x, y] = [box.x + box.width / 2, box.y + box.height / 2];
    await tab.mouse.click(x, y);
    while (postsOf(at, item) < 1) await new Promise((resolve) => setTimeout(resolve, 20));
    await tab.mouse.click(x, y);
    await confirmed(tab, item);
    assert.equal(postsOf(at, item), 2, "the browser posted twice");
    assert.equal(await count(at, item), 1);
  }));

test("back and resubmit: the same page's key, the same order", () =>
  onEachHost(async (at, tab) => {
    const item = unique("back");
    const key = await fill(at, tab, item);
    await tab.click('button[type="submit"]');
    const order = await confirmed(tab, item);
    await tab.goBack();
    assert.equal(await tab.getAttribute('input[name="idempotency_key"]', "value"), key, "the page as it was served");
    await fill(at, tab, item);
    await tab.click('button[type="submit"]');
    assert.equal(await confirmed(tab, item), order, "its confirmation again");
    assert.equal(postsOf(at, item), 2);
    assert.equal(await count(at, item), 1);
  }));

test("a reload after the answer was lost resends the form: one order, its confirmation", () =>
  onEachHost(async (at, tab) => {
    const item = unique("reload");
    await fill(at, tab, item);
    at.loseNext = true;
    const before = at.lost;
    await tab.click('button[type="submit"]').catch(() => {});
    await tab.waitForLoadState();
    assert.equal(at.lost, before + 1, "the first answer was lost");
    await tab.reload().catch(() => {});
    await confirmed(tab, item);
    assert.equal(postsOf(at, item), 2, "the reload sent the form again");
    assert.equal(await count(at, item), 1);
  }));

test("the form loaded again is a new submission: a second order", () =>
  onEachHost(async (at, tab) => {
    const item = unique("again");
    const first = await fill(at, tab, item);
    await tab.click('button[type="submit"]');
    await confirmed(tab, item);
    await tab.goto(`${at.base}/classic`);
    const second = await fill(at, tab, item);
    assert.notEqual(second, first);
    await tab.click('button[type="submit"]');
    await confirmed(tab, item);
    assert.equal(await count(at, item), 2);
  }));

test("after a validation error, the re-rendered form has a fresh key and the edited resubmit is accepted", () =>
  onEachHost(async (at, tab) => {
    const item = unique("edit");
    const first = await fill(at, tab, item, "0");
    await tab.click('button[type="submit"]');
    await tab.waitForSelector('[role="alert"]');
    const fresh = await tab.getAttribute('input[name="idempotency_key"]', "value");
    assert.ok(fresh && fresh !== first, `${fresh} after ${first}`);
    await tab.fill('input[name="quantity"]', "1");
    await tab.click('button[type="submit"]');
    await confirmed(tab, item);
    assert.equal(await count(at, item), 1);
  }));

test("a forged form on another site, clicked in the victim's browser: unkeyed, so the attacker cannot read its answer", () =>
  onEachHost(async (at, tab) => {
    // The attacker's page, on another site (localhost is not 127.0.0.1's
    // site), posts to the shop with a key of the attacker's choosing.
    const item = unique("forged");
    const key = crypto.randomUUID();
    const attacker = createServer((req, res) => {
      res.writeHead(200, { "content-type": "text/html" });
      res.end(`<!doctype html><form method="post" action="${at.base}/classic/orders">
        <input name="item" value="${item}"><input name="quantity" value="1"><input name="amountCents" value="450">
        <input type="hidden" name="idempotency_key" value="${key}"><button type="submit">Win a prize</button></form>`);
    });
    await new Promise((resolve) => attacker.listen(0, "127.0.0.1", resolve));
    try {
      await tab.goto(`http://localhost:${attacker.address().port}/`);
      await tab.click('button[type="submit"]');
      await tab.waitForURL(/\/classic\/orders\//);
      assert.equal(await count(at, item), 1, "the shop took the order (its own CSRF defence is its own)");
      // The attacker now posts the same key and body with no cookies: never
      // the victim's answer as a replay.
      const replay = await fetch(`${at.base}/classic/orders`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: `item=${item}&quantity=1&amountCents=450&idempotency_key=${key}`,
        redirect: "manual",
      });
      assert.equal(replay.headers.get("idempotent-replayed"), null, "not a replay of the victim's answer");
      assert.equal(await count(at, item), 2, "the attacker's own post ran as its own");
    } finally {
      attacker.close();
    }
  }));
