// protectForm in headless Chromium (real DOM, real fetch, real
// sessionStorage) against a local HTTP server that serves the page, the
// package's browser build and the endpoint the forms post to. Each test
// holds one promise of pkg/src/oncekey.d.ts and docs/browser.md to account.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { readFileSync } from "node:fs";
import { chromium } from "playwright-core";
import { blocksOf, page as docPage } from "../support/docs.mjs";

const DIST = new URL("../../pkg/dist/", import.meta.url);
const V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const IN_FLIGHT = { type: "urn:oncekey:problem:key-in-flight", title: "Key in flight", status: 409, detail: "busy" };
const UNKNOWN = {
  type: "urn:oncekey:problem:outcome-unknown",
  title: "Outcome unknown",
  status: 409,
  detail: "it may have been carried out",
};
const fast = { delay: 1, jitter: false };

// Every event the package dispatches is recorded at the document, so a
// recorded event also shows that it bubbled.
const PAGE = (form) => `<!doctype html>
<meta charset="utf-8"><title>protectForm</title>
<body>${form}
<script type="module">
  import * as oncekey from '/oncekey.js';
  window.oncekey = oncekey;
  window.events = [];
  for (const type of ['oncekey:pending', 'oncekey:retry', 'oncekey:success', 'oncekey:error']) {
    document.addEventListener(type, (e) => {
      const d = e.detail;
      const error = d.error && {
        name: d.error.name, key: d.error.key, attempts: d.error.attempts, status: d.error.response?.status,
        onceKeyError: d.error instanceof oncekey.OnceKeyError,
        ...(d.error.retryAfterMs === undefined ? {} : { retryAfterMs: d.error.retryAfterMs }),
      };
      window.events.push({
        type: type.slice(8), form: e.target.id, key: d.key, resumed: d.resumed, attempt: d.attempt, delay: d.delay,
        status: d.response?.status, replayed: d.replayed, error,
        hadError: 'error' in d && d.error !== undefined,
      });
    });
  }
  window.ready = true;
</script>`;

const ORDER_FORM = `<form id="checkout" action="/api/orders" method="post">
  <input name="item" value="tea"> <input name="quantity" value="1">
  <button id="buy" name="buy" value="now">Buy</button>
</form>`;

let browser;
before(async () => {
  browser = await chromium.launch({
    executablePath: "/usr/bin/chromium",
    headless: true,
    args: [
      "--no-sandbox",
      "--disable-gpu",
      "--disable-background-networking",
      "--disable-component-update",
      "--no-first-run",
      "--disable-sync",
    ],
  });
});
after(() => browser?.close());

const json = (res, status, value, headers = {}) => {
  if (res.destroyed) return;
  res.writeHead(status, { "content-type": "application/json", ...headers });
  res.end(JSON.stringify(value));
};
const drop = (res) => res.socket.destroy();
const created = (res) => json(res, 201, { orderId: "o1" });

