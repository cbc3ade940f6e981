// A diagnosis, not a benchmark: what V8 is still compiling (and throwing
// away) once the workers have warmed up. One workerd holds the named
// workers and the origin, with V8's tracing flags; after a warm-up, each
// worker serves one series per path, and the trace lines V8 printed during
// that series alone are summed: wasm functions compiled (and the time it
// took), JavaScript functions optimised, code deoptimised.
//
//   V8_TRACE_IMPLS=oncekey-js,hono-do V8_TRACE_N=2000 node bench/v8-trace.mjs
//
// V8_TRACE_PATHS (replay,first), V8_TRACE_ROUNDS (each path's series again,
// 3), V8_TRACE_EXTRA_FLAGS (more V8 flags, such as --no-liftoff). Each
// series' lines go to $TMPDIR/v8-trace-<worker>-<path>-<round>.log.
import { writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { WORKERS } from "../tests/edge/harness.mjs";
import { miniflareWithV8Flags } from "./miniflare-v8-flags.mjs";
import { benchOncekey, honoDoWorker, originWorker, seriesOn } from "./workers.mjs";

const EXTRA = process.env.V8_TRACE_EXTRA_FLAGS ?? "";
process.env.MINIFLARE_V8_FLAGS = `--trace-opt --trace-deopt --trace-wasm-compilation-times ${EXTRA}`;
const { Miniflare } = await import(miniflareWithV8Flags());
const N = Number(process.env.V8_TRACE_N ?? 2000);
const ROUNDS = Number(process.env.V8_TRACE_ROUNDS ?? 3);
const ALL = {
  "oncekey-js": () => benchOncekey("oncekey-js", WORKERS["proxy-js"]),
  "oncekey-rust": () => benchOncekey("oncekey-rust", WORKERS.proxy),
  "hono-do": () => honoDoWorker("hono-do"),
};
const NAMES = (process.env.V8_TRACE_IMPLS ?? "oncekey-js,hono-do").split(",");
const PATHS = (process.env.V8_TRACE_PATHS ?? "replay,first").split(",");

/** What a series' trace lines say: wasm compiles and their µs, JavaScript optimisations, deoptimisations. */
function summary(lines) {
  let wasm = 0;
  let wasmUs = 0;
  let optimised = 0;
  let deoptimised = 0;
  for (const line of lines) {
    const compiled = line.match(/^Compiled function \S*#\d+ using \w+, took (\d+) /);
    if (compiled) {
      wasm += 1;
      wasmUs += Number(compiled[1]);
    } else if (line.includes("[completed optimizing")) optimised += 1;
    else if (line.includes("bailout (kind:") || line.includes("for deoptimization")) deoptimised += 1;
  }
  return { wasm, wasmUs, optimised, deoptimised };
}

let out = "";
const mf = new Miniflare({
  workers: [...NAMES.map((name) => ALL[name]()), originWorker],
  handleRuntimeStdio: (stdout, stderr) => {
    stdout.on("data", (chunk) => {
      out += chunk;
    });
    stderr.resume();
  },
});
try {
  const url = await mf.ready;
  const { run, warm } = seriesOn(url, 4);
  await warm(NAMES, PATHS);
  console.log(
    `V8 flags: ${process.env.MINIFLARE_V8_FLAGS.trim()}; after a warm-up of 300 requests per worker and path (and 100 keys completed for the replays):`,
  );
  console.log(
    "| round | worker | path | requests | wasm functions compiled | their compile µs per request | JavaScript functions optimised | deoptimisations |",
  );
  console.log("|---:|---|---|---:|---:|---:|---:|---:|");
  for (let round = 1; round <= ROUNDS; round++) {
    for (const path of PATHS) {
      for (const name of NAMES) {
        // Compiles run on background threads: a pause on each side keeps one series' lines apart from the next's.
        await new Promise((done) => setTimeout(done, 500));
        const from = out.length;
        await run(name, path, N);
        await new Promise((done) => setTimeout(done, 500));
        const lines = out.slice(from).split("\n").filter(Boolean);
        const { wasm, wasmUs, optimised, deoptimised } = summary(lines);
        console.log(
          `| ${round} | ${name} | ${path} | ${N} | ${wasm} | ${(wasmUs / N).toFixed(1)} | ${optimised} | ${deoptimised} |`,
        );
        writeFileSync(join(tmpdir(), `v8-trace-${name}-${path}-${round}.log`), lines.join("\n"));
      }
    }
  }
} finally {
  await mf.dispose();
}
