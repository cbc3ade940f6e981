// The project's Markdown pages as the tests read them: the README, the npm
// package's README and every page under docs/, with their fenced code
// blocks. Tests that run the documentation's snippets as written take them
// from here, so a snippet moved between pages is still found and still run.
import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";

export const ROOT = new URL("../../", import.meta.url).pathname;

/** Every Markdown page, as paths relative to the root: README.md, pkg/README.md, docs/**. */
export function pages() {
  const found = ["README.md", "pkg/README.md"].filter((f) => existsSync(join(ROOT, f)));
  const walk = (dir) => {
    for (const entry of readdirSync(dir).sort()) {
      const path = join(dir, entry);
      if (statSync(path).isDirectory()) walk(path);
      else if (entry.endsWith(".md")) found.push(relative(ROOT, path));
    }
  };
  if (existsSync(join(ROOT, "docs"))) walk(join(ROOT, "docs"));
  return found;
}

/** The text of the page at `path` (relative to the root). */
export function page(path) {
  return readFileSync(join(ROOT, path), "utf8");
}

/** The fenced blocks of `markdown` in language `lang`, their text without the fences. */
export function blocksOf(markdown, lang) {
  return [...markdown.matchAll(new RegExp(`^\`\`\`${lang}\\n([\\s\\S]*?)^\`\`\``, "gm"))].map((m) => m[1]);
}

/**
 * The fenced block of `lang` whose first line is `firstLine`, on any page.
 * A snippet may appear on several pages (the README repeats a page's
 * shortest path); every copy must then be the same text.
 */
export function block(lang, firstLine) {
  const found = new Map();
  for (const path of pages())
    for (const text of blocksOf(page(path), lang)) if (text.startsWith(firstLine)) found.set(text, path);
  assert.equal(found.size, 1, `one ${lang} block starting "${firstLine}" across the pages, found ${found.size}`);
  return [...found.keys()][0];
}

/** Every distinct fenced block of `lang` across the pages. */
export function allBlocks(lang) {
  return [...new Set(pages().flatMap((path) => blocksOf(page(path), lang)))];
}
