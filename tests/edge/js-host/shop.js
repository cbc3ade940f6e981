// The embedded demo origin of SPEC §7 on the JavaScript host: a port of
// workers/demo/src/shop.rs, answer for answer. `POST /api/orders` creates an
// order and a pretend charge, `GET /api/orders?item=` counts executions.
// `delay_ms` slows it down; `Demo-Fault` injects faults: `unavailable` (503,
// nothing created), `drop` (created, then the handler throws: no answer, an
// unknown outcome, as the Rust demo's OriginError::NoAnswer) and `error`
// (created, then a 500).
// An order with a customer publishes `OrderPlaced` for the loyalty flow
// (loyalty.js), which `GET /api/loyalty/…` and `/api/consumer/stats` read.

import { serveClassic } from "./classic.js";
import { publish, serveLoyalty } from "./loyalty.js";

const MAX_DELAY_MS = 10_000;
const PROBLEM_CONTENT_TYPE = "application/problem+json";

/** Serves one request to the demo origin; throws for `Demo-Fault: drop`. */
export async function serve(request, env) {
  const path = new URL(request.url).pathname;
  try {
    if (path === "/api/orders") {
      if (request.method === "POST") return await create(request, env);
      if (request.method === "GET") return await list(request, env);
      return problem(405, "method-not-allowed", "Use GET or POST on /api/orders.");
    }
    if (path === "/classic" || path.startsWith("/classic/")) return await serveClassic(request, env);
    if (request.method === "GET" && (path.startsWith("/api/loyalty/") || path === "/api/consumer/stats")) {
      return await serveLoyalty(path, env);
    }
    return problem(404, "not-found", "No such route in the demo origin.");
  } catch (error) {
    if (error instanceof Dropped) throw error;
    return problem(500, "demo-failed", `The demo origin failed: ${error instanceof Error ? error.message : error}`);
  }
}

/** The answer that never comes (`Demo-Fault: drop`). */
class Dropped extends Error {}

async function create(request, env) {
  const url = new URL(request.url);
  const delay = url.searchParams.get("delay_ms");
  let delayMs = 0;
  if (delay !== null) {
    delayMs = parseUnsigned(delay);
    if (delayMs === undefined || delayMs > MAX_DELAY_MS) {
      return problem(400, "bad-delay", "delay_ms must be a whole number from 0 to 10000.");
    }
  }
  if (delayMs > 0) await new Promise((resolve) => setTimeout(resolve, delayMs));
  const fault = request.headers.get("demo-fault");
  if (fault === "unavailable") {
    const response = problem(503, "unavailable", "The payment provider is unavailable; try again.");
    response.headers.set("Retry-After", "1");
    return response;
  }
  const attemptHeader = request.headers.get("idempotency-attempt");
  const attempt = attemptHeader === null ? undefined : parseUnsigned(attemptHeader);
  let input;
  try {
    input = parseJson(await request.text());
  } catch {
    return badOrder();
  }
  const valid = validate(input);
  if (valid === undefined) return badOrder();
  const created = await place(env, { ...valid, attempt });
  await publish(env, created, fault);
  if (fault === "drop") throw new Dropped("Demo-Fault: drop");
  // The order exists but the answer is a 500: its outcome is unknown to the
  // caller, so the layer stores it rather than running it again.
  if (fault === "error") return problem(500, "charge-failed", "The order was created but the answer failed.");
  return new Response(JSON.stringify(created), { status: 201, headers: { "content-type": "application/json" } });
}

/** Creates an order and its pretend charge in the order book: the order as stored. */
export async function place(env, { item, quantity, amountCents, customerId, attempt }) {
  const now = Date.now();
  // Keys in serde_json's order (a sorted map), as the Rust demo writes them.
  const order = {
    amountCents,
    attempt: attempt !== undefined && attempt <= 0xffff_ffff ? attempt : null,
    chargeId: newId(now),
    createdAt: new Date().toISOString(),
    customerId: customerId ?? null,
    item,
    orderId: newId(now),
    quantity,
  };
  const added = await env.ORDERS.get(env.ORDERS.idFromName(item)).fetch("https://orders.demo/add", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(order),
  });
  return added.json();
}

