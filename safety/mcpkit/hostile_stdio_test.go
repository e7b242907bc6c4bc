package mcpkit

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"
)

// stdioMemoryCapKB is the bound on the stdio server's peak RSS (VmHWM)
// through every hostile input below, a 100 MB line included: a message is
// held only up to MaxMessageBytes (4 MiB), a longer line is discarded in
// 64 KiB pieces. Before the cap a 150 MB line cost 620 MB.
const stdioMemoryCapKB = 96 << 10

func wantRPCError(t testing.TB, m map[string]any, id any, code int) {
	t.Helper()
	e, ok := m["error"].(map[string]any)
	if !ok {
		t.Fatalf("want error %d, got %v", code, trim(m))
	}
	if got := e["code"]; got != float64(code) {
		t.Fatalf("error code %v, want %d: %v", got, code, e["message"])
	}
	if fmt.Sprint(m["id"]) != fmt.Sprint(id) {
		t.Fatalf("error id %v, want %v", m["id"], id)
	}
}

// trim shortens a message for a failure report.
func trim(m map[string]any) string {
	s := fmt.Sprint(m)
	if len(s) > 300 {
		return s[:300] + "…"
	}
	return s
}

func nested(depth int, open, close, leaf string) string {
	return strings.Repeat(open, depth) + leaf + strings.Repeat(close, depth)
}

func bigCall(id string, n int) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, `{"jsonrpc":"2.0","id":%q,"method":"tools/call","params":{"name":"echo","arguments":{"path":"`, id)
	b.Write(bytes.Repeat([]byte("x"), n))
	b.WriteString(`"}}}` + "\n")
	return b.Bytes()
}

// hostileLines are one-line hostile inputs and the JSON-RPC error each
// gets (id nil: the error's id is null).
var hostileLines = []struct {
	name string
	line string
	id   any
	code int
}{
	{"malformed JSON", `{"jsonrpc":"2.0","id":1,"method":`, nil, -32700},
	{"not JSON at all", `hello`, nil, -32700},
	{"invalid UTF-8 in a string", "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\",\"params\":{\"x\":\"\xff\xfe\"}}", nil, -32700},
	{"batch array", `[{"jsonrpc":"2.0","id":3,"method":"ping"}]`, nil, -32600},
	{"empty batch", `[]`, nil, -32600},
	{"arrays nested 100000 deep", nested(100000, "[", "]", "1"), nil, -32600},
	{"objects nested 100000 deep", `{"jsonrpc":"2.0","id":4,"method":"ping","params":` + nested(100000, `{"a":`, "}", "1") + "}", nil, -32700},
	{"unknown method", `{"jsonrpc":"2.0","id":5,"method":"no/such/method"}`, 5, -32601},
	{"wrong jsonrpc version", `{"jsonrpc":"1.0","id":6,"method":"ping"}`, 6, -32600},
}

const initLine = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18",` +
	`"capabilities":{},"clientInfo":{"name":"hostile","version":"1"}}}`

// modernToolsList is a tools/list of the stateless 2026-07-28 protocol,
// which has no initialize: the request declares its version in _meta.
const modernToolsList = `{"jsonrpc":"2.0","id":"modern","method":"tools/list","params":{"_meta":{` +
	`"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`

