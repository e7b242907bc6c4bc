// organizerd's plan view in headless chromium, hosted through the official
// ext-apps AppBridge, connected to the built organizerd over stdio: the plan
// shown as trees (counts per destination folder match the plan), skips with
// their reasons and HIGH_RISK flagged, a file named like markup shown as
// text, then apply (the workspace on disk matches the plan) and undo (the
// workspace is as before), each pressed in the view.
// usage: node organizerd.test.mjs BIN_DIR
import { readdirSync, statSync, utimesSync } from "node:fs";
import { join } from "node:path";
import { checkNarrow, checkThemes, launch, openHost, scriptedPerson, showTool, waitFor } from "./host.mjs";
import { artifacts, check, cleanup, docShot, existsSync, failed, HOSTILE, tempDir, write } from "./common.mjs";

const bin = join(process.argv[2] || "bin", "organizerd");
const dir = tempDir("bastion-apps-organizerd-");
const ws = join(dir, "inbox");
const files = ["holiday.jpg", "scan.png", "report.pdf", "notes.docx", "song.mp3", "archive.zip", `${HOSTILE}.txt`, "todo.txt"];
for (const f of files) write(join(ws, f), 1000 + f.length);
write(join(ws, ".env"), "STRIPE_SECRET=sk_live_51HfQ2eKc8Tz7YqWv3N0pLmR4xA9bC\n");
write(join(ws, "id_rsa"), "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n-----END OPENSSH PRIVATE KEY-----\n");
// An hour old: organizerd leaves files alone that were just written.
const old = new Date(Date.now() - 3600e3);
for (const f of readdirSync(ws)) utimesSync(join(ws, f), old, old);
write(join(dir, "policy.toml"), `audit_log = "${join(dir, "state", "audit.jsonl")}"\n[organizer]\nworkspace_root = "${ws}"\njournal = "${join(dir, "state", "organizer.journal")}"\n`);

// tree lists every file under ws, relative, sorted.
function tree(d = ws, pre = "") {
  const out = [];
  for (const e of readdirSync(d)) {
    const p = join(d, e);
    if (statSync(p).isDirectory()) out.push(...tree(p, pre + e + "/"));
    else out.push(pre + e);
  }
  return out.sort();
}

