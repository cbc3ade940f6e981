// Stored answers sealed at rest (SPEC §4, IDEMPOTENCY_SEAL_KEYS), in workerd
// with the runtime's own Web Crypto, on the host ONCEKEY_HOST names: nothing
// an account member can read in the object's storage or in KV reveals an
// answer; keys rotate with no failed replay; an answer no configured key
// opens fails closed; a copy moved to another record does not open.
import assert from "node:assert/strict";
import { createHash, randomBytes } from "node:crypto";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { before, describe, test } from "node:test";
import {
  BASE,
  newKey,
  order,
  ordersOf,
  problemOf,
  recordName,
  start,
  tempDir,
  tiers,
  uniqueItem,
  until,
} from "./harness.mjs";

const HOST = new URL(BASE).hostname;
const TOKEN = "operator-secret";
const bearer = { authorization: `Bearer ${TOKEN}` };
/** Two keys, as `openssl rand -base64 32` prints them. */
const KEY_A = randomBytes(32).toString("base64");
const KEY_B = randomBytes(32).toString("base64");

/** Every file under `dir` that is the layer's own storage: its coordinator objects and KV. */
function layerFiles(dir) {
  const out = [];
  const walk = (path) => {
    for (const entry of readdirSync(path)) {
      const full = join(path, entry);
      if (statSync(full).isDirectory()) walk(full);
      else out.push(full);
    }
  };
  for (const entry of readdirSync(dir)) {
    // The demo's order book (its own object) holds the orders by design.
    if (entry.includes("Orders")) continue;
    const full = join(dir, entry);
    if (statSync(full).isDirectory()) walk(full);
  }
  return out;
}

/** The files of the layer's storage under `dir` whose bytes hold `marker`. */
function filesHolding(dir, marker) {
  return layerFiles(dir).filter((file) => readFileSync(file).includes(Buffer.from(marker)));
}

/**
 * The plain fingerprint of an order for `item` (SPEC §2): SHA-256 over the
 * length-prefixed method, path, media type and body, written apart from the
 * Rust code. What anyone with the storage could search for, body by body.
 */
function plainFingerprint(item) {
  const hash = createHash("sha256");
  const body = JSON.stringify({ item, quantity: 1, amountCents: 500 });
  for (const part of ["oncekey/fingerprint/1", "POST", "/api/orders", "application/json", body]) {
    const len = Buffer.alloc(8);
    len.writeBigUInt64BE(BigInt(Buffer.byteLength(part)));
    hash.update(len);
    hash.update(part);
  }
  return hash.digest();
}

async function copyOf(worker, key) {
  const kv = await worker.mf.getKVNamespace("IDEMPOTENCY_KV");
  return kv.get(recordName(HOST, undefined, key), "arrayBuffer");
}

async function inspect(worker, key) {
  const res = await worker.fetch(`/.well-known/oncekey/records/${recordName(HOST, undefined, key)}`, {
    headers: bearer,
  });
  assert.equal(res.status, 200);
  return res.json();
}

/**
 * Waits until `key`'s answer is stored: its `finish` runs after the answer,
 * and a worker disposed before it lands leaves the key in flight.
 */
async function stored(worker, key, item) {
  const replay = await order(worker, { key, item });
  assert.equal(replay.headers.get("idempotent-replayed"), "true", "the retry waited for the finish");
  return replay;
}

/** Stores an answer for `key` and its KV copy (its first retry writes it), with `vars`, in `persist`. */
async function storeWithCopy(persist, vars, key, item) {
  const worker = await start({ persist, quiet: true, vars });
  try {
    const first = await order(worker, { key, item });
    assert.equal(first.status, 201);
    const body = await first.text();
    assert.ok(body.includes(item), "the answer holds the marker");
    const replay = await stored(worker, key, item);
    assert.equal(await replay.text(), body);
    await until(
      () => copyOf(worker, key),
      (copy) => copy !== null,
      { what: "the KV copy" },
    );
    return body;
  } finally {
    await worker.dispose();
  }
}

