/**
 * oncekey — exactly-once mutations from the browser.
 *
 * Every submission gets one UUIDv7 `Idempotency-Key`; every retry of it
 * carries the same key, so a server that honours the header (the oncekey
 * edge worker, Stripe, …) runs it at most once.
 *
 * @example
 * ```ts
 * import { idempotentFetch, isReplayed } from 'oncekey';
 * const res = await idempotentFetch('/api/orders', {
 *   method: 'POST',
 *   headers: { 'content-type': 'application/json' },
 *   body: JSON.stringify({ item: 'tea', quantity: 1, amountCents: 1200 }),
 * });
 * console.log(res.status, isReplayed(res));
 * ```
 *
 * @packageDocumentation
 */

/**
 * A new UUIDv7 (RFC 9562) in canonical lower-case text form: 48 bits of
 * Unix-ms time, 74 crypto-random bits (`crypto.getRandomValues`).
 * Strictly increasing within a page, even many times inside one
 * millisecond or when the clock steps back.
 *
 * Needs the core's wasm: in Node it is read at once on first use; in a
 * browser, `await ready()` first.
 *
 * @example
 * ```ts
 * await ready();
 * newKey(); // '019a8f3e-7c1d-7b2a-9f00-3c5e8d41a7b6'
 * ```
 *
 * @throws {@link NotReadyError} in a browser, before the wasm is loaded
 * (the call starts the load).
 * @throws {@link LoadError} in Node, when the wasm cannot be read.
 */
export function newKey(): string;

/**
 * Loads the core's wasm (the key, retry and fingerprint rules), if it is
 * not loaded yet. Importing oncekey loads nothing and never waits: the wasm
 * is fetched on first use. `idempotentFetch` and `protectForm` await it
 * themselves; call `ready()` to load it ahead, or before the synchronous
 * `newKey()` and `isReplayed()` in a browser. Idempotent: every call
 * after the first resolves with the same load. A failed load is not
 * kept: the next call tries again.
 *
 * @example
 * ```ts
 * import { ready, newKey } from 'oncekey';
 * await ready();
 * const key = newKey();
 * ```
 *
 * @throws {@link LoadError} (the promise rejects) when the wasm cannot be
 * loaded: a 404 or a wrong address, a network error, a
 * Content-Security-Policy without `'wasm-unsafe-eval'` in `script-src`.
 * The reason is also written once to `console.warn`.
 */
export function ready(): Promise<void>;

/** The `retry` option: when and how often to send again with the same key. */
export interface RetryOptions {
  /**
   * Retries after the first attempt, for network errors and `statusCodes`.
   * `Infinity` for no limit. Polls of an in-flight answer do not count
   * (see `maxInFlightWait`).
   * @defaultValue `2`
   */
  limit?: number;
  /**
   * Statuses that are retried. A replayed answer (`Idempotent-Replayed:
   * true` or `Idempotency-Replayed: true`) is never retried, whatever its
   * status.
   * @defaultValue `[408, 425, 429, 500, 502, 503, 504]`
   */
  statusCodes?: number[];
  /**
   * Base of the exponential backoff, in ms: before jitter, retry `n` waits
   * `delay * 2 ** (n - 1)` (300, 600, 1200… by default).
   * @defaultValue `300`
   */
  delay?: number;
  /**
   * Cap on one computed backoff wait, in ms.
   * @defaultValue `Infinity` (no cap)
   */
  backoffLimit?: number;
  /**
   * Full jitter: wait a random share (0–100 %) of the computed backoff, so
   * many clients do not retry in step. `Retry-After` waits are never
   * jittered.
   * @defaultValue `true`
   */
  jitter?: boolean;
  /**
   * Longest wait honoured from a `Retry-After` header (seconds or an HTTP
   * date), in ms; a longer request is waited for this long.
   * @defaultValue `Infinity` (honour the server)
   */
  maxRetryAfter?: number;
  /**
   * How long, in ms, to keep polling while the server answers that the
   * first request with this key is still running, honouring its
   * `Retry-After` (1 s when absent). Apart from `limit`. After it, that
   * answer is returned. Recognised by what the `409` says: oncekey's
   * `urn:oncekey:problem:key-in-flight`, Stripe's `idempotency_key_in_use`,
   * hono-idempotency's conflict problem, or a title or detail saying a
   * request with this idempotency key is outstanding or being processed
   * (the IETF draft). Any other 409 is the origin's own and is returned
   * at once.
   * @defaultValue `120000` (the edge's default lease)
   */
  maxInFlightWait?: number;
  /**
   * Whether to wait out an unknown outcome — oncekey's `409 outcome-unknown`:
   * the last attempt ended without an answer, so it may have been carried
   * out, and the key is held for the rest of its lease. By default the call
   * ends with {@link OutcomeUnknownError} (a person should not watch a
   * spinner for a two-minute lease). `true` polls it like an in-flight
   * answer, after its `Retry-After`, within `maxInFlightWait`, and then
   * sends again as the next attempt.
   * @defaultValue `false`
   */
  waitUnknown?: boolean;
}

