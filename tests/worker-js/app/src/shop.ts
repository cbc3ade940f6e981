// A tiny shop: the handler a user protects. Every execution that creates an
// order is counted, so a test can tell how many times the handler ran.
import { NotSentError } from "oncekey/worker";

/** Orders created per item, in this isolate. */
const orders = new Map<string, { orderId: string; attempt: string | null }[]>();

/**
 * `POST /…/orders` with `{"item": string}`: 201 and the order. Query
 * `delay_ms=N` waits first. Header `Test-Fault`: `throw` creates the order,
 * then throws (an unknown outcome); `not-sent` throws NotSentError before
 * doing anything; `unavailable` answers 503 without creating anything.
 * `GET /…/orders?item=X`: `{"count", "orders"}`; with `Test-Fault: throw`
 * it throws (a request oncekey does not cover).
 */
export async function shop(request: Request): Promise<Response> {
  const url = new URL(request.url);
  if (request.method === "GET") {
    if (request.headers.get("test-fault") === "throw") throw new Error("the listing failed");
    const item = url.searchParams.get("item") ?? "";
    const list = orders.get(item) ?? [];
    return Response.json({ count: list.length, orders: list });
  }
  const delay = Number(url.searchParams.get("delay_ms") ?? 0);
  if (delay > 0) await new Promise((resolve) => setTimeout(resolve, delay));
  const fault = request.headers.get("test-fault");
  if (fault === "not-sent") throw new NotSentError("the payment provider was down before anything was charged");
  if (fault === "unavailable")
    return Response.json({ error: "try later" }, { status: 503, headers: { "retry-after": "1" } });
  const { item } = (await request.json()) as { item: string };
  // `colo`: from the client's `cf`, as the runtime gives it to the handler.
  const colo = (request.cf?.colo as string | undefined) ?? null;
  const order = { orderId: crypto.randomUUID(), attempt: request.headers.get("idempotency-attempt"), colo };
  orders.set(item, [...(orders.get(item) ?? []), order]);
  if (fault === "throw") throw new Error("the connection to the database dropped after the insert");
  return Response.json({ item, ...order }, { status: 201, headers: { "x-shop": "yes" } });
}