// stdioLifecycle is the start of TestStdioHostileInput: the MCP lifecycle
// before initialize (requests other than ping refused with -32600 naming
// the reason, notifications ignored, pings answered after each step, a
// 2026-07-28 request served), then initialize and a first call.
func stdioLifecycle(t *testing.T, step func(string, func(*testing.T)), c *child) {
	for _, tc := range []struct{ name, line, id string }{
		{"tools call before initialize", `{"jsonrpc":"2.0","id":"early","method":"tools/call","params":{"name":"echo","arguments":{}}}`, "early"},
		{"tools list before initialize", `{"jsonrpc":"2.0","id":11,"method":"tools/list"}`, "11"},
		{"unknown method before initialize", `{"jsonrpc":"2.0","id":12,"method":"no/such/method"}`, "12"},
		{"wrong jsonrpc version before initialize", `{"jsonrpc":"1.0","id":13,"method":"resources/list"}`, "13"},
	} {
		step(tc.name, func(t *testing.T) {
			c.sendLine(tc.line)
			m := c.next(10 * time.Second)
			wantRPCError(t, m, tc.id, -32600)
			if msg := fmt.Sprint(m["error"].(map[string]any)["message"]); !strings.Contains(msg, "not initialized") {
				t.Errorf("the error does not name the reason: %s", msg)
			}
		})
	}
	step("notifications before initialize are ignored", func(t *testing.T) {
		c.sendLine(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		c.sendLine(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}`)
		c.sendLine(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"early"}}`)
		c.sendLine(`{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"echo","arguments":{}}}`)
	})
	step("a 2026-07-28 request needs no initialize", func(t *testing.T) {
		c.sendLine(modernToolsList)
		if m := c.next(10 * time.Second); m["id"] != "modern" || m["result"] == nil {
			t.Fatalf("2026-07-28 tools/list before initialize: %v", trim(m))
		}
	})
	step("initialize, then calls are served", func(t *testing.T) {
		c.sendLine(initLine)
		if m := c.next(10 * time.Second); m["result"] == nil {
			t.Fatalf("initialize: %v", trim(m))
		}
		c.sendLine(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		c.sendLine(`{"jsonrpc":"2.0","id":"late","method":"tools/call","params":{"name":"echo","arguments":{"path":"p"}}}`)
		if m := c.next(10 * time.Second); m["id"] != "late" || m["result"] == nil {
			t.Fatalf("tools/call after initialize: %v", trim(m))
		}
	})
}

// TestStdioHostileInput drives a server process over stdio with each
// hostile input of issue 11 in turn: each gets its JSON-RPC error (or is
// ignored where the spec says so), a ping after each proves the server
// still serves, and peak RSS stays under stdioMemoryCapKB.
func TestStdioHostileInput(t *testing.T) {
	c := startChild(t, "stdio")
	pid := c.cmd.Process.Pid
	ping := 1000
	step := func(name string, f func(t *testing.T)) {
		t.Run(name, func(t *testing.T) {
			c.t = t
			f(t)
			ping++
			c.ping(ping)
		})
	}
	stdioLifecycle(t, step, c)
	for _, tc := range hostileLines {
		step(tc.name, func(t *testing.T) {
			c.sendLine(tc.line)
			wantRPCError(t, c.next(30*time.Second), tc.id, tc.code)
		})
	}
	step("duplicate request ids are each answered", func(t *testing.T) {
		c.sendLine(`{"jsonrpc":"2.0","id":7,"method":"ping"}`)
		c.sendLine(`{"jsonrpc":"2.0","id":7,"method":"ping"}`)
		for i := 0; i < 2; i++ {
			if m := c.next(10 * time.Second); m["id"] != float64(7) || m["result"] == nil {
				t.Fatalf("answer %d to id 7: %v", i, trim(m))
			}
		}
	})
	step("cancellation of unknown ids is ignored", func(t *testing.T) {
		c.sendLine(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":424242,"reason":"x"}}`)
		c.sendLine(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"never-sent"}}`)
	})
	step("100000 notifications flood", func(t *testing.T) {
		var b bytes.Buffer
		for i := 0; i < 100000; i++ {
			fmt.Fprintf(&b, `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":%d,"progress":1}}`+"\n", i)
		}
		c.send(b.Bytes())
	})
	step("arguments just under the cap reach the tool", func(t *testing.T) {
		c.send(bigCall("under", MaxMessageBytes-200))
		m := c.next(30 * time.Second)
		if m["id"] != "under" || m["result"] == nil {
			t.Fatalf("a call of %d bytes: %v", MaxMessageBytes-200, trim(m))
		}
	})
	step("tools call with 10 MB arguments", func(t *testing.T) {
		c.send(bigCall("ten-mb", 10<<20))
		wantRPCError(t, c.next(30*time.Second), "ten-mb", -32600)
	})
	step("one 100 MB line", func(t *testing.T) {
		c.send(bigCall("hundred-mb", 100<<20))
		m := c.next(60 * time.Second)
		wantRPCError(t, m, "hundred-mb", -32600)
		if msg := fmt.Sprint(m["error"].(map[string]any)["message"]); !strings.Contains(msg, "4 MiB") {
			t.Errorf("the error does not name the cap: %s", msg)
		}
	})
	hwm := status(t, pid, "VmHWM")
	t.Logf("stdio server peak RSS (VmHWM) after every hostile input: %d KiB (cap %d KiB)", hwm, stdioMemoryCapKB*raceMemFactor)
	if hwm > stdioMemoryCapKB*raceMemFactor {
		t.Errorf("peak RSS %d KiB over the cap %d KiB", hwm, stdioMemoryCapKB*raceMemFactor)
	}
}
