// Drives one built Bastion server's human-approval path (issue 10) with the
// official MCP TypeScript SDK client. The client declares the elicitation
// capability and a scripted "person" answers each form the server sends, the
// way a client's UI would let the user answer (the model never sees it):
//   sweepd      scan, a dry run (would_reclaim_bytes), then a confirmed
//               reclaim under [approval] reclaim = "human": the person answers
//               "deny" (POLICY_DENIED, nothing deleted, the ids stay usable),
//               then "allow once" (OK, detail.approval.by "human", deleted)
//   organizerd  apply_plan under [approval] apply_plan = "human": "deny"
//               (POLICY_DENIED, nothing moved, the plan id survives), then
//               "allow once" (OK, the files moved)
//   terminald   run_command of git under
//               [terminal.ask] commands = ["git"]: deny, allow once, allow
//               this exact command for the session (asked once, then not),
//               and a different argument asks again
// Every question is printed as the person would read it and checked: one
// required enum field "answer" offering exactly the documented answers, and
// the facts the server checked (the paths, the destination folders).
// The policy is the sandbox's (scripts/make_demo_sandbox.sh) plus those
// [approval] and [terminal.ask] keys, written beside it.
//
// usage: node approval.mjs SERVER_BINARY POLICY_FILE
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const [bin, policy] = process.argv.slice(2);
const name = basename(bin);

const secret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
const ONCE = "allow once";
const SESSION = "allow this exact command for the rest of this session";
const DENY = "deny";

let failures = 0;
const fail = (msg) => { console.log(`FAIL ${name} (approval): ${msg}`); failures++; };

// person answers the server's questions from a script, one answer per
// question, and remembers every question it was asked.
const person = {
  script: [],
  asked: [],
  async answer(req) {
    const q = req.params;
    person.asked.push(q);
    console.log("       the person is asked:");
    for (const line of String(q.message).split("\n")) console.log(`       | ${line}`);
    console.log(`       | [${(q.requestedSchema?.properties?.answer?.enum ?? []).join("] [")}]`);
    const a = person.script.shift();
    if (a === undefined) {
      fail("the server asked a question the script did not expect; answering cancel");
      return { action: "cancel" };
    }
    console.log(`       the person answers: ${a}`);
    if (a === "decline" || a === "cancel") return { action: a };
    return { action: "accept", content: { answer: a } };
  },
};