function deferred() {
  let resolve;
  const promise = new Promise((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

// Serves PAGE(form) at /, the browser build, and /api/*: the n-th API
// request (from 1) is answered by `respond(n, req, res)`. Every answer
// closes its connection, so a dropped socket is never one Chromium reused
// (it would resend the request on its own).
async function serve(form, respond = (n, req, res) => created(res)) {
  const requests = [];
  const server = createServer((req, res) => {
    res.setHeader("connection", "close");
    const path = new URL(req.url, "http://x").pathname;
    if (path === "/") return res.writeHead(200, { "content-type": "text/html" }).end(PAGE(form));
    if (path === "/oncekey.js" || path === "/oncekey_bg.wasm") {
      const type = path.endsWith(".js") ? "text/javascript" : "application/wasm";
      return res.writeHead(200, { "content-type": type }).end(readFileSync(new URL(path.slice(1), DIST)));
    }
    // Where docs/browser.md's form goes once its order is placed.
    if (path === "/thanks") return res.writeHead(200, { "content-type": "text/html" }).end("<p>Thank you</p>");
    if (!path.startsWith("/api/")) return res.writeHead(404).end();
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      requests.push({
        method: req.method,
        path: req.url,
        key: req.headers["idempotency-key"],
        contentType: req.headers["content-type"],
        body: Buffer.concat(chunks).toString(),
      });
      s.respond(requests.length, req, res);
    });
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  const s = {
    url: `http://127.0.0.1:${server.address().port}/`,
    requests,
    respond,
    close: () =>
      new Promise((r) => {
        server.closeAllConnections();
        server.close(r);
      }),
  };
  return s;
}

// A fresh browser context (its own sessionStorage) on the server's page.
async function open(t, s) {
  const context = await browser.newContext();
  const page = await context.newPage();
  const errors = [];
  page.on("pageerror", (e) => errors.push(e.message));
  t.after(async () => {
    await context.close();
    await s.close();
  });
  await load(page, s);
  return { page, errors };
}

async function load(page, s) {
  await page.goto(s.url);
  await page.waitForFunction(() => window.ready);
}

// protectForm on a form of the page with JSON-able options.
const protect = (page, options = {}, id = "checkout") =>
  page.evaluate(
    ([id, options]) => {
      window.handles ??= {};
      window.handles[id] = oncekey.protectForm(document.getElementById(id), options);
    },
    [id, options],
  );

const events = (page) => page.evaluate(() => window.events);
const types = async (page) => (await events(page)).map((e) => e.type);

// Waits until `n` submissions have ended (success or error).
const settled = (page, n = 1) =>
  page.waitForFunction((n) => window.events.filter((e) => e.type === "success" || e.type === "error").length >= n, n, {
    timeout: 10_000,
  });

const until = async (probe, what, ms = 10_000) => {
  const deadline = Date.now() + ms;
  while (!(await probe())) {
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
};
const pause = (ms) => new Promise((r) => setTimeout(r, ms));

async function busyState(page) {
  return page.evaluate(() => ({
    ariaBusy: document.getElementById("checkout").getAttribute("aria-busy"),
    disabled: Object.fromEntries(
      [...document.querySelectorAll("button, input[type=submit], input[type=image]")].map((el) => [el.id, el.disabled]),
    ),
  }));
}

test("double click, repeated requestSubmit and Enter while pending: one request, one key, one pending event", async (t) => {
  const gate = deferred();
  const s = await serve(ORDER_FORM, async (n, req, res) => {
    await gate.promise;
    created(res);
  });
  const { page, errors } = await open(t, s);
  await protect(page);
  const box = await (await page.$("#buy")).boundingBox();
  await page.mouse.dblclick(box.x + box.width / 2, box.y + box.height / 2);
  await page.mouse.click(box.x + box.width / 2, box.y + box.height / 2);
  // Past the disabled button: script submits and Enter in a field.
  await page.evaluate(() => {
    const f = document.getElementById("checkout");
    f.requestSubmit();
    f.requestSubmit();
  });
  await page.press("input[name=item]", "Enter");
  await until(() => s.requests.length >= 1, "the first request");
  await pause(300);
  assert.equal(s.requests.length, 1, "one request while the submission is pending");
  assert.deepEqual(await types(page), ["pending"]);

  gate.resolve();
  await settled(page);
  await pause(100);
  assert.equal(s.requests.length, 1, "still one request");
  const [pending, success] = await events(page);
  assert.match(s.requests[0].key, V7);
  assert.equal(pending.key, s.requests[0].key);
  assert.deepEqual(
    { type: success.type, key: success.key, status: success.status, replayed: success.replayed },
    { type: "success", key: s.requests[0].key, status: 201, replayed: false },
  );
  assert.deepEqual(errors, []);
});

test("submit buttons disabled and aria-busy while in flight; restored after, others untouched", async (t) => {
  const form = `<form id="checkout" action="/api/orders" method="post">
    <input name="item" value="tea">
    <button id="plain-button">Buy</button>
    <button id="submit-button" type="submit">Buy now</button>
    <input id="submit-input" type="submit" value="Order">
    <input id="image-input" type="image" alt="Order" src="data:image/gif;base64,R0lGODlhAQABAAAAACw=">
    <button id="already-disabled" type="submit" disabled>Gift</button>
    <button id="type-button" type="button">Help</button>
    <button id="type-reset" type="reset">Clear</button>
  </form>`;
  let gate = deferred();
  const s = await serve(form, async (n, req, res) => {
    await gate.promise;
    n === 1 ? created(res) : drop(res);
  });
  const { page, errors } = await open(t, s);
  await protect(page, { retry: { ...fast, limit: 0 } });
  const idle = {
    ariaBusy: null,
    disabled: {
      "plain-button": false,
      "submit-button": false,
      "submit-input": false,
      "image-input": false,
      "already-disabled": true,
      "type-button": false,
      "type-reset": false,
    },
  };
  const busy = {
    ariaBusy: "true",
    disabled: {
      ...idle.disabled,
      "plain-button": true,
      "submit-button": true,
      "submit-input": true,
      "image-input": true,
    },
  };
  assert.deepEqual(await busyState(page), idle);

  // Ends with a success, then with a network error: restored either way.
  for (const [n, ending] of [
    [1, "success"],
    [2, "error"],
  ]) {
    await page.click("#submit-button");
    await until(() => s.requests.length >= n, `request ${n}`);
    assert.deepEqual(await busyState(page), busy, `busy while request ${n} is in flight`);
    gate.resolve();
    await settled(page, n);
    assert.equal((await events(page)).at(-1).type, ending);
    assert.deepEqual(await busyState(page), idle, `restored after the ${ending}`);
    gate = deferred();
  }
  assert.deepEqual(errors, []);
});

test("a network failure is retried with the same key, and so is a resubmit after every attempt failed", async (t) => {
  const s = await serve(ORDER_FORM, (n, req, res) => (n <= 2 ? drop(res) : created(res)));
  const { page, errors } = await open(t, s);
  await protect(page, { retry: { ...fast, limit: 1 } });

  await page.click("#buy");
  await settled(page);
  const [pending, retry, failed] = await events(page);
  const key = pending.key;
  assert.match(key, V7);
  assert.deepEqual([pending.type, pending.resumed], ["pending", false]);
  assert.deepEqual(
    [retry.type, retry.key, retry.attempt, retry.status, retry.hadError],
    ["retry", key, 1, undefined, true],
    "oncekey:retry: the failed attempt, its error, no response",
  );
  assert.equal(failed.type, "error");
  assert.deepEqual(failed.error, { name: "NetworkError", key, attempts: 2, status: undefined, onceKeyError: true });
  assert.deepEqual(
    s.requests.map((r) => r.key),
    [key, key],
    "the automatic retry carried the key",
  );

  // The user tries again: still the same submission, the same key.
  await page.click("#buy");
  await settled(page, 2);
  const resumed = (await events(page)).slice(3);
  assert.deepEqual(
    resumed.map((e) => [e.type, e.key]),
    [
      ["pending", key],
      ["success", key],
    ],
  );
  assert.equal(resumed[0].resumed, true);
  assert.deepEqual(
    s.requests.map((r) => r.key),
    [key, key, key],
  );
  assert.deepEqual(errors, []);
});

test("storage: null keeps the pending key in memory: a resubmit after a network failure reuses it", async (t) => {
  const s = await serve(ORDER_FORM, (n, req, res) => (n === 1 ? drop(res) : created(res)));
  const { page, errors } = await open(t, s);
  await protect(page, { retry: { ...fast, limit: 0 }, storage: null });
  await page.click("#buy");
  await settled(page);
  await page.click("#buy");
  await settled(page, 2);
  assert.deepEqual(await types(page), ["pending", "error", "pending", "success"]);
  assert.equal(s.requests[1].key, s.requests[0].key, "the same key, from memory");
  assert.equal(await page.evaluate(() => sessionStorage.length), 0, "nothing written to sessionStorage");
  // After the final answer the memory is cleared too: a new submission.
  await page.click("#buy");
  await settled(page, 3);
  assert.notEqual(s.requests[2].key, s.requests[0].key);
  assert.deepEqual(errors, []);
});

test("a storage that throws does not stop the submission, and the key is still kept for a resubmit", async (t) => {
  const s = await serve(ORDER_FORM, (n, req, res) => (n === 1 ? drop(res) : created(res)));
  const { page, errors } = await open(t, s);
  await page.evaluate(() => {
    const broken = () => {
      throw new DOMException("quota", "QuotaExceededError");
    };
    oncekey.protectForm(document.getElementById("checkout"), {
      retry: { delay: 1, jitter: false, limit: 0 },
      storage: { getItem: broken, setItem: broken, removeItem: broken },
    });
  });
  await page.click("#buy");
  await settled(page);
  await page.click("#buy");
  await settled(page, 2);
  assert.deepEqual(await types(page), ["pending", "error", "pending", "success"]);
  assert.equal(s.requests.length, 2);
  assert.equal(s.requests[1].key, s.requests[0].key);
  assert.deepEqual(errors, []);
});

test("after a 2xx, and after any other final answer, the next submit is a new submission with a new key", async (t) => {
  const statuses = [201, 422, 503, 503, 201];
  const s = await serve(ORDER_FORM, (n, req, res) => json(res, statuses[n - 1], {}));
  const { page, errors } = await open(t, s);
  await protect(page, { retry: { ...fast, limit: 1 } });

  await page.click("#buy");
  await settled(page, 1);
  await page.click("#buy");
  await settled(page, 2);
  const [k1, k2] = s.requests.map((r) => r.key);
  assert.match(k2, V7);
  assert.notEqual(k2, k1, "a new key after the 201");
  assert.ok(k2 > k1, "keys rise");
  const rejected = (await events(page)).at(-1);
  assert.deepEqual(
    [rejected.type, rejected.status, rejected.error],
    ["error", 422, { name: "HTTPError", key: k2, attempts: undefined, status: 422, onceKeyError: true }],
  );

  // A 503 the retries could not get past is an answer, but not a final
  // one: the key stays, and the next submit is the same request.
  await page.click("#buy");
  await settled(page, 3);
  const k3 = s.requests[2].key;
  assert.notEqual(k3, k2, "a new key after the 422");
  assert.equal(s.requests[3].key, k3, "the 503 was retried with the same key");
  assert.deepEqual((await events(page)).at(-1).error.status, 503);
  await page.click("#buy");
  await settled(page, 4);
  assert.equal(s.requests[4].key, k3, "after a retryable answer the next submit keeps the key");
  assert.equal((await events(page)).at(-2).resumed, true);
  assert.deepEqual(errors, []);
});

test("an unknown outcome: oncekey:error with OutcomeUnknownError (key, Retry-After, the 409) at once; the key is kept for the resubmit", async (t) => {
  const answers = [[409, { "content-type": "application/problem+json", "retry-after": "90" }, UNKNOWN], [201]];
  const s = await serve(ORDER_FORM, (n, req, res) => {
    const [status, headers, body] = answers[n - 1];
    json(res, status, body ?? {}, headers);
  });
  const { page } = await open(t, s);
  await protect(page, { retry: fast });
  await page.click("#buy");
  await settled(page, 1);
  const ended = (await events(page)).at(-1);
  assert.deepEqual(ended.error, {
    name: "OutcomeUnknownError",
    key: ended.key,
    attempts: undefined,
    status: 409,
    onceKeyError: true,
    retryAfterMs: 90_000,
  });
  assert.deepEqual([ended.type, ended.status, s.requests.length], ["error", 409, 1], "no poll of a two-minute lease");
  await page.click("#buy");
  await settled(page, 2);
  const again = (await events(page)).filter((e) => e.type === "pending").at(-1);
  assert.deepEqual([again.key, again.resumed], [ended.key, true], "the resubmit is the same request");
});

test("what keeps the key: a retryable status when the retries ran out (a 500 until it comes back replayed), key-in-flight past maxInFlightWait", async (t) => {
  const replayed = { "idempotent-replayed": "true" };
  const busy = { "content-type": "application/problem+json", "retry-after": "1" };
  const answers = [[500], [500], [500, replayed], [409, busy, IN_FLIGHT], [201], [503], [201]];
  const s = await serve(ORDER_FORM, (n, req, res) => {
    const [status, headers, body] = answers[n - 1];
    json(res, status, body ?? {}, headers);
  });
  const { page, errors } = await open(t, s);
  await protect(page, { retry: { ...fast, limit: 1, maxInFlightWait: 0 } });
  const submit = async (n) => {
    await page.click("#buy");
    await settled(page, n);
    const all = await events(page);
    const ended = all.at(-1);
    const { resumed } = all.findLast((e) => e.type === "pending");
    return { key: ended.key, resumed, type: ended.type, status: ended.status, replayed: ended.replayed };
  };

  // A 500 on both attempts: not final, the key stays for the next submit,
  // which gets the 500 the edge stored, replayed: that one is final.
  const first = await submit(1);
  assert.deepEqual(first, { key: first.key, resumed: false, type: "error", status: 500, replayed: false });
  assert.deepEqual(
    s.requests.map((r) => r.key),
    [first.key, first.key],
  );
  assert.deepEqual(await submit(2), { key: first.key, resumed: true, type: "error", status: 500, replayed: true });

  // key-in-flight and no time left to poll: not final either.
  const busyAnswer = await submit(3);
  assert.notEqual(busyAnswer.key, first.key, "a new key after the replayed 500");
  assert.deepEqual(busyAnswer, { key: busyAnswer.key, resumed: false, type: "error", status: 409, replayed: false });
  assert.deepEqual(await submit(4), {
    key: busyAnswer.key,
    resumed: true,
    type: "success",
    status: 201,
    replayed: false,
  });

  // Final is relative to retry.statusCodes: a 503 it does not list is final.
  await page.evaluate(() => {
    window.handles.checkout.detach();
    window.handles.checkout = oncekey.protectForm(document.getElementById("checkout"), { retry: { statusCodes: [] } });
  });
  const unlisted = await submit(5);
  assert.deepEqual([unlisted.type, unlisted.status, unlisted.resumed], ["error", 503, false]);
  const next = await submit(6);
  assert.deepEqual([next.type, next.resumed], ["success", false]);
  assert.notEqual(next.key, unlisted.key, "a new key after the unlisted 503");
  assert.equal(s.requests.length, 7);
  assert.deepEqual(errors, []);
});

test("the pending key survives a reload: the same data resends it (resumed), other data gets a new key", async (t) => {
  let gate = deferred();
  const s = await serve(ORDER_FORM, async (n, req, res) => {
    if (n === 1 || n === 3) return; // never answered: the reload cuts it off
    await gate.promise;
    created(res);
  });
  const { page, errors } = await open(t, s);
  await protect(page);
  await page.click("#buy");
  await until(() => s.requests.length === 1, "the first request");
  const key = (await events(page))[0].key;

  await load(page, s);
  await protect(page);
  await page.fill("input[name=item]", "tea");
  await page.click("#buy");
  await until(() => s.requests.length === 2, "the resend");
  gate.resolve();
  await settled(page);
  assert.deepEqual(
    (await events(page)).map((e) => [e.type, e.key, e.resumed]),
    [
      ["pending", key, true],
      ["success", key, undefined],
    ],
  );
  assert.equal(s.requests[1].key, key, "the resend after the reload carried the pending key");
  assert.equal(s.requests[1].body, s.requests[0].body);

  // Settled: a reload and the same data again is a new submission.
  gate = deferred();
  await page.click("#buy");
  await until(() => s.requests.length === 3, "a new submission");
  const next = (await events(page)).at(-1);
  assert.notEqual(next.key, key);
  assert.equal(next.resumed, false);

  // Interrupted with other data pending: a reload, then different data,
  // is a different request and must not reuse that key.
  await load(page, s);
  await protect(page);
  await page.fill("input[name=item]", "coffee");
  await page.click("#buy");
  await until(() => s.requests.length === 4, "the different submission");
  gate.resolve();
  await settled(page);
  const [pending] = await events(page);
  assert.equal(pending.resumed, false);
  assert.notEqual(pending.key, next.key, "other data, other key");
  assert.match(s.requests[3].body, /item=coffee/);
  assert.deepEqual(errors, []);
});

test("storage is per form: another form with the same data does not take its key; the same `id` does", async (t) => {
  const forms = ["a", "b"]
    .map(
      (id) => `<form id="${id}" action="/api/orders" method="post">
    <input name="item" value="tea"><button id="buy-${id}">Buy</button></form>`,
    )
    .join("\n");
  const s = await serve(forms, (n, req, res) => drop(res));
  const { page, errors } = await open(t, s);
  const protectBoth = (options) =>
    page.evaluate((options) => {
      for (const h of window.handles ?? []) h.detach();
      window.handles = ["a", "b"].map((id) => oncekey.protectForm(document.getElementById(id), options));
    }, options);

  await protectBoth({ retry: { ...fast, limit: 0 } });
  await page.click("#buy-a");
  await settled(page, 1);
  await page.click("#buy-b");
  await settled(page, 2);
  let pending = (await events(page)).filter((e) => e.type === "pending");
  assert.deepEqual(
    pending.map((e) => e.form),
    ["a", "b"],
  );
  assert.notEqual(pending[1].key, pending[0].key, "form b does not resume form a");
  assert.equal(pending[1].resumed, false);

  await protectBoth({ retry: { ...fast, limit: 0 }, id: "shared" });
  await page.click("#buy-a");
  await settled(page, 3);
  await page.click("#buy-b");
  await settled(page, 4);
  pending = (await events(page)).filter((e) => e.type === "pending").slice(2);
  assert.equal(pending[1].key, pending[0].key, "one storage name, one pending submission");
  assert.equal(pending[1].resumed, true);
  assert.deepEqual(errors, []);
});

test("what is sent: the form's action and data with the submitter, formaction, url, headers and body options, multipart", async (t) => {
  const form = `<form id="checkout" action="/api/orders?from=form" method="post">
    <input name="item" value="tea"> <input name="quantity" value="2">
    <button id="buy" name="buy" value="now">Buy</button>
    <button id="alt" formaction="/api/alt">Alt</button>
  </form>
  <form id="upload" action="/api/upload" method="post" enctype="multipart/form-data">
    <input name="note" value="hello"><button id="send">Send</button>
  </form>`;
  const s = await serve(form);
  const { page, errors } = await open(t, s);
  await protect(page);
  await protect(page, {}, "upload");

  await page.click("#buy");
  await settled(page, 1);
  await page.click("#alt");
  await settled(page, 2);
  await page.click("#send");
  await settled(page, 3);
  const [plain, alt, multipart] = s.requests;
  assert.deepEqual(
    [plain.method, plain.path, plain.body],
    ["POST", "/api/orders?from=form", "item=tea&quantity=2&buy=now"],
  );
  assert.match(plain.contentType, /^application\/x-www-form-urlencoded/);
  assert.deepEqual(
    [alt.method, alt.path, alt.body],
    ["POST", "/api/alt", "item=tea&quantity=2"],
    "the submitter's formaction",
  );
  assert.match(multipart.contentType, /^multipart\/form-data; boundary=/);
  assert.match(multipart.body, /name="note"\r\n\r\nhello\r\n/);
  for (const r of s.requests) assert.match(r.key, V7);

  // url overrides formaction and action; headers and body shape the request.
  await page.evaluate(() => {
    window.handles.checkout.detach();
    window.handles.checkout = oncekey.protectForm(document.getElementById("checkout"), {
      url: "/api/json",
      headers: { "content-type": "application/json", "x-shop": "demo" },
      body: (data, form) => JSON.stringify({ ...Object.fromEntries(data), form: form.id }),
    });
  });
  const seen = deferred();
  s.respond = (n, req, res) => {
    seen.resolve(req.headers["x-shop"]);
    created(res);
  };
  await page.click("#alt");
  await settled(page, 4);
  const custom = s.requests[3];
  assert.deepEqual(
    [custom.method, custom.path, custom.contentType, await seen.promise],
    ["POST", "/api/json", "application/json", "demo"],
  );
  assert.deepEqual(JSON.parse(custom.body), { item: "tea", quantity: "2", form: "checkout" });
  assert.equal(s.requests.length, 4, "each submission sent once");
  assert.deepEqual(errors, []);
});

test("a GET (method or formmethod) or a dialog form is left to the browser; a form with no method is sent as POST", async (t) => {
  const forms = `<form id="search" action="/api/search" method="GET"><input name="q" value="tea"><button id="find">Find</button></form>
  <form id="checkout" action="/api/orders" method="post">
    <input name="item" value="tea"><button id="peek" formmethod="get">Peek</button>
  </form>
  <dialog id="dialog" open><form id="confirm" method="dialog"><button id="close" value="done">OK</button></form></dialog>
  <form id="bare" action="/api/orders"><input name="item" value="tea"><button id="bare-buy">Buy</button></form>`;
  const s = await serve(forms);
  const { page, errors } = await open(t, s);
  for (const id of ["search", "checkout", "confirm", "bare"]) await protect(page, {}, id);
  await page.evaluate(() => {
    window.submits = [];
    // Runs after the forms' own listeners: records whether oncekey took
    // the submit, then stops any navigation (a dialog form only closes).
    window.observe = (e) => {
      window.submits.push([e.submitter.id, e.defaultPrevented]);
      if (e.target.id !== "confirm") e.preventDefault();
    };
    document.addEventListener("submit", window.observe);
  });

  for (const id of ["find", "peek", "close"]) await page.click(`#${id}`);
  await pause(200);
  assert.deepEqual(
    await page.evaluate(() => window.submits),
    [
      ["find", false],
      ["peek", false],
      ["close", false],
    ],
    "none prevented",
  );
  assert.deepEqual(await events(page), [], "no key, no events");
  assert.equal(s.requests.length, 0);
  assert.deepEqual(
    await page.evaluate(() => [document.getElementById("dialog").open, document.getElementById("dialog").returnValue]),
    [false, "done"],
    "the browser closed the dialog",
  );
  assert.equal(await page.evaluate(() => document.querySelector("[aria-busy], :disabled")), null);

  await page.click("#bare-buy");
  await settled(page);
  assert.deepEqual(
    (await events(page)).map((e) => [e.type, e.form]),
    [
      ["pending", "bare"],
      ["success", "bare"],
    ],
  );
  assert.deepEqual([s.requests[0].method, s.requests[0].path, s.requests[0].body], ["POST", "/api/orders", "item=tea"]);
  assert.match(s.requests[0].key, V7);

  // Unobserved, the browser sends the GET itself: a navigation, no key.
  await page.evaluate(() => document.removeEventListener("submit", window.observe));
  await Promise.all([page.waitForURL("**/api/search?q=tea"), page.click("#find")]);
  assert.deepEqual(
    s.requests.slice(1).map((r) => [r.method, r.path, r.key]),
    [["GET", "/api/search?q=tea", undefined]],
  );
  assert.deepEqual(errors, []);
});

test("a method HTML cannot send (put) goes out as written, with a key; a method that is not a token is a clear error, nothing sent", async (t) => {
  const forms = `<form id="rename" action="/api/orders/o1" method="put"><input name="item" value="tea"><button id="save">Save</button></form>
  <form id="broken" action="/api/orders" method="po st"><input name="item" value="tea"><button id="send">Send</button></form>`;
  const s = await serve(forms, (n, req, res) => json(res, 200, { orderId: "o1" }));
  const { page, errors } = await open(t, s);
  for (const id of ["rename", "broken"]) await protect(page, {}, id);

  await page.click("#save");
  await settled(page);
  assert.deepEqual(
    [s.requests[0].method, s.requests[0].path, s.requests[0].body],
    ["PUT", "/api/orders/o1", "item=tea"],
  );
  assert.match(s.requests[0].key, V7);
  assert.deepEqual(
    (await events(page)).map((e) => [e.type, e.form]),
    [
      ["pending", "rename"],
      ["success", "rename"],
    ],
  );

  await page.click("#send");
  await settled(page, 2);
  const [, , error] = await events(page);
  assert.deepEqual([error.type, error.form, error.error.name], ["error", "broken", "TypeError"]);
  assert.equal(s.requests.length, 1, "nothing sent for the broken form");
  assert.equal(
    await page.evaluate(() => document.querySelector("[aria-busy], :disabled")),
    null,
    "the form is usable again",
  );
  assert.equal(page.url(), s.url, "no navigation either");
  assert.deepEqual(errors, []);
});

test("retry events and onRetry: a key-in-flight answer is polled, the replay is reported as one", async (t) => {
  const s = await serve(ORDER_FORM, (n, req, res) =>
    n === 1
      ? json(res, 409, IN_FLIGHT, { "content-type": "application/problem+json", "retry-after": "0" })
      : json(res, 201, { orderId: "o1" }, { "idempotent-replayed": "true" }),
  );
  const { page, errors } = await open(t, s);
  await page.evaluate(() => {
    window.onRetryCalls = [];
    oncekey.protectForm(document.getElementById("checkout"), {
      retry: { delay: 1, jitter: false, limit: 0 },
      onRetry: (info) => {
        window.onRetryCalls.push([info.key, info.attempt, info.delay, info.response?.status]);
      },
    });
  });
  await page.click("#buy");
  await settled(page);
  const [pending, retry, success] = await events(page);
  const key = pending.key;
  assert.deepEqual(
    [retry.type, retry.key, retry.attempt, retry.delay, retry.status, retry.hadError],
    ["retry", key, 1, 0, 409, false],
  );
  assert.deepEqual(await page.evaluate(() => window.onRetryCalls), [[key, 1, 0, 409]]);
  assert.deepEqual([success.type, success.key, success.status, success.replayed], ["success", key, 201, true]);
  assert.deepEqual(
    s.requests.map((r) => r.key),
    [key, key],
  );
  assert.deepEqual(errors, []);
});

test("detach: later submits are not handled (the browser's own submit goes ahead); a pending one still finishes", async (t) => {
  const gate = deferred();
  const s = await serve(ORDER_FORM, async (n, req, res) => {
    await gate.promise;
    created(res);
  });
  const { page, errors } = await open(t, s);
  await protect(page);
  await page.evaluate(() => {
    window.nativeSubmits = 0;
    // Runs after the form's own listeners: sees whether oncekey took the
    // submit, and stops the navigation either way.
    document.addEventListener("submit", (e) => {
      if (!e.defaultPrevented) window.nativeSubmits++;
      e.preventDefault();
    });
  });
  await page.click("#buy");
  await until(() => s.requests.length === 1, "the first request");
  await page.evaluate(() => window.handles.checkout.detach());
  gate.resolve();
  await settled(page);
  assert.deepEqual(await types(page), ["pending", "success"], "the pending submission finished");
  assert.deepEqual((await busyState(page)).disabled.buy, false);

  await page.click("#buy");
  await pause(200);
  assert.equal(await page.evaluate(() => window.nativeSubmits), 1, "the submit was left to the browser");
  assert.equal(s.requests.length, 1);
  assert.deepEqual(await types(page), ["pending", "success"]);
  assert.deepEqual(errors, []);
});

test("signal: an abort ends the submission with the reason in oncekey:error and restores the form", async (t) => {
  const s = await serve(ORDER_FORM, () => {}); // never answers
  const { page, errors } = await open(t, s);
  await page.evaluate(() => {
    window.controller = new AbortController();
    oncekey.protectForm(document.getElementById("checkout"), { signal: window.controller.signal });
  });
  await page.click("#buy");
  await until(() => s.requests.length === 1, "the request");
  await page.evaluate(() => window.controller.abort(new DOMException("left the page", "AbortError")));
  await settled(page);
  const [pending, aborted] = await events(page);
  assert.deepEqual(
    [aborted.type, aborted.key, aborted.error.name, aborted.error.onceKeyError],
    ["error", pending.key, "AbortError", false],
  );
  assert.deepEqual(await busyState(page), { ariaBusy: null, disabled: { buy: false } });
  assert.equal(s.requests.length, 1);
  assert.deepEqual(errors, []);
});

// The draft's own 409 example (draft-ietf-httpapi-idempotency-key-header,
// "Error Handling"): a problem whose type is shared with its 400 and 422,
// recognised by what its title and detail say.
const IETF_IN_FLIGHT = {
  type: "https://developer.example.com/idempotency",
  title: "A request is outstanding for this Idempotency-Key",
  detail: "A request with the same Idempotency-Key for the same operation is being processed or is outstanding.",
};

test("idempotentFetch in Chromium waits out an IETF-draft server's 409 with the same key; a bare 409 is returned at once", async (t) => {
  const s = await serve(ORDER_FORM, (n, req, res) => {
    if (req.url.startsWith("/api/conflict")) return json(res, 409, { error: "This seat is already taken" });
    return n === 1
      ? json(res, 409, IETF_IN_FLIGHT, { "content-type": "application/problem+json", "retry-after": "0" })
      : json(res, 201, { orderId: "o1" }, { "idempotency-replayed": "true" });
  });
  const { page, errors } = await open(t, s);
  const outcome = await page.evaluate(async () => {
    const res = await oncekey.idempotentFetch(
      "/api/orders",
      { method: "POST", body: "{}" },
      { retry: { limit: 0, delay: 1 } },
    );
    const conflict = await oncekey.idempotentFetch(
      "/api/conflict",
      { method: "POST", body: "{}" },
      { retry: { limit: 3, delay: 1 } },
    );
    return {
      status: res.status,
      replayed: oncekey.isReplayed(res),
      conflict: conflict.status,
      body: await conflict.json(),
    };
  });
  assert.deepEqual(outcome, {
    status: 201,
    replayed: true,
    conflict: 409,
    body: { error: "This seat is already taken" },
  });
  const orders = s.requests.filter((r) => r.path === "/api/orders");
  assert.equal(orders.length, 2, "polled once past its 409, although retry.limit is 0");
  assert.equal(orders[0].key, orders[1].key, "with the same key");
  assert.equal(s.requests.filter((r) => r.path === "/api/conflict").length, 1, "the origin's own 409 is final");
  assert.deepEqual(errors, []);
});

const FILE_FORM = `<form id="checkout" action="/api/receipts" method="post" enctype="multipart/form-data">
  <input name="note" value="lunch"> <input type="file" id="receipt" name="receipt">
  <button id="buy">Send</button>
</form>`;

/** The parts of a multipart body, without the boundary: [name, filename, type, content]. */
function parts(contentType, body) {
  const boundary = /boundary=(.+)$/.exec(contentType)[1];
  return body
    .split(`--${boundary}`)
    .slice(1, -1)
    .map((part) => {
      const [head, ...rest] = part.split("\r\n\r\n");
      return [
        /name="([^"]*)"/.exec(head)?.[1],
        /filename="([^"]*)"/.exec(head)?.[1] ?? null,
        /content-type: (.+)/i.exec(head)?.[1]?.trim() ?? null,
        rest.join("\r\n\r\n").replace(/\r\n$/, ""),
      ];
    });
}