const browser = await launch();
const person = scriptedPerson();
let host;
try {
  console.log("organizerd plan view (chromium, ext-apps AppBridge, real organizerd over stdio)");
  const before = tree();
  host = await openHost({ browser, bin, args: ["--config", join(dir, "policy.toml")], person, width: 1000, height: 1000 });
  const view = await showTool(host, "plan_organize", {});
  const { frame, result } = view;
  const plan = result.structuredContent.detail;
  await waitFor(frame, () => document.documentElement.hasAttribute("data-render-ms"), null, "the plan to render");
  if (plan.move_count === 0) console.log(JSON.stringify(plan.skips.slice(0, 3)));
  check(plan.move_count > 0 && plan.skip_count > 0, `the plan moves ${plan.move_count} and skips ${plan.skip_count}`);

  // After tree: one folder per destination, with its count.
  const perDir = {};
  for (const m of plan.moves) { const d = m.dest.slice(0, m.dest.lastIndexOf("/")); perDir[d] = (perDir[d] || 0) + 1; }
  const shown = await frame.$$eval("#after summary", (ss) => ss.map((s) => s.textContent));
  for (const [d, n] of Object.entries(perDir)) {
    check(shown.includes(`${d}/${n} file${n === 1 ? "" : "s"}`), `the after tree shows ${d}/ with ${n}`);
  }
  const skipsText = await frame.$eval("#skips", (s) => s.textContent);
  const env = plan.skips.find((s) => s.name === ".env");
  check(env && skipsText.includes(".env") && skipsText.includes(env.reason), "the .env skip is listed with its reason");
  const flagged = await frame.$$eval("#skips li", (ls) => ls.filter((l) => l.textContent.includes("⚠ HIGH_RISK")).map((l) => l.firstChild.textContent));
  const wantFlag = plan.skips.filter((s) => /HIGH_RISK/.test(s.reason)).map((s) => s.name);
  check(wantFlag.length > 0 && JSON.stringify(flagged.sort()) === JSON.stringify(wantFlag.sort()), `HIGH_RISK skips flagged: ${flagged.join(", ")}`);
  const text = await frame.$eval("body", (b) => b.textContent);
  check(text.includes(`${HOSTILE}.txt`), "the file named like an <img> tag shows as those characters");
  check((await frame.evaluate(() => window.__pwned)) === undefined && (await frame.$$("img")).length === 0, "the payload's window flag stays unset (no script ran)");
  await docShot(host.page, frame, "organizerd-plan-view.png");
  await checkThemes(host, view, frame, "organizerd-plan");

  // Apply through the view.
  await frame.click("#apply");
  await waitFor(frame, () => document.documentElement.getAttribute("data-last-action") === "apply_plan", null, "apply_plan's answer");
  check((await frame.evaluate(() => document.documentElement.getAttribute("data-last-code"))) === "OK", "apply_plan answered OK");
  const want = before.filter((f) => !plan.moves.some((m) => m.src === f)).concat(plan.moves.map((m) => m.dest)).sort();
  const after = tree();
  check(JSON.stringify(after) === JSON.stringify(want), `the workspace after apply is the plan's after tree (${after.length} files)`);
  await host.page.screenshot({ path: join(artifacts, "organizerd-plan-applied.png"), fullPage: true });

  // Undo through the view.
  await frame.click("#undo");
  await waitFor(frame, () => document.documentElement.getAttribute("data-last-action") === "undo_last_action", null, "undo's answer");
  check((await frame.evaluate(() => document.documentElement.getAttribute("data-last-code"))) === "OK", "undo_last_action answered OK");
  check(JSON.stringify(tree()) === JSON.stringify(before), "the workspace after undo is as before");
  check(person.asked.length === 0, "under the shipped approval (apply_plan = agent) the person was not asked");
  check(host.errors.length === 0, `no errors in the page: ${host.errors.join("; ")}`);
  await host.close();

  // [approval] apply_plan = "human": the view's Apply only asks; the person
  // answers in the client. "deny": nothing moves and Apply can be pressed
  // again; "allow once": the plan is applied.
  write(join(dir, "human.toml"), `audit_log = "${join(dir, "state", "audit2.jsonl")}"\n[organizer]\nworkspace_root = "${ws}"\njournal = "${join(dir, "state", "organizer2.journal")}"\n[approval]\napply_plan = "human"\n`);
  const human = await openHost({ browser, bin, args: ["--config", join(dir, "human.toml")], person, width: 1000, height: 1000 });
  const h = await showTool(human, "plan_organize", {});
  await waitFor(h.frame, () => document.documentElement.hasAttribute("data-render-ms"), null, "the plan to render");
  const press = async (answer) => {
    person.script.push(answer);
    await h.frame.evaluate(() => document.documentElement.removeAttribute("data-last-action"));
    await h.frame.click("#apply");
    await waitFor(h.frame, () => document.documentElement.getAttribute("data-last-action") === "apply_plan", null, "apply_plan's answer");
    return h.frame.evaluate(() => document.documentElement.getAttribute("data-last-code"));
  };
  check((await press("deny")) === "POLICY_DENIED" && person.asked.length === 1, "apply_plan = human: the person is asked and denies");
  check(JSON.stringify(tree()) === JSON.stringify(before), "deny: nothing moved");
  check(!(await h.frame.$eval("#apply", (b) => b.disabled)), "deny: Apply can be pressed again (the plan id survives)");
  check((await press("allow once")) === "OK" && person.asked.length === 2, "allow once: apply_plan answered OK");
  check(JSON.stringify(tree()) === JSON.stringify(want), "allow once: the workspace is the plan's after tree");
  await human.close();

  await checkNarrow({ browser, bin, args: ["--config", join(dir, "policy.toml")], person }, "plan_organize", "data-render-ms", "organizerd-plan");
} catch (e) {
  check(false, `${e.stack || e}\n${host?.stderr?.join("").slice(-2000) ?? ""}`);
} finally {
  await browser.close();
  cleanup(dir);
}
if (failed()) { console.log(`organizerd view: ${failed()} FAILED`); process.exit(1); }
console.log("organizerd view: ok");
