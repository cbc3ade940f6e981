// An origin answer larger than IDEMPOTENCY_MAX_RESPONSE_BYTES (SPEC §3):
// the caller gets all of it, streamed, and the replay has the status and
// headers with an empty body and Idempotent-Body-Omitted. The layer holds
// at most the limit of it, whatever the origin sends.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { after, before, describe, test } from "node:test";
import { newKey, start } from "./harness.mjs";

const SIZE = 20 * 1024 * 1024;
const CHUNK = 64 * 1024;

/** Byte i of the export: a pattern a truncated or reordered body would break. */
function chunkAt(offset, length) {
  const bytes = new Uint8Array(length);
  for (let i = 0; i < length; i++) bytes[i] = (offset + i) * 31 % 251;
  return bytes;
}

function expectedHash() {
  const hash = createHash("sha256");
  for (let at = 0; at < SIZE; at += CHUNK) hash.update(chunkAt(at, Math.min(CHUNK, SIZE - at)));
  return hash.digest("hex");
}

describe("a 20 MB origin answer through the production proxy", () => {
  let worker;
  let executions = 0;
  before(async () => {
    worker = await start({
      worker: "proxy",
      vars: { ORIGIN_URL: "http://origin.test" },
      outboundService: (request) => {
        executions++;
        const declared = new URL(request.url).searchParams.has("declared");
        let at = 0;
        const body = new ReadableStream({
          pull(controller) {
            if (at >= SIZE) return controller.close();
            const length = Math.min(CHUNK, SIZE - at);
            controller.enqueue(chunkAt(at, length));
            at += length;
          },
        });
        const headers = { "content-type": "text/csv", ...(declared ? { "content-length": String(SIZE) } : {}) };
        return new Response(body, { status: 200, headers });
      },
    });
  });
  after(() => worker?.dispose());

  for (const declared of [false, true]) {
    test(`${declared ? "with" : "without"} Content-Length: delivered whole, stored without its body, run once`, async () => {
      const before = executions;
      const key = newKey();
      const send = () => worker.fetch(`/v1/exports${declared ? "?declared" : ""}`, {
        method: "POST",
        headers: { "idempotency-key": key, "content-type": "application/json" },
        body: "{}",
      });
      const first = await send();
      assert.equal(first.status, 200);
      const bytes = new Uint8Array(await first.arrayBuffer());
      assert.equal(bytes.length, SIZE, "every byte reached the caller");
      assert.equal(createHash("sha256").update(bytes).digest("hex"), expectedHash(), "in order, unchanged");
      const replay = await send();
      assert.equal(replay.status, 200);
      assert.equal(replay.headers.get("idempotent-replayed"), "true");
      assert.equal(replay.headers.get("idempotent-body-omitted"), "true");
      assert.equal(replay.headers.get("content-type"), "text/csv");
      assert.equal((await replay.arrayBuffer()).byteLength, 0);
      assert.equal(executions - before, 1, "the origin ran once");
    });
  }
});
