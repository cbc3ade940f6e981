// Unit tests of the JavaScript host's files where they do more than pass
// values through (issue 21): the headers packed, the origin's answer spliced
// back together when it streams, and the time limits. The rules themselves
// are the core's (AnswerRead's table tests in `cargo test`); what is tested
// here is that the host moves the bytes it is told to, in order, and lets
// go of the origin's body when the caller does. The whole path runs on both
// hosts in tests/edge (large-answers, protocol).
import assert from "node:assert/strict";
import { test } from "node:test";
import "./wasm.mjs";

// After wasm.mjs: http.js imports the wasm's bindings.
const { untilAborted, within } = await import("../../pkg/src/worker/deadline.js");
const { packHeaders, readAnswer } = await import("../../pkg/src/worker/http.js");

test("packHeaders: every header once, as the runtime combines repeats, `name\\nvalue\\n` each", () => {
  const headers = new Headers([
    ["Content-Type", "application/json"],
    ["X-Tag", "a"],
    ["X-Tag", "b"],
  ]);
  assert.equal(packHeaders(headers), "content-type\napplication/json\nx-tag\na, b\n");
});

/**
 * The exchange as readAnswer meets it, keeping `limit` bytes as the core's
 * AnswerRead does (its rule is tested in cargo test); it records what the
 * host hands over.
 */
function keeping(limit, whole = false) {
  const kept = [];
  let size = 0;
  return {
    kept,
    answerHead: () => whole,
    answerChunk(chunk) {
      if (size + chunk.byteLength > limit) return false;
      kept.push(...chunk);
      size += chunk.byteLength;
      return true;
    },
    answerStreams() {
      const read = Uint8Array.from(kept);
      kept.length = 0;
      return read;
    },
  };
}

/** A response whose body comes as `parts`; `pulled()` counts the parts read. */
function parted(parts, init) {
  let at = 0;
  let cancelled;
  const body = new ReadableStream(
    {
      pull(controller) {
        if (at === parts.length) return controller.close();
        controller.enqueue(new TextEncoder().encode(parts[at++]));
      },
      cancel(reason) {
        cancelled = reason;
      },
    },
    { highWaterMark: 0 },
  );
  return { response: new Response(body, init), pulled: () => at, cancelled: () => cancelled };
}

test("readAnswer: an answer that fits stays in the exchange; nothing is streamed", async () => {
  const exchange = keeping(16);
  const origin = parted(["ab", "cd"], { status: 201 });
  assert.equal(await readAnswer(origin.response, exchange), undefined);
  assert.equal(new TextDecoder().decode(Uint8Array.from(exchange.kept)), "abcd");
});

test("readAnswer: past the limit the caller gets every byte in order, the rest read only as it pulls", async () => {
  const exchange = keeping(4);
  const origin = parted(["abc", "def", "gh", "ij"], { status: 200, headers: { "x-part": "1" } });
  const streamed = await readAnswer(origin.response, exchange);
  assert.ok(streamed instanceof Response);
  assert.equal(streamed.status, 200);
  assert.equal(streamed.headers.get("x-part"), "1");
  assert.equal(origin.pulled(), 2, "read up to the part that did not fit, no further");
  assert.equal(await streamed.text(), "abcdefghij");
});

test("readAnswer: a caller that stops reading a streamed answer cancels the origin's body", async () => {
  const origin = parted(["abc", "def", "gh", "ij"], { status: 200 });
  const streamed = await readAnswer(origin.response, keeping(4));
  await streamed.body.cancel("caller gone");
  assert.equal(origin.cancelled(), "caller gone");
});

test("readAnswer: a body read whole that the exchange does not keep is streamed back whole", async () => {
  const streamed = await readAnswer(new Response("0123456789", { status: 202 }), keeping(4, true));
  assert.equal(streamed.status, 202);
  assert.equal(await streamed.text(), "0123456789");
});

test("within and untilAborted: the value in time, else the limit's error or the signal's reason", async () => {
  assert.equal(await within(Promise.resolve(7), 1000), 7);
  await assert.rejects(within(new Promise(() => {}), 10), /no answer within 10 ms/);
  const cut = new AbortController();
  const pending = untilAborted(new Promise(() => {}), cut.signal);
  cut.abort(new Error("the caller went away"));
  await assert.rejects(pending, /the caller went away/);
});

test("both hosts list the same files, each named for its concern (issue 34)", async () => {
  const { readdirSync } = await import("node:fs");
  // Rust Workers' own features, with nothing to mirror in JavaScript: the
  // tower layer for axum (feature `tower`) and decision lines through a
  // `tracing` subscriber (feature `tracing`).
  const rustOnly = ["tower.rs", "decision_line.rs"];
  const rust = readdirSync(new URL("../../src/edge/", import.meta.url))
    .filter((f) => f.endsWith(".rs") && f !== "mod.rs" && !rustOnly.includes(f))
    .map((f) => f.slice(0, -3))
    .sort();
  const js = readdirSync(new URL("../../pkg/src/worker/", import.meta.url))
    .filter((f) => f.endsWith(".js"))
    .map((f) => f.slice(0, -3))
    .sort();
  assert.deepEqual(js, rust, "src/edge/*.rs and pkg/src/worker/*.js");
  assert.ok(rust.includes("queue") && rust.includes("durable_store"), `${rust}`);
});