test("protectForm with a file input: after a lost answer, the resubmission is the same request with the same key", async (t) => {
  // The first answer is lost after the server did the work; no automatic
  // retry (limit 0), so the user submits again. The browser encodes the
  // form anew (a new boundary): the same key and the same parts, which an
  // oncekey edge fingerprints as the same request and replays (SPEC §2,
  // tests/edge/multipart.test.mjs).
  const s = await serve(FILE_FORM, (n, req, res) =>
    n === 1 ? drop(res) : json(res, 201, { receipt: "r1" }, { "idempotent-replayed": "true" }),
  );
  const { page, errors } = await open(t, s);
  await protect(page, { retry: { limit: 0, delay: 1 } });
  await page.setInputFiles("#receipt", {
    name: "receipt.pdf",
    mimeType: "application/pdf",
    buffer: Buffer.from("%PDF-1.4 lunch 12.50"),
  });
  await page.click("#buy");
  await settled(page);
  assert.equal((await events(page)).at(-1).type, "error", "no answer: the submission is still open");
  await page.click("#buy");
  await settled(page, 2);
  const last = (await events(page)).at(-1);
  assert.deepEqual([last.type, last.status, last.replayed, last.key], ["success", 201, true, s.requests[0].key]);
  const [first, again] = s.requests;
  assert.equal(again.key, first.key, "the same key");
  assert.match(first.contentType, /^multipart\/form-data; boundary=/);
  assert.deepEqual(
    parts(again.contentType, again.body),
    parts(first.contentType, first.body),
    "the same fields and file",
  );
  assert.deepEqual(
    parts(first.contentType, first.body).map((p) => p[0]),
    ["note", "receipt"],
  );
  assert.equal(parts(first.contentType, first.body)[1][3], "%PDF-1.4 lunch 12.50");
  assert.deepEqual(errors, []);
});

