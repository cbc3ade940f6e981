// A record this version cannot decode (SPEC §3): after a rollback across a
// record layout, the newer layout must fail closed — 503 record-unreadable,
// the origin not called — never read as "absent", which would run a stored
// key again. The admin paths show it and release it.
//
// The record is made unreadable the way a rollback would leave it: the
// worker stores an answer in a persisted Durable Object, stops, and the
// record's layout version byte is raised in the object's SQLite file (where
// workerd keeps it, V8-serialised, under the key "record").
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { BASE, newKey, order, ordersOf, problemOf, recordName, start, tempDir, uniqueItem } from "./harness.mjs";

const TOKEN = "operator-secret";
const bearer = { authorization: `Bearer ${TOKEN}` };

/** Raises the layout version of the record stored in every coordinator object under `dir`. */
function raiseLayoutVersion(dir) {
  const objects = join(dir, "oncekey-IdempotencyCoordinator");
  const files = readdirSync(objects).filter((f) => f.endsWith(".sqlite") && f !== "metadata.sqlite");
  assert.ok(files.length > 0, "a coordinator object was persisted");
  const script = `
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
(value,) = db.execute("select value from _cf_KV where key = 'record'").fetchone()
at = value.index(b"OK\\x01")
db.execute("update _cf_KV set value = ? where key = 'record'", (value[:at + 2] + b"\\x02" + value[at + 3:],))
db.commit()
`;
  for (const file of files) execFileSync("python3", ["-c", script, join(objects, file)]);
}

describe("a record of a newer layout (a rollback)", () => {
  const dir = tempDir();
  const key = newKey();
  const item = uniqueItem("rollback");
  const record = recordName(new URL(BASE).hostname, undefined, key);
  let worker;
  before(async () => {
    const first = await start({ persist: dir, quiet: true });
    assert.equal((await order(first, { key, item })).status, 201);
    await first.dispose();
    raiseLayoutVersion(dir);
    worker = await start({ persist: dir, quiet: true, vars: { IDEMPOTENCY_ADMIN_TOKEN: TOKEN } });
  });
  after(() => worker?.dispose());

  test("fails closed: 503 record-unreadable, the origin is not called; the admin paths show it and release it", async () => {
    const refused = await order(worker, { key, item });
    assert.equal(refused.status, 503);
    const problem = await problemOf(refused);
    assert.equal(problem.code, "record-unreadable");
    assert.match(problem.detail, /cannot be read/);
    assert.equal((await ordersOf(worker, item)).count, 1, "never run again");

    const path = `/.well-known/oncekey/records/${record}`;
    const seen = await worker.fetch(path, { headers: bearer });
    assert.equal(seen.status, 200);
    assert.deepEqual(await seen.json(), { record, kind: "unreadable" });

    const released = await worker.fetch(`${path}/release`, { method: "POST", headers: bearer });
    assert.equal(released.status, 200);
    assert.equal((await released.json()).kind, "released");
    const again = await order(worker, { key, item });
    assert.equal(again.status, 201, "after the operator's release the key runs");
    assert.equal((await ordersOf(worker, item)).count, 2);
  });
});
