// The HTTP side of `oncekey/worker` and `oncekey/proxy`: `proxy()` and
// `withIdempotency()`, each a `fetch` handler over the core's `Layer` (made
// once per isolate) and its `Exchange` (host.js performs its actions). The
// entries (worker.js, proxy.js) instantiate the wasm before any handler
// runs.
import { env as moduleEnv } from "cloudflare:workers";
import { Layer, misconfiguredReply, OriginKind } from "oncekey-worker-wasm";
import { drive } from "./host.js";
import { start } from "./http.js";

/**
 * The production proxy (SPEC §10) as a `fetch` handler: every request goes
 * on to the origin — the Worker bound as `ORIGIN` (`bindings.origin`), else
 * `ORIGIN_URL` with the request's path and query, or the request's own URL
 * for `ORIGIN_URL=request` — protected as `withIdempotency` protects a
 * handler. No origin configured: every request is answered 500
 * `misconfigured` naming `ORIGIN_URL`.
 */
export function proxy(options = {}) {
  // The layer that maps each request to its URL, the origin's kind and the
  // name its service is bound under: chosen by the core once the layer is
  // made.
  let layer;
  let origin;
  let service;
  const toOrigin = (request, env) => forward(origin, layer, request, env[service]);
  // Whether the origin's request carries the client's `cf` (origin.js,
  // `outgoing`): the core's rule, read once the origin is chosen.
  const own = { readsCf: true };
  return protect(toOrigin, { ...options, [OWN_ORIGIN]: own }, (made, env, bindings) => {
    origin = made.proxyOrigin(env);
    own.readsCf = made.originReadsCf;
    layer = made;
    service = bindings.origin;
  });
}

/**
 * Sends `request` on to the proxy's origin: the bound Worker, or the URL
 * the core gives (`ORIGIN_URL`'s, or the request's own). Redirects are
 * handed back: the runtime gives every incoming request the `manual`
 * redirect mode, and the requests the host makes from it keep it. A URL's
 * request is made from the parts, not copied from `request`: a copy would
 * copy its `cf` too, which a URL has no use for.
 */
function forward(origin, layer, request, service) {
  if (origin === OriginKind.Service) return service.fetch(request);
  const { method, headers, body, redirect, signal } = request;
  return fetch(layer.originTarget(request.url) ?? request.url, { method, headers, body, redirect, signal });
}

/** 500 `misconfigured`, with the core's log line. */
function misconfiguredResponse(message) {
  const { status, headers, body, line } = misconfiguredReply(message);
  console.error(line);
  return new Response(body, { status, headers });
}

/**
 * Wraps `handler` so that every covered request with an `Idempotency-Key`
 * runs it at most once per key; returns a `fetch` handler. The options are
 * validated by the core once per isolate (merged over `env`'s
 * `IDEMPOTENCY_*` variables): when the module loads, where the runtime
 * offers `env` there, else on the first request.
 */
export function withIdempotency(handler, options = {}) {
  if (typeof handler !== "function") throw new TypeError("withIdempotency: the handler must be a function");
  return protect(handler, options);
}

/**
 * The `fetch` handler that runs `handler` behind the layer made from
 * `options` and `env`, once per isolate (at load or on the first request,
 * below); `prepare(layer, env, bindings)`, if given, runs then too, and
 * what it throws makes the worker misconfigured like a bad option does.
 */
function protect(handler, options, prepare) {
  const { [OWN_ORIGIN]: own, ...layerOptions } = options ?? {};
  const proxying = own !== undefined;
  /**
   * The layer (or why there is none) made from `env`, with what it was
   * made from: the core checks `env` for it (its variables, its bindings'
   * names and kinds) and names the bindings.
   */
  const make = (env) => {
    let made;
    try {
      made = new Layer(layerOptions, env);
      const bindings = made.bindings;
      prepare?.(made, env, bindings);
      return { env, layer: made, headersRead: made.headersRead(), bindings };
    } catch (error) {
      made?.free();
      return { env, misconfigured: error instanceof Error ? error.message : String(error) };
    }
  };
  // Variables are fixed for an isolate's life: the layer is made once and
  // kept. Where the runtime hands the module its `env` at load, it is made
  // then, off the first request's path (on Cloudflare the script loads
  // while the TLS handshake is under way), and the first request only
  // checks that its own `env` says the same; else on the first request.
  let made = moduleEnv !== undefined && Object.keys(moduleEnv).length > 0 ? make(moduleEnv) : undefined;
  let checked = false;
  return async function fetch(request, env, ctx) {
    if (!checked) {
      if (made === undefined || !sameSettings(made.env, env ?? {})) {
        made?.layer?.free();
        made = make(env ?? {});
      }
      checked = true;
    }
    if (made.misconfigured !== undefined) return misconfiguredResponse(made.misconfigured);
    const { bindings } = made;
    const exchange = start(made.layer, request, made.headersRead, env?.[bindings.metrics] !== undefined);
    const keepCf = own?.readsCf ?? true;
    return drive(exchange, { handler, bindings, request, env, ctx, userHandler: !proxying, keepCf });
  };
}

/**
 * Whether two `env`s configure the layer alike: the same names, each a
 * variable of the same value or a binding of the same type. (The runtime's
 * module-level `env` and a request's are different objects over the same
 * bindings.)
 */
function sameSettings(a, b) {
  const names = Object.keys(a);
  if (names.length !== Object.keys(b).length) return false;
  const bound = (value) => (typeof value === "object" && value !== null) || typeof value === "function";
  return names.every((name) =>
    bound(a[name]) ? bound(b[name]) && typeof a[name] === typeof b[name] : a[name] === b[name],
  );
}

/**
 * Marks the proxy's own origin call, whose failures are the layer's to
 * answer (502); its value says whether that origin reads the client's `cf`.
 */
const OWN_ORIGIN = Symbol("oncekey.proxy");
