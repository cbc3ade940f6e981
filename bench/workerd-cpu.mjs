// Workerd's CPU time, for the benchmarks: the process Miniflare spawned and
// the CPU of all its threads from /proc/<pid>/task/*/schedstat (nanoseconds;
// /proc's tick counts are too coarse for one request).
import { readdirSync, readFileSync } from "node:fs";

/** The workerd process Miniflare spawned (a child of this process). */
export function workerdPid() {
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      const [comm, rest] = [
        stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")")),
        stat.slice(stat.lastIndexOf(")") + 2),
      ];
      if (Number(rest.split(" ")[1]) === process.pid && comm.startsWith("workerd")) return Number(entry);
    } catch {
      // gone
    }
  }
  throw new Error("no workerd child found");
}
/** CPU time of every live thread of `pid`, ms. */
export function threadsCpuMs(pid) {
  let ns = 0;
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      ns += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, "utf8").split(" ")[0]);
    } catch {
      // exited
    }
  }
  return ns / 1e6;
}
