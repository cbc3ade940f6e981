// The `oncekey/hono` entry (SPEC §11): withIdempotency as a Hono middleware.
// The routes after it are the handler: they see the request as the layer
// hands it over (the key unquoted, `Idempotency-Attempt`), and what they
// answer, throw or time out with is what the layer decides on. A request
// the layer does not cover gets exactly what the app answers without it,
// its error handler's answer included.
//
// Over `oncekey/proxy`'s HTTP-only wasm: a Hono app loads no queue code.
import { withIdempotency } from "./proxy.js";

export { IdempotencyCoordinator, NotSentError } from "./proxy.js";

/** Where the request's Hono context travels through the layer. */
const HONO = Symbol("oncekey.hono");

/** The middleware; `options` as for withIdempotency. */
export function idempotency(options) {
  const protect = withIdempotency((request, _env, ctx) => ctx[HONO](request), options);
  return async function idempotency(c, next) {
    const execution = executionOf(c);
    const ctx = {
      waitUntil: (promise) => execution.waitUntil(promise),
      passThroughOnException: () => execution.passThroughOnException(),
      props: execution.props,
      [HONO]: async (request) => {
        c.req.raw = request;
        await next();
        // Hono has already turned a route's throw into its error handler's
        // response. An attempt (the layer sets Idempotency-Attempt on every
        // covered request, and only there) that ended in a response below
        // 500 has its answer: HTTPException(402) is stored and replayed like
        // one returned. Above that, the layer must see the throw: an
        // unknown outcome, or NotSentError.
        const attempt = request.headers.has("idempotency-attempt");
        if (attempt && c.error !== undefined && !(c.res?.status < 500)) throw c.error;
        return c.res;
      },
    };
    const response = await protect(c.req.raw, c.env, ctx);
    // Replaced, not merged with the route's response headers.
    c.res = undefined;
    c.res = response;
  };
}

/**
 * The request's ExecutionContext: the layer runs its store calls after the
 * answer, under its `waitUntil`. Hono throws a bare "This context has no
 * ExecutionContext" for a request without one (`app.request(path, init,
 * env)` with no fourth argument); this says what oncekey needs.
 */
function executionOf(c) {
  try {
    return c.executionCtx;
  } catch {
    throw new Error(
      "oncekey/hono: this request has no ExecutionContext. oncekey runs its store calls under ctx.waitUntil, " +
        "after the answer: call app.request(path, init, env, ctx) with one, as the runtime does " +
        "(in the Workers Vitest integration, createExecutionContext() from cloudflare:test).",
    );
  }
}
