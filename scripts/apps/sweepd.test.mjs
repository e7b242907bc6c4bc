// sweepd's scan view in headless chromium, hosted through the official
// ext-apps AppBridge, connected to the built sweepd over stdio:
//  - the treemap's rectangles against the finds' sizes (areas proportional
//    within 2%), keep and HIGH_RISK finds marked, totals
//  - a directory named like markup shows as text and runs nothing
//  - two finds selected (one with the keyboard), a dry run, then delete:
//    the server asks the person (elicitation), who answers "deny" (nothing
//    deleted) and then "allow once" (exactly those two gone)
//  - at 400 px wide nothing overflows sideways
// usage: node sweepd.test.mjs BIN_DIR
import { join } from "node:path";
import { checkNarrow, checkThemes, launch, openHost, scriptedPerson, showTool, waitFor } from "./host.mjs";
import { artifacts, check, cleanup, docShot, existsSync, failed, HOSTILE, tempDir, write } from "./common.mjs";

const bin = join(process.argv[2] || "bin", "sweepd");
const dir = tempDir("bastion-apps-sweepd-");
const root = join(dir, "root");
const KiB = 1024;
// name -> size of the blob in its node_modules (sizes within 8x of each
// other, so every rectangle is large enough to measure).
const projects = { "web-app": 1200 * KiB, "api": 800 * KiB, "docs-site": 520 * KiB, "cli": 400 * KiB,
  "tiny-a": 260 * KiB, "tiny-b": 200 * KiB, [HOSTILE]: 300 * KiB, "kept": 640 * KiB, "envy": 360 * KiB };
for (const [name, size] of Object.entries(projects)) {
  write(join(root, name, "package.json"), "{}\n");
  write(join(root, name, "node_modules", "pkg", "blob.bin"), size);
}
write(join(root, "kept", ".bastion-keep"), "");
write(join(root, "envy", "node_modules", "pkg", ".env"), "STRIPE_SECRET=sk_live_51HfQ2eKc8Tz7YqWv3N0pLmR4xA9bC\n");
write(join(root, "rusty", "Cargo.toml"), "[package]\nname = \"rusty\"\n");
write(join(root, "rusty", "target", "debug", "blob.bin"), 700 * KiB);
// One project with two kinds: the treemap groups them under it.
write(join(root, "mono", "package.json"), "{}\n");
write(join(root, "mono", "Cargo.toml"), "[package]\nname = \"mono\"\n");
write(join(root, "mono", "node_modules", "pkg", "blob.bin"), 560 * KiB);
write(join(root, "mono", "target", "debug", "blob.bin"), 480 * KiB);
// A name with a right-to-left override: shown with the override escaped.
const BIDI = "invoice\u202Eexe.txt";
write(join(root, BIDI, "package.json"), "{}\n");
write(join(root, BIDI, "node_modules", "pkg", "blob.bin"), 240 * KiB);
const extra = 4; // rusty/target, mono/node_modules, mono/target
write(join(dir, "policy.toml"), `audit_log = "${join(dir, "state", "audit.jsonl")}"\n[sweep]\nroots = ["${root}"]\n[approval]\nreclaim = "human"\n`);

