// Gives an HTML answer's forms their keys as it streams to the caller
// (SPEC §8, IDEMPOTENCY_FORMS=inject), with the runtime's HTMLRewriter —
// the same file for both hosts: the JavaScript host imports it, the Rust
// host binds it (src/edge/form_keys.rs). Glue only: it reports what it sees
// of the page — each form's attributes and controls, the controls naming a
// form from elsewhere, where the rewriter's view of the markup parts from a
// browser's (a form inside another, or closed by another element's end
// tag; templates, SVG and MathML; text-only elements; what a <noscript>
// holds, which the rewriter reads as text) and every <base href> — and
// places what `pageFormKeys` (the core's `page_form_keys`) gives: before a
// form's end tag, or — for forms with an `id`, which controls anywhere on
// the page may name — at the page's end, in place of a mark the guard adds
// after the last byte (an element only outside an unfinished tag).
// The guard cuts the rewriting short where a browser would read the bytes
// otherwise (a huge tag, ISO-2022 escapes, a UTF-16 byte order mark), and
// wherever the rewriter stops (it throws on a page it cannot read, or gives
// up on a tag) the page goes on from there as the origin sent it. With
// no <base href> before it, the first key placed at a form's end goes with
// the page's own (`<base href="">`): a browser takes the first base, so none
// later moves a key. Where the markup takes a turn the rewriter may read
// otherwise than a browser (SVG and MathML's odd corners, end tags a
// browser ignores), the report says so and the core places no more keys.
// Controls are matched without a
// `form` ancestor in the selector (a descendant selector costs the
// rewriter a walk of the open elements per element); the open forms say
// whose control it is.

const CONTROL_ATTRIBUTES = ["type", "name", "formmethod", "formaction", "formenctype"];
// Elements whose content a browser reads as text: an input placed at the
// page's end inside one would be text too.
const TEXT_ONLY = new Set([
  "script",
  "style",
  "textarea",
  "title",
  "xmp",
  "iframe",
  "noembed",
  "noframes",
  "plaintext",
  "noscript",
]);
// The most <noscript> text the report carries; past it the core assumes the worst.
const NOSCRIPT_KEPT = 65536;
// Elements with no end tag (the rewriter refuses an end-tag handler on one).
const VOID = new Set([
  "area",
  "base",
  "br",
  "col",
  "embed",
  "hr",
  "img",
  "input",
  "link",
  "meta",
  "source",
  "track",
  "wbr",
]);
// HTML's tree builder, as far as where the rewriter's streaming view of end
// tags parts from it. The rewriter closes every element above a matching
// end tag; a browser ignores an end tag with a "special" element above its
// match, or with its match out of scope (past a table cell, a template, an
// SVG or MathML integration point, a list for </li>), or already closed by
// a start tag (<dt> closes a <dd>, <div> a <p>), and moves elements for a
// formatting one. An element closed by another's end tag is alike only
// where none of that can be.
const words = (text) => new Set(text.split(" "));
const SPECIAL = words(
  "address applet article aside blockquote body button caption center colgroup dd details dialog dir div dl dt fieldset figcaption figure footer form frameset h1 h2 h3 h4 h5 h6 head header hgroup html iframe li listing main marquee menu nav noembed noframes noscript object ol p plaintext pre script search section select style summary table tbody td template textarea tfoot th thead title tr ul xmp",
);
// Closed by "generate implied end tags", which most end tags run.
const IMPLIED = words("dd dt li optgroup option p rb rp rt rtc");
const SCOPE_BOUNDARY = words("applet caption html table td th marquee object template");
const TABLE_PARTS = words("caption colgroup tbody td tfoot th thead tr");
const TABLE_CLOSERS = words("table tbody td tfoot th thead tr");
// Block end tags: their match is never closed by a start tag, and they pop
// every element above it (when in scope).
const BLOCK_END = words(
  "address article aside blockquote center details dialog dir div dl fieldset figcaption figure footer header hgroup listing main menu nav ol pre search section summary ul",
);
// End tags that pop every element above their match, which a start tag
// may have closed already.
const POPPING = words("p li dd dt h1 h2 h3 h4 h5 h6 button select template applet marquee object");
const FORMATTING = words("a b big code em font i nobr s small strike strong tt u");
// In SVG or MathML, where the rewriter's model is simple: tags past which a
// browser may be in HTML where the rewriter is not, or the reverse.
const FOREIGN_SUSPECT = words(
  "svg math mglyph malignmark foreignobject annotation-xml b big blockquote body br center code dd div dl dt em embed h1 h2 h3 h4 h5 h6 head hr i img li listing menu meta nobr ol p pre ruby s small span strong strike sub sup table tt u ul var font",
);
// Where SVG and MathML hold HTML: an element inside one is suspect too.
const INTEGRATION = words("mi mo mn ms mtext annotation-xml foreignobject desc title");

