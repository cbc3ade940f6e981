// The public API (SPEC §8). Glue only: every decision — the key, whether
// and when to retry, Retry-After, which answers are replays or in flight,
// the payload fingerprint — is made by the Rust core through the wasm
// exports imported here.
import {
  Answer,
  KeySource,
  RetryPlan,
  answerKind,
  answerReadsBody,
  answerReplayed,
  keyRefusal,
  payloadFingerprint,
  retryAfterMs,
} from "../dist/bindgen/oncekey_wasm.js";
import { HTTPError, LoadError, NetworkError, OptionsError, OutcomeUnknownError } from "./errors.js";
import { loadNow, ready } from "./load.js";

export {
  HTTPError,
  LoadError,
  NetworkError,
  NotReadyError,
  OnceKeyError,
  OptionsError,
  OutcomeUnknownError,
} from "./errors.js";
export { ready };

const KEY_HEADER = "Idempotency-Key";
const COVERED_METHODS = ["POST", "PATCH"];
const STORAGE_PREFIX = "oncekey:";

let keys;
let batch = "";
let at = 0;
let fresh = false;
const expire = () => {
  fresh = false;
};

// Keys come from the core in batches made for one clock reading. A batch
// serves only the task that asked for it (it expires at the next
// microtask), so a key never carries a time older than the code that
// asked for it; reading the clock per key would cost more than the key.
export function newKey() {
  loadNow("newKey()");
  if (!fresh || at === batch.length) {
    keys ??= new KeySource();
    batch = keys.batch(Date.now(), at / 36);
    at = 0;
    if (!fresh) {
      fresh = true;
      queueMicrotask(expire);
    }
  }
  at += 36;
  return batch.slice(at - 36, at);
}

export function isReplayed(response) {
  loadNow("isReplayed()");
  const h = response.headers;
  return answerReplayed(h.get("idempotent-replayed"), h.get("idempotency-replayed"));
}

const RETRY_NUMBERS = ["limit", "delay", "backoffLimit", "maxRetryAfter", "maxInFlightWait"];
const RETRY_FLAGS = ["jitter", "waitUnknown"];

// The options' JavaScript types; their values are the core's to check
// (RetryPlan). A string where a number goes would be read as a number by
// the binding, or as no options at all: refused instead.
function checkRetry(retry) {
  if (retry === undefined || typeof retry === "number") return;
  if (typeof retry !== "object" || retry === null) {
    throw new OptionsError(`retry must be a number or an object of retry options, not ${describe(retry)}`);
  }
  for (const name of RETRY_NUMBERS) {
    if (retry[name] !== undefined && typeof retry[name] !== "number") {
      throw new OptionsError(`retry.${name} must be a number, not ${describe(retry[name])}`);
    }
  }
  for (const name of RETRY_FLAGS) {
    if (retry[name] !== undefined && typeof retry[name] !== "boolean") {
      throw new OptionsError(`retry.${name} must be true or false, not ${describe(retry[name])}`);
    }
  }
  const codes = retry.statusCodes;
  if (codes !== undefined && !(Array.isArray(codes) && codes.every((c) => typeof c === "number"))) {
    throw new OptionsError(`retry.statusCodes must be an array of numbers, not ${describe(codes)}`);
  }
}

function describe(value) {
  if (typeof value === "string") return JSON.stringify(value);
  if (value === null) return "null";
  return typeof value?.tagName === "string" ? `a <${value.tagName.toLowerCase()}>` : typeof value;
}

// A key the edge would refuse (SPEC §1) is refused here, before sending:
// the core says why.
function checkKey(key, where) {
  if (typeof key !== "string") throw new OptionsError(`${where} must be a string, not ${describe(key)}`);
  const refusal = keyRefusal(key);
  if (refusal !== undefined) throw new OptionsError(`${where} would be refused by the edge: ${refusal}`);
}

function retryPlan(retry) {
  checkRetry(retry);
  const r = typeof retry === "number" ? { limit: retry } : (retry ?? {});
  try {
    return new RetryPlan(
      r.limit,
      r.statusCodes && Float64Array.from(r.statusCodes),
      r.delay,
      r.backoffLimit,
      r.jitter,
      r.maxRetryAfter,
      r.maxInFlightWait,
      r.waitUnknown,
    );
  } catch (error) {
    throw new OptionsError(`retry.${error.message}`);
  }
}

// What the answer says (the core reads it). A body it asks for is read
// from a clone: the caller gets the answer whole.
async function answerOf(response) {
  const { status, headers } = response;
  const body = answerReadsBody(status, headers.get("content-length"))
    ? await response
        .clone()
        .text()
        .catch(() => undefined)
    : undefined;
  return answerKind(status, isReplayed(response), body);
}

function aborted(signal) {
  return signal.reason ?? new DOMException("This operation was aborted", "AbortError");
}

