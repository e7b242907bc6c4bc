// Checks the MCP bundles `make dist` built, with the official tools:
//   1. mcpb validate on each source manifest (packaging/<server>/manifest.json);
//   2. mcpb info on each bundle; mcpb unpack, mcpb validate on the unpacked
//      manifest, mcpb pack of the unpacked tree and mcpb info on that;
//   3. a smoke test of each bundle's Linux binary: the command, arguments and
//      environment come from the manifest's mcp_config resolved by mcpb's own
//      getMcpConfigForManifest (the code a client uses) with user_config filled
//      from test values; the official TypeScript SDK client then initializes,
//      compares tools/list and prompts/list with the manifest, gets each
//      prompt, and makes read-only calls that prove the settings arrived
//      (sweepd sees both roots, terminald runs in the jail with the bundled
//      policy, organizerd lists the workspace).
//
// usage: node bundles.mjs REPO_DIR DIST_DIR VERSION
import { execFileSync } from "node:child_process";
import { mkdtempSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { getMcpConfigForManifest } from "@anthropic-ai/mcpb";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const [repo, dist, version] = process.argv.slice(2);
const here = new URL(".", import.meta.url).pathname;
const mcpb = join(here, "node_modules", ".bin", "mcpb");
const tmp = mkdtempSync(join(tmpdir(), "bastion-bundles-"));
let failures = 0;
const fail = (s, msg) => { console.log(`FAIL ${s}: ${msg}`); failures++; };
const run = (...args) => execFileSync(mcpb, args, { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });

// file writes body at path, making its directory.
function file(path, body) {
  mkdirSync(join(path, ".."), { recursive: true });
  writeFileSync(path, body);
}

// Test values for each server's user_config, and what must then be true.
function setup(s) {
  const d = join(tmp, s);
  if (s === "sweepd") {
    const roots = [join(d, "code-a"), join(d, "code-b")];
    for (const r of roots) {
      file(join(r, "web", "package.json"), "{}");
      file(join(r, "web", "node_modules", "left-pad", "index.js"), "module.exports = 1;\n");
    }
    return { user: { roots }, check: checkSweepd(roots) };
  }
  if (s === "terminald") {
    const jail = join(d, "jail");
    file(join(jail, "hello.txt"), "hello\n");
    return { user: { jail_root: jail, policy_file: "" }, check: checkTerminald };
  }
  const ws = join(d, "inbox");
  file(join(ws, "report.pdf"), "%PDF-1.4\n");
  return { user: { workspace_root: ws }, check: checkOrganizerd };
}

const result = (res) => res.structuredContent ?? JSON.parse(res.content?.[0]?.text ?? "{}");

function checkSweepd(roots) {
  return async (client) => {
    const r = result(await client.callTool({ name: "scan", arguments: {} }));
    const found = (r.detail?.finds ?? []).map((f) => f.path).sort();
    const want = roots.map((root) => join(root, "web", "node_modules")).sort();
    if (r.code !== "OK" || JSON.stringify(found) !== JSON.stringify(want)) {
      throw new Error(`scan of every root: ${r.code} ${r.reason}; finds ${JSON.stringify(found)}, want ${JSON.stringify(want)}`);
    }
  };
}

async function checkTerminald(client) {
  const x = result(await client.callTool({ name: "explain_command", arguments: { command: "ls" } }));
  if (x.code !== "OK") throw new Error(`explain_command ls: ${x.code} ${x.reason}`);
  const r = result(await client.callTool({ name: "run_command", arguments: { command: "ls" } }));
  if (r.code !== "OK" || !String(r.detail?.stdout ?? "").includes("hello.txt")) {
    throw new Error(`run_command ls in the jail: ${r.code} ${r.reason} ${JSON.stringify(r.detail).slice(0, 300)}`);
  }
}

async function checkOrganizerd(client) {
  const r = result(await client.callTool({ name: "list_files", arguments: {} }));
  if (r.code !== "OK" || !JSON.stringify(r.detail).includes("report.pdf")) {
    throw new Error(`list_files: ${r.code} ${r.reason}`);
  }
}

// sameNames fails unless the server lists exactly the manifest's names.
function sameNames(s, what, manifest, live) {
  const a = manifest.map((x) => x.name).sort().join(",");
  const b = live.map((x) => x.name).sort().join(",");
  if (a !== b) fail(s, `${what}: manifest ${a}, server ${b}`);
}

// smoke starts the unpacked bundle's server as a client would and drives it.
async function smoke(s, dir) {
  const manifest = JSON.parse(readFileSync(join(dir, "manifest.json"), "utf8"));
  const { user, check } = setup(s);
  const cfg = await getMcpConfigForManifest({ manifest, extensionPath: dir, systemDirs: {}, userConfig: user, pathSeparator: "/" });
  if (!cfg) throw new Error("mcpb resolved no mcp_config (a required setting missing?)");
  const home = join(tmp, s, "home");
  mkdirSync(home, { recursive: true });
  const env = { ...cfg.env, PATH: process.env.PATH, HOME: home, XDG_STATE_HOME: join(home, "state") };
  const transport = new StdioClientTransport({ command: cfg.command, args: cfg.args ?? [], env, stderr: "pipe" });
  let stderr = "";
  transport.stderr?.on("data", (b) => { stderr += b; });
  const client = new Client({ name: "bastion-bundle-check", version: "0" });
  try {
    await client.connect(transport);
    sameNames(s, "tools", manifest.tools, (await client.listTools()).tools);
    const { prompts } = await client.listPrompts();
    sameNames(s, "prompts", manifest.prompts, prompts);
    for (const p of prompts) {
      const args = Object.fromEntries((p.arguments ?? []).filter((a) => a.required).map((a) => [a.name, "ls"]));
      const got = await client.getPrompt({ name: p.name, arguments: args });
      if (!got.messages?.[0]?.content?.text) fail(s, `prompts/get ${p.name} returned no text`);
    }
    await check(client);
    console.log(`${s}: bundle ok (${cfg.command.replace(dir, "<bundle>")} ${(cfg.args ?? []).map((a) => a.replace(dir, "<bundle>").replace(tmp, "<tmp>")).join(" ")})`);
  } catch (e) {
    fail(s, `${e.message}\n${stderr.split("\n").slice(-5).join("\n")}`);
  } finally {
    await client.close().catch(() => {});
  }
}

try {
  for (const s of ["sweepd", "terminald", "organizerd"]) {
    const bundle = join(dist, `${s}_${version}.mcpb`);
    const dir = join(tmp, "unpacked", s);
    try {
      run("validate", join(repo, "packaging", s, "manifest.json"));
      run("info", bundle);
      run("unpack", bundle, dir);
      run("validate", join(dir, "manifest.json"));
      run("pack", dir, join(tmp, `${s}-repacked.mcpb`));
      run("info", join(tmp, `${s}-repacked.mcpb`));
      console.log(`${s}: mcpb validate, info, unpack, pack ok`);
    } catch (e) {
      fail(s, `mcpb ${e.message}\n${e.stdout ?? ""}${e.stderr ?? ""}`);
      continue;
    }
    await smoke(s, dir);
  }
} finally {
  rmSync(tmp, { recursive: true, force: true });
}
if (failures > 0) {
  console.log(`bundles: ${failures} failure(s)`);
  process.exit(1);
}
console.log("bundles: ok");
