// Hosts as the runtime hands them to the worker. The worker links a
// table-free IDNA adapter (Cargo.toml: idna_adapter) to stay within its
// size budget; this holds it to "an internationalised host still works":
// the runtime serialises it to punycode before the Rust code parses it.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { newKey, ordersOf, recordName, start, uniqueItem } from "./harness.mjs";

describe("keyed requests to internationalised hosts", () => {
  let worker;
  before(async () => {
    worker = await start();
  });
  after(() => worker?.dispose());

  for (const host of ["bücher.example", "xn--bcher-kva.example", "SHOP.Example"]) {
    test(`${host}: executed once, then replayed, under the punycode host's record`, async () => {
      const item = uniqueItem("idn");
      const key = newKey();
      const send = () =>
        worker.mf.dispatchFetch(`http://${host}/api/orders`, {
          method: "POST",
          headers: { "content-type": "application/json", "idempotency-key": key },
          body: JSON.stringify({ item, quantity: 1, amountCents: 500 }),
        });
      const first = await send();
      assert.equal(first.status, 201, await first.clone().text());
      const second = await send();
      assert.equal(second.status, 201);
      assert.equal(second.headers.get("idempotent-replayed"), "true");
      assert.equal(await second.text(), await first.text());
      assert.equal((await ordersOf(worker, item)).count, 1);
      const punycode = new URL(`http://${host}/`).host;
      assert.ok(
        (await worker.calls(recordName(punycode, undefined, key))) >= 1,
        "the record is named by the punycode host",
      );
    });
  }
});
