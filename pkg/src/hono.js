// The `oncekey/hono` entry (SPEC §11): withIdempotency as a Hono middleware.
// The routes after it are the handler: they see the request as the layer
// hands it over (the key unquoted, `Idempotency-Attempt`), and what they
// answer, throw or time out with is what the layer decides on. A request
// the layer does not cover gets exactly what the app answers without it,
// its error handler's answer included.
import { withIdempotency } from "./worker.js";

export { IdempotencyCoordinator, NotSentError } from "./worker.js";

/** Where the request's Hono context travels through the layer. */
const HONO = Symbol("oncekey.hono");

/** The middleware; `options` as for withIdempotency. */
export function idempotency(options) {
  const protect = withIdempotency((request, _env, ctx) => ctx[HONO](request), options);
  return async function idempotency(c, next) {
    const execution = c.executionCtx;
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
