// Bastion's MCP Apps view bridge: the View side of the
// io.modelcontextprotocol/ui protocol (JSON-RPC 2.0 over postMessage with
// the host), and the one way a view puts data on the page.
//
// Rules every Bastion view keeps:
//  - Data is never markup. Everything that came from a tool result reaches
//    the page through el(), which makes text nodes and sets a short list of
//    attributes; nothing here or in a view parses a string as HTML or runs
//    a string as code (mcpkit.MarkupSinks finds any place that could).
//  - Nothing is loaded from anywhere: no URL, no fetch, no import.
//  - The view is not an approval channel: it calls tools through the host,
//    and a tool that needs the person's consent asks the person itself
//    (elicitation, answered in the host's own UI).
"use strict";
(function () {
  const PROTOCOL = "2026-01-26";
  let nextId = 1;
  const pending = new Map();
  const handlers = { result: [], input: [], context: [] };
  let hostContext = {};

  function post(msg) {
    window.parent.postMessage(Object.assign({ jsonrpc: "2.0" }, msg), "*");
  }

  function request(method, params) {
    const id = nextId++;
    return new Promise((resolve, reject) => {
      pending.set(id, { resolve, reject });
      post({ id, method, params });
    });
  }

  function notify(method, params) {
    post({ method, params });
  }

  function applyContext(ctx) {
    if (!ctx || typeof ctx !== "object") return;
    hostContext = Object.assign({}, hostContext, ctx);
    if (ctx.theme === "dark" || ctx.theme === "light") {
      document.documentElement.setAttribute("data-theme", ctx.theme);
    }
    for (const f of handlers.context) f(hostContext);
  }

  window.addEventListener("message", (ev) => {
    if (ev.source !== window.parent) return; // only the host speaks to the view
    const m = ev.data;
    if (!m || typeof m !== "object" || m.jsonrpc !== "2.0") return;
    if (m.id !== undefined && m.method === undefined) {
      const p = pending.get(m.id);
      if (!p) return;
      pending.delete(m.id);
      if (m.error) p.reject(new Error(String(m.error.message || "error")));
      else p.resolve(m.result);
      return;
    }
    if (m.id !== undefined) {
      // Requests from the host: teardown and ping need an empty answer.
      if (m.method === "ui/resource-teardown" || m.method === "ping") post({ id: m.id, result: {} });
      else post({ id: m.id, error: { code: -32601, message: "method not found" } });
      return;
    }
    const params = m.params || {};
    if (m.method === "ui/notifications/tool-result") for (const f of handlers.result) f(params);
    else if (m.method === "ui/notifications/tool-input") for (const f of handlers.input) f(params);
    else if (m.method === "ui/notifications/host-context-changed") applyContext(params);
  });

  // visible shows control and bidi-override characters as \u{...} escapes,
  // so a name cannot reorder or hide the text around it on the page.
  const CONTROL = /[\u0000-\u001f\u007f-\u009f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]/g;
  function visible(s) {
    return String(s).replace(CONTROL, (c) => "\\u{" + c.codePointAt(0).toString(16).toUpperCase() + "}");
  }

  // el builds an element; attrs may hold class, role, tabindex, title, aria-*,
  // data-*, type, disabled, checked, for, id, scope; every child that is not a
  // Node becomes a text node, its control characters made visible.
  const ALLOWED = /^(class|role|tabindex|title|type|for|id|scope|disabled|checked|aria-[a-z-]+|data-[a-z-]+)$/;
  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (!ALLOWED.test(k)) throw new Error("attribute not allowed: " + k);
      e.setAttribute(k, v === true ? "" : visible(v));
    }
    for (const c of children.flat()) {
      if (c === undefined || c === null || c === false) continue;
      e.appendChild(c instanceof Node ? c : document.createTextNode(visible(c)));
    }
    return e;
  }

  // operation returns the OperationResult a CallToolResult carries.
  function operation(res) {
    if (!res) return null;
    if (res.structuredContent && typeof res.structuredContent === "object") return res.structuredContent;
    for (const c of res.content || []) {
      if (c.type === "text") {
        try { return JSON.parse(c.text); } catch (e) { return null; }
      }
    }
    return null;
  }

  function size(b) {
    const u = ["B", "KiB", "MiB", "GiB", "TiB"];
    let i = 0, n = Number(b) || 0;
    while (n >= 1024 && i < u.length - 1) { n /= 1024; i++; }
    return (i === 0 ? String(n) : n.toFixed(n < 10 ? 1 : 0)) + " " + u[i];
  }

  function reportSize() {
    const d = document.documentElement;
    notify("ui/notifications/size-changed", { width: Math.ceil(d.scrollWidth), height: Math.ceil(d.scrollHeight) });
  }

  async function connect(name) {
    const r = await request("ui/initialize", {
      appInfo: { name, version: "1" },
      appCapabilities: {},
      protocolVersion: PROTOCOL,
    });
    applyContext(r && r.hostContext);
    notify("ui/notifications/initialized", {});
    if (typeof ResizeObserver === "function") new ResizeObserver(reportSize).observe(document.documentElement);
    return r;
  }

  window.BastionView = {
    connect,
    el,
    visible,
    size,
    operation,
    callTool: (name, args) => request("tools/call", { name, arguments: args || {} }),
    onResult: (f) => handlers.result.push(f),
    onInput: (f) => handlers.input.push(f),
    onContext: (f) => handlers.context.push(f),
    context: () => hostContext,
  };
})();
