/**
 * oncekey/worker — exactly-once mutations inside your own Cloudflare Worker.
 *
 * `withIdempotency` wraps a `fetch` handler: a covered request that carries
 * an `Idempotency-Key` runs the handler at most once per key while the key
 * is remembered; retries get the stored answer with `Idempotent-Replayed:
 * true`, a duplicate that arrives while the first is running waits for it
 * inside the key's Durable Object and gets its answer (past the wait, 409
 * `key-in-flight`), the same key with another request gets 422
 * `key-reused`. A request the layer does not cover (its method, its path,
 * or no key where keys are optional) runs the handler exactly as without
 * oncekey: what it returns or throws reaches the runtime untouched.
 * Every decision is made by oncekey's Rust core, compiled to wasm; this
 * module only performs them. A Durable Object (`IdempotencyCoordinator`)
 * makes each reservation atomic; Workers KV keeps copies of completed
 * answers.
 *
 * @example
 * ```ts
 * // src/index.ts
 * import { withIdempotency, IdempotencyCoordinator } from "oncekey/worker";
 * export { IdempotencyCoordinator };          // bound as IDEMPOTENCY_DO
 * export default {
 *   fetch: withIdempotency(async (request, env, ctx) => handle(request), { ttlSeconds: 3600 }),
 * };
 * ```
 *
 * ```toml
 * # wrangler.toml
 * [[durable_objects.bindings]]
 * name = "IDEMPOTENCY_DO"
 * class_name = "IdempotencyCoordinator"
 *
 * [[migrations]]
 * tag = "oncekey-v1"
 * new_sqlite_classes = ["IdempotencyCoordinator"]
 *
 * [[kv_namespaces]]
 * binding = "IDEMPOTENCY_KV"
 * id = "<your namespace id>"
 * ```
 *
 * The types build on the Workers runtime types (`wrangler types`, or
 * `@cloudflare/workers-types`).
 *
 * @packageDocumentation
 */

import { DurableObject } from "cloudflare:workers";

/**
 * The options of {@link withIdempotency}: the `IDEMPOTENCY_*` variables of
 * the worker's `[vars]` in camelCase. An option given here wins over its
 * variable; a variable fills what the options leave out; the default fills
 * the rest. Every value is validated by the core once per isolate (when
 * the module loads, where the runtime offers `env` there through
 * `cloudflare:workers`, else on the first request): a
 * bad one (or an unknown option) answers every request with 500
 * `misconfigured` naming the option and its variable, and logs it with
 * `console.error` — it is never replaced by a default.
 *
 * Lists may be given as arrays or as comma-separated strings, numbers as
 * numbers or strings, flags as booleans or `"true"`/`"false"`.
 *
 * @example
 * ```ts
 * withIdempotency(handler, {
 *   ttlSeconds: 3600,
 *   paths: ["/api/*"],
 *   requiredPaths: ["/api/payments"],
 *   scope: ["header:authorization", "cookie:session"],
 * });
 * ```
 */