/** What `onRetry` and the `oncekey:retry` event are told before a retry. */
export interface RetryInfo {
  /** The key every attempt of this request carries. */
  key: string;
  /** The attempt that just ended, from 1. */
  attempt: number;
  /** How long oncekey waits before the next attempt, in ms. */
  delay: number;
  /** The answer that is being retried, if there was one. */
  response?: Response;
  /** The network error that is being retried, if there was no answer. */
  error?: unknown;
}

/** Options of {@link idempotentFetch}. */
export interface IdempotentFetchOptions {
  /**
   * The `Idempotency-Key` to send. Without it, an `Idempotency-Key` header
   * already in `init`/`input` is kept, else a covered method gets
   * {@link newKey}.
   * @defaultValue a new key
   */
  key?: string;
  /**
   * Retry options, or a number as shorthand for `{ limit }`.
   * @defaultValue see {@link RetryOptions}
   */
  retry?: RetryOptions | number;
  /**
   * Called before each retry, after the wait is decided and before it
   * starts; awaited.
   * @defaultValue none
   */
  onRetry?: (info: RetryInfo) => void | Promise<void>;
  /**
   * Stops the request: the pending attempt is aborted, no retry follows,
   * and the promise rejects with `signal.reason` (as `fetch` does).
   * `init.signal` works too.
   * @defaultValue none
   */
  signal?: AbortSignal;
  /**
   * Methods that get a key when none is given.
   * @defaultValue `['POST', 'PATCH']` (the edge's default)
   */
  methods?: string[];
  /**
   * The `fetch` to call for each attempt.
   * @defaultValue `globalThis.fetch`
   */
  fetch?: (input: Request, init?: RequestInit) => Promise<Response>;
}

/**
 * `fetch` that retries safely: adds an `Idempotency-Key` to `POST` and
 * `PATCH` (unless already set) and retries with the **same key** on
 * network errors and on 408, 425, 429, 500, 502, 503 and 504, with
 * exponential backoff and full jitter, honouring `Retry-After`. Waits for
 * the `online` event while the browser is offline. Polls an in-flight
 * answer (oncekey's, the IETF draft's, Stripe's or hono-idempotency's 409
 * saying the first request with this key still runs; never a bare 409)
 * for up to `retry.maxInFlightWait`. Never retries a replayed answer, a
 * 422 or another 4xx.
 *
 * @returns the final `Response`, like `fetch` — also when it is not 2xx.
 * @throws {@link NetworkError} when every attempt failed without an HTTP answer.
 * @throws {@link OptionsError} when an option has the wrong type (`retry: '3'`),
 * a `retry` number is negative or NaN, a status code is not 100–599, or the
 * key (`key`, or an `Idempotency-Key` header in `init`) is one the edge
 * would refuse (SPEC §1: empty, over 255 characters, a comma, a space or
 * another character outside visible ASCII). Nothing is sent.
 * @throws {@link LoadError} when the core's wasm cannot be loaded (see {@link ready}).
 * @throws `signal.reason` (an `AbortError` by default) when aborted.
 */
export function idempotentFetch(
  input: Request | string | URL,
  init?: RequestInit,
  options?: IdempotentFetchOptions,
): Promise<Response>;

/**
 * Whether a response is a stored answer replayed by the server:
 * `Idempotent-Replayed: true` (oncekey, Stripe-style servers) or
 * `Idempotency-Replayed: true` (hono-idempotency and other IETF-draft
 * servers).
 *
 * @throws {@link NotReadyError} in a browser, before the wasm is loaded
 * (see {@link ready}); in the `onRetry` of a call, or after an
 * `idempotentFetch` has resolved, it is.
 */
export function isReplayed(response: Response): boolean;

/**
 * An HTML form element: `HTMLFormElement` where the DOM's types are loaded,
 * and nothing at all where they are not (a Node project), since forms exist
 * only in a page. Written so that these types compile without the DOM lib.
 */
export type FormElement = typeof globalThis extends { HTMLFormElement: { prototype: infer Form } } ? Form : never;

/** What {@link protectForm} keeps a pending key in: `sessionStorage`'s three methods. */
export interface KeyStorage {
  getItem(key: string): string | null;
  setItem(key: string, value: string): void;
  removeItem(key: string): void;
}

