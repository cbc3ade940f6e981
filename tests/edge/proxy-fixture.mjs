// The production proxy in workerd in front of a real Node HTTP origin that
// counts its executions: the setup of the suites that count runs per key.
import { after, before } from "node:test";
import { sleep, start } from "./harness.mjs";
import { serve } from "./origin/server.mjs";

/**
 * An origin that records every execution per item with the attempt it was
 * sent as. `plan(item, attempt)` says how to answer: {status, delayMs}.
 */
export function countingOrigin(plan) {
  const runs = new Map();
  let seq = 0;
  const handle = async (request) => {
    const url = new URL(request.url);
    if (request.method !== "POST" || url.pathname !== "/v1/orders") return new Response("not here", { status: 404 });
    const { item } = await request.json();
    const attempt = Number(request.headers.get("idempotency-attempt"));
    runs.set(item, [...(runs.get(item) ?? []), attempt]);
    const { status, delayMs = 0, reset = false } = plan(item, attempt);
    await sleep(delayMs);
    if (reset) throw new Error("the origin's connection breaks after the work");
    const headers = { "content-type": "application/json", ...(status === 503 ? { "retry-after": "1" } : {}) };
    return new Response(JSON.stringify({ orderId: `o${++seq}`, item, attempt, status }), { status, headers });
  };
  return { handle, runs: (item) => runs.get(item) ?? [] };
}

/**
 * Within a describe: the production proxy in front of a counting origin
 * that answers as `plan` says, started before its tests and stopped after.
 * `options` are start()'s, `vars` added to ORIGIN_URL. The live setup is
 * read through the returned object (`.origin`, `.worker`).
 */
export function proxyBefore(plan, { vars = {}, ...options } = {}) {
  const live = {};
  let server;
  before(async () => {
    live.origin = countingOrigin(plan);
    server = await serve(live.origin.handle);
    live.worker = await start({ worker: "proxy", quiet: true, ...options, vars: { ORIGIN_URL: server.url, ...vars } });
  });
  after(async () => {
    await live.worker?.dispose();
    await server?.close();
  });
  return live;
}

/** POST one order with `key`; the answer's status, replay mark and body. */
export async function post(worker, key, item) {
  const res = await worker.fetch("/v1/orders", {
    method: "POST",
    headers: { "content-type": "application/json", "idempotency-key": key },
    body: JSON.stringify({ item }),
  });
  const text = await res.text();
  return { status: res.status, replayed: res.headers.get("idempotent-replayed") === "true", text, res };
}
