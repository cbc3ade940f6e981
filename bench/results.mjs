// bench/RESULTS.md, where every benchmark writes its own section: the text
// between `<!-- name:start -->` and `<!-- name:end -->`, the rest of the file
// left alone. BENCH_RESULTS writes elsewhere (a trial run).
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

export const RESULTS = process.env.BENCH_RESULTS ?? join(dirname(fileURLToPath(import.meta.url)), "RESULTS.md");

/** Puts `section` (its marks included) in place of the file's `name` section, or at its end. */
export function writeSection(name, section) {
  const text = section.endsWith("\n") ? section : `${section}\n`;
  let doc = existsSync(RESULTS) ? readFileSync(RESULTS, "utf8") : "# Benchmark results\n\n";
  const marks = new RegExp(`<!-- ${name}:start -->[\\s\\S]*<!-- ${name}:end -->\\n?`);
  doc = marks.test(doc) ? doc.replace(marks, () => text) : `${doc.trimEnd()}\n\n${text}`;
  writeFileSync(RESULTS, doc);
}
