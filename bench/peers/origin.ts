// The demo origin of SPEC §7 (POST /api/orders) written in TypeScript, so
// the peer workers call an origin that does the same work as oncekey's
// embedded one: validate the JSON order, mint two UUIDv7-like ids, append
// the order to an Orders Durable Object (one per item), answer 201.
import { DurableObject } from "cloudflare:workers";

export interface OriginEnv {
  ORDERS: DurableObjectNamespace<Orders>;
}

/** Orders of one item, kept as one JSON array (as the Rust demo does). */
export class Orders extends DurableObject {
  private orders: unknown[] | undefined;

  async add(order: unknown): Promise<unknown> {
    const orders: unknown[] = this.orders ?? JSON.parse((await this.ctx.storage.get<string>("orders")) ?? "[]");
    this.orders = orders;
    orders.push(order);
    await this.ctx.storage.put("orders", JSON.stringify(orders));
    return order;
  }
}

const json = (status: number, body: unknown, type = "application/json") =>
  new Response(JSON.stringify(body), { status, headers: { "content-type": type } });

const problem = (status: number, code: string, detail: string) =>
  json(status, { type: `urn:oncekey:demo:${code}`, title: code, status, detail }, "application/problem+json");

let lastMs = 0;
let seq = 0;
function newId(now: number): string {
  // UUIDv7 layout: 48-bit ms, version, 12-bit counter, variant, random.
  if (now <= lastMs) seq++;
  else {
    lastMs = now;
    seq = 0;
  }
  const b = new Uint8Array(16);
  crypto.getRandomValues(b.subarray(8));
  for (let i = 0; i < 6; i++) b[i] = Math.floor(lastMs / 2 ** (8 * (5 - i))) & 0xff;
  b[6] = 0x70 | ((seq >> 8) & 0x0f);
  b[7] = seq & 0xff;
  b[8] = 0x80 | (b[8] & 0x3f);
  const h = [...b].map((x) => x.toString(16).padStart(2, "0")).join("");
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

/** The origin: POST /api/orders creates an order, anything else is a 404. */
export async function origin(req: Request, env: OriginEnv): Promise<Response> {
  const url = new URL(req.url);
  if (url.pathname !== "/api/orders" || req.method !== "POST") return problem(404, "not-found", "No such route.");
  // What a JSON order may hold; each field is checked below.
  let input: { item?: unknown; quantity?: number; amountCents?: number; customerId?: unknown } | undefined;
  try {
    input = await req.json();
  } catch {
    input = undefined;
  }
  const ok =
    input &&
    typeof input.item === "string" &&
    input.item !== "" &&
    Number.isInteger(input.quantity) &&
    input.quantity > 0 &&
    Number.isInteger(input.amountCents) &&
    input.amountCents > 0 &&
    (input.customerId === undefined || input.customerId === null || typeof input.customerId === "string");
  if (!ok) return problem(400, "bad-order", "The body must be a JSON order.");
  const attempt = Number.parseInt(req.headers.get("idempotency-attempt") ?? "", 10);
  const now = Date.now();
  const order = {
    orderId: newId(now),
    chargeId: newId(now),
    item: input.item,
    quantity: input.quantity,
    amountCents: input.amountCents,
    customerId: input.customerId ?? null,
    attempt: Number.isNaN(attempt) ? null : attempt,
    createdAt: new Date(now).toISOString(),
  };
  const created = await env.ORDERS.get(env.ORDERS.idFromName(input.item)).add(order);
  return json(201, created);
}