export interface IdempotencyOptions {
  /**
   * The proxy's origin (`ORIGIN_URL`), read by {@link proxy} (see
   * {@link ProxyOptions}). `withIdempotency` validates it like every other
   * option and does not use it: your handler is the origin.
   * @defaultValue unset
   */
  originUrl?: string;
  /**
   * How long a completed answer is remembered and replayed, in seconds
   * (60 to 2592000). `IDEMPOTENCY_TTL_SECONDS`.
   * @defaultValue `86400` (a day)
   */
  ttlSeconds?: number | string;
  /**
   * How long an attempt holds its key, in seconds (1 to 900; above
   * `originTimeoutSeconds`). After it, an attempt whose outcome is unknown
   * (the handler threw, or ran past its time limit) is reclaimed by the
   * next retry, which runs as the next attempt. `IDEMPOTENCY_LEASE_SECONDS`.
   * @defaultValue `120`
   */
  leaseSeconds?: number | string;
  /**
   * The handler's time limit, in seconds, for its whole answer (body
   * included); must be below `leaseSeconds`. Past it the outcome is
   * unknown and the caller gets 502 `origin-unreachable`.
   * `IDEMPOTENCY_ORIGIN_TIMEOUT_SECONDS`.
   * @defaultValue `100`; under a shorter lease, the lease less three store
   * time limits and 0.5 s, but at least half the lease (lease 30 → 15)
   */
  originTimeoutSeconds?: number | string;
  /**
   * How long a duplicate that arrives while the first attempt runs waits
   * for it, in ms (0 to the lease): if the attempt stores an answer the
   * duplicate gets it as a replay, if it releases the key the duplicate
   * runs as the next attempt; past the wait it gets 409 `key-in-flight`.
   * `0` answers 409 at once. The wait happens inside the key's Durable
   * Object, without polling storage. `IDEMPOTENCY_IN_FLIGHT_WAIT_MS`.
   * @defaultValue `10000`, or the lease if shorter
   */
  inFlightWaitMs?: number | string;
  /**
   * Covered methods; other requests pass through untouched, key or not.
   * `IDEMPOTENCY_METHODS`.
   * @defaultValue `["POST", "PATCH"]`
   * @example `methods: ["POST", "PUT", "PATCH", "DELETE"]`
   */
  methods?: string[] | string;
  /**
   * Covered paths: prefixes ending in `*`, or exact paths.
   * `IDEMPOTENCY_PATHS`.
   * @defaultValue `["/*"]` (every path)
   * @example `paths: ["/api/*", "/checkout"]`
   */
  paths?: string[] | string;
  /**
   * Answer 400 `missing-key` to a covered request without a key (by
   * default such a request passes through unprotected).
   * `IDEMPOTENCY_REQUIRED`.
   * @defaultValue `false`
   */
  required?: boolean | string;
  /**
   * Paths (same syntax as `paths`) where a key is required; they are
   * covered too. `IDEMPOTENCY_REQUIRED_PATHS`.
   * @defaultValue `[]`
   * @example `requiredPaths: ["/api/payments/*"]`
   */
  requiredPaths?: string[] | string;
  /**
   * Where the caller's identity comes from, so that one caller's key never
   * replays another caller's answer: `header:<name>` or `cookie:<name>`
   * entries. An empty list puts every caller in one anonymous scope.
   * `IDEMPOTENCY_SCOPE`.
   * @defaultValue `["header:authorization"]`
   */
  scope?: string[] | string;
  /**
   * The largest keyed request body, in bytes (counted as read); larger is
   * 413 `body-too-large`. `IDEMPOTENCY_MAX_BODY_BYTES`.
   * @defaultValue `1048576`
   */
  maxBodyBytes?: number | string;
  /**
   * The largest response body stored for replay, in bytes (at most
   * 1572864). A larger answer still reaches its caller; a replay of it
   * has status and headers, no body, and `Idempotent-Body-Omitted: true`.
   * `IDEMPOTENCY_MAX_RESPONSE_BYTES`.
   * @defaultValue `1048576`
   */
  maxResponseBytes?: number | string;
  /**
   * Statuses that mean "not done, try later": the key is released and a
   * retry runs again. Any other status is stored and replayed, 5xx
   * included. `IDEMPOTENCY_RELEASE_ON`.
   * @defaultValue `[408, 425, 429, 503]`
   */
  releaseOn?: number | number[] | string;
  /**
   * `"durable"`: the Durable Object reserves each key (at most one run).
   * `"kv"`: for accounts without Durable Objects — replay only, from KV;
   * two concurrent duplicates can both run. `IDEMPOTENCY_CONSISTENCY`.
   * @defaultValue `"durable"`
   */
  consistency?: "durable" | "kv";
  /**
   * How KV copies of completed answers are used: `"fallback"` replays a
   * copy when the Durable Object fails; `"read-first"` also reads KV before
   * the object (for traffic that is mostly retries); `"off"` writes none.
   * `IDEMPOTENCY_KV_REPLAY`.
   * @defaultValue `"fallback"`
   */
  kvReplay?: "fallback" | "read-first" | "off";
  /**
   * When a completed answer's KV copy is written (each is a KV write):
   * `"on-retry"`, once its key is asked for again (its first replay, or a
   * duplicate that waited), so a key never retried costs none; `"always"`,
   * at completion. `IDEMPOTENCY_KV_COPY`.
   * @defaultValue `"on-retry"`
   * @example `withIdempotency(handler, { kvCopy: "always", kvReplay: "read-first" })`
   */
  kvCopy?: "on-retry" | "always";
  /**
   * Time limit of each Durable Object or KV call, in ms (1 to 60000). A
   * store that fails or is late answers 503 `store-unavailable` (or a KV
   * copy), and the handler is not called. `IDEMPOTENCY_STORE_TIMEOUT_MS`.
   * @defaultValue `5000`
   */
  storeTimeoutMs?: number | string;
  /**
   * When the store fails, run the handler unprotected (and log it) instead
   * of answering 503. `IDEMPOTENCY_FAIL_OPEN`.
   * @defaultValue `false`
   */
  failOpen?: boolean | string;
  /**
   * Origins allowed to call cross-origin (`"*"` for any): the layer answers
   * their preflights for covered methods and exposes its headers.
   * `IDEMPOTENCY_CORS_ORIGINS`.
   * @defaultValue `[]` (none)
   */
  corsOrigins?: string[] | string;
  /**
   * Allowed callers may send credentials (cookies): the layer's CORS answers
   * and preflights carry `Access-Control-Allow-Credentials: true`, always with
   * the caller's own origin, never `*`. `IDEMPOTENCY_CORS_CREDENTIALS`.
   * @defaultValue `false`
   */
  corsCredentials?: boolean;
  /**
   * `"inject"`: every post form in an HTML answer gets a hidden
   * `idempotency_key` field with a new UUIDv7 (streamed through
   * `HTMLRewriter`), and a form post with no `Idempotency-Key` header is
   * keyed by that field, which your handler never sees. `IDEMPOTENCY_FORMS`.
   * @defaultValue `"off"`
   */
  forms?: "off" | "inject";
  /**
   * The bearer token of the admin paths, `GET /.well-known/oncekey/records/{record}`
   * (a record's state) and `POST …/{record}/release` (release its attempt
   * in flight). Keep it a secret (`npx wrangler secret put
   * IDEMPOTENCY_ADMIN_TOKEN`) rather than an option in code; unset, those
   * paths reach the handler like any other. `IDEMPOTENCY_ADMIN_TOKEN`.
   * @defaultValue unset (no admin paths)
   */
  adminToken?: string;
  /**
   * Seal stored answers at rest (AES-256-GCM, bound to their record): one
   * or more keys, comma separated, each 32 random bytes in standard base64
   * (`openssl rand -base64 32`). The first seals, every one opens. Keep it a
   * secret (`npx wrangler secret put IDEMPOTENCY_SEAL_KEYS`) rather than an
   * option in code. `IDEMPOTENCY_SEAL_KEYS`.
   * @defaultValue unset (answers stored as the origin gave them)
   */
  sealKeys?: string;
  /**
   * Routes, each with its own policy, key sources, fingerprint selection or
   * webhook sender; the first that matches a request holds it, and a
   * request no route matches follows the other options. A route's requests
   * are covered whatever `methods` and `paths` say. Checked when the layer
   * is made: a route that can never match (an earlier one takes all its
   * requests), an unknown member, a policy out of range, or a webhook
   * route whose secret is not bound in `env` is `misconfigured`, naming
   * the route; such a route fails alone (its own requests get the 500). `IDEMPOTENCY_ROUTES` (a JSON array, as a string).
   * @defaultValue `[]` (none)
   * @example
   * ```ts
   * withIdempotency(handler, {
   *   routes: [
   *     { match: "POST /v1/password-resets", ttlSeconds: 3600 },
   *     { match: "POST /v1/payments/*", key: ["header:idempotency-key", "json:/request_id"],
   *       fingerprint: { ignore: ["/client_ts"] } },
   *     { match: "POST /hooks/stripe", webhook: "stripe", secret: "STRIPE_WEBHOOK_SECRET" },
   *   ],
   * });
   * ```
   */
  routes?: IdempotencyRoute[] | string;
  /**
   * The share of routine decisions (a first execution whose answer was
   * stored, a replay) whose log line is written, from 0 to 1 with at most
   * six decimals, drawn per request; every other decision (a refusal, a
   * conflict, a wait that ran out, an unknown outcome, a release, a store
   * or origin failure) is always logged, and data points are never
   * sampled. `IDEMPOTENCY_LOG_SAMPLE`.
   * @defaultValue `1` (every line)
   * @example `withIdempotency(handler, { logSample: 0.01 })`
   */
  logSample?: number | string;
  /**
   * The binding names this worker uses, if not the defaults. Read by
   * `oncekey/worker` only, never from `env`.
   * @example `bindings: { coordinator: "LOCKS", kv: "ANSWERS" }`
   */
  bindings?: IdempotencyBindings;
}

