// Performs one request's exchange on the Workers runtime: every decision is
// the core's (the actions of `Exchange`: a kind, and fields read off the
// exchange); this file drives it and does the I/O each action names, as
// src/edge/host.rs does for Rust workers. Each concern has its own file,
// named as the Rust host's: the request and response side http.js
// (src/edge/http.rs), time limits deadline.js, the coordinator over RPC
// durable_store.js, KV copies kv_replay.js, the caller going away
// disconnect.js, the origin's request origin.js, form keys form_keys.js,
// sealing at rest seal.js.
import { ActionKind, OriginFailure } from "oncekey-worker-wasm";
import { untilAborted, within } from "./deadline.js";
import { onCallerGone } from "./disconnect.js";
import { DurableStore } from "./durable_store.js";
import { withKeys } from "./form_keys.js";
import { packHeaders, readAnswer, readBody, replyResponse } from "./http.js";
import { KvReplay } from "./kv_replay.js";
import { isNotSent, outgoing } from "./origin.js";
import { runCipher } from "./seal.js";

// Each action's fields are getters of its exchange named for what they hold
// (`timeoutMs`, `record`, `body`, ...); its kind is one of the core's
// ActionKind.
const {
  Done: DONE,
  Respond: RESPOND,
  Log: LOG,
  Metric: METRIC,
  Detach: DETACH,
  ReadBody: READ_BODY,
  Forward: FORWARD,
  ReadCopy: READ_COPY,
  Store: STORE,
  CallOrigin: CALL_ORIGIN,
  Pause: PAUSE,
  WriteCopy: WRITE_COPY,
  Cipher: CIPHER,
} = ActionKind;

/**
 * Runs `exchange` to its end for `request`: the caller's answer as soon as
 * the exchange gives one. From its `detach` action on, the rest runs under
 * `ctx.waitUntil`, so a caller that goes away does not leave the key in
 * flight.
 */
export function drive(exchange, { handler, bindings, request, env, ctx, userHandler = false, keepCf = true }) {
  const host = new Host(handler, bindings, request, env, ctx, userHandler, keepCf);
  let answered, failed;
  const answer = new Promise((resolve, reject) => {
    answered = resolve;
    failed = reject;
  });
  const run = async (kind) => {
    for (;;) {
      try {
        switch (kind) {
          case RESPOND:
            answered(host.response(exchange));
            host.answered = true;
            kind = exchange.responded(Date.now());
            break;
          case LOG:
            console.log(exchange.line);
            kind = exchange.logged(Date.now());
            break;
          case METRIC:
            host.writeDataPoint(exchange.point);
            kind = exchange.metricWritten(Date.now());
            break;
          case DETACH:
            ctx.waitUntil(run(exchange.detached(Date.now())));
            return;
          case DONE:
            exchange.free();
            // Only if no answer was given (the error is not made for nothing).
            // The core's HostText::Unanswered (tests/support/host-texts.tsv).
            if (!host.answered) failed(new Error("oncekey: the exchange ended without an answer"));
            return;
          default:
            kind = await host.perform(kind, exchange);
        }
      } catch (error) {
        // A step threw instead of reporting a result (the handler's own
        // errors are results, caught where it is called). The core says
        // what follows: after the origin answered, the finish still goes.
        if (host.escaped) {
          exchange.free();
          failed(error);
          return;
        }
        if (kind === RESPOND && !host.answered) {
          failed(error);
          host.answered = true;
        }
        kind = exchange.stepFailed(messageOf(error), Date.now());
      }
    }
  };
  run(exchange.kind);
  return answer;
}

/** What performs one exchange's I/O actions. */
class Host {
  constructor(handler, bindings, request, env, ctx, userHandler, keepCf) {
    this.handler = handler;
    /**
     * Whether the handler is the user's (withIdempotency) rather than the
     * proxy's own call to its origin: then a request the layer does not
     * cover runs it exactly as without oncekey (no time limit, its throw
     * reaching the runtime), and a covered one's throw is logged with its stack.
     */
    this.userHandler = userHandler;
    /** Whether the handler's request carries the client's `cf` (origin.js, `outgoing`). */
    this.keepCf = keepCf;
    this.bindings = bindings;
    this.request = request;
    this.env = env;
    this.ctx = ctx;
    /** The response of an unprotected forward, whose body a reply streams. */
    this.kept = undefined;
    /** The coordinator of this request's record. */
    this.store = new DurableStore(env, bindings.coordinator);
    /** The KV copies of answers. */
    this.kv = new KvReplay(env, bindings.kv);
    /** Whether the caller has its answer. */
    this.answered = false;
    /** Whether the user's handler threw on a request the layer does not cover. */
    this.escaped = false;
  }