/** Whether a browser, too, closes an HTML element `tag` at the end tag `by` (another's). */
function closedAlike(tag, by) {
  // Inside a <select> a browser ignores the block end tags that close it here.
  if (tag === "select" || FORMATTING.has(by)) return false;
  if (by === "form") return IMPLIED.has(tag);
  if (TABLE_PARTS.has(tag)) return TABLE_CLOSERS.has(by);
  if (SCOPE_BOUNDARY.has(tag)) return false;
  if (BLOCK_END.has(by) || TABLE_CLOSERS.has(by)) return true;
  if (POPPING.has(by)) return IMPLIED.has(tag) || !SPECIAL.has(tag);
  // Any other end tag: a browser stops at a special element.
  return !SPECIAL.has(tag);
}

/**
 * `response` with a hidden `idempotency_key` field for each form
 * `pageFormKeys(pageOrigin, reportJson, placement, nowMs, random)` gives
 * one, on a page served from `pageOrigin`. A page the rewriter refuses is
 * answered as the origin sent it, never broken (SPEC §8).
 */
export function withFormKeys(response, pageOrigin, pageFormKeys, longestTag = 0) {
  const open = [];
  // Forms with an id, kept to the page's end with the controls naming them.
  const named = [];
  const naming = [];
  // How deep the stream is in templates, SVG or MathML, elements whose
  // content is text, and SVG's and MathML's HTML integration points.
  const depth = { templates: 0, foreign: 0, textOnly: 0, integration: 0, tables: 0 };
  // A <base href> in the page's HTML (not in a template or SVG) so far.
  let based = false;
  // Whether the page's own <base href=""> went before its first key.
  let pinned = false;
  // A form closed by another element's end tag: a browser keeps it as the
  // form later controls join, and ignores the next <form>, until a </form>.
  let heldOpen = false;
  // `unsure`: the markup took a turn where the rewriter's view and a
  // browser's may part; the core then places no more keys.
  const page = { bases: [], noscript: "", noscriptOverflow: false, unsure: false };
  // The page's guard (pageGuard): what of the body the rewriter reads.
  let guard;
  // The text the guard puts after the page's last byte, unguessable.
  // An element, not text: a document-wide text handler makes the rewriter
  // decode and re-encode every text byte (the seventh red team: "Café"
  // in windows-1252 came out as "Cafï¿½").
  const markName = `oncekey-end-${[...crypto.getRandomValues(new Uint8Array(8))].map((b) => b.toString(16).padStart(2, "0")).join("")}`;
  const mark = `<${markName}>`;
  // Bytes the handlers added to the page (less the mark they took out):
  // what the rewriter passes, less these, is how far into the page it got.
  // `end`: the mark was read, so the rewriter passed the whole page.
  const added = { bytes: 0, end: false };
  const keys = (forms, placement) => {
    const random = new Uint8Array(10 * forms.length);
    for (let at = 0; at < random.length; at += 65536) crypto.getRandomValues(random.subarray(at, at + 65536));
    const report = JSON.stringify({ forms, naming: placement === "form-end" ? [] : naming, ...page });
    return pageFormKeys(pageOrigin, report, placement, Date.now(), random);
  };
  const rewriter = new HTMLRewriter()
    // Every element: one handler, since the rewriter keeps one end-tag
    // handler per element (a second replaces the first).
    .on("*", {
      element(element) {
        const tag = element.tagName;
        if (tag === markName) return;
        // The depths this element counts in, and what its end tag checks.
        const counts = [];
        const checks = [];
        if (depth.foreign > 0) {
          if (depth.integration > 0 || FOREIGN_SUSPECT.has(tag)) page.unsure = true;
          if (INTEGRATION.has(tag)) counts.push("integration");
        }
        if (tag === "template") counts.push("templates");
        if (tag === "table") counts.push("tables");
        if (tag === "svg" || tag === "math") counts.push("foreign");
        if (TEXT_ONLY.has(tag)) counts.push("textOnly");
        if (tag !== "form") {
          // An element closed by another's end tag where a browser keeps it
          // open, or moves it: from here the two trees may differ (a <div>
          // left open in a form past its </form>, a template still open
          // around a base), and no more keys are placed. In SVG or MathML,
          // any such end tag.
          const foreign = depth.foreign > 0 || tag === "svg" || tag === "math";
          checks.push((end) => {
            if (end.name !== tag && (foreign || !closedAlike(tag, end.name))) page.unsure = true;
          });
        }
        if (VOID.has(tag) || (counts.length === 0 && checks.length === 0)) return;
        // Counted only once its end tag can undo it (a self-closed SVG
        // element has none).
        const ends = onEnd(element, (end) => {
          for (const name of counts) depth[name] -= 1;
          for (const check of checks) check(end);
        });
        if (ends) for (const name of counts) depth[name] += 1;
      },
    })
    .on("base[href]", {
      element(element) {
        // A base in a table a browser moves out before the table (foster
        // parenting): ahead of any key or pin already placed in it. From
        // there the keys stop; and it is never the page's own first base.
        if (depth.tables > 0) page.unsure = true;
        else if (depth.templates === 0 && depth.foreign === 0) based = true;
        page.bases.push(element.getAttribute("href"));
      },
    })
    .on("noscript", {
      text(chunk) {
        // Each <noscript>'s text ends with a NUL: the core reads each alone.
        page.noscript += chunk.lastInTextNode ? `${chunk.text}\0` : chunk.text;
        if (page.noscript.length > NOSCRIPT_KEPT) {
          page.noscript = "";
          page.noscriptOverflow = true;
        }
        const within = open[open.length - 1];
        if (within !== undefined) within.noscript += chunk.text;
      },
    })
    .on("form", {
      element(form) {
        const seen = {
          method: form.getAttribute("method"),
          action: form.getAttribute("action"),
          enctype: form.getAttribute("enctype"),
          id: form.getAttribute("id"),
          nested: open.length > 0 || heldOpen,
          // In SVG or MathML a form is no HTML form, and a pin placed in it
          // no HTML base: inert, as in a template.
          inTemplate: depth.templates > 0 || depth.foreign > 0,
          noscript: "",
          controls: [],
        };
        for (const outer of open) outer.nested = true;
        open.push(seen);
        if (seen.id !== null) named.push(seen);
        form.onEndTag((end) => {
          open.splice(open.lastIndexOf(seen), 1);
          heldOpen = end.name !== "form";
          if (heldOpen) seen.nested = true;
          if (seen.id !== null) return;
          // In a table, a pin comes after whatever base a browser later moves
          // out before the table: no key there until one is pinned outside.
          if (depth.tables > 0 && !based && !pinned) return;
          const input = keys([seen], "form-end");
          if (input === undefined) return;
          // A browser takes the first <base href> in the page: with none
          // before, the page's own (href="": its URL) goes before the first
          // key placed, so no base later — late, or hidden where the
          // rewriter cannot see it — moves that key or the next.
          const pin = based || pinned ? "" : '<base href="">';
          end.before(pin + input, { html: true });
          added.bytes += utf8Length(pin + input);
          pinned = true;
        });
      },
    })
    .on("button, input, select, textarea", {
      element(element) {
        const control = { tag: element.tagName, inert: depth.templates > 0 || depth.foreign > 0 };
        for (const name of CONTROL_ATTRIBUTES) control[name] = element.getAttribute(name);
        control.form = element.getAttribute("form");
        if (control.form === null) open[open.length - 1]?.controls.push(control);
        else naming.push(control);
      },
    })
    .on(markName, {
      // The guard's mark after the page's last byte: an element only when
      // the page ended outside any tag (inside an unfinished tag it is part
      // of the tag, which a browser drops at the end of the page with it;
      // inside a comment or a text-only element, text), so an input placed
      // there is an input to a browser too; one placed after an unfinished
      // tag would finish it and lend it its attributes.
      element(element) {
        const cut = depth.textOnly > 0 || depth.foreign > 0 || depth.templates > 0;
        const inputs = named.length === 0 ? undefined : keys(named, cut ? "page-cut" : "page-end");
        if (inputs === undefined) element.remove();
        else element.replace(inputs, { html: true });
        added.bytes += (inputs === undefined ? 0 : utf8Length(inputs)) - mark.length;
        added.end = true;
      },
    });
  if (response.body === null) return response;
  const markBytes = new TextEncoder().encode(mark);
  let rewritten;
  try {
    guard = pageGuard(response.body, longestTag, markBytes);
    rewritten = rewriter.transform(new Response(guard.input, response));
  } catch (error) {
    // The core sends only pages the rewriter should read; whatever it still
    // refuses goes out as the origin sent it, logged.
    warn(`a page was answered without form keys: ${error instanceof Error ? error.message : error}`);
    return guard === undefined ? response : new Response(guard.from(0), response);
  }
  return new Response(followedBy(rewritten.body, guard, markBytes, added), rewritten);
}