function sleep(ms, signal) {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(aborted(signal));
    const onAbort = () => {
      clearTimeout(timer);
      reject(aborted(signal));
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

function whenOnline(signal) {
  const g = globalThis;
  if (g.navigator?.onLine !== false || typeof g.addEventListener !== "function") return;
  return new Promise((resolve, reject) => {
    const done = (settle) => {
      g.removeEventListener("online", onOnline);
      signal?.removeEventListener("abort", onAbort);
      settle();
    };
    const onOnline = () => done(resolve);
    const onAbort = () => done(() => reject(aborted(signal)));
    g.addEventListener("online", onOnline);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

function combine(signals) {
  const present = signals.filter(Boolean);
  return present.length > 1 ? AbortSignal.any(present) : present[0];
}

// One request, retried with one key; resolves with the final answer and
// whether it settles the submission.
async function send(input, init, options) {
  checkRetry(options.retry);
  await ready();
  const request = new Request(input, init);
  const signal = combine([options.signal, init?.signal]);
  const methods = (options.methods ?? COVERED_METHODS).map((m) => m.toUpperCase());
  if (options.key !== undefined) checkKey(options.key, "key");
  else if (request.headers.has(KEY_HEADER)) checkKey(request.headers.get(KEY_HEADER), `the ${KEY_HEADER} header`);
  const key =
    options.key ??
    request.headers.get(KEY_HEADER) ??
    (methods.includes(request.method.toUpperCase()) ? newKey() : null);
  if (key !== null) request.headers.set(KEY_HEADER, key);
  const plan = retryPlan(options.retry);
  const fetchImpl = options.fetch ?? globalThis.fetch;
  try {
    for (let attempt = 1; ; attempt++) {
      if (signal?.aborted) throw aborted(signal);
      await whenOnline(signal);
      let response;
      let error;
      try {
        response = await fetchImpl(request.clone(), signal ? { signal } : undefined);
      } catch (e) {
        if (signal?.aborted) throw aborted(signal);
        if (e?.name === "AbortError") throw e;
        error = e;
      }
      const status = response ? response.status : 0;
      const answer = response ? await answerOf(response) : undefined;
      const retryAfter = response?.headers.get("retry-after");
      const settled = plan.isSettled(status, answer);
      const delay = plan.next(status, retryAfter, answer, Date.now(), Math.random());
      if (delay < 0) {
        if (answer === Answer.OutcomeUnknown) {
          const wait = retryAfter == null ? undefined : retryAfterMs(retryAfter, Date.now());
          throw new OutcomeUnknownError(response, key, wait);
        }
        if (response) return { response, key, settled };
        throw new NetworkError(key, attempt, error);
      }
      await options.onRetry?.({ key, attempt, delay, response, error });
      // Free the connection; the next attempt brings a new answer.
      response?.body?.cancel().catch(() => {});
      await sleep(delay, signal);
    }
  } finally {
    plan.free();
  }
}

export async function idempotentFetch(input, init, options) {
  return (await send(input, init, options ?? {})).response;
}

function formId(form, options) {
  return options.id ?? (form.id || form.getAttribute("name") || form.getAttribute("action") || "form");
}

const encoder = new TextEncoder();

// The bytes a fingerprint is taken over. A multipart body's boundary is
// random, so FormData counts by its entries; a file by name, size, type
// and date. Streams cannot be read twice: no fingerprint, no persistence.
async function payloadBytes(body) {
  if (body == null) return new Uint8Array();
  if (typeof body === "string") return encoder.encode(body);
  if (body instanceof URLSearchParams) return encoder.encode(body.toString());
  if (body instanceof FormData) {
    const entries = [...body].map(([k, v]) => [
      k,
      typeof v === "string" ? v : [v.name, v.size, v.type, v.lastModified],
    ]);
    return encoder.encode(JSON.stringify(entries));
  }
  if (body instanceof Blob) return new Uint8Array(await body.arrayBuffer());
  if (body instanceof ArrayBuffer) return new Uint8Array(body);
  if (ArrayBuffer.isView(body)) return new Uint8Array(body.buffer, body.byteOffset, body.byteLength);
  return null;
}

function defaultBody(data, form) {
  return /multipart\/form-data/i.test(form.enctype) ? data : new URLSearchParams(data);
}

// Storage is best effort (quota, blocked, junk): a failure must not stop
// the submission, only its survival across a reload.
function remember(op) {
  try {
    return op();
  } catch {
    return null;
  }
}

// A form's submit buttons, those outside it (`form="…"`) included, by
// their type as the browser reads it (a button with a missing or unknown
// type submits). Not `form.elements`: it leaves out image buttons.
function submitButtons(form) {
  return [...form.ownerDocument.querySelectorAll("button, input")].filter(
    (el) => el.form === form && (el.type === "submit" || el.type === "image"),
  );
}

// The submission's method: the submitter's `formmethod`, else the form's
// `method`, else POST. The browser's default would be GET, but a form
// given to protectForm is one that mutates.
function formMethod(form, submitter) {
  return submitter?.getAttribute("formmethod") || form.getAttribute("method") || "post";
}

// A GET changes nothing and a dialog form only closes its dialog: both are
// the browser's to do, as it would without oncekey.
function isMutation(form, submitter) {
  return !["get", "dialog"].includes(formMethod(form, submitter).toLowerCase());
}

export function protectForm(form, options = {}) {
  if (form?.tagName?.toUpperCase() !== "FORM" || typeof form.addEventListener !== "function") {
    throw new TypeError(`protectForm(form): form must be a <form> element, not ${describe(form)}`);
  }
  if (options === null || typeof options !== "object") {
    throw new OptionsError(`protectForm's options must be an object, not ${describe(options)}`);
  }
  checkRetry(options.retry);
  let storage = options.storage;
  if (storage === undefined) {
    try {
      storage = globalThis.sessionStorage ?? null;
    } catch {
      storage = null; // storage blocked (privacy settings, sandboxed frame): memory only
    }
  }
  let pending = false;
  let disabled = [];
  // The pending submission ({fingerprint, key}) is also kept here, so a
  // resubmit in this page finds it with no storage or a storage that fails.
  let kept = null;

  const busy = (on) => {
    if (on) {
      form.setAttribute("aria-busy", "true");
      disabled = submitButtons(form).filter((el) => !el.disabled);
      for (const el of disabled) el.disabled = true;
    } else {
      form.removeAttribute("aria-busy");
      for (const el of disabled) el.disabled = false;
      disabled = [];
    }
  };
  const emit = (type, detail) => form.dispatchEvent(new CustomEvent(type, { detail, bubbles: true }));

  async function submit(submitter) {
    let key;
    let slot;
    try {
      // Read before the buttons are disabled: a disabled submitter's name
      // and value would be left out of the data.
      const data = submitter ? new FormData(form, submitter) : new FormData(form);
      busy(true);
      const method = formMethod(form, submitter).toUpperCase();
      const url = new URL(
        options.url ?? (submitter?.getAttribute("formaction") ? submitter.formAction : form.action),
        document.baseURI,
      );
      const headers = new Headers(options.headers);
      const body = options.body ? options.body(data, form) : defaultBody(data, form);
      try {
        await ready();
      } catch (error) {
        if (!(error instanceof LoadError)) throw error;
        key = null;
        return await sendUnprotected(error, url, { method, body, headers });
      }
      const bytes = await payloadBytes(body);
      const contentType = headers.get("content-type") ?? new Request(url, { method, body }).headers.get("content-type");
      const fingerprint =
        bytes && payloadFingerprint(method, url.pathname + url.search, contentType ?? undefined, bytes);
      slot = storage && fingerprint ? `${STORAGE_PREFIX + location.pathname}#${formId(form, options)}` : null;
      const stored = slot ? remember(() => JSON.parse(storage.getItem(slot) ?? "null")) : null;
      const saved = fingerprint ? [stored, kept].find((s) => s?.fingerprint === fingerprint) : undefined;
      const resumed = saved !== undefined;
      key = resumed ? saved.key : newKey();
      kept = fingerprint ? { fingerprint, key } : null;
      slot && remember(() => storage.setItem(slot, JSON.stringify({ fingerprint, key })));
      emit("oncekey:pending", { key, resumed });
      const onRetry = async (info) => {
        emit("oncekey:retry", info);
        await options.onRetry?.(info);
      };
      const { response, settled } = await send(url, { method, body, headers }, { ...options, key, onRetry });
      if (settled) {
        kept = null;
        slot && remember(() => storage.removeItem(slot));
      }
      const replayed = isReplayed(response);
      if (response.ok) emit("oncekey:success", { key, response, replayed });
      else emit("oncekey:error", { key, error: new HTTPError(response, key), response, replayed });
    } catch (error) {
      // No answer at all, or an unknown outcome: the key stays saved, so a
      // resubmit is the same request.
      const response = error instanceof OutcomeUnknownError ? error.response : undefined;
      emit("oncekey:error", response ? { key, error, response, replayed: false } : { key, error });
    } finally {
      pending = false;
      busy(false);
    }
  }

  // Without the core there is no key and no safe retry: the submission is
  // sent once, still under the double-submit guard, and the failure is
  // reported first (LoadError in `oncekey:error`, and the console).
  async function sendUnprotected(failure, url, init) {
    emit("oncekey:error", { key: null, error: failure });
    const fetchImpl = options.fetch ?? globalThis.fetch;
    const response = await fetchImpl(new Request(url, init), options.signal ? { signal: options.signal } : undefined);
    if (response.ok) emit("oncekey:success", { key: null, response, replayed: false });
    else emit("oncekey:error", { key: null, error: new HTTPError(response, null), response, replayed: false });
  }

  const onSubmit = (event) => {
    if (!isMutation(form, event.submitter)) return;
    event.preventDefault();
    // While one submission is pending, more submits send nothing new.
    if (pending) return;
    pending = true;
    // submit() disables the buttons before its first await, so within
    // this event.
    submit(event.submitter ?? null);
  };

  form.addEventListener("submit", onSubmit);
  // Load the wasm now, not at the first submit; a failure is reported
  // then (and in the console now).
  ready().catch(() => {});
  return {
    detach() {
      form.removeEventListener("submit", onSubmit);
    },
  };
}
