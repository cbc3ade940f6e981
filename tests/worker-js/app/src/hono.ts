// The shop as a Hono app: the middleware on /api/*, routes after it.
import { Hono } from "hono";
import { HTTPException } from "hono/http-exception";
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
  // Hono's idiomatic 4xx: an answer, after the work it did.
  if (fault === "declined") throw new HTTPException(402, { message: "card declined" });
  return c.json({ item, orderId, attempt: c.req.header("idempotency-attempt") ?? null }, 201);
});
app.get("/api/orders", (c) => c.json({ count: (orders.get(c.req.query("item") ?? "") ?? []).length }));
// The same lookup behind the middleware and outside it.
const item = (c: { req: { param: (name: string) => string } }) => {
  throw new HTTPException(404, { message: `no item ${c.req.param("id")}` });
};
app.get("/api/items/:id", item);
app.get("/open/items/:id", item);
// The app's own error handling, as Hono apps write it: an HTTPException is
// its own answer, anything else a 500. The layer still sees a covered throw.
app.onError((error, c) =>
  error instanceof HTTPException ? error.getResponse() : c.json({ error: error.message }, 500),
);

export default app;
