// Widely used HTTP clients, configured to retry POSTs as a user would,
// against the production proxy (build/proxy-js in workerd) over real HTTP, with
// origin faults (issue 12, SPEC §3): ky with `retry.methods: ['post']`,
// axios with axios-retry, and stripe-node (`maxNetworkRetries`, pointed at
// the proxy as at a Stripe-shaped API: form bodies, its own
// `stripe-node-retry-…` keys unless given one). Each sets its Idempotency-Key
// once and resends it on every retry. What must hold for each: the origin
// never does the work twice for one key (except the documented limit: an
// unknown outcome may run again after its lease, as the next attempt), no
// retry of the client's own sees 422, and a slow first attempt ends in the
// stored answer.
//
// Nothing here measures time: the only clocks are the clients' own timeouts
// and retry delays, and the server's Retry-After that the test waits out.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import ky, { HTTPError, TimeoutError } from "ky";
import axios from "axios";
import axiosRetry from "axios-retry";
import Stripe from "stripe";
import { newKey, sleep, start } from "../edge/harness.mjs";
import { faultOrigin, SLOW_MS } from "./fault-origin.mjs";

// A short lease, so an unknown outcome's lease ends within the test; the
// origin timeout above the slow origin and below the lease; duplicates wait
// for a running attempt (no longer than the lease).
const VARS = {
  IDEMPOTENCY_LEASE_SECONDS: "5",
  IDEMPOTENCY_ORIGIN_TIMEOUT_SECONDS: "3",
  IDEMPOTENCY_IN_FLIGHT_WAIT_MS: "5000",
};
// Each client gives up on one attempt well before the slow origin answers.
const CLIENT_TIMEOUT_MS = 500;
assert.ok(CLIENT_TIMEOUT_MS < SLOW_MS);
// How many times each client retries one call.
const RETRIES = 3;

let origin;
let worker;

before(async () => {
  origin = await faultOrigin();
  // The production proxy: the root config, on the JavaScript host.
  worker = await start({ worker: "proxy", host: "js", vars: { ORIGIN_URL: origin.url, ...VARS }, quiet: true });
});

after(async () => {
  await worker?.dispose();
  await origin?.close();
});

const order = () => ({ item: `book-${newKey().slice(0, 8)}`, quantity: 1, amountCents: 1250 });

/**
 * What one call of a client ended with: the final answer (a success or the
 * HTTP error the client gave up on), plus what the client saw on the way —
 * `seen` lists every answer or timeout of every try, `retries` how many
 * times the client decided to retry.
 */
function outcome({ status, header, data, seen, retries }) {
  let body = data;
  if (typeof body === "string" && body.length > 0) {
    try {
      body = JSON.parse(body);
    } catch {
      /* not JSON: keep the text */
    }
  }
  return {
    status,
    replayed: header("idempotent-replayed") ?? null,
    retryAfter: header("retry-after") ?? null,
    contentType: header("content-type") ?? null,
    body,
    seen,
    retries,
  };
}

/** ky as its README shows retry on POST: ky's status codes and delays, a per-try timeout that retries. */
function kyClient() {
  let seen;
  let retries;
  const client = ky.create({
    prefixUrl: String(worker.url),
    timeout: CLIENT_TIMEOUT_MS,
    retry: { limit: RETRIES, methods: ["post"], retryOnTimeout: true },
    hooks: {
      afterResponse: [
        (_request, _options, response) => {
          seen.push(response.status);
        },
      ],
      beforeRetry: [
        ({ error }) => {
          retries += 1;
          if (error instanceof TimeoutError) seen.push("timeout");
        },
      ],
    },
  });
  return {
    name: "ky",
    async post(key, json) {
      seen = [];
      retries = 0;
      let response;
      try {
        response = await client.post("v1/orders", { json, headers: { "idempotency-key": key } });
      } catch (error) {
        if (!(error instanceof HTTPError)) throw error;
        response = error.response;
      }
      return outcome({
        status: response.status,
        header: (name) => response.headers.get(name),
        data: await response.text(),
        seen,
        retries,
      });
    },
  };
}