describe("with a seal key, nothing stored reveals an answer", () => {
  const sealed = tempDir();
  const plain = tempDir();
  const key = newKey();
  const item = uniqueItem("SEALED-MARKER");
  let body;

  before(async () => {
    body = await storeWithCopy(sealed, { IDEMPOTENCY_SEAL_KEYS: KEY_A }, key, item);
    await storeWithCopy(plain, {}, newKey(), item);
  });

  /** The sealed storage, its coordinator failing: only KV can answer. */
  const objectDown = () =>
    start({
      store: "fail",
      persist: sealed,
      quiet: true,
      vars: { IDEMPOTENCY_SEAL_KEYS: KEY_A, IDEMPOTENCY_STORE_TIMEOUT_MS: "300" },
    });

  test("the marker is in the plain storage (the search can fail) and nowhere in the sealed one", () => {
    assert.ok(filesHolding(plain, item).length > 0, "without sealing, the answer is there to read");
    assert.ok(layerFiles(sealed).length > 0);
    assert.deepEqual(filesHolding(sealed, item), [], "neither the object's storage nor KV holds it");
  });

  test("the request's plain fingerprint is in the plain storage (a body can be searched for) and nowhere in the sealed one (SPEC §13)", () => {
    const fingerprint = plainFingerprint(item);
    assert.ok(filesHolding(plain, fingerprint).length > 0, "unsealed, the record keeps the plain SHA-256");
    assert.deepEqual(filesHolding(sealed, fingerprint), [], "sealed, it keeps an HMAC under a key of the seal key's");
  });

  test("the KV copy replays, opened, when the object is down", async () => {
    const worker = await objectDown();
    try {
      const replay = await order(worker, { key, item });
      assert.equal(replay.status, 201);
      assert.deepEqual(tiers(replay), ["kv", "do"]);
      assert.equal(await replay.text(), body);
    } finally {
      await worker.dispose();
    }
  });

  test("a copy moved under another record's name does not open there: 503, never run", async () => {
    const worker = await objectDown();
    try {
      const other = newKey();
      const kv = await worker.mf.getKVNamespace("IDEMPOTENCY_KV");
      // The same request under another key: the fingerprint matches, the record's name does not.
      await kv.put(recordName(HOST, undefined, other), await copyOf(worker, key), { expirationTtl: 3600 });
      const moved = await order(worker, { key: other, item });
      assert.equal(moved.status, 503);
      assert.equal((await problemOf(moved)).code, "record-unreadable");
      assert.equal((await ordersOf(worker, item)).count, 1, "nothing ran again");
    } finally {
      await worker.dispose();
    }
  });
});

describe("rotation", () => {
  const persist = tempDir();
  const oldKey = newKey();
  const item = uniqueItem("rotation");

  before(async () => {
    const worker = await start({ persist, quiet: true, vars: { IDEMPOTENCY_SEAL_KEYS: KEY_A } });
    try {
      assert.equal((await order(worker, { key: oldKey, item })).status, 201);
      await stored(worker, oldKey, item);
    } finally {
      await worker.dispose();
    }
  });

  test("a new key first: old records replay, new ones are sealed by it; the old key removed: 503, never run", async () => {
    const newRecordKey = newKey();
    let worker = await start({
      persist,
      quiet: true,
      vars: { IDEMPOTENCY_SEAL_KEYS: `${KEY_B},${KEY_A}`, IDEMPOTENCY_ADMIN_TOKEN: TOKEN },
    });
    let idA;
    let idB;
    try {
      const old = await order(worker, { key: oldKey, item });
      assert.equal(old.status, 201);
      assert.equal(old.headers.get("idempotent-replayed"), "true");
      assert.equal((await order(worker, { key: newRecordKey, item })).status, 201);
      await stored(worker, newRecordKey, item);
      const [a, b] = [await inspect(worker, oldKey), await inspect(worker, newRecordKey)];
      idA = a.sealed.keyId;
      idB = b.sealed.keyId;
      assert.match(idA, /^[0-9a-f]{8}$/);
      assert.notEqual(idA, idB, "the new record is sealed by the new key");
      assert.deepEqual([a.sealed.opens, b.sealed.opens, a.status], [true, true, undefined]);
    } finally {
      await worker.dispose();
    }

    worker = await start({
      persist,
      quiet: true,
      vars: { IDEMPOTENCY_SEAL_KEYS: KEY_B, IDEMPOTENCY_ADMIN_TOKEN: TOKEN },
    });
    try {
      const orphan = await order(worker, { key: oldKey, item });
      assert.equal(orphan.status, 503);
      const problem = await problemOf(orphan);
      assert.equal(problem.code, "record-unreadable");
      assert.match(problem.detail, /IDEMPOTENCY_SEAL_KEYS/);
      assert.ok(!problem.detail.includes(KEY_A) && !problem.detail.includes(KEY_B), "never a key");
      assert.equal((await order(worker, { key: newRecordKey, item })).status, 201, "the new key's records replay");
      assert.equal((await ordersOf(worker, item)).count, 2, "each key ran once");
      const seen = await inspect(worker, oldKey);
      assert.deepEqual(seen.sealed, { keyId: idA, opens: false });
      // The operator releases it; the next request runs as the next attempt.
      const released = await worker.fetch(
        `/.well-known/oncekey/records/${recordName(HOST, undefined, oldKey)}/release`,
        { method: "POST", headers: bearer },
      );
      assert.equal(released.status, 200);
      assert.equal((await order(worker, { key: oldKey, item })).status, 201);
      await stored(worker, oldKey, item);
      assert.equal((await ordersOf(worker, item)).count, 3);
      assert.equal((await inspect(worker, oldKey)).sealed.keyId, idB);
    } finally {
      await worker.dispose();
    }
  });
});