const utf8Length = (text) => new TextEncoder().encode(text).length;
const LT = 0x3c;
const GT = 0x3e;

const ESC = 0x1b;

const SLASH = 0x2f;
const SELECT = new TextEncoder().encode("select");
// Tags the runtime's rewriter cannot read inside a <select>: it throws
// ("text content tag … ambiguous") in the middle of the page.
const SELECT_TEXT_TAGS = ["style", "xmp", "title", "iframe", "noembed", "noframes", "plaintext"].map((name) =>
  new TextEncoder().encode(name),
);

/** Whether `bytes` at `at` hold the tag name `name` (lower case), in any case, and it ends there. */
function tagNamed(bytes, at, name) {
  for (let i = 0; i < name.length; i++) if ((bytes[at + i] | 0x20) !== name[i]) return false;
  const after = bytes[at + name.length];
  return after === undefined || after === GT || after === SLASH || after <= 0x20;
}

/**
 * Where in `bytes` (whole tags) a tag the rewriter would throw on starts —
 * one of SELECT_TEXT_TAGS inside a <select> — or -1; `select.open` carries
 * whether a <select> is open from one call to the next. A plain scan of
 * tag names (a `<select` in a comment counts): at worst the page is cut
 * where it need not be, and its rest goes out without keys.
 */
