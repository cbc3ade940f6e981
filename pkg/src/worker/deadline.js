// Time limits on the runtime's promises, as src/edge/deadline.rs gives the
// Rust host: the limits themselves are the core's.

/** `promise`, or a rejection with the signal's reason once it aborts. */
export function untilAborted(promise, signal) {
  return new Promise((resolve, reject) => {
    const abort = () => reject(signal.reason);
    signal.addEventListener("abort", abort, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener("abort", abort));
  });
}

/** What `within` rejects with once its time is up. */
export class TimedOut extends Error {}

/** `promise`, or a rejection (a `TimedOut`) once `ms` have passed. */
export function within(promise, ms) {
  return new Promise((resolve, reject) => {
    // The core's HostText::NoAnswerWithin (tests/support/host-texts.tsv).
    const timer = setTimeout(() => reject(new TimedOut(`no answer within ${ms} ms`)), ms);
    promise.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (error) => {
        clearTimeout(timer);
        reject(error);
      },
    );
  });
}
