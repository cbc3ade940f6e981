// Learning that the caller went away, as src/edge/disconnect.rs does: the
// client request's `signal` aborts when the client disconnects
// (compatibility flag `enable_request_signal`; without it the signal never
// aborts, and the origin call keeps its own time limit only). The core
// says how much of what Workers allows after a disconnect the call may
// still take.

/**
 * Watches `request`'s signal while an origin call runs: when the caller
 * goes, `cut` aborts once what the exchange allows has passed. Returns the
 * function that stops watching.
 */
export function onCallerGone(request, exchange, cut) {
  const signal = request.signal;
  let timer;
  const gone = () => {
    const ms = exchange.callerGone(Date.now());
    if (ms === undefined) return;
    // The core's HostText::CallerGone (tests/support/host-texts.tsv).
    const why = new Error(
      `the caller went away; no answer within the ${ms} ms left of what Workers allows after a disconnect`,
    );
    timer = setTimeout(() => cut.abort(why), ms);
  };
  signal?.addEventListener("abort", gone, { once: true });
  // A caller gone before the listener was added fires no event: seen here,
  // as the Rust host sees it.
  if (signal?.aborted) gone();
  return () => {
    signal?.removeEventListener("abort", gone);
    clearTimeout(timer);
  };
}