function textTagInSelect(bytes, select) {
  for (let at = bytes.indexOf(LT); at !== -1; at = bytes.indexOf(LT, at + 1)) {
    const closing = bytes[at + 1] === SLASH;
    const name = at + (closing ? 2 : 1);
    if (tagNamed(bytes, name, SELECT)) select.open = !closing;
    else if (select.open && !closing && SELECT_TEXT_TAGS.some((tag) => tagNamed(bytes, name, tag))) return at;
  }
  return -1;
}

/**
 * What the rewriter is given of `body`: `input`, its bytes, then `end` (a
 * mark the rewriter reads as an element only if the page ended outside any tag)
 * — unless the page is cut first, where the rewriter and a browser
 * would part ways: at a tag longer than `longestTag` bytes (when not 0: the
 * core's bound, the runtime's rewriter gives up on a tag of about 3 MB and
 * cuts the page off there with no error); at the first ESC byte (from there
 * a page in ISO-2022-JP, named by a `<meta>` the rewriter does not obey,
 * is other markup to a browser); at a text-only element inside a
 * `<select>` (textTagInSelect: the rewriter would throw there); or at the
 * start of a page that opens with a UTF-16 byte order mark (which a
 * browser obeys over the header). A
 * tag's bytes are held back until its `>` arrives.
 *
 * Every byte read is kept until `passed(offset)` says the rewriter's output
 * went past it; `from(offset)` is the page as the origin sent it from
 * there. So a page the rewriter stops on anywhere — where the guard cut it
 * (`cutAt`: the page's bytes given before the cut, exact), or where the
 * rewriter threw or gave up unforeseen — goes on as sent.
 */
