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