/** Options of {@link protectForm}: {@link IdempotentFetchOptions} (but `key`) and these. */
export interface ProtectFormOptions extends Omit<IdempotentFetchOptions, 'key'> {
  /**
   * Where to send: overrides the submitter's `formaction` and the form's `action`.
   * @defaultValue the form's action
   */
  url?: string | URL;
  /**
   * Extra request headers, e.g. `{ 'content-type': 'application/json' }`
   * with a JSON `body`.
   * @defaultValue none
   */
  headers?: RequestInit['headers'];
  /**
   * Builds the request body from the form's data.
   * @defaultValue `FormData` for `enctype="multipart/form-data"`, else
   * `URLSearchParams` (what the browser would send)
   */
  body?: (data: FormData, form: FormElement) => RequestInit['body'];
  /**
   * Where a pending submission's key is kept so it survives a reload; `null`
   * keeps it in memory only.
   * @defaultValue `sessionStorage`
   */
  storage?: KeyStorage | null;
  /**
   * Names the form in `storage`.
   * @defaultValue the form's `id`, else its `name`, else its `action`
   */
  id?: string;
}

/** Detail of `oncekey:pending`: a submission starts. */
export interface PendingDetail {
  key: string;
  /** The key was found in `storage`: this resends a submission a reload interrupted. */
  resumed: boolean;
}

/** Detail of `oncekey:success`: the submission ended with a 2xx. */
export interface SuccessDetail {
  /** The submission's key; `null` when it was sent without one (the wasm could not load). */
  key: string | null;
  response: Response;
  /** The answer is the stored one, replayed (an earlier attempt did the work). */
  replayed: boolean;
}

/**
 * Detail of `oncekey:error`: no answer ({@link NetworkError}, abort), an
 * unknown outcome ({@link OutcomeUnknownError}, with the server's 409 as
 * `response`), or a non-2xx answer, final or not ({@link HTTPError}; see
 * {@link protectForm}). A {@link LoadError} reports that the core's wasm
 * could not load: it does not end the submission, which is then sent once
 * without a key, its answer following as `oncekey:success` or
 * `oncekey:error`.
 */
export interface ErrorDetail {
  /** The submission's key; `null` when it has none (the wasm could not load). */
  key: string | null;
  error: unknown;
  response?: Response;
  replayed?: boolean;
}

/** Events a protected form dispatches (they bubble). */
export interface ProtectFormEventMap {
  'oncekey:pending': CustomEvent<PendingDetail>;
  'oncekey:retry': CustomEvent<RetryInfo>;
  'oncekey:success': CustomEvent<SuccessDetail>;
  'oncekey:error': CustomEvent<ErrorDetail>;
}

declare global {
  /** The form events, typed on every element (they bubble): `form.addEventListener('oncekey:success', (e) => e.detail.response)`. */
  interface HTMLElementEventMap extends ProtectFormEventMap {}
  /** The form events, typed where they bubble to. */
  interface DocumentEventMap extends ProtectFormEventMap {}
}

/** What {@link protectForm} returns. */
export interface ProtectedForm {
  /** Stops handling the form's submits (a pending submission still finishes). */
  detach(): void;
}

/**
 * Sends a form with {@link idempotentFetch}, one key per submission.
 *
 * - While a submission is pending, further submits send nothing; submit
 *   buttons are disabled and the form has `aria-busy="true"`.
 * - The pending key is saved in `sessionStorage` under the form and a
 *   fingerprint of the payload, so submitting the same data after a reload
 *   or crash resends the same request, with the same key.
 * - After a final answer the next submit is a new submission with a new
 *   key. Final means a replay (whatever its status) or a status outside
 *   `retry.statusCodes`.
 * - After anything else the key is kept, and the next submit of the same
 *   data resends it (`resumed`): no answer (every attempt failed, or an
 *   abort), an in-flight answer past `maxInFlightWait`, or a status in
 *   `retry.statusCodes` (500, 503…) when the retries ran out. The work may
 *   still have to be done (a 503 released the key at the edge) or be done
 *   already (the edge stores a 500 and replays it, and the replay is
 *   final): the same key is safe either way, a new one is not.
 * - Dispatches `oncekey:pending`, `oncekey:retry`, `oncekey:success` and
 *   `oncekey:error` on the form (see {@link ProtectFormEventMap}); they
 *   are typed on `HTMLElementEventMap`, so listeners need no cast.
 * - Starts loading the core's wasm (see {@link ready}), so the first
 *   submit does not wait for it.
 * - Where the core's wasm cannot load (a 404, a Content-Security-Policy
 *   without `'wasm-unsafe-eval'`), a submit is still sent once, under the
 *   same double-submit guard, without a key and without retries; the
 *   failure is reported first: `oncekey:error` with a {@link LoadError},
 *   and `console.warn`. Never a silent unprotected submit.
 * - The method is the submitter's `formmethod`, else the form's `method`,
 *   else POST: a form with no `method` is sent as POST (the browser's own
 *   default is GET, but a form you protect is one that changes something).
 *   A submission whose method is `get` or `dialog` is left to the browser:
 *   not prevented, no key, no events; a GET is not a mutation. Any other
 *   method (`put`, `patch`, `delete`) is sent as written, which plain HTML
 *   cannot do; one that is not an HTTP method token ends in
 *   `oncekey:error` with the `TypeError` from `Request`, nothing sent.
 *
 * @example
 * ```ts
 * protectForm(document.querySelector('form')!);
 * ```
 *
 * @throws `TypeError` when `form` is not a `<form>` element (`null` from a
 * selector that matched nothing).
 * @throws {@link OptionsError} when an option has the wrong type; a value
 * out of range (a status code outside 100–599) is reported at the first
 * submit, in `oncekey:error`.
 */
