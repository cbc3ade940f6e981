// The demo's event flow (SPEC §7) on the JavaScript host, a port of
// workers/demo/src/loyalty.rs: an order with a `customerId` publishes
// `OrderPlaced` to the queue bound as `ORDER_EVENTS`; the consumer,
// `withQueueIdempotency` from the npm package, awards
// `floor(amountCents / 100)` points to the customer's loyalty account — the
// set of orders awarded, keyed by order id, in the `Orders` object
// `customer:<id>` (`Unique-By: orderId` unless `DEMO_LOYALTY_GUARD=false`).
// `DEMO_EVENT_KEY`: `content-hash` (the default here, ignoring
// `publishedAt`), `message-id`, or `order-id` (a key function); `order-id-raw`
// and `order-id-throws` are key functions that give no key for an event
// without an order id (the tests of SPEC §11's "never taken for another").
// `Demo-Fault` on the order: `redeliver` publishes twice; `consumer-fail`
// fails the handler after its write on the first attempt; `consumer-slow`
// waits 1.5 s before writing. `"demoFault": "consumer-crash"` in a body
// makes the first attempt write and then never return.
import { queueStats, withQueueIdempotency } from "oncekey/worker";

/** The consumer's name: its records and counters are kept under it. */
export const CONSUMER = "loyalty";
const CONSUMER_FAULTS = ["consumer-fail", "consumer-slow"];

/** Publishes `OrderPlaced` for a created order with a customer. */
export async function publish(env, order, fault) {
  const { customerId, orderId, amountCents } = order;
  if (typeof customerId !== "string" || typeof orderId !== "string" || typeof amountCents !== "number") return;
  const copies = fault === "redeliver" ? 2 : 1;
  for (let i = 0; i < copies; i++) {
    const event = {
      type: "OrderPlaced",
      eventId: orderId,
      orderId,
      customerId,
      amountCents,
      publishedAt: new Date().toISOString(),
      ...(CONSUMER_FAULTS.includes(fault) ? { demoFault: fault } : {}),
    };
    try {
      await env.ORDER_EVENTS.send(event, { contentType: "json" });
    } catch (error) {
      console.error(JSON.stringify({ oncekey: "demo-publish-failed", error: String(error) }));
    }
  }
}

/** The key strategy `DEMO_EVENT_KEY` names. */
function keyOf(name) {
  if (name === "message-id") return "message-id";
  if (name === "order-id") {
    return (message) =>
      typeof message.body?.orderId === "string" ? `OrderPlaced:${message.body.orderId}` : message.id;
  }
  // What a hurried user writes: undefined for an event without one.
  if (name === "order-id-raw") return (message) => message.body?.orderId;
  // And one that throws for it.
  if (name === "order-id-throws") return (message) => `OrderPlaced:${message.body.orderId.trim()}`;
  return { contentHash: { ignore: ["publishedAt"] } };
}

/** One consumer per key strategy, made on first use (variables are fixed for an isolate). */
const consumers = new Map();

/** The demo's queue handler. */
export function consume(batch, env, ctx) {
  const strategy = env.DEMO_EVENT_KEY ?? "content-hash";
  // `DEMO_QUEUE_CONCURRENCY`: how many of a batch's messages run at once.
  const concurrency = Number(env.DEMO_QUEUE_CONCURRENCY ?? 1);
  let consumer = consumers.get(`${strategy}/${concurrency}`);
  if (consumer === undefined) {
    consumer = withQueueIdempotency(award, { name: CONSUMER, key: keyOf(strategy), concurrency });
    consumers.set(`${strategy}/${concurrency}`, consumer);
  }
  return consumer(batch, env, ctx);
}

/** The handler: one order's points to its customer. */
async function award(message, env, _ctx, run) {
  // An event sent as JSON text reads as the object it spells, as the Rust
  // demo reads every body's bytes.
  const body = typeof message.body === "string" ? jsonOrNull(message.body) : message.body;
  const { orderId, customerId, amountCents } = body ?? {};
  if (typeof orderId !== "string" || typeof customerId !== "string" || !Number.isInteger(amountCents)) {
    // A malformed event will never get better: acknowledge and log it.
    console.warn(JSON.stringify({ oncekey: "demo-bad-event", id: message.id }));
    return;
  }
  const fault = body.demoFault;
  const first = run.attempt === 1;
  if (fault === "consumer-slow") await new Promise((resolve) => setTimeout(resolve, 1500));
  const guard = env.DEMO_LOYALTY_GUARD !== "false";
  const points = Math.floor(amountCents / 100);
  const awarded = { orderId, points, amountCents, attempt: run.attempt, awardedAt: new Date().toISOString() };
  await account(env, customerId, awarded, guard);
  if (fault === "consumer-fail" && first) throw new Error("Demo-Fault: consumer-fail, after the points were written");
  if (fault === "consumer-crash" && first) await new Promise(() => {});
}

/** Reads a customer's account, or awards an order to it. */
async function account(env, customerId, awarded, guard) {
  const stub = env.ORDERS.get(env.ORDERS.idFromName(`customer:${customerId}`));
  const init =
    awarded === undefined
      ? {}
      : {
          method: "POST",
          headers: { "content-type": "application/json", ...(guard ? { "unique-by": "orderId" } : {}) },
          body: JSON.stringify(awarded),
        };
  const res = await stub.fetch("https://loyalty.demo/", init);
  if (res.status !== 200) throw new Error(`loyalty answered ${res.status}`);
  return res.json();
}

/** `GET /api/loyalty/:customerId` and `GET /api/consumer/stats`. */
export async function serveLoyalty(path, env) {
  if (path === "/api/consumer/stats") {
    return Response.json({ consumer: CONSUMER, ...(await queueStats(env, CONSUMER)) });
  }
  const customerId = decodeURIComponent(path.slice("/api/loyalty/".length));
  const { orders } = await account(env, customerId);
  // Points are derived from the set of awarded orders, never a counter.
  const points = orders.reduce((sum, order) => sum + (order?.points ?? 0), 0);
  return Response.json({ customerId, points, orders });
}

/** `text` parsed as JSON, or null. */
function jsonOrNull(text) {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}
