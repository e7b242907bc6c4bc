// terminald's run_command("true") latency through the official MCP
// TypeScript SDK client over stdio, as the issue that asked for it measured
// it (issue 19), in six arrival patterns, against baselines timed in the
// same run from the same Node process: /bin/true started and waited for
// and, where installed, bubblewrap starting /bin/true in new namespaces.
//
//   paced        a call every 25 ms after the answer
//   back to back the next call right after the answer
//   after burst  one burst of 4 parallel calls first, then paced
//   random gaps  exponential pauses, mean 15 ms
//   bursts of 2  2 parallel calls (max_concurrent) every 100 ms, each timed;
//                the baselines as parallel pairs too
//   b2b bursts   2 parallel calls, the next pair right after the answers
//
// usage: node latency.mjs TERMINALD POLICY_FILE [CALLS]
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { spawn, execFileSync } from "node:child_process";

const [bin, policy, callsArg] = process.argv.slice(2);
const calls = Number(callsArg ?? 200);
const truePath = execFileSync("sh", ["-c", "command -v true"]).toString().trim();
let bwrap = "";
try { bwrap = execFileSync("sh", ["-c", "command -v bwrap"]).toString().trim(); } catch { /* not installed */ }

const now = () => Number(process.hrtime.bigint()) / 1e6;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const p = (xs, q) => { const s = [...xs].sort((a, b) => a - b); return s[Math.floor((s.length - 1) * q)]; };

// A child started and waited for as a Node program does (spawn, stdio
// ignored, the exit event), timed from the call to the exit.
function timeChild(cmd, args) {
  return new Promise((resolve, reject) => {
    const t0 = now();
    const c = spawn(cmd, args, { stdio: "ignore" });
    c.on("error", reject);
    c.on("exit", (code) => (code === 0 ? resolve(now() - t0) : reject(new Error(`${cmd} exited ${code}`))));
  });
}

// Each baseline arrives as the calls do, after a pause of its own (rest):
// timed right after a call, it would run on a machine the call had just
// woken while the call had waited out the pause.
// With parallel, each baseline is that many children at once, as the calls
// of a burst run.
async function baselines(direct, wrapped, rest, parallel = 1) {
  const times = (f) => Promise.all(Array.from({ length: parallel }, f));
  await rest();
  direct.push(...await times(() => timeChild(truePath, [])));
  if (bwrap) {
    await rest();
    wrapped.push(...await times(() => timeChild(bwrap, ["--unshare-all", "--die-with-parent", "--ro-bind", "/usr", "/usr",
      "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64", "--symlink", "usr/bin", "/bin", "--proc", "/proc",
      "--dev", "/dev", "/bin/true"])));
  }
}

// every: each call is a burst of burst parallel calls, each timed.
async function pattern(name, { pause = 0, burst = 0, random = false, every = false }) {
  const transport = new StdioClientTransport({ command: bin, args: ["--config", policy], stderr: "ignore" });
  const client = new Client({ name: "bastion-latency", version: "0" });
  await client.connect(transport);
  const run = async () => {
    const r = await client.callTool({ name: "run_command", arguments: { command: "true" } });
    if (r.structuredContent?.code !== "OK") throw new Error("run_command(true): " + JSON.stringify(r));
  };
  for (let i = 0; i < 10; i++) await run(); // warm up
  const timed = async () => { const t0 = now(); await run(); return now() - t0; };
  if (burst && !every) await Promise.all(Array.from({ length: burst }, run));
  const served = [], direct = [], wrapped = [];
  const rest = () => sleep(random ? -Math.log(1 - Math.random()) * pause : pause);
  const parallel = every ? burst : 1;
  while (served.length < calls) {
    await rest();
    served.push(...await Promise.all(Array.from({ length: parallel }, timed)));
    await baselines(direct, wrapped, rest, parallel);
  }
  await client.close();
  const over = p(served, 0.5) - p(direct, 0.5);
  let line = `${name.padEnd(13)} run_command p50 ${p(served, 0.5).toFixed(2)} ms p99 ${p(served, 0.99).toFixed(2)} ms` +
    ` (p99/p50 ${(p(served, 0.99) / p(served, 0.5)).toFixed(1)}); /bin/true from Node p50 ${p(direct, 0.5).toFixed(2)} ms;` +
    ` overhead ${over.toFixed(2)} ms (goal < 3)`;
  if (wrapped.length) {
    const own = p(wrapped, 0.5) - p(direct, 0.5);
    line += `; bubblewrap p50 ${p(wrapped, 0.5).toFixed(2)} ms, overhead / bubblewrap's ${(over / own).toFixed(2)} (goal <= 0.5)`;
  }
  console.log(line);
}

await pattern("paced", { pause: 25 });
await pattern("back to back", {});
await pattern("after burst", { pause: 25, burst: 4 });
await pattern("random gaps", { pause: 15, random: true });
await pattern("bursts of 2", { pause: 100, burst: 2, every: true });
await pattern("b2b bursts", { burst: 2, every: true });