export function protectForm(form: FormElement, options?: ProtectFormOptions): ProtectedForm;

/** Base class of the errors oncekey throws or reports; `instanceof OnceKeyError` catches them all. */
export class OnceKeyError extends Error {
  constructor(message?: string, options?: ErrorOptions);
}

/**
 * Thrown by {@link idempotentFetch} (and reported by a protected form) when
 * every attempt failed without an HTTP answer: connection refused, reset,
 * dropped, DNS. The server may still have done the work: send again with
 * the same `key` to find out.
 */
export class NetworkError extends OnceKeyError {
  constructor(key: string | null, attempts: number, cause?: unknown);
  /** The key every attempt carried. */
  readonly key: string | null;
  /** Attempts made. */
  readonly attempts: number;
  /** The last attempt's error. */
  readonly cause: unknown;
}

/**
 * Reported in `oncekey:error` when the answer a protected form's submission
 * ended with is not 2xx (a 422 `key-reused`, a validation 400, a replayed
 * 500, a 503 after the last retry…).
 * `idempotentFetch` itself resolves with such answers, like `fetch`.
 */
export class HTTPError extends OnceKeyError {
  constructor(response: Response, key: string | null);
  readonly response: Response;
  /** The submission's key; `null` when it was sent without one (the wasm could not load). */
  readonly key: string | null;
}

/**
 * Thrown by {@link idempotentFetch} (and reported in a protected form's
 * `oncekey:error`) when the server says the last attempt with this key
 * ended without an answer (oncekey's `409 outcome-unknown`): it may have
 * been carried out. Tell the person you are not sure it went through; the
 * same request with the same `key` after `retryAfterMs` runs as the next
 * attempt. Not thrown with `retry.waitUnknown: true`.
 *
 * @example
 * ```ts
 * try {
 *   await idempotentFetch('/api/orders', { method: 'POST', body });
 * } catch (error) {
 *   if (error instanceof OutcomeUnknownError) showNotSure(error.retryAfterMs);
 * }
 * ```
 */
export class OutcomeUnknownError extends OnceKeyError {
  constructor(response: Response, key: string | null, retryAfterMs?: number);
  /** The server's 409. */
  readonly response: Response;
  /** The key the attempt carried. */
  readonly key: string | null;
  /** How long until the key's lease ends, from `Retry-After`, in ms. */
  readonly retryAfterMs: number | undefined;
}

/**
 * Thrown when an option is mistyped (`retry: '3'`) or out of range (a
 * negative or NaN `retry` number, a status code outside 100–599), or when
 * a key is one the edge would refuse (SPEC §1): nothing is sent.
 */
export class OptionsError extends OnceKeyError {
  constructor(message: string);
}

/**
 * Thrown by the synchronous `newKey()` and `isReplayed()` in a browser
 * before the core's wasm is loaded. The call has started the load: `await
 * ready()` first (or use the asynchronous API, which waits for it).
 *
 * @example
 * ```ts
 * await ready();
 * const key = newKey();
 * ```
 */
export class NotReadyError extends OnceKeyError {
  constructor(call: string);
}

/**
 * The core's wasm could not be loaded: `ready()` rejects with it, and a
 * protected form reports it in `oncekey:error` before sending without a
 * key. The message says why: a Content-Security-Policy without
 * `'wasm-unsafe-eval'` in `script-src`, the HTTP status of the wasm's URL
 * (a 404), a network error.
 */
export class LoadError extends OnceKeyError {
  constructor(message: string, cause?: unknown);
  /** The error the browser or Node gave. */
  readonly cause: unknown;
}
