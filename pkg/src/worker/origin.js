// The origin's side of an attempt, as src/edge/origin.rs is for the Rust
// host: the request it is sent (the client's, with the core's header edits
// and the body read), and the one error a handler throws to say it did
// nothing (the core maps every other failure).
import { applyEdits } from "./http.js";

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

/**
 * The client's `request` with the core's header edits (packed, as
 * http.js reads them; undefined: none), and `body` (undefined: its own);
 * `signal`, when given, is the layer's own (never the caller's: the call
 * goes on after a disconnect, for as long as the core says). `keepCf`:
 * whether it carries the client request's `cf` — for a handler or a Worker
 * that may read it. Copying a Request copies its `cf` as JSON (parsed,
 * stringified, parsed again), on every copy and on the fetch; a request
 * fetched from a URL has no use for it (the edge reads a subrequest's `cf`
 * as settings, not as the client's), so it goes without.
 */
export function outgoing(request, edits, body, signal, keepCf = true) {
  const headers = new Headers(request.headers);
  applyEdits(headers, edits);
  const own = signal === undefined ? {} : { signal };
  if (!keepCf) {
    // Built from the URL, so that no `cf` is copied.
    const sent = body === undefined ? request.body : body.length > 0 ? body : null;
    const init = { method: request.method, headers, body: sent, redirect: request.redirect };
    return new Request(request.url, { ...init, signal: signal ?? request.signal });
  }
  if (body === undefined) return new Request(request, { headers, ...own });
  if (body.length > 0) return new Request(request, { headers, body, ...own });
  // No body at all (a GET must have none); the client's body, if any, was read.
  return new Request(request.url, { method: request.method, headers, redirect: request.redirect, ...own });
}