/**
 * One route of {@link IdempotencyOptions.routes}: the requests it matches
 * and what they are held to. Each policy it leaves out is the option's (or
 * variable's), but a webhook route's `releaseOn`, which is every status
 * outside 2xx (`"3xx,4xx,5xx"`) unless given: a sender retries any
 * answer but a 2xx, and the retry runs again.
 */
export interface IdempotencyRoute {
  /**
   * Methods, a space and a path pattern (`paths`' syntax: a prefix ending in
   * `*`, or an exact path).
   * @example `"POST /v1/payments/*"`, `"POST,PATCH /v1/orders/*"`
   */
  match: string;
  /** As {@link IdempotencyOptions.ttlSeconds}, for this route. */
  ttlSeconds?: number;
  /** As {@link IdempotencyOptions.leaseSeconds}, for this route. */
  leaseSeconds?: number;
  /** As {@link IdempotencyOptions.originTimeoutSeconds}, for this route. */
  originTimeoutSeconds?: number;
  /** As {@link IdempotencyOptions.inFlightWaitMs}, for this route. */
  inFlightWaitMs?: number;
  /** As {@link IdempotencyOptions.releaseOn}, for this route: a list of statuses. */
  releaseOn?: number[];
  /** As {@link IdempotencyOptions.required}, for this route. */
  required?: boolean;
  /** As {@link IdempotencyOptions.maxBodyBytes}, for this route. */
  maxBodyBytes?: number;
  /** As {@link IdempotencyOptions.maxResponseBytes}, for this route. */
  maxResponseBytes?: number;
  /**
   * Where the key is, tried in order, the first that holds a value
   * deciding (a malformed one is 400 `invalid-key`): `header:<name>`,
   * `json:<JSON pointer>` (a string or number member of a JSON body) or
   * `form:<field>` (a form body's field, left in the body). Not on a
   * webhook route, whose key is the sender's delivery id.
   * @defaultValue `["header:idempotency-key"]`
   * @example `key: ["header:idempotency-key", "json:/request_id"]`
   */
  key?: string[];
  /**
   * Members of a JSON body left out of the fingerprint, as JSON pointers (a
   * client timestamp that changes on every retry); the rest of the body
   * counts by its meaning (member order and white space do not).
   * @example `fingerprint: { ignore: ["/client_ts"] }`
   */
  fingerprint?: { ignore?: string[] };
  /**
   * The webhook sender whose deliveries this route takes: each delivery's
   * signature is verified before anything is stored (401
   * `webhook-signature` otherwise), and its delivery id is the key. POST
   * only; needs `secret`.
   */
  webhook?: "standard" | "github" | "stripe" | "shopify";
  /**
   * With `webhook`: the name of the secret in `env` (`npx wrangler secret
   * put NAME`) holding the signing secret, several comma separated while
   * one is rotated, each as the sender gives it (`whsec_…` for Standard
   * Webhooks and Stripe). Never the secret itself.
   */
  secret?: string;
}