test("docs/browser.md's two snippets, as written, in Chromium: the fetch retries a 503 with its key and logs 201; the protected form posts once and goes to /thanks", async (t) => {
  const html = blocksOf(docPage("docs/browser.md"), "html");
  const js = blocksOf(docPage("docs/browser.md"), "js");
  assert.equal(html.length, 1, "one HTML snippet");
  assert.equal(js.length, 1, "one JavaScript snippet");
  // The page as a user's would be: the package under its npm name (an
  // import map stands in for the bundler), the form snippet, the fetch one.
  const form = `<script type="importmap">{"imports":{"oncekey":"/oncekey.js"}}</script>
${html[0]}
<script type="module">${js[0]}</script>`;
  const s = await serve(form, (n, req, res) =>
    n === 1 ? json(res, 503, { error: "busy" }, { "retry-after": "0" }) : created(res),
  );
  const context = await browser.newContext();
  t.after(async () => {
    await context.close();
    await s.close();
  });
  const tab = await context.newPage();
  const errors = [];
  const logged = [];
  tab.on("pageerror", (e) => errors.push(e.message));
  tab.on("console", (message) => logged.push(message.text()));
  await load(tab, s);
  for (let i = 0; i < 100 && s.requests.length < 2; i++) await new Promise((r) => setTimeout(r, 50));
  const [first, retry] = s.requests;
  assert.deepEqual([first?.path, retry?.path], ["/api/orders", "/api/orders"], "the fetch and its retry");
  assert.match(first.key, V7, "a UUIDv7 key");
  assert.equal(retry.key, first.key, "the retry carries the same key");
  assert.deepEqual(JSON.parse(retry.body), { item: "guji-250g", quantity: 1, amountCents: 1800 });
  await Promise.all([tab.waitForURL(/\/thanks$/), tab.click("#checkout button")]);
  const posted = s.requests[2];
  assert.equal(s.requests.length, 3, "the form posted once");
  assert.match(posted.key, V7);
  assert.notEqual(posted.key, first.key, "a new key for the form's submission");
  assert.equal(posted.body, "item=guji-250g&quantity=1");
  assert.ok(
    logged.some((line) => line.startsWith("201")),
    `the fetch snippet logged its status: ${logged}`,
  );
  assert.deepEqual(errors, []);
});

