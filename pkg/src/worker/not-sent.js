// The one error a handler throws to say it did nothing.

/** Marks a NotSentError even across two copies of this module in a bundle. */
const NOT_SENT = Symbol.for("oncekey.not-sent");

/**
 * Thrown by a handler that did nothing: the request was never acted on, so
 * the key is released and a retry runs as the next attempt. Any other
 * throw is an unknown outcome (the key stays held until its lease ends).
 */
export class NotSentError extends Error {
  constructor(message = "the handler did not act on the request", options) {
    super(message, options);
    this.name = "NotSentError";
    this[NOT_SENT] = true;
  }
}

/** Whether `error` is a NotSentError (from any copy of this module). */
export function isNotSent(error) {
  return error instanceof NotSentError || (typeof error === "object" && error !== null && error[NOT_SENT] === true);
}
