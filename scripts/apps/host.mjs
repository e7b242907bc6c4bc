// A small MCP Apps host for the browser tests: the official ext-apps
// AppBridge, with the official TypeScript SDK client connected to the REAL
// server binary over stdio, and the view in a sandboxed iframe of headless
// Debian chromium (puppeteer-core). The bridge runs here in Node; a relay
// carries its JSON-RPC messages to and from the iframe with postMessage,
// as a web host's PostMessageTransport would.
//
// The host does what a real client does: it declares the
// io.modelcontextprotocol/ui extension and elicitation, reads the ui://
// resource named by the tool's _meta.ui.resourceUri, builds the frame's
// Content-Security-Policy from the resource's _meta.ui.csp, shows the view
// the tool's input and result, forwards the view's tools/call to the server,
// and lets a scripted person answer the server's questions (the view never
// sees them).
import { existsSync } from "node:fs";
import { Client } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";
import { AppBridge } from "@modelcontextprotocol/ext-apps/app-bridge";
import puppeteer from "puppeteer-core";
import { join } from "node:path";
import { artifacts, check, contrastFailures } from "./common.mjs";

export const UI = "io.modelcontextprotocol/ui";
export const MIME = "text/html;profile=mcp-app";

// chromiumPath finds Debian's chromium or fails saying how to install it.
export function chromiumPath() {
  for (const p of [process.env.CHROMIUM, "/usr/bin/chromium", "/usr/bin/chromium-browser"]) {
    if (p && existsSync(p)) return p;
  }
  throw new Error("chromium not found: install it with `apt-get install -y chromium` (or set CHROMIUM to its path)");
}

export async function launch() {
  return puppeteer.launch({
    executablePath: chromiumPath(),
    headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run"],
  });
}

// cspFor builds the frame's policy from _meta.ui.csp the way the spec's
// default does: nothing from outside unless a domain is named.
export function cspFor(csp = {}) {
  const list = (k) => (csp[k] || []).join(" ");
  return [
    "default-src 'none'",
    `script-src 'unsafe-inline' ${list("resourceDomains")}`,
    `style-src 'unsafe-inline' ${list("resourceDomains")}`,
    `img-src data: ${list("resourceDomains")}`,
    `font-src ${list("resourceDomains") || "'none'"}`,
    `connect-src ${list("connectDomains") || "'none'"}`,
    `frame-src ${list("frameDomains") || "'none'"}`,
    `base-uri ${list("baseUriDomains") || "'none'"}`,
    "form-action 'none'",
  ].join("; ");
}

// A relay is an MCP Transport whose other end is the view in the iframe.
class Relay {
  constructor(page) { this.page = page; }
  async start() {}
  async send(message) {
    await this.page.evaluate((m) => document.getElementById("view").contentWindow.postMessage(m, "*"), message);
  }
  async close() { this.onclose?.(); }
  deliver(message) { this.onmessage?.(message); }
}

// person answers the server's elicitation questions from a script.
export function scriptedPerson() {
  const p = {
    script: [],
    asked: [],
    async answer(req) {
      const q = req.params;
      p.asked.push(q);
      const a = p.script.shift();
      if (a === undefined) return { action: "cancel" };
      if (a === "decline" || a === "cancel") return { action: a };
      return { action: "accept", content: { answer: a } };
    },
  };
  return p;
}

// openHost starts the server, connects the client, opens a chromium page
// with an empty host document of the given width, and returns the pieces.
export async function openHost({ browser, bin, args, person, width = 1000, height = 900, env }) {
  const client = new Client({ name: "bastion-apps-host", version: "1" }, {
    capabilities: { elicitation: { form: {} }, extensions: { [UI]: { mimeTypes: [MIME] } } },
  });
  client.setRequestHandler("elicitation/create", (req) => person.answer(req));
  const stderr = [];
  const transport = new StdioClientTransport({ command: bin, args, stderr: "pipe", env: env || process.env });
  transport.stderr?.on("data", (d) => stderr.push(String(d)));
  await client.connect(transport);
  const page = await browser.newPage();
  await page.setViewport({ width, height });
  const errors = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  page.on("console", (m) => { if (m.type() === "error") errors.push(m.text()); });
  await page.setContent(`<!doctype html><html><head><meta charset="utf-8"><style>html,body{margin:0}iframe{border:0;width:100%;height:${height}px;display:block}</style></head><body></body></html>`);
  return { client, page, errors, stderr, async close() { await page.close().catch(() => {}); await client.close().catch(() => {}); } };
}