test("inputs are checked as the edge checks them: no form is a TypeError naming it; a mistyped option or a status outside 100–599 is an OptionsError, nothing sent", async (t) => {
  const s = await serve(ORDER_FORM);
  const { page, errors } = await open(t, s);
  const thrown = await page.evaluate(() => {
    const attempt = (f) => {
      try {
        f();
        return "no error";
      } catch (e) {
        return `${e.name}: ${e.message}`;
      }
    };
    const form = document.getElementById("checkout");
    return [
      attempt(() => oncekey.protectForm(document.querySelector("#missing"))),
      attempt(() => oncekey.protectForm(document.body)),
      attempt(() => oncekey.protectForm(form, { retry: "3" })),
      attempt(() => oncekey.protectForm(form, { retry: { limit: "3" } })),
      attempt(() => oncekey.protectForm(form, { retry: { statusCodes: ["503"] } })),
    ];
  });
  assert.deepEqual(thrown, [
    "TypeError: protectForm(form): form must be a <form> element, not null",
    "TypeError: protectForm(form): form must be a <form> element, not a <body>",
    'OptionsError: retry must be a number or an object of retry options, not "3"',
    'OptionsError: retry.limit must be a number, not "3"',
    "OptionsError: retry.statusCodes must be an array of numbers, not object",
  ]);
  // A value out of range is the core's to see, at the submit: reported, nothing sent.
  await protect(page, { retry: { statusCodes: [503, 600] } });
  await page.click("#buy");
  await settled(page);
  const event = (await events(page)).find((e) => e.type === "error");
  assert.equal(event.error.name, "OptionsError");
  assert.equal(s.requests.length, 0);
  assert.deepEqual(errors, []);
});

