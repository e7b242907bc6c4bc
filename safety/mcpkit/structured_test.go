package mcpkit

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/bastion-mcp/bastion/safety/result"
)

// decodedMapJSON is what the structured content has always been: the
// result's JSON decoded into a map and encoded again.
func decodedMapJSON(t testing.TB, b []byte) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestStructuredContentIsByteForByteTheDecodedMap: the structured content
// sortedJSON writes without decoding is the very bytes a client got when
// it was decoded into a map (keys sorted, numbers as float64, strings
// escaped as encoding/json escapes them), for output with escapes, HTML,
// invalid UTF-8, line separators and control characters, floats, large
// integers and nested details; what it cannot write byte for byte (an
// escaped or repeated key, whitespace, invalid JSON) is refused, never
// written differently.
func TestStructuredContentIsByteForByteTheDecodedMap(t *testing.T) {
	// The first fast details are written without decoding.
	const fast = 7
	details := []any{
		nil,
		map[string]any{},
		map[string]any{"output": strings.Repeat("a line of build output\n", 200), "cursor": 4600,
			"session": map[string]any{"session_id": "s1", "state": "running", "exit_code": nil, "ports": []any{}}},
		map[string]any{"s": "tab\there \"quoted\" back\\slash \r\n <b>&amp;</b> \u2028\u2029 \x1b[31m \x00\x01\x7f \b\f é 日本 \U0001F600 \ufffd"},
		map[string]any{"bad utf8": string([]byte{'a', 0xff, 'b', 0xc3}), "lone": string([]byte{0xed, 0xa0, 0x80})},
		map[string]any{"f": []any{0.1, 1e-7, 1e21, 1e20, 123456789012345678, -0.0, math.MaxInt64, 1.5e300, -42, 0, 999999999999999, 1000000000000000}},
		map[string]any{"b": true, "a": false, "c": nil, "ab": 1, "a_b": 2, "B": 3, "é": 4, "z": []any{map[string]any{"y": 1, "x": []any{}}}},
		struct {
			Z string         `json:"z"`
			A int            `json:"a"`
			M map[string]int `json:"m"`
			R json.RawMessage
		}{"z", 1, map[string]int{"b": 1, "a": 2}, json.RawMessage(`{"q": [1, 2.50, "x"], "p" : {}}`)},
		map[string]any{"<": 5, "a\nb": 6},
		map[string]any{"raw": json.RawMessage(`{"k":1,"k":2}`)},
		map[string]any{"raw": json.RawMessage(`{"\u006b":1,"a\nb":2}`)},
		map[string]any{"raw": json.RawMessage(`["\u00e9","\/","\u0041", 1E2, 1e+2, -0.0e0, 12345678901234567890123]`)},
	}
	for i, d := range details {
		for _, r := range []result.OperationResult{
			result.With("read_output", result.OK, "the session s1 is running", d, time.Time{}),
			{Code: result.PolicyDenied, Action: "a<b>", Reason: "r\u2028", Detail: d, DurationMS: 12.345},
		} {
			b := r.JSON()
			want := decodedMapJSON(t, b)
			got, ok := sortedJSON(b)
			if ok && !bytes.Equal(got, want) {
				t.Fatalf("detail %d: sortedJSON wrote\n%s\nwant\n%s", i, got, want)
			}
			if !ok && i < fast {
				t.Errorf("detail %d: sortedJSON refused %s", i, b)
			}
			res := ToResult(r)
			text, _ := mcp.AsTextContent(res.Content[0])
			if s, _ := json.Marshal(res.StructuredContent); !bytes.Equal(s, decodedMapJSON(t, []byte(text.Text))) {
				t.Fatalf("detail %d: structured content\n%s", i, s)
			}
		}
	}
}

// FuzzStructuredContentMatchesTheDecodedMap: for any detail (any JSON
// value, any string, any bytes as a key), the structured content is byte
// for byte what decoding the result into a map gave, and sortedJSON
// refuses whatever that decoding fails on.
func FuzzStructuredContentMatchesTheDecodedMap(f *testing.F) {
	for _, s := range []string{`{}`, `[]`, `{"b":1,"a":[1.5,"x\ny",null,true]}`, `"\u2028<>&"`, `1e21`, `-0`,
		`123456789012345678`, `{"k":1,"k":2}`, `{"\u00e9":1}`, `[[[[{"a":{"b":{}}}]]]]`, `"\ud800"`, `0.000001`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		details := []any{map[string]any{"s": string(data), string(data): 1}}
		if json.Valid(data) {
			details = append(details, json.RawMessage(data))
		}
		for _, d := range details {
			b := result.OperationResult{Code: result.OK, Action: "read_output", Detail: d}.JSON()
			got, ok := sortedJSON(b)
			var m map[string]any
			if err := json.Unmarshal(b, &m); err != nil {
				if ok {
					t.Fatalf("sortedJSON wrote %s for %s, which does not decode: %v", got, b, err)
				}
				continue
			}
			want, _ := json.Marshal(m)
			if ok && !bytes.Equal(got, want) {
				t.Fatalf("sortedJSON wrote\n%s\nwant\n%s", got, want)
			}
		}
	})
}

// BenchmarkToResultOfReadOutput renders a read_output answer with about
// 4.6 KB of output (terminald's read_output goal).
func BenchmarkToResultOfReadOutput(b *testing.B) {
	r := result.With("read_output", result.OK, "the session s1 is running", map[string]any{
		"output": strings.Repeat("a line of build output\n", 200), "cursor": 4600,
		"session": map[string]any{"session_id": "s1", "command": "tail -n 1000 -f log.txt", "state": "running", "output_bytes": 4600},
	}, time.Now())
	b.ReportAllocs()
	for b.Loop() {
		_ = ToResult(r)
	}
}
