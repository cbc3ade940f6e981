// The Analytics Engine data point a decision's log line must give (docs/operations.md,
// "Metrics": the columns), written once for every suite that checks it.

/** `{blobs, doubles, indexes}` for the log line `line` (parsed JSON). */
export function dataPointOf(line) {
  return {
    blobs: [line.oncekey, line.tier, line.finish ?? "", line.record ?? "", line.route ?? ""],
    doubles: [
      line.attempt ?? 0,
      line.status,
      line.kv_ms ?? 0,
      line.do_ms ?? 0,
      line.origin_ms ?? 0,
      line.waited_ms ?? 0,
      line.after_answer_ms ?? 0,
    ],
    indexes: [line.oncekey],
  };
}