const browser = await launch();
const person = scriptedPerson();
let host;
try {
  console.log("sweepd scan view (chromium, ext-apps AppBridge, real sweepd over stdio)");
  host = await openHost({ browser, bin, args: ["--config", join(dir, "policy.toml")], person, width: 1100, height: 1000 });
  const view = await showTool(host, "scan", {});
  const { frame, result } = view;
  const finds = result.structuredContent.detail.finds;
  await waitFor(frame, (n) => document.documentElement.getAttribute("data-finds") === String(n), finds.length, "the finds to render");
  check(finds.length === Object.keys(projects).length + extra, `scan found ${finds.length} finds (want ${Object.keys(projects).length + extra})`);

  // Treemap: one rectangle per find, area proportional to size.
  const leaves = await frame.$$eval(".leaf", (ls) => ls.map((l) => {
    const r = l.getBoundingClientRect();
    return { id: l.getAttribute("data-id"), size: Number(l.getAttribute("data-size")), area: r.width * r.height, cls: l.className };
  }));
  check(leaves.length === finds.length, `treemap has ${leaves.length} rectangles for ${finds.length} finds`);
  const box = await frame.$eval("#treemap", (t) => t.clientWidth * t.clientHeight);
  const total = finds.reduce((s, f) => s + f.size_bytes, 0);
  let worst = 0;
  for (const l of leaves) {
    const f = finds.find((x) => x.id === l.id);
    const want = (f.size_bytes / total) * box;
    worst = Math.max(worst, Math.abs(l.area - want) / want);
  }
  check(worst <= 0.02, `every rectangle's area is its find's share of the treemap within 2% (worst ${(worst * 100).toFixed(2)}%)`);
  const kept = finds.find((f) => f.path.endsWith("/kept/node_modules"));
  const envy = finds.find((f) => f.path.endsWith("/envy/node_modules"));
  check(kept?.keep && leaves.find((l) => l.id === kept.id)?.cls.includes("keep"), "the kept find is marked kept in the treemap");
  check(await frame.$eval(`input[data-id="${kept.id}"]`, (i) => i.disabled), "the kept find cannot be selected");
  check(leaves.find((l) => l.id === envy.id)?.cls.includes("warn"), "the find holding a .env is marked HIGH_RISK in the treemap");
  const envyRow = await frame.$eval(`tr[data-id="${envy.id}"]`, (r) => r.textContent);
  check(envyRow.includes("HIGH_RISK") && envyRow.includes(".env"), `the list names the .env inside (${envyRow.slice(0, 120)}…)`);
  const totals = await frame.$eval("#totals", (t) => t.textContent);
  check(totals.includes(`${finds.length} finds`) && totals.includes("1 kept") && totals.includes("1 with HIGH_RISK"), `totals: ${totals}`);

  // Hostile name: shown as text, nothing ran.
  const text = await frame.$eval("body", (b) => b.textContent);
  check(text.includes(HOSTILE), "the directory named like an <img> tag shows as those characters");
  check((await frame.evaluate(() => window.__pwned)) === undefined, "the payload's window flag stays unset (no script ran)");
  check((await frame.$$("img")).length === 0, "no <img> element exists in the view");
  check(!text.includes("\u202E") && text.includes("invoice\\u{202E}exe.txt"), "a right-to-left override in a name shows escaped, as \\u{202E}");

  // Sorting by path, then back by size.
  await frame.click('th[data-key="path"] button');
  const firstByPath = await frame.$eval("#list tbody tr td.name", (td) => td.firstChild.textContent);
  check(firstByPath === [...finds].map((f) => f.path.slice(root.length + 1)).sort((a, b) => a.localeCompare(b))[0], `the list sorts by path (${firstByPath})`);
  await frame.click('th[data-key="size_bytes"] button');
  await docShot(host.page, frame, "sweepd-scan-view.png");
  await checkThemes(host, view, frame, "sweepd-scan");

  // Select two finds: tiny-a with a click in the list, tiny-b with the keyboard in the treemap.
  const a = finds.find((f) => f.path.endsWith("/tiny-a/node_modules"));
  const b = finds.find((f) => f.path.endsWith("/tiny-b/node_modules"));
  await frame.click(`input[data-id="${a.id}"]`);
  await frame.focus(".leaf[tabindex='0']");
  const order = leaves.map((l) => l.id);
  for (let i = 0; i < order.indexOf(b.id); i++) await host.page.keyboard.press("ArrowRight");
  await host.page.keyboard.press("Space");
  const sel = await frame.$$eval(".leaf.selected", (ls) => ls.map((l) => l.getAttribute("data-id")).sort());
  check(JSON.stringify(sel) === JSON.stringify([a.id, b.id].sort()), "two finds selected, one by mouse and one by keyboard");

  const reclaim = async (answer) => {
    person.script.push(answer);
    const asked = person.asked.length;
    await frame.click("#dry");
    await waitFor(frame, () => document.getElementById("outcomes").textContent.includes("would delete"), null, "the dry run");
    const dry = await frame.$eval("#outcomes", (o) => o.textContent);
    check(dry.split("would delete").length - 1 === 2 && dry.includes("tiny-a") && dry.includes("tiny-b"), "the dry run shows the two finds that would go");
    check(existsSync(a.path) && existsSync(b.path), "the dry run deleted nothing");
    await frame.click("#delete");
    await waitFor(frame, () => document.documentElement.hasAttribute("data-last-code") && !document.getElementById("delete").textContent.includes("…") === false, null, "the reclaim answer");
    await waitFor(frame, (n) => document.documentElement.getAttribute("data-last-code") !== null && document.getElementById("status").textContent.length > 0 && !document.getElementById("status").textContent.startsWith("Asking"), asked, "the reclaim answer");
    const q = person.asked[asked];
    check(q && String(q.message).includes("tiny-a") && String(q.message).includes("tiny-b"), "the server asked the person, naming both finds");
    return frame.evaluate(() => document.documentElement.getAttribute("data-last-code"));
  };
  const denied = await reclaim("deny");
  check(denied === "POLICY_DENIED", `the person answered deny: ${denied}`);
  check(existsSync(a.path) && existsSync(b.path), "deny: nothing deleted");
  await host.page.screenshot({ path: join(artifacts, "sweepd-scan-denied.png"), fullPage: true });
  const allowed = await reclaim("allow once");
  check(allowed === "OK", `the person answered allow once: ${allowed}`);
  check(!existsSync(a.path) && !existsSync(b.path), "allow once: both selected finds are gone");
  const others = finds.filter((f) => f.id !== a.id && f.id !== b.id);
  check(others.every((f) => existsSync(f.path)), `allow once: the other ${others.length} finds are all still there`);
  const left = await frame.$$eval(".leaf", (ls) => ls.length);
  check(left === finds.length - 2, `the treemap now shows ${left} finds`);
  await host.page.screenshot({ path: join(artifacts, "sweepd-scan-reclaimed.png"), fullPage: true });
  await host.close();

  // 400 px wide: no sideways overflow, the treemap still fits.
  const narrowErrors = await checkNarrow({ browser, bin, args: ["--config", join(dir, "policy.toml")], person }, "scan", "data-finds", "sweepd-scan");
  check(host.errors.length === 0 && narrowErrors.length === 0, `no errors in the page: ${[...host.errors, ...narrowErrors].join("; ")}`);
} catch (e) {
  check(false, `${e.stack || e}\n${host?.stderr?.join("").slice(-2000) ?? ""}`);
} finally {
  await browser.close();
  cleanup(dir);
}
if (failed()) { console.log(`sweepd view: ${failed()} FAILED`); process.exit(1); }
console.log("sweepd view: ok");