/**
 * axios with axios-retry: POST retried through `retryCondition` (network
 * errors, 5xx, 429 and the client's own timeout), exponential delay (which
 * honours Retry-After), each try with its own timeout.
 */
function axiosClient() {
  let seen;
  let retries;
  const client = axios.create({ baseURL: String(worker.url), timeout: CLIENT_TIMEOUT_MS });
  // Registered before axios-retry's, so it sees every try's answer once.
  client.interceptors.response.use(
    (response) => {
      seen.push(response.status);
      return response;
    },
    (error) => {
      seen.push(error.response?.status ?? (error.code === "ECONNABORTED" ? "timeout" : error.code));
      throw error;
    },
  );
  axiosRetry(client, {
    retries: RETRIES,
    shouldResetTimeout: true,
    retryDelay: axiosRetry.exponentialDelay,
    retryCondition: (error) =>
      axiosRetry.isNetworkError(error) || axiosRetry.isRetryableError(error) || error.code === "ECONNABORTED",
    onRetry: () => {
      retries += 1;
    },
  });
  return {
    name: "axios",
    async post(key, data) {
      seen = [];
      retries = 0;
      let response;
      try {
        // The key as a Structured Field string (IETF draft form); the origin sees it unquoted.
        response = await client.post("/v1/orders", data, { headers: { "idempotency-key": `"${key}"` } });
      } catch (error) {
        if (!error.response) throw error;
        response = error.response;
      }
      return outcome({
        status: response.status,
        header: (name) => response.headers[name],
        data: response.data,
        seen,
        retries,
      });
    },
  };
}

/**
 * stripe-node as a user configures retries (`maxNetworkRetries`), each try
 * with its own timeout, against the proxy at the host and port it is given
 * for the API. It retries network errors, 409 and 5xx with its own backoff
 * (0.5 s doubling, no Retry-After), and reads an answer as an error only
 * when its JSON has an `error` member. `key` null: stripe-node's own key.
 */
function stripeClient({ retries = RETRIES } = {}) {
  let seen;
  // Every try's answer, seen below stripe-node's retries.
  const http = Stripe.createNodeHttpClient();
  const httpClient = Object.create(http, {
    makeRequest: {
      value: (...args) =>
        http.makeRequest(...args).then(
          (res) => {
            seen.push(res.getStatusCode());
            return res;
          },
          (error) => {
            seen.push(error.code === "ETIMEDOUT" ? "timeout" : error.code);
            throw error;
          },
        ),
    },
  });
  const { hostname, port } = new URL(String(worker.url));
  const stripe = new Stripe("sk_test_oncekey", {
    host: hostname,
    port: Number(port),
    protocol: "http",
    httpClient,
    maxNetworkRetries: retries,
    timeout: CLIENT_TIMEOUT_MS,
  });
  return {
    name: "stripe-node",
    async post(key, params) {
      seen = [];
      let status, headers, data, error;
      try {
        data = await stripe.rawRequest("POST", "/v1/orders", params, key === null ? {} : { idempotencyKey: key });
        ({ statusCode: status, headers } = data.lastResponse);
      } catch (thrown) {
        if (!(thrown instanceof Stripe.errors.StripeError) || thrown.statusCode === undefined) throw thrown;
        error = thrown;
        ({ statusCode: status, headers, raw: data } = thrown);
      }
      return { ...outcome({ status, header: (name) => headers[name], data, seen, retries: seen.length - 1 }), error };
    },
  };
}

const show = (r) => JSON.stringify(r);

/** Every try of the call reached the worker with the same key and body: none was refused as a reuse. */
function noSpurious422(client, key, r) {
  assert.ok(!r.seen.includes(422), `${client.name} saw a 422 for its own resend: ${show(r)}`);
  assert.ok(origin.bodies(key).length <= 1, `the origin received different bodies for one key: ${origin.bodies(key)}`);
}