test("the wasm loads on first use: newKey() before ready() is a NotReadyError that starts the load; ready() is idempotent", async (t) => {
  const s = await serve(ORDER_FORM);
  const { page, errors } = await open(t, s);
  const wasm = [];
  page.on("request", (r) => r.url().endsWith(".wasm") && wasm.push(r.url()));
  // A fresh page that only imports the package fetches no wasm.
  await page.reload();
  await page.waitForFunction(() => window.ready);
  await new Promise((r) => setTimeout(r, 300));
  assert.deepEqual(wasm, [], "importing fetches nothing");
  const before = await page.evaluate(() => {
    const tryCall = (f) => {
      try {
        return f();
      } catch (e) {
        return { name: e.name, message: e.message, onceKeyError: e instanceof oncekey.OnceKeyError };
      }
    };
    return [tryCall(() => oncekey.newKey()), tryCall(() => oncekey.isReplayed(new Response()))];
  });
  assert.deepEqual(before[0], {
    name: "NotReadyError",
    message: "newKey() needs oncekey's wasm, which is not loaded yet: await ready() first",
    onceKeyError: true,
  });
  assert.equal(before[1].name, "NotReadyError");
  const after = await page.evaluate(async () => {
    const a = oncekey.ready();
    const same = a === oncekey.ready();
    await a;
    await oncekey.ready();
    return { same, key: oncekey.newKey(), replayed: oncekey.isReplayed(new Response()) };
  });
  assert.equal(after.same, true);
  assert.match(after.key, V7);
  assert.equal(after.replayed, false);
  assert.equal(wasm.length, 1, "one fetch of the wasm, started by the first newKey()");
  assert.deepEqual(errors, []);
});
