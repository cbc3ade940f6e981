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
 * each form `keyInput(method, submitters, hasField, nowMs, random)` gives
 * one: the form's `method`, the `formmethod` of each control in it, whether
 * a control in it is named `idempotency_key`, the clock, 10 random bytes.
 */
export function withFormKeys(response, keyInput) {
  const open = [];
  const innermost = () => open[open.length - 1];
  return new HTMLRewriter()
    .on("form", {
      element(form) {
        const seen = { method: form.getAttribute("method"), submitters: [], hasField: false };
        open.push(seen);
        form.onEndTag((end) => {
          open.splice(open.lastIndexOf(seen), 1);
          const random = crypto.getRandomValues(new Uint8Array(10));
          const input = keyInput(seen.method ?? undefined, seen.submitters, seen.hasField, Date.now(), random);
          if (input !== undefined) end.before(input, { html: true });
        });
      },
    })
    .on("[formmethod]", {
      element(control) {
        innermost()?.submitters.push(control.getAttribute("formmethod"));
      },
    })
    .on('[name="idempotency_key"]', {
      element() {
        const seen = innermost();
        if (seen !== undefined) seen.hasField = true;
      },
    })
    .transform(response);
}