function pageGuard(body, longestTag, end) {
  const reader = body.getReader();
  // The bytes read and not yet passed, and the page offset of the first.
  const kept = [];
  let keptAt = 0;
  // The read in flight, if any: `from` waits for it, so no byte is skipped.
  let reading = null;
  let held = new Uint8Array(0);
  let cut = false;
  let opening = true;
  // The page's bytes given to the rewriter, and where the guard cut it.
  let given = 0;
  let cutAt;
  // Whether a <select> is open, as textTagInSelect reads the tags so far.
  const select = { open: false };
  const cutHere = (bytes, why, before) => {
    held = bytes;
    cut = true;
    cutAt = given + before;
    warn(`${why}: the rest of the page was answered without form keys`);
  };
  const give = (controller, bytes) => {
    given += bytes.length;
    controller.enqueue(bytes);
  };
  const read = async () => {
    reading = reader.read();
    try {
      const result = await reading;
      if (!result.done) kept.push(result.value);
      return result;
    } finally {
      reading = null;
    }
  };
  const input = new ReadableStream({
    async pull(controller) {
      for (;;) {
        if (cut) return controller.close();
        const { value, done } = await read();
        if (cut) return controller.close();
        if (done) {
          // The mark in a chunk of its own.
          if (held.length > 0) controller.enqueue(held);
          controller.enqueue(end);
          held = new Uint8Array(0);
          return controller.close();
        }
        const bytes = held.length === 0 ? value : joined(held, value);
        if (opening) {
          held = bytes;
          if (bytes.length < 2) continue;
          opening = false;
          if ((bytes[0] === 0xfe && bytes[1] === 0xff) || (bytes[0] === 0xff && bytes[1] === 0xfe)) {
            cutHere(bytes, "a page that opens with a UTF-16 byte order mark", 0);
            continue;
          }
        }
        const esc = bytes.indexOf(ESC);
        if (esc !== -1) {
          cutHere(bytes.subarray(esc), "an ESC byte (ISO-2022 text)", esc);
          if (esc > 0) return give(controller, bytes.subarray(0, esc));
          continue;
        }
        const open = bytes.lastIndexOf(LT);
        const whole = open !== -1 && bytes.indexOf(GT, open) === -1 ? open : bytes.length;
        const ambiguous = textTagInSelect(bytes.subarray(0, whole), select);
        if (ambiguous !== -1) {
          cutHere(bytes.subarray(ambiguous), "a text-only element inside a <select>", ambiguous);
          if (ambiguous > 0) return give(controller, bytes.subarray(0, ambiguous));
          continue;
        }
        held = bytes.subarray(whole);
        if (longestTag > 0 && held.length > longestTag) cutHere(held, `a tag of over ${longestTag} bytes`, whole);
        if (whole > 0) return give(controller, bytes.subarray(0, whole));
      }
    },
    // The rewriter gave up: what it did not pass still goes out (`from`).
    cancel() {
      cut = true;
    },
  });
  return {
    input,
    /** The rewriter's output went past the page's first `offset` bytes. */
    passed(offset) {
      // Never past what the rewriter was given: re-encoded text makes the
      // estimate long, and the bytes held back must still go out.
      const passed = Math.min(offset, given);
      while (kept.length > 0 && keptAt + kept[0].length <= passed) keptAt += kept.shift().length;
    },
    /** Where the guard cut the page (its bytes given before), if it did. */
    get cutAt() {
      return cutAt;
    },
    /** The page as the origin sent it from `offset` on (no further than what was read, kept). */
    from(offset) {
      cut = true;
      let skip = offset;
      return new ReadableStream({
        async pull(controller) {
          if (reading !== null) await reading.catch(() => undefined);
          while (kept.length > 0) {
            const bytes = kept.shift();
            const start = Math.max(0, skip - keptAt);
            keptAt += bytes.length;
            if (start < bytes.length) return controller.enqueue(start === 0 ? bytes : bytes.subarray(start));
          }
          skip = 0;
          const { value, done } = await reader.read();
          if (done) controller.close();
          else controller.enqueue(value);
        },
        cancel(reason) {
          return reader.cancel(reason);
        },
      });
    },
    cancel(reason) {
      cut = true;
      return reader.cancel(reason);
    },
  };
}

