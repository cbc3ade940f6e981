// Queue consumers (SPEC §11): each message's handler runs at most once per
// event key while the key is remembered. Glue only, as src/edge/queue.rs
// is for the Rust host: every step — the key, `begin`, whether to run, the
// handler's time limit, `finish`, ack or retry and the delay, the counts,
// the log line — is the core's delivery exchange (`Delivery`); this file
// performs what it asks, the batch's lanes (one key's messages in order)
// up to `concurrency` at once.
import { Consumer, DeliveryKind, HandlerEnd, misconfiguredReply } from "oncekey-worker-wasm";
import { TimedOut, within } from "./deadline.js";
import { countersObject } from "./queue_counters.js";

const messageOf = (error) => (error instanceof Error ? error.message : String(error));

/**
 * Wraps a queue `handler(message, env, ctx, run)` so that it runs at most
 * once per event key; returns a `queue(batch, env, ctx)` handler. `run` is
 * `{key, attempt, reclaimed}`. The wrapper acknowledges or retries every
 * message itself: a handler that returns has done its work, one that
 * throws is retried (with backoff), and it must not ack or retry the
 * message itself.
 */
export function withQueueIdempotency(handler, options = {}) {
  if (typeof handler !== "function") throw new TypeError("withQueueIdempotency: the handler must be a function");
  const keyOf = typeof options?.key === "function" ? options.key : undefined;
  // Variables are fixed for an isolate's life: the consumer is made once,
  // and names the bindings it uses.
  let consumer;
  let coordinator;
  let metrics;
  return async function queue(batch, env, ctx) {
    if (consumer === undefined) {
      try {
        consumer = new Consumer(options ?? {}, env ?? {}, batch.queue);
      } catch (error) {
        // Named and logged as the HTTP layer logs it; the throw leaves the
        // batch to the queue's retries, nothing having run.
        console.error(misconfiguredReply(messageOf(error)).line);
        throw error;
      }
      ({ coordinator, metrics } = consumer.bindings);
    }
    const namespace = env?.[coordinator];
    const started = batch.messages.map((message) => {
      const [key, keyError] = keyOf === undefined ? [] : keyGiven(keyOf, message);
      return {
        message,
        delivery: consumer.start(message.id, message.body, message.timestamp.getTime(), key, keyError),
      };
    });
    // The core's lanes: one key's deliveries one after another, lanes at
    // once up to `concurrency` (default 1: the batch in order).
    const lanes = consumer.lanes(started.map(({ delivery }) => delivery.record));
    let next = 0;
    const runLanes = async () => {
      while (next < lanes.length) {
        for (const i of lanes[next++]) {
          const { message, delivery } = started[i];
          try {
            await perform(delivery, { message, namespace, coordinator, handler, env, ctx });
            consumer.count(delivery);
          } finally {
            delivery.free();
          }
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(consumer.concurrency, lanes.length) }, runLanes));
    const counts = consumer.takeCounts();
    if (counts !== undefined && namespace !== undefined) {
      try {
        await namespace.get(namespace.idFromName(countersObject(consumer.name))).counters(counts);
      } catch (error) {
        // The core's HostText::CountersNotSaved (tests/support/host-texts.tsv).
        console.warn(`oncekey: consumer ${consumer.name} counters not saved: ${messageOf(error)}`);
      }
    }
    // With a dataset bound, the batch's counts as one data point too.
    const dataset = env?.[metrics];
    if (dataset !== undefined) {
      try {
        dataset.writeDataPoint(consumer.dataPoint(counts ?? new Uint8Array(0)));
      } catch (error) {
        // The core's HostText::ConsumerDataPointNotWritten (tests/support/host-texts.tsv).
        console.warn(`oncekey: consumer ${consumer.name} data point not written: ${messageOf(error)}`);
      }
    }
  };
}

/**
 * What the user's key function gives `message`: `[key]`, or `[undefined,
 * why]` when it throws or returns something other than a string (a whole
 * number counts as its digits). The core checks the key itself (SPEC §1's
 * form); a message with none is retried alone, never merged with others.
 */
function keyGiven(keyOf, message) {
  let key;
  try {
    key = keyOf(message);
  } catch (error) {
    return [undefined, `it threw: ${messageOf(error)}`];
  }
  if (typeof key === "string") return [key];
  if (Number.isSafeInteger(key)) return [String(key)];
  const what = key === null ? "null" : typeof key === "object" ? (key.constructor?.name ?? "an object") : typeof key;
  return [undefined, `it returned ${what}, not a string`];
}

/** Performs one message's delivery until the core says it is done. */
async function perform(delivery, { message, namespace, coordinator, handler, env, ctx }) {
  for (let kind = delivery.kind; kind !== DeliveryKind.Done; ) {
    switch (kind) {
      case DeliveryKind.Store: {
        let reply;
        let error;
        try {
          if (namespace === undefined) throw new Error(`no Durable Object namespace bound as ${coordinator}`);
          const stub = namespace.get(namespace.idFromName(delivery.record));
          reply = await within(stub.call(delivery.call), delivery.timeoutMs);
        } catch (failure) {
          error = messageOf(failure);
        }
        kind = delivery.storeAnswered(reply, error, Date.now());
        break;
      }
      case DeliveryKind.RunHandler: {
        const run = delivery.run;
        const timeoutMs = delivery.timeoutMs;
        let end = HandlerEnd.Done;
        let error;
        try {
          // Like the origin's, the handler's time limit is below the lease.
          await within(
            Promise.resolve().then(() => handler(message, env, ctx, run)),
            timeoutMs,
          );
        } catch (failure) {
          const timedOut = failure instanceof TimedOut;
          end = timedOut ? HandlerEnd.StillRunning : HandlerEnd.Failed;
          if (!timedOut) {
            error = messageOf(failure);
            console.error("oncekey: the queue handler threw; the message is retried", failure);
          }
        }
        kind = delivery.handlerEnded(end, error);
        break;
      }
      case DeliveryKind.Ack:
        message.ack();
        kind = delivery.settled();
        break;
      case DeliveryKind.Retry:
        message.retry({ delaySeconds: delivery.delaySeconds });
        kind = delivery.settled();
        break;
      case DeliveryKind.Pause: {
        const ms = delivery.pauseMs;
        await new Promise((resolve) => setTimeout(resolve, ms));
        kind = delivery.paused();
        break;
      }
      case DeliveryKind.Log:
        console.log(delivery.line);
        kind = delivery.logged();
        break;
      default:
        throw new Error(`oncekey: unknown delivery action ${kind}`);
    }
  }
}
