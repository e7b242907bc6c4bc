// Drives one built Bastion server over stdio with the official MCP
// TypeScript SDK client: initialize, list tools and resource templates, call
// every tool once with harmless arguments, read a file-context resource.
// Fails on any protocol error, on a tool answer that is not an
// OperationResult, and on any answer containing the sandbox's fake secret.
//
// usage: node sdk-client.mjs SERVER_BINARY POLICY_FILE
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const [bin, policy] = process.argv.slice(2);
const name = bin.split("/").pop();
const secret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
const codes = new Set(["OK", "POLICY_DENIED", "INVALID_REQUEST", "PATH_ESCAPE", "NOT_FOUND", "STALE",
  "NEEDS_EXPLICIT_REQUEST", "TIMEOUT", "LIMIT_EXCEEDED", "OUTPUT_TRUNCATED", "OPERATION_FAILED", "AUDIT_UNAVAILABLE", "INTERNAL_ERROR"]);
// Harmless arguments: read-only calls, dry runs, or ids that do not exist.
const harmless = {
  list_targets: {}, scan: {}, reclaim: { ids: ["f-000000000000000000000000"] },
  run_command: { command: "pwd" }, explain_command: { command: "cat .env" },
  list_files: {}, plan_organize: {}, apply_plan: { plan_id: "p-000000000000000000000000" },
  move_file: { src: "does-not-exist.txt", dest: "Documents/does-not-exist.txt" },
  undo_last_action: {}, redo_last_action: {}, get_context_summary: {},
};
const envFile = { sweepd: "webapp/.env", terminald: ".env", organizerd: ".env" }[name] ?? ".env";
let failures = 0;
const fail = (msg) => { console.log(`FAIL ${name}: ${msg}`); failures++; };
const leak = (what, v) => { if (JSON.stringify(v).includes(secret)) fail(`${what} contains the planted secret`); };

const transport = new StdioClientTransport({ command: bin, args: ["--config", policy], stderr: "ignore" });
const client = new Client({ name: "bastion-sdk-check", version: "0" });
await client.connect(transport);
const sv = client.getServerVersion();
console.log(`${name}: initialize ok (server ${sv?.name} ${sv?.version})`);
const { tools } = await client.listTools();
console.log(`${name}: tools/list ${tools.map((t) => t.name).join(", ")}`);
for (const t of tools) {
  if (!t.description) fail(`tool ${t.name} has no description`);
  const a = t.annotations ?? {};
  for (const k of ["readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"]) {
    if (typeof a[k] !== "boolean") fail(`tool ${t.name} does not declare ${k}`);
  }
}
let templates = [];
try { templates = (await client.listResourceTemplates()).resourceTemplates; } catch (e) { /* no resources capability */ }
console.log(`${name}: resources/templates/list ${templates.map((t) => t.uriTemplate).join(", ") || "(none)"}`);
for (const t of tools) {
  const args = harmless[t.name] ?? {};
  let res;
  try {
    res = await client.callTool({ name: t.name, arguments: args });
  } catch (e) {
    fail(`tools/call ${t.name}: protocol error ${e.message}`);
    continue;
  }
  leak(`tools/call ${t.name}`, res);
  const r = res.structuredContent ?? JSON.parse(res.content?.[0]?.text ?? "{}");
  if (!codes.has(r.code) || typeof r.ok !== "boolean" || typeof r.reason !== "string") {
    fail(`tools/call ${t.name} did not answer an OperationResult: ${JSON.stringify(res).slice(0, 200)}`);
    continue;
  }
  if (Boolean(res.isError) === r.ok) fail(`tools/call ${t.name}: isError=${res.isError} but ok=${r.ok}`);
  console.log(`${name}: tools/call ${t.name} ${JSON.stringify(args)} -> ${r.code}`);
}
if (templates.some((t) => t.uriTemplate.startsWith("file-context://"))) {
  const uri = `file-context://${envFile}`;
  try {
    const res = await client.readResource({ uri });
    leak(`resources/read ${uri}`, res);
    const text = res.contents?.[0]?.text ?? "";
    if (!text.includes("HIGH_RISK")) fail(`resources/read ${uri}: .env is not HIGH_RISK: ${text.slice(0, 200)}`);
    else console.log(`${name}: resources/read ${uri} -> HIGH_RISK`);
  } catch (e) {
    fail(`resources/read ${uri}: ${e.message}`);
  }
}
await client.close();
if (failures > 0) process.exit(1);
console.log(`${name}: sdk client ok`);
