// The demo's order book on the JavaScript host: one Durable Object per item
// (binding `ORDERS`), a port of workers/demo/src/orders.rs, so every
// execution that created an order can be counted from a strongly consistent
// store. Same storage key ("orders") and format (one JSON array, as text).
import { DurableObject } from "cloudflare:workers";

const ORDERS = "orders";

export class Orders extends DurableObject {
  /** The orders, loaded once before the first request is delivered. */
  #orders = [];

  constructor(ctx, env) {
    super(ctx, env);
    ctx.blockConcurrencyWhile(async () => {
      const raw = await ctx.storage.get(ORDERS);
      if (typeof raw === "string") {
        try {
          const parsed = JSON.parse(raw);
          if (Array.isArray(parsed)) this.#orders = parsed;
        } catch {
          // As the Rust class: an unreadable list reads as empty.
        }
      }
    });
  }

  /**
   * `POST` appends the order in the body (unless `Unique-By: <field>` names
   * a field whose value an entry already has); `GET` lists them.
   */
  async fetch(request) {
    if (request.method === "POST") {
      const order = await request.json();
      // Check-then-act on the aggregate's own ids, with no await between.
      const field = request.headers.get("unique-by");
      if (
        field !== null &&
        order?.[field] !== undefined &&
        this.#orders.some((o) => deepEqual(o?.[field], order[field]))
      ) {
        return Response.json(order);
      }
      this.#orders.push(order);
      await this.ctx.storage.put(ORDERS, JSON.stringify(this.#orders));
      return Response.json(order);
    }
    return Response.json({ count: this.#orders.length, orders: this.#orders });
  }
}

/** JSON values compared as serde_json's `Value` equality does. */
function deepEqual(a, b) {
  return JSON.stringify(a) === JSON.stringify(b);
}