/** Every order of `item`, as the order book lists them. */
export function ordersOf(env, item) {
  return env.ORDERS.get(env.ORDERS.idFromName(item)).fetch("https://orders.demo/list");
}

async function list(request, env) {
  const item = new URL(request.url).searchParams.get("item");
  if (item === null) return problem(400, "missing-item", "Name the item: GET /api/orders?item=...");
  return ordersOf(env, item);
}

/**
 * Item, quantity, amount and customer of a valid order body, as the Rust
 * demo's `validate`: quantity and amount whole numbers above 0 written as
 * integers (`1.0` or `1e2` is no u64 to serde_json) — up to 2^53 here, where
 * the Rust demo takes any u64 — and customerId a string or null when present.
 */
function validate(input) {
  if (input === null || typeof input !== "object" || Array.isArray(input)) return undefined;
  const { item, quantity, amountCents, customerId } = input;
  if (typeof item !== "string" || item === "") return undefined;
  const whole = (name) => {
    const value = input[name];
    return Number.isSafeInteger(value) && value > 0 && !notIntegers.get(input)?.has(name);
  };
  if (!whole("quantity") || !whole("amountCents")) return undefined;
  if (customerId !== undefined && customerId !== null && typeof customerId !== "string") return undefined;
  return { item, quantity, amountCents, customerId };
}

/** Per parsed object, the fields whose number was not written as an integer literal. */
const notIntegers = new WeakMap();

/**
 * JSON as serde_json reads it into a `Value`: a lone surrogate escape is
 * refused, and a number's source text (where the runtime offers it) is kept
 * apart when it is not an integer literal.
 */
function parseJson(text) {
  return JSON.parse(text, function reviver(key, value, context) {
    if (typeof value === "number" && context?.source !== undefined && !/^\d+$/.test(context.source)) {
      const fields = notIntegers.get(this) ?? new Set();
      fields.add(key);
      notIntegers.set(this, fields);
    }
    if (typeof value === "string" && !value.isWellFormed()) throw new SyntaxError("lone surrogate");
    return value;
  });
}

/** A whole number as Rust's `str::parse::<u64>` reads it (a leading `+` allowed), or undefined. */
function parseUnsigned(text) {
  if (!/^\+?\d+$/.test(text)) return undefined;
  const value = Number(text.replace(/^\+/, ""));
  return Number.isSafeInteger(value) ? value : undefined;
}

function badOrder() {
  return problem(
    400,
    "bad-order",
    'The body must be JSON {"item": string, "quantity": int > 0, "amountCents": int > 0, "customerId"?: string}.',
  );
}

/** A problem+json answer from the demo origin (not from the layer), keys sorted as serde_json writes them. */
function problem(status, code, detail) {
  const body = { detail, status, title: code, type: `urn:oncekey:demo:${code}` };
  return new Response(JSON.stringify(body), { status, headers: { "content-type": PROBLEM_CONTENT_TYPE } });
}

// UUIDv7 identifiers, strictly increasing within the isolate (as the Rust
// demo's Uuid7Generator): a 48-bit ms timestamp and 74 random bits; when the
// clock has not moved on, the random part steps up by 1..2^32.
const RAND_BITS = 74n;
const RAND_MASK = (1n << RAND_BITS) - 1n;
let lastMs = -1n;
let lastRand = 0n;

function newId(nowMs) {
  const random = crypto.getRandomValues(new Uint8Array(10));
  let fresh = 0n;
  for (const byte of random) fresh = (fresh << 8n) | BigInt(byte);
  fresh &= RAND_MASK;
  const ms = BigInt(nowMs) & ((1n << 48n) - 1n);
  if (ms > lastMs) {
    lastMs = ms;
    lastRand = fresh;
  } else {
    const next = lastRand + 1n + (fresh & 0xffff_ffffn);
    if (next > RAND_MASK) {
      lastMs += 1n;
      lastRand = fresh >> 1n;
    } else {
      lastRand = next;
    }
  }
  const randA = (lastRand >> 62n) & 0xfffn;
  const randB = lastRand & ((1n << 62n) - 1n);
  const value = (lastMs << 80n) | (0x7n << 76n) | (randA << 64n) | (0b10n << 62n) | randB;
  const hex = value.toString(16).padStart(32, "0");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
