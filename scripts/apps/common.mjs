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

// contrastFailures returns the text in the frame whose colour has less than
// 4.5:1 contrast with the background behind it (WCAG AA for normal text);
// disabled controls are exempt, as in WCAG.
export async function contrastFailures(frame) {
  return frame.evaluate(() => {
    const parse = (c) => { const m = c.match(/[\d.]+/g) || []; return [+m[0] || 0, +m[1] || 0, +m[2] || 0, m[3] === undefined ? 1 : +m[3]]; };
    const lum = ([r, g, b]) => {
      const f = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; };
      return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
    };
    const over = (top, under) => { const a = top[3]; return [0, 1, 2].map((i) => top[i] * a + under[i] * (1 - a)).concat(1); };
    const background = (e) => {
      const layers = [];
      for (let n = e; n; n = n.parentElement) {
        const c = parse(getComputedStyle(n).backgroundColor);
        if (c[3] > 0) layers.push(c);
        if (c[3] >= 1) break;
      }
      let bg = [255, 255, 255, 1];
      for (const l of layers.reverse()) bg = over(l, bg);
      return bg;
    };
    const bad = [];
    for (const e of document.body.querySelectorAll("*")) {
      if (e.closest("button:disabled, input:disabled") || e.matches(":disabled")) continue;
      const hasText = Array.from(e.childNodes).some((n) => n.nodeType === 3 && n.textContent.trim());
      if (!hasText || !e.getClientRects().length) continue;
      const bg = background(e);
      const fg = over(parse(getComputedStyle(e).color), bg);
      const [a, b] = [lum(fg), lum(bg)].sort((x, y) => y - x);
      const ratio = (a + 0.05) / (b + 0.05);
      if (ratio < 4.5) bad.push(`${e.tagName.toLowerCase()}.${e.className} "${e.textContent.trim().slice(0, 30)}" ${ratio.toFixed(2)}:1`);
    }
    return bad;
  });
}
