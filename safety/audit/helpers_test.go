package audit

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"testing"

	"github.com/bastion-mcp/bastion/safety/result"
)

// openLog opens a log for a test and closes it at cleanup. Server defaults
// to "sweepd".
func openLog(t testing.TB, opts Options) *Log {
	t.Helper()
	if opts.Server == "" {
		opts.Server = "sweepd"
	}
	l, err := Open(opts)
	if err != nil {
		t.Fatalf("Open(%+v): %v", opts, err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// readLines returns the lines of path without their newlines; a last line
// without a newline is returned as is.
func readLines(t testing.TB, path string) [][]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) == 0 {
		return nil
	}
	return bytes.Split(bytes.TrimSuffix(b, []byte{'\n'}), []byte{'\n'})
}

// writeLines writes lines, each followed by a newline.
func writeLines(t testing.TB, path string, lines [][]byte) {
	t.Helper()
	var buf bytes.Buffer
	for _, l := range lines {
		buf.Write(l)
		buf.WriteByte('\n')
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
}

// decoded is a record as a test reads it back.
type decoded struct {
	Seq    int64          `json:"seq"`
	Time   string         `json:"time"`
	Kind   string         `json:"kind"`
	Server string         `json:"server"`
	Action string         `json:"action"`
	Intent *string        `json:"intent"`
	Code   *string        `json:"code"`
	Fields map[string]any `json:"fields"`
	Prev   string         `json:"prev"`
}

func decodeLine(t testing.TB, line []byte) decoded {
	t.Helper()
	var d decoded
	if err := json.Unmarshal(line, &d); err != nil {
		t.Fatalf("line %q: %v", line, err)
	}
	return d
}

// wantCode fails unless err is a *result.Error with code.
func wantCode(t testing.TB, err error, code result.Code) *result.Error {
	t.Helper()
	var e *result.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T) is not a *result.Error with code %s", err, err, code)
	}
	if e.Code != code {
		t.Fatalf("code = %s (%v), want %s", e.Code, err, code)
	}
	return e
}

// mustVerify verifies path and fails unless the chain is intact with n
// records.
func mustVerify(t testing.TB, path string, n int) Report {
	t.Helper()
	rep, err := VerifyFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK || rep.Records != n {
		t.Fatalf("VerifyFile(%s) = %+v, want OK with %d records", path, rep, n)
	}
	return rep
}