// withApproval writes the sandbox policy plus approval keys beside it.
function withApproval(policyFile, approvalLines, askCommands) {
  let text = readFileSync(policyFile, "utf8");
  if (/^\[approval\]/m.test(text)) throw new Error(`${policyFile} already has [approval]; this script adds its own`);
  text += `\n[approval]\n${approvalLines.join("\n")}\n`;
  if (askCommands) {
    const list = `commands = ${JSON.stringify(askCommands)}`;
    const shipped = /^\[terminal\.ask\]\n(?:#[^\n]*\n)*commands = \[[^\]]*\]/m;
    text = shipped.test(text) ? text.replace(shipped, `[terminal.ask]\n${list}`) : `${text}\n[terminal.ask]\n${list}\n`;
  }
  const out = join(dirname(policyFile), "approval-policy.toml");
  writeFileSync(out, text);
  return out;
}

// connect starts the server under the policy with a client that can ask.
async function connect(policyFile) {
  const transport = new StdioClientTransport({ command: bin, args: ["--config", policyFile], stderr: "pipe" });
  let stderr = "";
  transport.stderr?.on("data", (d) => { stderr = (stderr + d).slice(-4000); });
  const client = new Client({ name: "bastion-approval-check", version: "0" }, { capabilities: { elicitation: { form: {} } } });
  client.setRequestHandler(ElicitRequestSchema, (req) => person.answer(req));
  try {
    await client.connect(transport);
  } catch (e) {
    console.log(`FAIL ${name} (approval): cannot start under ${policyFile}: ${e.message}; server stderr: ${stderr.trim().split("\n").slice(-3).join(" | ")}`);
    process.exit(1);
  }
  const sv = client.getServerVersion();
  console.log(`${name}: initialize ok (server ${sv?.name} ${sv?.version}), the client declares elicitation (form)`);
  return { client, stderr: () => stderr };
}

// step calls a tool with the person's answers queued, and checks the code
// and that the person was asked exactly once per queued answer.
async function step(client, label, tool, args, want, answers = []) {
  person.script = [...answers];
  const before = person.asked.length;
  let res;
  try {
    res = await client.callTool({ name: tool, arguments: args }, undefined, { timeout: 120_000 });
  } catch (e) {
    fail(`${label}: tools/call ${tool}: protocol error ${e.message}`);
    return { code: "PROTOCOL_ERROR", detail: {} };
  }
  if (JSON.stringify(res).includes(secret)) fail(`${label}: the answer contains the planted secret`);
  const r = res.structuredContent ?? JSON.parse(res.content?.[0]?.text ?? "{}");
  const asked = person.asked.length - before;
  const mark = r.code === want && asked === answers.length ? "ok  " : "FAIL";
  console.log(`${mark} ${label}\n       ${tool} ${JSON.stringify(args).slice(0, 120)} -> ${r.code}: ${String(r.reason).slice(0, 200)}`);
  if (r.code !== want) fail(`${label}: ${r.code}, expected ${want}`);
  if (asked !== answers.length) fail(`${label}: the person was asked ${asked} time(s), expected ${answers.length}`);
  person.script = [];
  return { ...r, detail: r.detail ?? {}, question: asked > 0 ? person.asked[person.asked.length - 1] : null };
}

// expectApproval compares detail.approval with the fields given.
function expectApproval(label, r, want) {
  const got = r.detail.approval ?? {};
  for (const [k, v] of Object.entries(want)) {
    if (got[k] !== v) fail(`${label}: detail.approval.${k} is ${JSON.stringify(got[k])}, expected ${JSON.stringify(v)} (${JSON.stringify(got)})`);
  }
}

// checkForm requires the documented form: one required enum field.
function checkForm(label, q, answers, key, facts) {
  if (!q) return;
  const s = q.requestedSchema ?? {};
  const props = Object.keys(s.properties ?? {});
  if (props.join() !== "answer" || JSON.stringify(s.required) !== '["answer"]') fail(`${label}: the form is not one required field "answer": ${JSON.stringify(s)}`);
  const offered = s.properties?.answer?.enum ?? [];
  if (JSON.stringify(offered) !== JSON.stringify(answers)) fail(`${label}: the form offers ${JSON.stringify(offered)}, expected ${JSON.stringify(answers)}`);
  if (key && !q.message.includes(key)) fail(`${label}: the question does not say what asks (${key})`);
  for (const f of facts) if (!q.message.includes(f)) fail(`${label}: the question does not show ${f}`);
}

async function sweepd(client) {
  const scan = await step(client, "scan the code root", "scan", {}, "OK");
  const finds = (scan.detail.finds ?? []).filter((f) => !f.keep);
  const kept = (scan.detail.finds ?? []).filter((f) => f.keep);
  if (finds.length === 0 || kept.length === 0) return fail(`expected reclaimable and kept finds, got ${finds.length} and ${kept.length}`);
  const ids = finds.map((f) => f.id);
  const dry = await step(client, "dry run: reports what it would free", "reclaim", { ids }, "OK");
  const sizes = (dry.detail.results ?? []).reduce((n, o) => n + (o.size_bytes ?? 0), 0);
  if (dry.detail.would_reclaim_bytes !== sizes) fail(`dry run: would_reclaim_bytes is ${dry.detail.would_reclaim_bytes}, the per-id sizes add up to ${sizes}`);
  const denied = await step(client, "confirmed reclaim; the person answers deny", "reclaim", { ids, confirm: "delete" }, "POLICY_DENIED", [DENY]);
  checkForm("reclaim", denied.question, [ONCE, DENY], "approval.reclaim", finds.map((f) => f.path));
  expectApproval("deny", denied, { asked: true, by: "human", answer: "decline" });
  for (const f of finds) if (!existsSync(f.path)) fail(`${f.path} was deleted although the person denied`);
  const allowed = await step(client, "the same ids again; the person answers allow once", "reclaim", { ids, confirm: "delete" }, "OK", [ONCE]);
  expectApproval("allow once", allowed, { asked: true, by: "human", answer: "accept", scope: "once" });
  for (const f of finds) if (existsSync(f.path)) fail(`${f.path} is still there after the person allowed the reclaim`);
  for (const f of kept) if (!existsSync(f.path)) fail(`the kept ${f.path} is gone`);
}

async function organizerd(client, workspace) {
  const plan = await step(client, "plan (changes nothing)", "plan_organize", {}, "OK");
  const moves = plan.detail.moves ?? [];
  if (!plan.detail.plan_id || moves.length === 0) return fail("plan_organize planned no moves");
  const args = { plan_id: plan.detail.plan_id };
  const folders = [...new Set(moves.map((m) => m.dest.split("/")[0]))];
  const denied = await step(client, "apply the plan; the person answers deny", "apply_plan", args, "POLICY_DENIED", [DENY]);
  checkForm("apply_plan", denied.question, [ONCE, DENY], "approval.apply_plan", folders);
  expectApproval("deny", denied, { asked: true, by: "human", answer: "decline" });
  for (const m of moves) if (!existsSync(join(workspace, m.src))) fail(`${m.src} moved although the person denied`);
  const allowed = await step(client, "the same plan; the person answers allow once", "apply_plan", args, "OK", [ONCE]);
  expectApproval("allow once", allowed, { asked: true, by: "human", answer: "accept", scope: "once" });
  for (const m of moves) if (!existsSync(join(workspace, m.dest))) fail(`${m.dest} is missing after the person allowed the plan`);
  await step(client, "a plan applies once, asked or not", "apply_plan", args, "STALE");
}

async function terminald(client) {
  const run = (command) => ({ command });
  const answers = [ONCE, SESSION, DENY];
  const denied = await step(client, "git is on the ask list; the person answers deny", "run_command", run("git --version"), "POLICY_DENIED", [DENY]);
  checkForm("run_command", denied.question, answers, null, ["git", "--version"]);
  expectApproval("deny", denied, { asked: true, by: "human", answer: "decline" });
  const once = await step(client, "the person answers allow once", "run_command", run("git --version"), "OK", [ONCE]);
  expectApproval("allow once", once, { asked: true, by: "human", answer: "accept", scope: "once" });
  if (!String(once.detail.stdout ?? "").includes("git version")) fail(`allow once: git --version printed ${JSON.stringify(once.detail.stdout)}`);
  const session = await step(client, "once covers one run: asked again; allow for the session", "run_command", run("git --version"), "OK", [SESSION]);
  expectApproval("allow for the session", session, { asked: true, by: "human", answer: "accept", scope: "session" });
  const again = await step(client, "the same argv again: not asked", "run_command", run("git --version"), "OK", []);
  expectApproval("session approval", again, { asked: false, by: "human", scope: "session" });
  await step(client, "a different argument asks again; deny", "run_command", run("git --version --build-options"), "POLICY_DENIED", [DENY]);
}

const sandbox = dirname(policy);
const flows = {
  sweepd: { approval: ['reclaim = "human"', "timeout_seconds = 60"], run: (c) => sweepd(c) },
  organizerd: { approval: ['apply_plan = "human"', "timeout_seconds = 60"], run: (c) => organizerd(c, join(sandbox, "inbox")) },
  terminald: { approval: ["timeout_seconds = 60"], ask: ["git"], run: (c) => terminald(c) },
};
const flow = flows[name];
if (!flow) {
  console.log(`${name}: no approval path to drive`);
  process.exit(0);
}
const pol = withApproval(policy, flow.approval, flow.ask);
const { client, stderr } = await connect(pol);
try {
  await flow.run(client);
} finally {
  await client.close();
}
if (failures > 0) {
  console.log(`${name}: server stderr (last lines): ${stderr().trim().split("\n").slice(-5).join(" | ")}`);
  process.exit(1);
}
console.log(`${name}: approval ok (the person was asked ${person.asked.length} time(s))`);