/** The names of the bindings {@link withIdempotency} uses. */
export interface IdempotencyBindings {
  /**
   * The Durable Object namespace of {@link IdempotencyCoordinator}.
   * @defaultValue `"IDEMPOTENCY_DO"`
   */
  coordinator?: string;
  /**
   * The KV namespace for copies of completed answers (and the store, with
   * `consistency: "kv"`). Optional with `kvReplay: "off"`.
   * @defaultValue `"IDEMPOTENCY_KV"`
   */
  kv?: string;
  /**
   * The Workers Analytics Engine dataset that receives one data point per
   * decision (outcome, tier, finish, record; attempt, status, durations).
   * Optional: unbound, none is written.
   * @defaultValue `"IDEMPOTENCY_METRICS"`
   */
  metrics?: string;
  /**
   * For {@link proxy} only: the service binding of the Worker that is the
   * origin. When bound it wins over `originUrl`.
   * @defaultValue `"ORIGIN"`
   */
  origin?: string;
}

/**
 * The options of {@link proxy}: those of {@link withIdempotency} and the
 * origin.
 */
export interface ProxyOptions extends IdempotencyOptions {
  /**
   * The origin: an `http://` or `https://` URL (the request's path and
   * query are appended), or `"request"` to send each request on to its own
   * URL (a worker on a route in front of the zone's origin). A Worker bound
   * as `bindings.origin` wins over it. `ORIGIN_URL`.
   * @defaultValue unset: every request is answered 500 `misconfigured`
   */
  originUrl?: string;
}

