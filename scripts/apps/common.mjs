// Shared pieces of the view tests: temporary trees, policies, checks.
import { mkdirSync, mkdtempSync, writeFileSync, existsSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";

export const here = dirname(fileURLToPath(import.meta.url));
// Screenshots of every run land here (gitignored); docs/ holds the chosen ones.
export const artifacts = process.env.APPS_ARTIFACTS || join(here, "artifacts");
mkdirSync(artifacts, { recursive: true });

// The payload of the hostile-name tests: were it ever markup, its error
// handler would run and set the flag.
export const HOSTILE = "<img src=x onerror=window.__pwned=1>";

export function tempDir(prefix) { return mkdtempSync(join(tmpdir(), prefix)); }
export function write(path, bytes) {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, typeof bytes === "number" ? Buffer.alloc(bytes, 97) : bytes);
}
export function cleanup(dir) { rmSync(dir, { recursive: true, force: true }); }
export { existsSync, join };

let failures = 0;
export function check(cond, msg) {
  if (cond) { console.log(`  ok   ${msg}`); return; }
  console.log(`  FAIL ${msg}`);
  failures++;
}
export function failed() { return failures; }

// docShot saves the view, cropped to its content, as a docs screenshot
// when APPS_DOCS_SHOT names a directory.
export async function docShot(page, frame, name) {
  const dir = process.env.APPS_DOCS_SHOT;
  if (!dir) return;
  const h = await frame.evaluate(() => Math.ceil(document.body.getBoundingClientRect().bottom) + 10);
  const w = page.viewport().width;
  await page.screenshot({ path: join(dir, name), clip: { x: 0, y: 0, width: w, height: Math.min(h + 4, 1000) } });
}