// (1) The origin takes 1.5 s; the client gives up on its try after 0.5 s and
// retries with the same key while the first attempt still runs. The retry
// waits in the coordinator and gets the first attempt's answer, replayed.
async function slowFirstAttempt(client) {
  const key = newKey();
  origin.script(key, ["slow"]);
  const r = await client.post(key, order());
  assert.ok(r.seen.includes("timeout"), `${client.name} must have timed out and retried: ${show(r)}`);
  assert.equal(r.status, 201, `${client.name} ended on ${r.status}: ${show(r)}`);
  assert.equal(r.replayed, "true", `the final answer is the first attempt's, replayed: ${show(r)}`);
  assert.equal(r.body.attempt, 1);
  assert.equal(origin.executions(key), 1, "the work ran once");
  assert.deepEqual(origin.attempts(key), [1], "only the first attempt reached the origin");
  noSpurious422(client, key, r);
}

// (2) 503 Retry-After: 1, work not done: the key is released, the client's
// retry runs as attempt 2 and gets a fresh 201.
async function releasedThenSuccess(client) {
  const key = newKey();
  origin.script(key, ["503", "ok"]);
  const r = await client.post(key, order());
  assert.equal(r.status, 201, `${client.name} ended on ${r.status}: ${show(r)}`);
  assert.equal(r.seen[0], 503, `the first try got the origin's 503: ${show(r)}`);
  assert.equal(r.replayed, null, "attempt 2 ran: not a replay");
  assert.equal(r.body.attempt, 2);
  assert.deepEqual(origin.attempts(key), [1, 2], "both attempts reached the origin (the first was released)");
  assert.equal(origin.executions(key), 1, "the work was done once (the 503 did none)");
  noSpurious422(client, key, r);
}

// (3) The origin does the work and answers 500: an answer, stored. The
// client retries 500 as its config says, and every retry gets the stored
// 500 replayed; the origin is not called again.
async function storedFiveHundred(client) {
  const key = newKey();
  origin.script(key, ["500", "ok"]);
  const r = await client.post(key, order());
  assert.equal(r.retries, RETRIES, `${client.name} retried the 500 ${RETRIES} times: ${show(r)}`);
  assert.deepEqual(r.seen, Array(RETRIES + 1).fill(500), `every try got the 500: ${show(r)}`);
  assert.equal(r.status, 500);
  assert.equal(r.replayed, "true", "the final 500 is the stored one");
  assert.equal(origin.executions(key), 1, "the work ran once");
  assert.deepEqual(origin.attempts(key), [1], "no retry reached the origin");
  noSpurious422(client, key, r);
}

// (4) The origin does the work and cuts the connection: the outcome is
// unknown. The client's retry gets 409 key-in-flight saying so, with the
// rest of the lease as Retry-After; neither client retries a 409. After the
// lease, a new call with the same key runs again as attempt 2 — the
// documented limit of an unknown outcome — and the origin sees that number.
async function unknownOutcome(client) {
  const key = newKey();
  const body = order();
  origin.script(key, ["reset", "ok"]);
  const r = await client.post(key, body);
  assert.ok(r.retries >= 1, `${client.name} retried the failed first try: ${show(r)}`);
  assert.equal(r.status, 409, `${client.name} ended on ${r.status}: ${show(r)}`);
  assert.ok(
    r.seen.slice(1).every((s) => s === 409),
    `every retry got 409: ${show(r)}`,
  );
  assert.equal(r.contentType, "application/problem+json");
  assert.equal(r.body.type, "urn:oncekey:problem:outcome-unknown");
  assert.match(r.body.detail, /outcome is unknown/);
  const retryAfter = Number(r.retryAfter);
  assert.ok(
    retryAfter >= 3 && retryAfter <= Number(VARS.IDEMPOTENCY_LEASE_SECONDS),
    `Retry-After ${r.retryAfter}: the rest of the ${VARS.IDEMPOTENCY_LEASE_SECONDS} s lease, not 1`,
  );
  assert.equal(origin.executions(key), 1, "the work ran once while the lease lived");
  assert.deepEqual(origin.attempts(key), [1]);
  noSpurious422(client, key, r);

  // Come back when the server said (and a second more): the lease is over.
  await sleep((retryAfter + 1) * 1000);
  const again = await client.post(key, body);
  assert.equal(again.status, 201, `${client.name} after the lease: ${show(again)}`);
  assert.equal(again.replayed, null);
  assert.equal(again.body.attempt, 2, "the origin was told this is attempt 2");
  assert.deepEqual(origin.attempts(key), [1, 2]);
  assert.equal(origin.executions(key), 2, "the documented limit: an unknown outcome can run twice after its lease");
  noSpurious422(client, key, again);
}

