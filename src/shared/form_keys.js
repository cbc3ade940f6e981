// Gives an HTML answer's post forms their keys as it streams to the caller
// (SPEC §8, IDEMPOTENCY_FORMS=inject), with the runtime's HTMLRewriter —
// the same file for both hosts: the JavaScript host imports it, the Rust
// host binds it (src/edge/form_keys.rs). Glue only: it reports what it sees
// of each form, and `keyInput` (the core's `key_input`) decides what goes
// before the form's end tag, if anything. Nothing is held but one small
// record per open form. Controls are matched without a `form` ancestor in
// the selector (a descendant selector costs the rewriter a walk of the open
// elements per element); the open forms say whose control it is.

/**
 * `response` with a hidden `idempotency_key` field before the end tag of
 * each form `keyInput(method, submitters, enctypes, hasField, nowMs, random)`
 * gives one: the form's `method`, the `formmethod` of each control in it,
 * its `enctype` and each control's `formenctype`, whether a control in it
 * is named `idempotency_key`, the clock, 10 random bytes. A page the
 * rewriter refuses is answered as the origin sent it, never broken (SPEC §8).
 */
export function withFormKeys(response, keyInput, longestTag = 0) {
  const open = [];
  const innermost = () => open[open.length - 1];
  const rewriter = new HTMLRewriter()
    .on("form", {
      element(form) {
        const enctype = form.getAttribute("enctype");
        const seen = { method: form.getAttribute("method"), submitters: [], enctypes: [], hasField: false };
        if (enctype !== null) seen.enctypes.push(enctype);
        open.push(seen);
        form.onEndTag((end) => {
          open.splice(open.lastIndexOf(seen), 1);
          const random = crypto.getRandomValues(new Uint8Array(10));
          const { method, submitters, enctypes, hasField } = seen;
          const input = keyInput(method ?? undefined, submitters, enctypes, hasField, Date.now(), random);
          if (input !== undefined) end.before(input, { html: true });
        });
      },
    })
    .on("[formmethod]", {
      element(control) {
        innermost()?.submitters.push(control.getAttribute("formmethod"));
      },
    })
    .on("[formenctype]", {
      element(control) {
        innermost()?.enctypes.push(control.getAttribute("formenctype"));
      },
    })
    .on('[name="idempotency_key"]', {
      element() {
        const seen = innermost();
        if (seen !== undefined) seen.hasField = true;
      },
    });
  if (response.body === null) return response;
  let guard;
  let rewritten;
  try {
    // A body the core knows is short goes to the rewriter as it is: the
    // guard's streams cost CPU on every chunk.
    if (longestTag === 0) return rewriter.transform(response);
    guard = tagGuard(response.body, longestTag);
    rewritten = rewriter.transform(new Response(guard.input, response));
  } catch (error) {
    // The core sends only pages the rewriter should read; whatever it still
    // refuses goes out as the origin sent it, logged.
    guard?.release();
    warn(`a page was answered without form keys: ${error instanceof Error ? error.message : error}`);
    return guard === undefined ? response : new Response(guard.rest(), response);
  }
  return new Response(followedBy(rewritten.body, guard), rewritten);
}

const LT = 0x3c;
const GT = 0x3e;

/**
 * Splits `body` at its first tag longer than `longestTag` bytes (the core's
 * bound: the runtime's rewriter gives up on a tag of about 3 MB and cuts the
 * page off there with no error): `input`, the bytes before it, for the
 * rewriter (a tag's bytes are held back until its `>` arrives, at most
 * `longestTag` of them); then `rest()`, that tag and everything after it,
 * as the origin sent it. `release()` hands everything to `rest()`.
 */
function tagGuard(body, longestTag) {
  const reader = body.getReader();
  let held = new Uint8Array(0);
  let cut = false;
  const input = new ReadableStream({
    async pull(controller) {
      for (;;) {
        if (cut) return controller.close();
        const { value, done } = await reader.read();
        if (done) {
          if (held.length > 0) controller.enqueue(held);
          held = new Uint8Array(0);
          return controller.close();
        }
        const bytes = held.length === 0 ? value : joined(held, value);
        const open = bytes.lastIndexOf(LT);
        const end = open !== -1 && bytes.indexOf(GT, open) === -1 ? open : bytes.length;
        held = bytes.subarray(end);
        if (held.length > longestTag) {
          cut = true;
          warn(`a tag of over ${longestTag} bytes: the rest of the page was answered without form keys`);
        }
        if (end > 0) return controller.enqueue(bytes.subarray(0, end));
      }
    },
    cancel(reason) {
      return reader.cancel(reason);
    },
  });
  return {
    input,
    release() {
      cut = true;
    },
    /** What the rewriter was not given: the held tag, then the rest of the body. */
    rest() {
      let first = cut ? held : null;
      return new ReadableStream({
        async pull(controller) {
          if (first !== null) {
            const bytes = first;
            first = null;
            if (bytes.length > 0) return controller.enqueue(bytes);
          }
          const { value, done } = await reader.read();
          if (done) controller.close();
          else controller.enqueue(value);
        },
        cancel(reason) {
          return reader.cancel(reason);
        },
      });
    },
    get cut() {
      return cut;
    },
  };
}

/** `rewritten`, then — if the guard cut the page — the rest as the origin sent it. */
function followedBy(rewritten, guard) {
  const reader = rewritten.getReader();
  let rest;
  return new ReadableStream({
    async pull(controller) {
      if (rest === undefined) {
        const { value, done } = await reader.read();
        if (!done) return controller.enqueue(value);
        if (!guard.cut) return controller.close();
        rest = guard.rest().getReader();
      }
      const { value, done } = await rest.read();
      if (done) controller.close();
      else controller.enqueue(value);
    },
    cancel(reason) {
      return (rest ?? reader).cancel(reason);
    },
  });
}

function joined(a, b) {
  const out = new Uint8Array(a.length + b.length);
  out.set(a);
  out.set(b, a.length);
  return out;
}

function warn(message) {
  console.warn(`oncekey: ${message}`);
}
