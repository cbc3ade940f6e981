// A user's Rust Worker (tests/consumer: docs/rust.md's handler and
// wrangler.toml, built by worker-build as `wrangler dev` builds it) in
// workerd with its KV and Durable Object bindings: the library API keeps
// its promise under concurrency, and a handler that panics gets its
// caller an answer at once instead of a hang (SPEC §10). Run by
// scripts/test-crate.sh after the build.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { after, before, describe, test } from "node:test";
import { start } from "../edge/harness.mjs";

test("docs/rust.md's wrangler.toml is the one this Worker runs with, comments aside", () => {
  const read = (path) => readFileSync(new URL(`../../${path}`, import.meta.url), "utf8");
  const lines = (toml) =>
    toml
      .split("\n")
      .filter((line) => line.trim() !== "" && !line.startsWith("#"))
      .join("\n");
  const blocks = [...read("docs/rust.md").matchAll(/```toml\n([\s\S]*?)```/g)].map((m) => m[1]);
  const documented = blocks.find((block) => block.startsWith("name = "));
  assert.ok(documented, "docs/rust.md shows a wrangler.toml");
  assert.equal(lines(documented), lines(read("tests/consumer/wrangler.toml")));
});

describe("a Rust Worker wrapping its own handler", () => {
  let worker;
  before(async () => {
    worker = await start({ worker: "consumer", host: "rust", vars: { IDEMPOTENCY_IN_FLIGHT_WAIT_MS: "0" } });
  });
  after(async () => {
    await worker?.dispose();
  });

  const post = (path, key) =>
    worker.fetch(path, {
      method: "POST",
      headers: { "content-type": "application/json", "idempotency-key": key },
      body: '{"item":"tea"}',
    });
  const runs = async () => Number(await (await worker.fetch("/runs")).text());

  test("8 concurrent callers of one key, 3 rounds: one run each, every caller the same answer", async () => {
    for (let round = 0; round < 3; round++) {
      const before = await runs();
      const key = crypto.randomUUID();
      const answers = await Promise.all(Array.from({ length: 8 }, () => post("/orders", key)));
      const bodies = await Promise.all(answers.map((res) => res.text()));
      for (const [i, res] of answers.entries()) {
        // A caller that came while the first ran is told so (no wait configured).
        assert.ok(res.status === 201 || res.status === 409, `caller ${i}: ${res.status} ${bodies[i]}`);
        if (res.status === 201) assert.equal(bodies[i], '{"created":true,"attempt":1}');
      }
      assert.equal(await runs(), before + 1, `round ${round}: one run`);
      const retry = await post("/orders", key);
      assert.equal(retry.status, 201);
      assert.equal(retry.headers.get("idempotent-replayed"), "true");
      assert.equal(await runs(), before + 1, "the retry is a replay");
    }
  });

  test("a handler that fails with the outcome unknown: worded as the handler's failure, not an origin's, the key held", async () => {
    const key = crypto.randomUUID();
    const first = await post("/fails", key);
    // SPEC §3's type for an attempt that ended without an answer.
    assert.equal(first.status, 502);
    const problem = await first.json();
    assert.equal(problem.type, "urn:oncekey:problem:origin-unreachable");
    assert.match(problem.detail, /handler failed; the outcome is unknown/, "not the proxy's wording");
    const duplicate = await post("/fails", key);
    assert.equal(duplicate.status, 409);
    assert.equal((await duplicate.json()).type, "urn:oncekey:problem:outcome-unknown");
  });

  test("a handler that panics: its caller is answered at once, the key held as an unknown outcome", async () => {
    const key = crypto.randomUUID();
    const started = Date.now();
    const first = await post("/panic", key);
    const took = Date.now() - started;
    await first.arrayBuffer();
    assert.ok(first.status >= 500, `the runtime's error, not an answer: ${first.status}`);
    // Without the layer's timers cleared it waited for the origin time limit (100 s).
    assert.ok(took < 5000, `answered in ${took} ms`);
    const duplicate = await post("/panic", key);
    assert.equal(duplicate.status, 409, "the handler may have done its work: the key is held for its lease");
    assert.equal((await duplicate.json()).type, "urn:oncekey:problem:key-in-flight");
    // The isolate's module was started again: the next key runs.
    const next = await post("/orders", crypto.randomUUID());
    assert.equal(next.status, 201, await next.text());
    assert.equal(await runs(), 1, "the module was started again, its count with it: this run is its first");
  });
});

describe("a Rust Worker with its own tracing subscriber (feature `tracing`)", () => {
  test("decision lines go to the subscriber when one is installed, to the console otherwise", async () => {
    const lines = async (vars) => {
      const worker = await start({ worker: "consumer", host: "rust", metrics: true, vars });
      try {
        const key = crypto.randomUUID();
        const send = () =>
          worker.fetch("/orders", {
            method: "POST",
            headers: { "content-type": "application/json", "idempotency-key": key },
            body: '{"item":"tea"}',
          });
        assert.equal((await send()).status, 201);
        assert.equal((await send()).headers.get("idempotent-replayed"), "true");
        for (let i = 0; i < 50 && worker.lines().filter((l) => l.includes('"oncekey":"replay"')).length === 0; i++) {
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
        return worker.lines().filter((line) => line.includes('"oncekey":"'));
      } finally {
        await worker.dispose();
      }
    };
    const traced = await lines({ TRACE_DECISIONS: "on" });
    assert.equal(traced.length, 2, traced.join("\n"));
    for (const line of traced) assert.match(line, /traced INFO oncekey: \{"/, line);
    const plain = await lines({});
    assert.equal(plain.length, 2, plain.join("\n"));
    for (const line of plain) assert.doesNotMatch(line, /traced/, line);
  });
});
