// The shop as a Hono app: the middleware on /api/*, routes after it.
import { Hono } from "hono";
import { idempotency, IdempotencyCoordinator, NotSentError } from "oncekey/hono";

export { IdempotencyCoordinator };

/** Orders created per item, in this isolate. */
const orders = new Map<string, string[]>();

const app = new Hono<{ Bindings: Env }>();
app.use("/api/*", idempotency({ leaseSeconds: 30 }));
app.post("/api/orders", async (c) => {
  const fault = c.req.header("test-fault");
  if (fault === "not-sent") throw new NotSentError("nothing was done");
  const { item } = await c.req.json<{ item: string }>();
  const orderId = crypto.randomUUID();
  orders.set(item, [...(orders.get(item) ?? []), orderId]);
  if (fault === "throw") throw new Error("failed after the insert");
  return c.json({ item, orderId, attempt: c.req.header("idempotency-attempt") ?? null }, 201);
});
app.get("/api/orders", (c) => c.json({ count: (orders.get(c.req.query("item") ?? "") ?? []).length }));
// The app's own error page: the layer still sees the throw.
app.onError((error, c) => c.json({ error: error.message }, 500));

export default app;
