package mcpkit

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"
)

const modernMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`

// TestStdioGateLifecycle feeds the stdio gate whole sessions and checks
// which lines reach the server and what the gate answers itself.
func TestStdioGateLifecycle(t *testing.T) {
	for _, tc := range []struct {
		name    string
		in      []string
		passed  []int    // indexes of the lines of in that reach the server
		answers []string // the ids (as JSON) of the gate's -32600 answers
	}{
		{"tools call before initialize is refused", []string{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}`}, nil, []string{"1"}},
		{"string id echoed", []string{`{"jsonrpc":"2.0","id":"a","method":"tools/list"}`}, nil, []string{`"a"`}},
		{"an id that is no id is null", []string{`{"jsonrpc":"2.0","id":{"x":1},"method":"tools/list"}`, `{"jsonrpc":"2.0","id":1.5,"method":"tools/list"}`}, nil, []string{"null", "null"}},
		{"ping and server/discover pass", []string{`{"jsonrpc":"2.0","id":1,"method":"ping"}`, `{"jsonrpc":"2.0","id":2,"method":"server/discover"}`}, []int{0, 1}, nil},
		{"notifications are dropped, cancellations pass", []string{
			`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
			`{"jsonrpc":"2.0","id":null,"method":"tools/call"}`,
			`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`}, []int{2}, nil},
		{"what is no request passes for the server to answer", []string{`hello`, `{"jsonrpc":"2.0","id":1,"result":{}}`, ` `, `{"method":7,"id":1}`}, []int{0, 1, 2, 3}, nil},
		{"pipelined initialize and calls", []string{
			initLine, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, `{"jsonrpc":"2.0","method":"notifications/initialized"}`}, []int{0, 1, 2}, nil},
		{"an initialize mcp-go rejects does not initialize", []string{
			`{"jsonrpc":"2.0","id":0,"method":"initialize","params":"not an object"}`, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`}, []int{0}, []string{"1"}},
		{"a 2026-07-28 initialize does not initialize", []string{
			`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{` + modernMeta + `}}`, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`}, []int{0}, []string{"1"}},
		{"2026-07-28 requests pass without initialize", []string{
			`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{` + modernMeta + `}}`,
			`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"x",` + modernMeta + `}}`,
			`{"jsonrpc":"2.0","id":3,"method":"tools/list"}`}, []int{0, 1}, []string{"3"}},
		{"an older version in _meta is no 2026-07-28 request", []string{
			`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2025-11-25"}}}`}, nil, []string{"1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			passed, err := io.ReadAll(newLineGate(strings.NewReader(strings.Join(tc.in, "\n")+"\n"), &out, 1<<20))
			if err != nil {
				t.Fatal(err)
			}
			var want []string
			for _, i := range tc.passed {
				want = append(want, tc.in[i]+"\n")
			}
			if got := strings.SplitAfter(string(passed), "\n"); strings.Join(want, "") != string(passed) {
				t.Errorf("passed %q, want %q", got, want)
			}
			var ids []string
			for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
				if line == "" {
					continue
				}
				var m struct {
					ID    json.RawMessage
					Error struct {
						Code    int
						Message string
					}
				}
				if err := json.Unmarshal([]byte(line), &m); err != nil || m.Error.Code != -32600 || !strings.Contains(m.Error.Message, "not initialized") {
					t.Fatalf("the gate answered %s", line)
				}
				ids = append(ids, string(m.ID))
			}
			if strings.Join(ids, " ") != strings.Join(tc.answers, " ") {
				t.Errorf("the gate refused ids %v, want %v", ids, tc.answers)
			}
		})
	}
}
