// The errors oncekey throws or reports, in the style of ky: a base class
// and one subclass per failure (documented in oncekey.d.ts).
/** Base class of every error oncekey throws or reports. */
export class OnceKeyError extends Error {
  constructor(message, options) {
    super(message, options);
    this.name = "OnceKeyError";
  }
}

/** Every attempt failed without an HTTP answer. */
export class NetworkError extends OnceKeyError {
  constructor(key, attempts, cause) {
    super(`No answer after ${attempts} attempt${attempts === 1 ? "" : "s"}`, { cause });
    this.name = "NetworkError";
    this.key = key;
    this.attempts = attempts;
  }
}

/** The answer a protected form's submission ended with was not a 2xx. */
export class HTTPError extends OnceKeyError {
  constructor(response, key) {
    super(`Request failed with status ${response.status}`);
    this.name = "HTTPError";
    this.response = response;
    this.key = key;
  }
}

/**
 * The server says the last attempt with this key ended without an answer
 * (oncekey's `outcome-unknown`): it may have been carried out, and the key
 * is held until its lease ends.
 */
export class OutcomeUnknownError extends OnceKeyError {
  constructor(response, key, retryAfterMs) {
    super("The outcome of the last attempt is unknown: it may have been carried out");
    this.name = "OutcomeUnknownError";
    this.response = response;
    this.key = key;
    this.retryAfterMs = retryAfterMs;
  }
}

/** An option is out of range. */
export class OptionsError extends OnceKeyError {
  constructor(message) {
    super(message);
    this.name = "OptionsError";
  }
}

/**
 * A synchronous call (`newKey`, `isReplayed`) came before the core's wasm
 * was loaded, in a browser: the load has been started; `await ready()`.
 */
export class NotReadyError extends OnceKeyError {
  constructor(call) {
    super(`${call} needs oncekey's wasm, which is not loaded yet: await ready() first`);
    this.name = "NotReadyError";
  }
}

/** The core's wasm could not be loaded: a 404, a blocked fetch, a Content-Security-Policy. */
export class LoadError extends OnceKeyError {
  constructor(message, cause) {
    super(message, { cause });
    this.name = "LoadError";
  }
}