/**
 * The production proxy (the project's root `wrangler.toml`, without a Rust
 * toolchain): every request goes on to the origin, keyed requests
 * protected as {@link withIdempotency} protects a handler. Redirects are
 * handed back to the caller, not followed.
 *
 * @example
 * ```js
 * // src/index.js — with ORIGIN_URL in [vars], or a service binding ORIGIN
 * import { proxy, IdempotencyCoordinator } from "oncekey/worker";
 * export { IdempotencyCoordinator };
 * export default { fetch: proxy() };
 * ```
 */
export function proxy<Env = unknown>(
  options?: ProxyOptions,
): (request: Request, env: Env, ctx: ExecutionContext) => Promise<Response>;

/**
 * A `fetch` handler as Workers call it. `withIdempotency` calls a handler
 * at most once per request.
 */
export type FetchHandler<Env = unknown> = (
  request: Request,
  env: Env,
  ctx: ExecutionContext,
) => Response | Promise<Response>;

/**
 * Protects `handler`: every covered request (`methods` on `paths`) with an
 * `Idempotency-Key` runs it at most once per key while the key is
 * remembered; the retries of a completed request get its answer again with
 * `Idempotent-Replayed: true`. Requests without a key, and uncovered ones,
 * go to `handler` unchanged (but for a client-sent `Idempotency-Attempt`,
 * always removed).
 *
 * The handler of a keyed request receives a new `Request` with the key
 * (unquoted) in `Idempotency-Key` and the attempt number in
 * `Idempotency-Attempt` (a fencing token: 1, then 2 after a release or a
 * reclaimed lease), and runs under `ctx.waitUntil`, so a client that goes
 * away does not leave the key in flight. Its answer is read in full
 * within `originTimeoutSeconds`.
 *
 * How the handler ends decides what a retry gets:
 * - it returns a response: stored and replayed (unless its status is in
 *   `releaseOn`: then released);
 * - it throws {@link NotSentError}: released, a retry runs as the next
 *   attempt; the caller gets 502 `origin-unreachable` saying the request
 *   was not carried out;
 * - it throws anything else, or runs past its time limit: the outcome is
 *   unknown (the throw is logged with its stack); the caller gets 502,
 *   retries get 409 `outcome-unknown` until the lease ends, then run as the
 *   next attempt.
 *
 * @param handler - Your `fetch` handler.
 * @param options - See {@link IdempotencyOptions}; `env`'s `IDEMPOTENCY_*`
 * variables fill what they leave out.
 * @returns A `fetch` handler for `export default { fetch }`.
 *
 * @example
 * ```ts
 * export default {
 *   fetch: withIdempotency(async (request, env: Env) => {
 *     const order = await createOrder(env, await request.json());
 *     return Response.json(order, { status: 201 });
 *   }, { paths: ["/api/*"] }),
 * } satisfies ExportedHandler<Env>;
 * ```
 */
