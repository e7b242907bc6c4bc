// A command longer than the TypeScript SDK client's default request
// timeout (60 s) completes through terminald's run_command when the client
// resets its timeout on progress (resetTimeoutOnProgress: true), as the SDK
// documents: terminald sends notifications/progress about once a second
// while a foreground command runs, each with the latest output lines.
// Fails if the call times out, if the command did not run to its end, or
// if no progress carried an output line.
//
// usage: node long-run.mjs TERMINALD_BINARY POLICY_FILE SECONDS
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const [bin, policy, secondsArg] = process.argv.slice(2);
const seconds = Number(secondsArg ?? 75);
const transport = new StdioClientTransport({ command: bin, args: ["--config", policy], stderr: "ignore" });
const client = new Client({ name: "bastion-long-run", version: "0" });
await client.connect(transport);
const line = `sh -c 'i=0; while [ $i -lt ${seconds} ]; do i=$((i+1)); echo tick $i; sleep 1; done; echo finished'`;
let reports = 0, withLines = 0;
const start = Date.now();
let res;
try {
  res = await client.callTool({ name: "run_command", arguments: { command: line } }, undefined, {
    resetTimeoutOnProgress: true,
    onprogress: (p) => { reports++; if (/tick \d+/.test(p.message ?? "")) withLines++; },
  });
} catch (e) {
  console.log(`FAIL terminald: a ${seconds} s command through the SDK client with resetTimeoutOnProgress: ${e.message} after ${((Date.now() - start) / 1000).toFixed(1)} s`);
  process.exit(1);
}
const r = res.structuredContent ?? JSON.parse(res.content?.[0]?.text ?? "{}");
const took = ((Date.now() - start) / 1000).toFixed(1);
await client.close();
if (r.code !== "OK" || r.detail?.exit_code !== 0 || !String(r.detail?.stdout ?? "").includes("finished")) {
  console.log(`FAIL terminald: the ${seconds} s command answered ${r.code} after ${took} s: ${r.reason}`);
  process.exit(1);
}
if (withLines === 0) {
  console.log(`FAIL terminald: ${reports} progress notifications, none with an output line`);
  process.exit(1);
}
console.log(`terminald: a ${seconds} s command completed through the SDK client (resetTimeoutOnProgress) in ${took} s; ${reports} progress notifications, ${withLines} with output lines`);