test("ky: a slow first attempt ends in its replay, run once", () => slowFirstAttempt(kyClient()));
test("axios-retry: a slow first attempt ends in its replay, run once", () => slowFirstAttempt(axiosClient()));
test("ky: 503 releases the key, the retry runs as attempt 2 and gets 201", () => releasedThenSuccess(kyClient()));
test("axios-retry: 503 releases the key, the retry runs as attempt 2 and gets 201", () =>
  releasedThenSuccess(axiosClient()));
test("ky: a 500 is stored, its retries get the replay, run once", () => storedFiveHundred(kyClient()));
test("axios-retry: a 500 is stored, its retries get the replay, run once", () => storedFiveHundred(axiosClient()));
test("ky: reset after work gives an honest 409 until the lease ends, then attempt 2", () => unknownOutcome(kyClient()));
test("axios-retry: reset after work gives an honest 409 until the lease ends, then attempt 2", () =>
  unknownOutcome(axiosClient()));
test("stripe-node: a slow first attempt ends in its replay, run once", () => slowFirstAttempt(stripeClient()));
test("stripe-node: 503 releases the key, the retry runs as attempt 2 and gets 201", () =>
  releasedThenSuccess(stripeClient()));
test("stripe-node: a 500 is stored, its retries get the replay, run once", () => storedFiveHundred(stripeClient()));

// stripe-node keys every POST itself when not given a key: its retries of
// one call carry that key, and the layer holds them to one execution. The
// origin's faults are set by the order's item, as the key is not known yet.
test("stripe-node, its own key: 503 releases it, the retry runs as attempt 2, the work once", async () => {
  const client = stripeClient();
  const body = order();
  origin.script(body.item, ["503", "ok"]);
  const r = await client.post(null, body);
  assert.equal(r.status, 201, `stripe-node ended on ${r.status}: ${show(r)}`);
  assert.deepEqual(r.seen, [503, 201]);
  const keys = origin.keysOf(body.item);
  assert.equal(keys.length, 1, `one key for every try: ${keys}`);
  assert.match(keys[0], /^stripe-node-retry-/);
  assert.deepEqual(origin.attempts(keys[0]), [1, 2]);
  assert.equal(origin.executions(keys[0]), 1);
  noSpurious422(client, keys[0], r);
});

// stripe-node retries a 409 (Stripe's "request in progress"), and does not
// wait out Retry-After. After a reset the outcome is unknown: every retry
// within the lease gets 409 key-in-flight, the work is not run again, and
// when the retries run out stripe-node throws the 409 as an error naming
// the problem, not a success. Two retries stay well inside the 5 s lease.
test("stripe-node: reset after work, its retries of the 409 run nothing, and the 409 reaches the caller as an error", async () => {
  const client = stripeClient({ retries: 2 });
  const key = newKey();
  origin.script(key, ["reset", "ok"]);
  const r = await client.post(key, order());
  assert.deepEqual(r.seen, [502, 409, 409], `stripe-node retried the 502 and the 409: ${show(r)}`);
  assert.ok(r.error, `stripe-node threw: ${show(r)}`);
  assert.equal(r.error.statusCode, 409);
  assert.equal(r.error.code, "outcome-unknown");
  assert.match(r.error.message, /outcome is unknown/);
  assert.equal(origin.executions(key), 1, "the work ran once");
  assert.deepEqual(origin.attempts(key), [1]);
});