/**
 * `rewritten`, without `mark` if the rewriter left it as it was at the
 * very end (the page ended inside a tag or a comment: the rewriter hands
 * such bytes on untouched), then the page as the origin sent it from where
 * the rewriter's output stopped: the guard's cut, or wherever the rewriter
 * threw or gave up (its output, less the bytes `added` to it, is how far
 * into the page it got).
 */
function followedBy(rewritten, guard, mark, added) {
  const reader = rewritten.getReader();
  let rest;
  // The bytes of page the rewriter passed, counting what it added.
  let out = 0;
  // The last bytes given, held back until more come: they may be the mark.
  let tail = new Uint8Array(0);
  return new ReadableStream({
    async pull(controller) {
      while (rest === undefined) {
        let result;
        let stopped = false;
        try {
          result = await reader.read();
        } catch (error) {
          // It cannot read every page (markup it cannot stream).
          const why = String(error?.message ?? error).split("\n")[0];
          warn(`the rewriter stopped (${why}): the rest of the page was answered without form keys`);
          result = { done: true };
          stopped = true;
        }
        const { value, done } = result;
        if (done) {
          const left = tail.length !== mark.length || tail.some((byte, i) => byte !== mark[i]);
          // Where the page goes on as sent: nowhere, when the rewriter read
          // the mark (it passed every byte); past the guard's cut, where
          // the guard cut it (exact); else — it threw, or gave up on a tag
          // unforeseen — its output less what was added (an estimate: an
          // insertion written in the page's charset, or text it
          // re-encodes, makes it off).
          let at = Math.max(0, out - added.bytes);
          if (!stopped && (added.end || !left)) at = Number.POSITIVE_INFINITY;
          else if (!stopped && guard.cutAt !== undefined) at = guard.cutAt;
          rest = guard.from(at).getReader();
          if (left && tail.length > 0) return controller.enqueue(tail);
          break;
        }
        out += value.length;
        guard.passed(out - added.bytes);
        const bytes = tail.length === 0 ? value : joined(tail, value);
        const given = Math.max(0, bytes.length - mark.length);
        tail = bytes.slice(given);
        if (given > 0) return controller.enqueue(bytes.subarray(0, given));
      }
      const { value, done } = await rest.read();
      if (done) controller.close();
      else controller.enqueue(value);
    },
    cancel(reason) {
      reader.cancel(reason).catch(() => undefined);
      return (rest ?? guard).cancel(reason);
    },
  });
}

function joined(a, b) {
  const out = new Uint8Array(a.length + b.length);
  out.set(a);
  out.set(b, a.length);
  return out;
}

/** `handler` at `element`'s end tag: whether the rewriter knows it has one. */
function onEnd(element, handler) {
  try {
    element.onEndTag(handler);
    return true;
  } catch {
    return false;
  }
}

function warn(message) {
  console.warn(`oncekey: ${message}`);
}