export function withIdempotency<Env = unknown>(
  handler: FetchHandler<Env>,
  options?: IdempotencyOptions,
): (request: Request, env: Env, ctx: ExecutionContext) => Promise<Response>;

/**
 * The Durable Object class that reserves keys atomically: export it from
 * your worker's main module and bind it as `IDEMPOTENCY_DO` (or the name
 * in `options.bindings.coordinator`), with a `new_sqlite_classes`
 * migration. One object per key (and scope and host) holds that key's
 * record; an alarm deletes it when it expires.
 *
 * @example
 * ```ts
 * export { IdempotencyCoordinator } from "oncekey/worker";
 * ```
 */
export class IdempotencyCoordinator extends DurableObject {
  /**
   * One store call, as {@link withIdempotency} sends it over RPC: the
   * encoded call in, the encoded reply out. Not for use by hand.
   */
  call(call: Uint8Array): Promise<Uint8Array>;
  /**
   * A queue consumer's counters (in the object `consumer-counters:<name>`),
   * as {@link withQueueIdempotency} adds each batch's: `delta` added when
   * given; the encoded total. Not for use by hand: read them with
   * {@link queueStats}.
   */
  counters(delta?: Uint8Array): Promise<Uint8Array | undefined>;
  /** The expiry alarm: deletes the record once it has expired. */
  alarm(): Promise<void>;
  /**
   * The same store call over `fetch` (`POST`, the call's bytes as the
   * body), and for diagnostics `GET`: `{calls, stored, alarm}` — store
   * calls this instance served, whether a record is stored, the alarm's
   * time in ms or `null`.
   */
  fetch(request: Request): Promise<Response>;
}

/**
 * Throw it from your handler when it did nothing — it did not act on the
 * request, so running it again is safe (a dependency was down before any
 * write, say). The key is released, the caller gets 502
 * `origin-unreachable`, and the retry runs as the next attempt. Any other
 * throw is an unknown outcome: the key stays held until its lease ends.
 *
 * @example
 * ```ts
 * if (!(await inventory.reserve(item))) throw new NotSentError("inventory service unreachable");
 * ```
 */
export class NotSentError extends Error {
  /**
   * @param message - What happened (logged in the decision's log line).
   * @defaultValue `message`: `"the handler did not act on the request"`
   */
  constructor(message?: string, options?: ErrorOptions);
  readonly name: "NotSentError";
}

/**
 * How a queue consumer names a message for deduplication:
 * - `"message-id"` (the default): the queue's message id — a redelivery is
 *   a duplicate, the same event sent twice is not;
 * - `{ contentHash: { ignore } }`: a SHA-256 of the JSON body with the named
 *   top-level fields left out (timestamps, event ids) — the same content sent
 *   twice is one event;
 * - a function of the message: its business key (`"OrderPlaced:" + orderId`),
 *   a string of 1 to 255 visible ASCII characters (a whole number counts as
 *   its digits).
 *
 * An event is never taken for another: a message whose function throws or
 * returns anything else (`undefined` for a missing field, `""`), or whose
 * body the content hash cannot read (a `Map`, a `BigInt`, a cycle), is
 * retried alone with a log line naming its id, never acked as a duplicate.
 */
export type QueueEventKey<Body = unknown> =
  | "message-id"
  | { contentHash: { ignore?: readonly string[] } }
  | ((message: Message<Body>) => string | number);