// showTool calls a tool the way a host does when the model calls it, and
// shows its view: the tool must name a ui:// resource, which is read, put
// in a sandboxed iframe under its CSP, and handed the input and result
// through the AppBridge. Returns { bridge, result, frame, html, csp }.
export async function showTool(host, name, args) {
  const { client, page } = host;
  const tools = (await client.listTools()).tools;
  const tool = tools.find((t) => t.name === name);
  const uri = tool?._meta?.ui?.resourceUri;
  if (!uri) throw new Error(`${name} names no view (_meta.ui.resourceUri) for a client with the extension`);
  const read = await client.readResource({ uri });
  const content = read.contents[0];
  if (content.mimeType !== MIME) throw new Error(`${uri} has mimeType ${content.mimeType}, want ${MIME}`);
  const csp = content._meta?.ui?.csp ?? {};
  const policy = cspFor(csp);
  const html = content.text.replace(/<head>/i, `<head><meta http-equiv="Content-Security-Policy" content="${policy}">`);
  const relay = new Relay(page);
  await page.exposeFunction("__toHost", (m) => relay.deliver(m)).catch(() => {});
  const bridge = new AppBridge(client, { name: "bastion-apps-host", version: "1" },
    { serverTools: {}, logging: {} }, { hostContext: { theme: "light", displayMode: "inline" } });
  const initialized = new Promise((resolve) => { bridge.oninitialized = resolve; });
  await bridge.connect(relay);
  await page.evaluate((doc) => {
    const f = document.createElement("iframe");
    f.id = "view";
    f.setAttribute("sandbox", "allow-scripts");
    window.addEventListener("message", (e) => { if (e.source === f.contentWindow) window.__toHost(e.data); });
    f.srcdoc = doc;
    document.body.appendChild(f);
  }, html);
  await initialized;
  await bridge.sendToolInput({ arguments: args });
  const result = await client.callTool({ name, arguments: args });
  await bridge.sendToolResult(result);
  const frame = await viewFrame(page);
  return { bridge, result, frame, html, csp };
}

// viewFrame is the iframe's frame (an opaque origin: the host page cannot
// script it, but the test driver can, through the DevTools protocol).
export async function viewFrame(page) {
  for (let i = 0; i < 100; i++) {
    const f = page.frames().find((fr) => fr !== page.mainFrame());
    if (f) return f;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error("the view's frame did not appear");
}

// waitFor polls fn in the frame until it returns a truthy value.
export async function waitFor(frame, fn, arg, what, timeout = 20000) {
  const h = await frame.waitForFunction(fn, { timeout, polling: 50 }, arg).catch((e) => {
    throw new Error(`waiting for ${what}: ${e.message}`);
  });
  return h.jsonValue();
}

// checkThemes checks the view's contrast in the light theme, switches the
// host to dark and checks it again, with a screenshot of each
// (artifacts/NAME.png and NAME-dark.png), and leaves the host light.
export async function checkThemes(host, view, frame, name) {
  await host.page.screenshot({ path: join(artifacts, `${name}.png`), fullPage: true });
  const light = await contrastFailures(frame);
  check(light.length === 0, `light theme: every text has 4.5:1 contrast or better ${light.join("; ")}`);
  await view.bridge.setHostContext({ theme: "dark" });
  await waitFor(frame, () => document.documentElement.getAttribute("data-theme") === "dark", null, "the dark theme");
  const dark = await contrastFailures(frame);
  check(dark.length === 0, `dark theme: every text has 4.5:1 contrast or better ${dark.join("; ")}`);
  await host.page.screenshot({ path: join(artifacts, `${name}-dark.png`), fullPage: true });
  await view.bridge.setHostContext({ theme: "light" });
}

// checkNarrow opens the tool's view again at 400 px wide (opts as openHost
// takes them), waits until the document has the attribute ready, checks
// that nothing overflows sideways, saves artifacts/NAME-400px.png, and
// returns the page errors that host saw.
export async function checkNarrow(opts, tool, ready, name) {
  const narrow = await openHost({ ...opts, width: 400, height: 900 });
  try {
    const n = await showTool(narrow, tool, {});
    await waitFor(n.frame, (attr) => document.documentElement.hasAttribute(attr), ready, "the narrow render");
    const over = await n.frame.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
    check(over <= 0, `at 400 px nothing overflows sideways (${over} px)`);
    await narrow.page.screenshot({ path: join(artifacts, `${name}-400px.png`), fullPage: true });
    return narrow.errors;
  } finally {
    await narrow.close();
  }
}
