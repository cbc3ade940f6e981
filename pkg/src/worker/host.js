// Performs one request's exchange on the Workers runtime: every decision is
// the core's (the actions of `Exchange`: a kind, and fields read off the
// exchange); this file drives it and does the I/O each action names — the
// handler, the coordinator over RPC, KV, timers — and reports each result
// back, as src/edge/layer.rs does for Rust workers. The request and
// response side is http.js (src/edge/http.rs), time limits deadline.js
// (src/edge/deadline.rs).
import { ActionKind, keyInput, OriginFailure } from "oncekey-worker-wasm";
import { withFormKeys } from "../../../src/shared/form_keys.js";
import { untilAborted, within } from "./deadline.js";
import { joined, readAnswer, readBody, replyResponse } from "./http.js";
import { isNotSent } from "./not-sent.js";

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
} = ActionKind;

/**
 * Runs `exchange` to its end for `request`: the caller's answer as soon as
 * the exchange gives one. From its `detach` action on, the rest runs under
 * `ctx.waitUntil`, so a caller that goes away does not leave the key in
 * flight.
 */
export function drive(exchange, { handler, bindings, request, env, ctx, userHandler = false }) {
  const host = new Host(handler, bindings, request, env, ctx, userHandler);
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
  constructor(handler, bindings, request, env, ctx, userHandler) {
    this.handler = handler;
    /**
     * Whether the handler is the user's (withIdempotency) rather than the
     * proxy's own call to its origin: then a request the layer does not
     * cover runs it exactly as without oncekey (no time limit, its throw
     * reaching the runtime), and a covered one's throw is logged with its stack.
     */
    this.userHandler = userHandler;
    this.bindings = bindings;
    this.request = request;
    this.env = env;
    this.ctx = ctx;
    /** The response of an unprotected forward, whose body a reply streams. */
    this.kept = undefined;
    /** The coordinator stub of this request's record, once asked for. */
    this.stub = undefined;
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
        const [bytes, error] = await this.readKv(exchange.record, exchange.timeoutMs);
        return exchange.copyRead(bytes, error, Date.now());
      }
      case STORE: {
        const [reply, error] = await this.storeCall(exchange);
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
        await this.writeKv(exchange.record, exchange.copy, exchange.ttlSeconds);
        return exchange.copyWritten(Date.now());
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
    return exchange.formKeys ? withFormKeys(response, keyInput, exchange.longestTag) : response;
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
      const request = edits === "" && body === undefined ? this.request : this.outgoing(edits, body);
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
    this.kept = response;
    return exchange.forwarded(response.status, joined(response.headers), undefined, Date.now());
  }

  /**
   * One call of the handler for an attempt, its answer read within the
   * limit as the exchange takes it (a response whose body streams is kept
   * for the reply).
   */
  async callOrigin(exchange) {
    const timeoutMs = exchange.timeoutMs;
    // Ends the call early when the caller goes away (SPEC §3): the core says
    // how much of what Workers allows after a disconnect it may still take.
    const cut = new AbortController();
    let request;
    try {
      request = this.outgoing(exchange.edits, exchange.body, cut.signal);
    } catch (error) {
      return exchange.originFailed(OriginFailure.NotSent, messageOf(error), Date.now());
    }
    const callerSignal = this.request.signal;
    let cutTimer;
    const callerGone = () => {
      const ms = exchange.callerGone(Date.now());
      if (ms === undefined) return;
      const why = new Error(
        `the caller went away; no answer within the ${ms} ms left of what Workers allows after a disconnect`,
      );
      cutTimer = setTimeout(() => cut.abort(why), ms);
    };
    callerSignal?.addEventListener("abort", callerGone, { once: true });
    // A caller gone before the listener was added fires no event: seen here,
    // as the Rust host sees it (src/edge/disconnect.rs).
    if (callerSignal?.aborted) callerGone();
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
      callerSignal?.removeEventListener("abort", callerGone);
      clearTimeout(cutTimer);
    }
    this.kept = streaming;
    return exchange.answerEnded(Date.now());
  }

  /**
   * The client's request with header `edits` (`op\nname\nvalue\n...`),
   * and `body` (undefined: its own).
   */
  outgoing(joinedEdits, body, signal) {
    const request = this.request;
    const headers = new Headers(request.headers);
    const edits = joinedEdits.split("\n");
    for (let i = 0; i + 2 < edits.length; i += 3) {
      if (edits[i] === "set") headers.set(edits[i + 1], edits[i + 2]);
      else headers.delete(edits[i + 1]);
    }
    // An attempt's request carries the layer's own signal, never the
    // caller's: the call goes on after a disconnect, for as long as the core says.
    const own = signal === undefined ? {} : { signal };
    if (body === undefined) return new Request(request, { headers, ...own });
    if (body.length > 0) return new Request(request, { headers, body, ...own });
    // No body at all (a GET must have none); the client's body, if any, was read.
    return new Request(request.url, { method: request.method, headers, redirect: request.redirect, ...own });
  }

  /** The record's coordinator over RPC: the reply's bytes, or the error. */
  async storeCall(exchange) {
    try {
      const call = exchange.call;
      const timeoutMs = exchange.timeoutMs;
      if (this.stub === undefined) {
        const name = this.bindings.coordinator;
        const namespace = this.env[name];
        if (!namespace) return [undefined, `no Durable Object namespace bound as ${name}`];
        this.stub = namespace.get(namespace.idFromName(exchange.record));
      }
      return [await within(this.stub.call(call), timeoutMs), undefined];
    } catch (error) {
      // A stub that saw its object fail or reset stays broken: every later
      // call through it fails too. The next call (a repeated finish, an
      // abandon) gets a fresh one, as the Rust host gets one per call.
      this.stub = undefined;
      return [undefined, messageOf(error)];
    }
  }

  /**
   * One data point to the Analytics Engine dataset: `writeDataPoint` only
   * queues it (no await), and its failure changes nothing for the caller.
   */
  writeDataPoint({ blobs, doubles, indexes }) {
    try {
      this.env[this.bindings.metrics]?.writeDataPoint({ blobs, doubles, indexes });
    } catch (error) {
      console.warn(`oncekey: data point not written: ${messageOf(error)}`);
    }
  }

  /** A KV value's bytes (undefined when absent), or the error. */
  async readKv(key, timeoutMs) {
    const name = this.bindings.kv;
    const kv = this.env[name];
    if (!kv) return [undefined, `no KV namespace bound as ${name}`];
    try {
      const found = await within(kv.get(key, "arrayBuffer"), timeoutMs);
      return [found === null ? undefined : new Uint8Array(found), undefined];
    } catch (error) {
      return [undefined, messageOf(error)];
    }
  }

  /** A KV copy; its failure changes nothing (the object holds the answer). */
  async writeKv(key, value, ttlSeconds) {
    const kv = this.env[this.bindings.kv];
    if (!kv) return;
    try {
      await kv.put(key, value, { expirationTtl: ttlSeconds });
    } catch {
      // Nothing depends on the copy.
    }
  }
}

/** An error's message, whatever was thrown. */
function messageOf(error) {
  return error instanceof Error ? error.message : String(error);
}
