// A user's axum Worker (tests/consumer-axum: workers-rs with `http` and
// `axum`, an axum Router with oncekey's IdempotencyLayer, built by
// worker-build as `wrangler dev` builds it) in workerd with its Durable
// Object and KV bindings: the tower layer holds what the Rust host holds.
// scripts/test-crate.sh builds it first (`make test-crate`).
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { start } from "../edge/harness.mjs";

describe("an axum Router behind IdempotencyLayer", () => {
  let worker;
  before(async () => {
    worker = await start({ worker: "consumer-axum", host: "rust", vars: { IDEMPOTENCY_IN_FLIGHT_WAIT_MS: "0" } });
  });
  after(async () => {
    await worker?.dispose();
  });

  const post = (key, body = '{"item":"tea"}') =>
    worker.fetch("/orders", {
      method: "POST",
      headers: { "content-type": "application/json", ...(key ? { "idempotency-key": key } : {}) },
      body,
    });
  const runs = async () => Number(await (await worker.fetch("/runs")).text());

  test("8 concurrent callers of one key, 3 rounds: one run each, the retry replayed", async () => {
    for (let round = 0; round < 3; round++) {
      const before = await runs();
      const key = crypto.randomUUID();
      const answers = await Promise.all(Array.from({ length: 8 }, () => post(key)));
      const bodies = await Promise.all(answers.map((res) => res.text()));
      for (const [i, res] of answers.entries()) {
        assert.ok(res.status === 201 || res.status === 409, `caller ${i}: ${res.status} ${bodies[i]}`);
        if (res.status === 201) assert.equal(bodies[i], '{"created":true,"attempt":1,"bytes":14}');
      }
      assert.equal(await runs(), before + 1, `round ${round}: one run`);
      const retry = await post(key);
      assert.equal(retry.status, 201);
      assert.equal(retry.headers.get("idempotent-replayed"), "true");
      assert.equal(await retry.text(), '{"created":true,"attempt":1,"bytes":14}');
      assert.equal(await runs(), before + 1, "the retry is a replay");
    }
  });

  test("the layer's own answers: a bad key is 400 problem+json, another body under the key 422, and the router never runs", async () => {
    const before = await runs();
    const bad = await post("two words");
    assert.equal(bad.status, 400);
    assert.match(bad.headers.get("content-type"), /problem\+json/);
    assert.equal((await bad.json()).type, "urn:oncekey:problem:invalid-key");
    const key = crypto.randomUUID();
    assert.equal((await post(key)).status, 201);
    const reused = await post(key, '{"item":"coffee"}');
    assert.equal(reused.status, 422);
    await reused.arrayBuffer();
    assert.equal(await runs(), before + 1);
    // No key: the router runs, as without the layer.
    const keyless = await post(undefined);
    assert.equal(await keyless.text(), '{"created":true,"attempt":null,"bytes":14}');
  });
});