describe("bad keys", () => {
  for (const [what, value] of [
    ["16 bytes", randomBytes(16).toString("base64")],
    ["not base64", "not-a-key!"],
    ["a key twice", `${KEY_A},${KEY_A}`],
  ]) {
    test(`${what}: 500 misconfigured naming the variable, never the key`, async () => {
      const worker = await start({ quiet: true, vars: { IDEMPOTENCY_SEAL_KEYS: value } });
      try {
        const res = await order(worker, { key: newKey(), item: uniqueItem("bad-key") });
        assert.equal(res.status, 500);
        const problem = await problemOf(res);
        assert.equal(problem.code, "misconfigured");
        assert.match(problem.detail, /IDEMPOTENCY_SEAL_KEYS/);
        for (const part of value.split(",")) assert.ok(!problem.detail.includes(part), problem.detail);
      } finally {
        await worker.dispose();
      }
    });
  }
});

describe("turning sealing on, then off", () => {
  const persist = tempDir();
  const item = uniqueItem("on-off");
  const [before, during] = [newKey(), newKey()];

  test("records from before sealing still replay; sealed ones fail closed once it is off, never run again", async () => {
    let worker = await start({ persist, quiet: true });
    try {
      assert.equal((await order(worker, { key: before, item })).status, 201);
      await stored(worker, before, item);
    } finally {
      await worker.dispose();
    }
    worker = await start({ persist, quiet: true, vars: { IDEMPOTENCY_SEAL_KEYS: KEY_A } });
    try {
      assert.equal((await stored(worker, before, item)).status, 201, "the plain record replays");
      assert.equal((await order(worker, { key: during, item })).status, 201);
      await stored(worker, during, item);
    } finally {
      await worker.dispose();
    }
    worker = await start({ persist, quiet: true });
    try {
      assert.equal((await stored(worker, before, item)).status, 201);
      const sealed = await order(worker, { key: during, item });
      assert.equal(sealed.status, 503);
      assert.equal((await problemOf(sealed)).code, "record-unreadable");
      assert.equal((await ordersOf(worker, item)).count, 2, "each key ran once");
    } finally {
      await worker.dispose();
    }
  });
});

describe("concurrent duplicates of a sealed answer", () => {
  test("8 callers at once on each of 4 keys, 3 rounds: each key runs once, and every answer is the one stored, opened", async () => {
    const worker = await start({ quiet: true, vars: { IDEMPOTENCY_SEAL_KEYS: KEY_A } });
    try {
      for (let round = 0; round < 3; round++) {
        const item = uniqueItem(`sealed-race-${round}`);
        const keys = Array.from({ length: 4 }, () => newKey());
        // The origin holds each first attempt a while, so duplicates wait in
        // the object for it, and then get its answer: sealed, then opened.
        const answers = await Promise.all(
          keys.flatMap((key) =>
            Array.from({ length: 8 }, async () => {
              const res = await order(worker, { key, item, query: "?delay_ms=150" });
              return { key, status: res.status, body: await res.text() };
            }),
          ),
        );
        for (const key of keys) {
          const mine = answers.filter((a) => a.key === key);
          assert.deepEqual(
            mine.map((a) => a.status),
            Array(8).fill(201),
            `round ${round}: every caller of a key gets its answer`,
          );
          assert.equal(new Set(mine.map((a) => a.body)).size, 1, "one answer per key, the stored one");
        }
        assert.equal((await ordersOf(worker, item)).count, 4, `round ${round}: each key ran once`);
      }
    } finally {
      await worker.dispose();
    }
  });
});
