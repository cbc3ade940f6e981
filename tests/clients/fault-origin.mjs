// The origin behind the proxy in the clients suite: a raw Node HTTP server
// on loopback (so a fault can cut the socket), with a script of faults per
// idempotency key. Each request the origin receives for a key takes the
// next step of that key's script (the last step repeats):
//
//   "ok"      do the work, answer 201 with the order
//   "500"     do the work, answer 500 (an answer: the layer stores it)
//   "503"     do NOT do the work, answer 503 with Retry-After: 1 (released)
//   "reset"   do the work, then destroy the socket without answering
//             (the outcome is unknown to the layer)
//   "slow"    do the work, answer 201 after SLOW_MS
//
// A client that makes its own keys (stripe-node) is scripted by the order's
// `item` instead, read from a JSON or a form body.
//
// "The work" is the side effect a retry must not repeat: it is counted per
// key. Every request that reaches the origin is noted with the attempt
// number the layer sent (`Idempotency-Attempt`).
import http from "node:http";

export const SLOW_MS = 1500;

export async function faultOrigin() {
  const scripts = new Map(); // key → remaining steps
  const arrivals = new Map(); // key → [{ attempt, step, body }]
  const executions = new Map(); // key → how many times the work was done
  const keysByItem = new Map(); // item → the keys its requests carried

  const server = http.createServer(async (req, res) => {
    const chunks = [];
    for await (const chunk of req) chunks.push(chunk);
    const body = Buffer.concat(chunks).toString("utf8");
    const key = req.headers["idempotency-key"];
    const attempt = Number(req.headers["idempotency-attempt"]);
    const item = itemOf(req.headers["content-type"], body);
    if (key !== undefined && item !== undefined) keysByItem.set(item, (keysByItem.get(item) ?? new Set()).add(key));
    const steps = scripts.get(key) ?? scripts.get(item) ?? ["ok"];
    const step = steps.length > 1 ? steps.shift() : steps[0];
    if (key !== undefined) {
      if (!arrivals.has(key)) arrivals.set(key, []);
      arrivals.get(key).push({ attempt, step, body });
    }
    const work = () => {
      const execution = (executions.get(key) ?? 0) + 1;
      executions.set(key, execution);
      return { order: `order-${execution}`, attempt, execution };
    };
    const json = (status, value, headers = {}) => {
      res.writeHead(status, { "content-type": "application/json", ...headers });
      res.end(JSON.stringify(value));
    };
    switch (step) {
      case "ok":
        return json(201, work(), { location: "/v1/orders/1" });
      case "500":
        work();
        return json(500, { error: "the order was written, then the origin failed" });
      case "503":
        return json(503, { error: "busy, nothing done" }, { "retry-after": "1" });
      case "reset":
        work();
        // No status line, no headers: the connection just dies.
        return res.socket.destroy();
      case "slow": {
        const done = work();
        return setTimeout(() => json(201, done), SLOW_MS);
      }
      default:
        return json(599, { error: `unknown step ${step}` });
    }
  });
  // No idle race with the proxy's connection pool during the suite.
  server.keepAliveTimeout = 60_000;
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));

  return {
    url: `http://127.0.0.1:${server.address().port}`,
    /** Sets the faults for the requests of `key` (or of an order's `item`), in order (the last repeats). */
    script(keyOrItem, steps) {
      scripts.set(keyOrItem, [...steps]);
    },
    /** The keys the requests for an order's `item` carried. */
    keysOf: (item) => [...(keysByItem.get(item) ?? [])],
    /** How many times the work was done for `key`. */
    executions: (key) => executions.get(key) ?? 0,
    /** The attempt numbers of every request that reached the origin for `key`. */
    attempts: (key) => (arrivals.get(key) ?? []).map((a) => a.attempt),
    /** The distinct bodies the origin received for `key`. */
    bodies: (key) => [...new Set((arrivals.get(key) ?? []).map((a) => a.body))],
    close: () => {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(resolve));
    },
  };
}

/** The `item` of an order sent as JSON or as a form, if any. */
function itemOf(contentType = "", body) {
  if (contentType.startsWith("application/x-www-form-urlencoded"))
    return new URLSearchParams(body).get("item") ?? undefined;
  try {
    return JSON.parse(body).item;
  } catch {
    return undefined;
  }
}