/** Options of {@link withQueueIdempotency}; every one may be left out. */
export interface QueueIdempotencyOptions<Body = unknown> {
  /**
   * The consumer's name: its records and counters are kept apart from every
   * other consumer's under it.
   * @defaultValue the queue's name (`batch.queue`)
   */
  name?: string;
  /** How messages are keyed. @defaultValue `"message-id"` */
  key?: QueueEventKey<Body>;
  /**
   * How many of a batch's messages run at once, 1 to 100: one key's
   * messages still run one after another (two copies of an event in one
   * batch settle as one run and one duplicate).
   * @defaultValue 1 (the batch in order)
   * @example `withQueueIdempotency(handler, { concurrency: 8 })`
   */
  concurrency?: number;
  /** How long a handled event's key is remembered (`IDEMPOTENCY_TTL_SECONDS`). */
  ttlSeconds?: number;
  /**
   * How long a run holds its key (`IDEMPOTENCY_LEASE_SECONDS`): a consumer that
   * dies mid-handler leaves the key to the next delivery after it.
   */
  leaseSeconds?: number;
  /**
   * How long the handler is waited for (`IDEMPOTENCY_ORIGIN_TIMEOUT_SECONDS`,
   * below the lease). A handler still running then is not waited for; its key
   * stays leased and the message is retried after the lease.
   */
  handlerTimeoutSeconds?: number;
  /** The time limit of one store call (`IDEMPOTENCY_STORE_TIMEOUT_MS`). */
  storeTimeoutMs?: number;
  /** The longest delay asked of the queue, 1–43200. @defaultValue 300 */
  maxRetryDelaySeconds?: number;
  /** Binding names. */
  bindings?: Pick<IdempotencyBindings, "coordinator" | "metrics">;
}

/** What the handler is told about its run. */
export interface QueueRun {
  /** The key the message was deduplicated under. */
  readonly key: string;
  /** 1 on a first run; higher after a failure or a reclaimed lease. */
  readonly attempt: number;
  /**
   * Whether this run took over an expired lease: an earlier run may have done
   * part of the work, so the handler must tolerate it.
   */
  readonly reclaimed: boolean;
}

/** A queue handler as {@link withQueueIdempotency} calls it. */
export type QueueMessageHandler<Env = unknown, Body = unknown> = (
  message: Message<Body>,
  env: Env,
  ctx: ExecutionContext,
  run: QueueRun,
) => void | Promise<void>;

/**
 * Wraps a queue handler so that each message's `handler` runs at most once
 * per event key while the key is remembered (SPEC §11), decided by the same
 * core as the Rust `Consumer`. The wrapper acknowledges or retries every
 * message itself: a handler that returns has done its work; one that throws
 * is retried with backoff (1, 2, 4 … s) and runs again, so it must tolerate
 * a second run after a failure or a crash. Do not call `message.ack()` or
 * `message.retry()` in it.
 *
 * @example
 * ```ts
 * import { IdempotencyCoordinator, withQueueIdempotency } from "oncekey/worker";
 *
 * export { IdempotencyCoordinator };
 * export default {
 *   queue: withQueueIdempotency<Env, OrderPlaced>(
 *     async (message, env) => { await awardPoints(env, message.body); },
 *     { key: { contentHash: { ignore: ["publishedAt"] } } },
 *   ),
 * } satisfies ExportedHandler<Env, OrderPlaced>;
 * ```
 *
 * @throws TypeError when `handler` is not a function. A bad option throws
 * from the first batch (naming the option), and the queue retries it.
 * @returns A `queue` handler for `export default { queue }`.
 */
export function withQueueIdempotency<Env = unknown, Body = unknown>(
  handler: QueueMessageHandler<Env, Body>,
  options?: QueueIdempotencyOptions<Body>,
): (batch: MessageBatch<Body>, env: Env, ctx: ExecutionContext) => Promise<void>;

/** A queue consumer's counters, summed over every batch and isolate. */
export interface QueueStats {
  /** Messages whose handler ran for the first time under their key (attempt 1); a run after a release or a reclaim is not counted here. */
  readonly firstRuns: number;
  /** Messages acknowledged as duplicates without running the handler. */
  readonly duplicatesSkipped: number;
  /** Messages retried because another consumer held their key. */
  readonly inFlightConflicts: number;
  /** Handler failures that released their key for a retry. */
  readonly releases: number;
  /** Runs that took over an expired lease (a later attempt, not a first run). */
  readonly reclaims: number;
  /**
   * Messages retried because their key (from your key function) was handled
   * for an event with other content: retried until they dead-letter, never
   * acknowledged as that event's duplicate.
   */
  readonly keysReused: number;
}

/**
 * The counters of the consumer named `name` (its queue's name unless its
 * options named it).
 */
export function queueStats(
  env: unknown,
  name: string,
  options?: { bindings?: Pick<IdempotencyBindings, "coordinator"> },
): Promise<QueueStats>;