  /** Performs one I/O action and reports its result: the next action. */
  async perform(kind, exchange) {
    switch (kind) {
      case READ_BODY:
        return exchange.bodyEnded(await readBody(this.request, exchange), Date.now());
      case FORWARD:
        return this.forward(exchange);
      case READ_COPY: {
        const [bytes, error] = await this.kv.read(exchange.record, exchange.timeoutMs);
        return exchange.copyRead(bytes, error, Date.now());
      }
      case STORE: {
        const [reply, error] = await this.store.call(exchange);
        return exchange.storeAnswered(reply, error, Date.now());
      }
      case CALL_ORIGIN:
        return this.callOrigin(exchange);
      case PAUSE: {
        const ms = exchange.pauseMs;
        await new Promise((resolve) => setTimeout(resolve, ms));
        return exchange.paused(Date.now());
      }
      case WRITE_COPY:
        await this.kv.write(exchange.record, exchange.copy, exchange.ttlSeconds);
        return exchange.copyWritten(Date.now());
      case CIPHER: {
        const [bytes, error] = await runCipher(exchange);
        return exchange.ciphered(bytes, error, Date.now());
      }
      default:
        throw new Error(`oncekey: unknown action ${kind}`);
    }
  }

  /**
   * The runtime's response for a `respond` action (the kept response's
   * body, if it names none), an HTML body's forms given keys as it streams
   * when the exchange says so (SPEC §8).
   */
  response(exchange) {
    const kept = this.kept;
    this.kept = undefined;
    const response = replyResponse(exchange, kept);
    const page = exchange.formPage;
    return page === undefined ? response : withKeys(response, page, exchange.longestTag);
  }

  /** The user's handler, called once: its Response, or a rejection. */
  async callHandler(request) {
    const response = await this.handler(request, this.env, this.ctx);
    if (!(response instanceof Response)) throw new TypeError("the handler did not return a Response");
    return response;
  }

  /** An unprotected forward; its response is kept for the reply. */
  async forward(exchange) {
    const edits = exchange.edits;
    const body = exchange.body;
    const timeoutMs = exchange.timeoutMs;
    let response;
    try {
      // Unchanged, the client's request goes as it is, body unread.
      const request =
        edits === undefined && body === undefined
          ? this.request
          : outgoing(this.request, edits, body, undefined, this.keepCf);
      // The user's handler on a request the layer does not cover: as if
      // oncekey were not there — what it throws reaches the runtime, or
      // the framework's error handler, untouched (SPEC §11).
      if (this.userHandler) response = await this.callHandler(request);
      else response = await within(this.callHandler(request), timeoutMs);
    } catch (error) {
      if (this.userHandler) {
        // Not covered: the handler's throw reaches the runtime untouched.
        this.escaped = true;
        throw error;
      }
      return exchange.forwarded(undefined, "", messageOf(error), Date.now());
    }
    // A 101 the runtime can hand on carries a WebSocket; one without (a
    // broken origin) cannot be built into the caller's response.
    if (response.status === 101 && !response.webSocket) {
      return exchange.forwarded(undefined, "", "the origin answered 101 with no WebSocket", Date.now());
    }
    this.kept = response;
    return exchange.forwarded(response.status, packHeaders(response.headers), undefined, Date.now());
  }

  /**
   * One call of the handler for an attempt, its answer read within the
   * limit as the exchange takes it (a response whose body streams is kept
   * for the reply).
   */
  async callOrigin(exchange) {
    const timeoutMs = exchange.timeoutMs;
    const cut = new AbortController();
    let request;
    try {
      request = outgoing(this.request, exchange.edits, exchange.body, cut.signal, this.keepCf);
    } catch (error) {
      return exchange.originFailed(OriginFailure.NotSent, messageOf(error), Date.now());
    }
    // Ends the call early when the caller goes away (SPEC §3).
    const stopWatching = onCallerGone(this.request, exchange, cut);
    let streaming;
    // Whether the handler itself threw (not the time limit, a cut, or its
    // answer's body breaking off).
    let threw = false;
    try {
      // The limit covers the body too: a finish must come while the attempt
      // can still own the key.
      const handled = this.callHandler(request).catch((error) => {
        threw = true;
        throw error;
      });
      const call = handled.then((response) => readAnswer(response, exchange));
      streaming = await within(untilAborted(call, cut.signal), timeoutMs);
    } catch (error) {
      let failure = OriginFailure.NoAnswer;
      if (isNotSent(error)) failure = OriginFailure.NotSent;
      else if (threw && this.userHandler) {
        // A covered request's throw is an unknown outcome: its stack goes to
        // the log (`wrangler dev`, `wrangler tail`), not only its message.
        console.error("oncekey: the handler threw; the outcome is unknown", error);
        failure = OriginFailure.HandlerThrew;
      }
      return exchange.originFailed(failure, messageOf(error), Date.now());
    } finally {
      stopWatching();
    }
    this.kept = streaming;
    return exchange.answerEnded(Date.now());
  }

  /**
   * One data point to the Analytics Engine dataset: `writeDataPoint` only
   * queues it (no await), and its failure changes nothing for the caller.
   */
  writeDataPoint({ blobs, doubles, indexes }) {
    try {
      this.env[this.bindings.metrics]?.writeDataPoint({ blobs, doubles, indexes });
    } catch (error) {
      // The core's HostText::DataPointNotWritten (tests/support/host-texts.tsv).
      console.warn(`oncekey: data point not written: ${messageOf(error)}`);
    }
  }
}

/** An error's message, whatever was thrown. */
function messageOf(error) {
  return error instanceof Error ? error.message : String(error);
}
