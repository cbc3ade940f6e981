/**
 * oncekey/hono — {@link withIdempotency} as a Hono middleware.
 *
 * The routes after the middleware are the protected handler: a covered
 * request with an `Idempotency-Key` runs them at most once per key; a retry
 * gets the stored answer with `Idempotent-Replayed: true`. The routes see
 * the request as the layer hands it over (`c.req.header("Idempotency-Attempt")`
 * is the attempt number), and run under `waitUntil`. On a covered request,
 * a throw that the app's error handling turns into a response below 500
 * (Hono's `HTTPException(402)`) is the answer, stored and replayed; any
 * other throw is an unknown outcome (the key stays held until its lease
 * ends), unless it is {@link NotSentError} (the key is released). A request
 * the layer does not cover gets exactly what the app answers without the
 * middleware, `onError` included.
 *
 * @example
 * ```ts
 * import { Hono } from "hono";
 * import { idempotency, IdempotencyCoordinator } from "oncekey/hono";
 *
 * export { IdempotencyCoordinator };        // bound as IDEMPOTENCY_DO
 * const app = new Hono<{ Bindings: Env }>();
 * app.use("/api/*", idempotency({ ttlSeconds: 3600 }));
 * app.post("/api/orders", async (c) => c.json(await createOrder(await c.req.json()), 201));
 * export default app;
 * ```
 *
 * @packageDocumentation
 */

import type { Env, MiddlewareHandler } from "hono";
import type { IdempotencyOptions } from "./worker.js";

export { IdempotencyCoordinator, NotSentError } from "./proxy.js";
export type { IdempotencyBindings, IdempotencyOptions } from "./worker.js";

/**
 * The middleware: every request it sees goes through the idempotency layer
 * (SPEC §1–5), the routes after it as the handler. Needs the Workers
 * `ExecutionContext` (`c.executionCtx`).
 *
 * @param options - As for `withIdempotency` ({@link IdempotencyOptions});
 * the worker's `IDEMPOTENCY_*` variables fill what they leave out.
 */
export function idempotency<E extends Env = Env>(options?: IdempotencyOptions): MiddlewareHandler<E>;
