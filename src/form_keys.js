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
export function withFormKeys(response, keyInput) {
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
  try {
    return rewriter.transform(response);
  } catch (error) {
    // The core sends only pages the rewriter should read; whatever it still
    // refuses goes out as the origin sent it, logged.
    console.warn(`oncekey: a page was answered without form keys: ${error instanceof Error ? error.message : error}`);
    return response;
  }
}
