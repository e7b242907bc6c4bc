package audit

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/bastion-mcp/bastion/safety/result"
)

// logWith writes n event records to a new log and returns its path and
// bytes.
func logWith(t *testing.T, n int) (string, []byte) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l := openLog(t, Options{Path: path})
	for i := range n {
		if err := l.Event("tick", map[string]any{"i": i}); err != nil {
			t.Fatal(err)
		}
	}
	l.Close()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return path, b
}

// sidecars returns the torn tails set aside beside path.
func sidecars(t *testing.T, path string) []string {
	t.Helper()
	m, err := filepath.Glob(path + sidecarInfix + "*")
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// wantRecovered checks that path holds whole (the records before the torn
// tail), then one recovered record naming a sidecar that holds exactly
// tail, and that the chain verifies with that recovery reported.
func wantRecovered(t *testing.T, path string, whole, tail []byte) Report {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(b, whole) {
		t.Fatalf("the records before the torn tail changed:\n%q\nwant prefix\n%q", b, whole)
	}
	rep, err := VerifyFile(path)
	if err != nil || !rep.OK || len(rep.Recoveries) != 1 {
		t.Fatalf("VerifyFile = %+v, %v; want OK with one recovery", rep, err)
	}
	rc := rep.Recoveries[0]
	sum := sha256.Sum256(tail)
	if rc.Bytes != int64(len(tail)) || rc.SHA256 != hex.EncodeToString(sum[:]) || rc.Reason == "" {
		t.Fatalf("recovery %+v does not describe the %d bytes set aside", rc, len(tail))
	}
	side, err := os.ReadFile(filepath.Join(filepath.Dir(path), rc.Sidecar))
	if err != nil || !bytes.Equal(side, tail) {
		t.Fatalf("sidecar %s = %q, %v; want %q", rc.Sidecar, side, err, tail)
	}
	if got := sidecars(t, path); len(got) != 1 {
		t.Fatalf("sidecars %q, want one", got)
	}
	return rep
}

func TestOpenSetsTornTailAside(t *testing.T) {
	nuls := string(make([]byte, 4096))
	cases := []struct {
		name string
		tail func(last []byte) []byte // what follows three whole records
		// cutNewline removes the newline of the third record instead, so
		// the torn tail is that whole record without its newline.
		cutNewline bool
	}{
		{name: "incomplete last record", tail: func([]byte) []byte { return []byte(`{"seq":4,"time":"2026-`) }},
		{name: "last record without its newline", cutNewline: true},
		{name: "garbage line after the last record", tail: func([]byte) []byte { return []byte("garbage\n") }},
		{name: "several garbage lines", tail: func([]byte) []byte { return []byte("x\n{\"seq\":\ny\n\x00\x01") }},
		{name: "zeros a power loss left", tail: func([]byte) []byte { return []byte(nuls) }},
		{name: "a record cut in the middle then a newline", tail: func(last []byte) []byte {
			return append(append([]byte(nil), last[:len(last)/2]...), '\n')
		}},
	}
	for _, mode := range []string{FailClosed, FailOpen} {
		for _, c := range cases {
			t.Run(mode+"/"+c.name, func(t *testing.T) {
				path, b := logWith(t, 3)
				lines := bytes.SplitAfter(b, []byte{'\n'})
				whole, tail := b, []byte(nil)
				if c.cutNewline {
					whole = bytes.Join(lines[:2], nil)
					tail = bytes.TrimSuffix(lines[2], []byte{'\n'})
				} else {
					tail = c.tail(lines[2])
				}
				os.WriteFile(path, append(append([]byte(nil), whole...), tail...), 0o600)

				var logs bytes.Buffer
				l := openLog(t, Options{Path: path, FailMode: mode, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
				if !strings.Contains(logs.String(), "set aside") {
					t.Fatalf("the recovery was not reported to the logger: %q", logs.String())
				}
				rep := wantRecovered(t, path, whole, tail)
				if rep.Records != bytes.Count(whole, []byte{'\n'})+1 {
					t.Fatalf("records %d after recovery", rep.Records)
				}
				id, err := l.Intent("reclaim", nil)
				if err != nil || id != intentID(rep.LastSeq+1) {
					t.Fatalf("Intent after recovery = %q, %v; want the chain to go on", id, err)
				}
				wantRecovered(t, path, whole, tail)
			})
		}
	}
}

func TestOpenSetsAsideAFileOfGarbage(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	os.WriteFile(path, []byte("not a log\n\x00"), 0o600)
	l := openLog(t, Options{Path: path})
	rep := wantRecovered(t, path, nil, []byte("not a log\n\x00"))
	if rep.FirstSeq != 1 || rep.FirstPrev != GenesisPrev || rep.Records != 1 {
		t.Fatalf("a log of garbage should restart the chain with its recovered record: %+v", rep)
	}
	if err := l.Event("tick", nil); err != nil {
		t.Fatal(err)
	}
	mustVerify(t, path, 2)
}

func TestOpenRefusesABreakInTheMiddle(t *testing.T) {
	cases := []struct {
		name   string
		change func(lines [][]byte) [][]byte
		line   int
	}{
		{"one byte of a middle record changed", func(l [][]byte) [][]byte {
			l[4] = bytes.Replace(l[4], []byte(`"tick"`), []byte(`"tack"`), 1)
			return l
		}, 6},
		{"one byte breaking a middle record's JSON", func(l [][]byte) [][]byte {
			l[4] = bytes.Replace(l[4], []byte(`{"seq"`), []byte(`["seq"`), 1)
			return l
		}, 5},
		{"a middle record removed", func(l [][]byte) [][]byte { return append(l[:3:3], l[4:]...) }, 4},
		{"two records swapped", func(l [][]byte) [][]byte { l[2], l[3] = l[3], l[2]; return l }, 3},
		{"a garbage line inserted", func(l [][]byte) [][]byte {
			return append(l[:2:2], append([][]byte{[]byte("garbage")}, l[2:]...)...)
		}, 3},
		{"the last record's prev changed", func(l [][]byte) [][]byte {
			l[7] = bytes.Replace(l[7], []byte(`"prev":"`), []byte(`"prev":"0`), 1)
			l[7] = append(l[7][:len(l[7])-3], `"}`...)
			return l
		}, 8},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path, _ := logWith(t, 8)
			writeLines(t, path, c.change(readLines(t, path)))
			before, _ := os.ReadFile(path)

			_, err := Open(Options{Path: path, Server: "sweepd"})
			e := wantCode(t, err, result.AuditUnavailable)
			want := "broken at line " + strconv.Itoa(c.line) + ":"
			if !strings.Contains(e.Reason, want) || !strings.Contains(e.Reason, "`sweepd audit verify "+path+"`") ||
				!strings.Contains(e.Reason, "change inside the chain") {
				t.Fatalf("reason should name line %d, the change and audit verify: %s", c.line, e.Reason)
			}
			after, _ := os.ReadFile(path)
			if !bytes.Equal(before, after) || len(sidecars(t, path)) != 0 {
				t.Fatal("a refused log was changed or set aside")
			}

			// Open mode starts, says so, and appends after the break.
			var logs bytes.Buffer
			l := openLog(t, Options{Path: path, FailMode: FailOpen, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			if !strings.Contains(logs.String(), want) {
				t.Fatalf("open mode did not report the break: %q", logs.String())
			}
			if err := l.Event("tick", nil); err != nil {
				t.Fatal(err)
			}
			if len(sidecars(t, path)) != 0 {
				t.Fatal("open mode set a middle break aside")
			}
		})
	}
}

func TestTornTailWrittenWhileOpenIsSetAside(t *testing.T) {
	cases := []struct{ name, tail string }{
		{"another writer cut off", `{"seq":2,"ti`},
		{"garbage appended", "garbage\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "audit.jsonl")
			l := openLog(t, Options{Path: path})
			if err := l.Event("tick", nil); err != nil {
				t.Fatal(err)
			}
			whole, _ := os.ReadFile(path)
			f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				t.Fatal(err)
			}
			f.WriteString(c.tail)
			f.Close()
			if id, err := l.Intent("reclaim", nil); err != nil || id != "i-3" {
				t.Fatalf("Intent = %q, %v; want i-3 after the recovered record", id, err)
			}
			wantRecovered(t, path, whole, []byte(c.tail))
		})
	}
}

func TestMiddleBreakWrittenWhileOpenRefusesWithoutThePath(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l := openLog(t, Options{Path: path})
	for range 3 {
		if err := l.Event("tick", nil); err != nil {
			t.Fatal(err)
		}
	}
	// Another writer leaves a garbage line, then a record that links to
	// it: the tail is not torn, so nothing is set aside.
	lines := readLines(t, path)
	lines = append(lines[:2:2], []byte("garbage"), lines[2])
	writeLines(t, path, lines)
	f, _ := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	f.WriteString("tail garbage\n")
	f.Close()
	_, err := l.Intent("reclaim", nil)
	e := wantCode(t, err, result.AuditUnavailable)
	if !strings.Contains(e.Reason, "sweepd audit verify") || strings.Contains(e.Reason, path) {
		t.Fatalf("client reason should send to audit verify without naming the path: %s", e.Reason)
	}
	if len(sidecars(t, path)) != 0 {
		t.Fatal("a middle break was set aside")
	}
}

func TestVerifyReportsTornTailAsTorn(t *testing.T) {
	_, b := logWith(t, 3)
	cases := []struct {
		name  string
		input []byte
		torn  bool
		valid int
	}{
		{"cut-off last record", b[:len(b)-4], true, bytes.LastIndexByte(b[:len(b)-1], '\n') + 1},
		{"garbage after the last record", append(append([]byte(nil), b...), "x\ny\n"...), true, len(b)},
		{"garbage then a record", append([]byte("x\n"), b...), false, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rep, err := Verify(bytes.NewReader(c.input))
			if err != nil || rep.OK || rep.Torn != c.torn || rep.ValidBytes != int64(c.valid) {
				t.Fatalf("Verify = %+v, %v; want torn %v with %d valid bytes", rep, err, c.torn, c.valid)
			}
		})
	}
}

// FuzzOpenRecovers opens a log holding arbitrary bytes. Whatever they are,
// Open keeps every whole record: an intact chain is left as it is; a torn
// tail is moved, byte for byte, into one sidecar and the chain goes on
// after a recovered record; a break in the middle is refused and the file
// is left untouched.
func FuzzOpenRecovers(f *testing.F) {
	rec := func(seq int, prev string) string {
		return `{"seq":` + strconv.Itoa(seq) + `,"time":"2026-12-01T12:00:00Z","kind":"event","server":"s","action":"a","fields":{},"prev":"` + prev + `"}`
	}
	one := rec(1, GenesisPrev)
	two := rec(2, hashLine([]byte(one)))
	f.Add([]byte(one + "\n" + two + "\n"))
	f.Add([]byte(one + "\n" + two))
	f.Add([]byte(one + "\n" + two[:40]))
	f.Add([]byte(one + "\ngarbage\n" + two + "\n"))
	f.Add([]byte(one + "\n" + two + "\ngarbage\n\x00\x00"))
	f.Add([]byte(two + "\n"))
	f.Add([]byte("\n\n"))
	f.Add([]byte(""))
	f.Add(make([]byte, 512))
	f.Fuzz(func(t *testing.T, b []byte) {
		want, err := Verify(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), "audit.jsonl")
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		l, err := Open(Options{Path: path, Server: "sweepd", Logger: slog.New(slog.DiscardHandler)})
		after, _ := os.ReadFile(path)
		switch {
		case want.OK || want.Torn:
			if err != nil {
				t.Fatalf("Open refused a log whose chain is whole (torn tail: %v): %v", want.Torn, err)
			}
			defer l.Close()
		default:
			wantCode(t, err, result.AuditUnavailable)
			if !bytes.Equal(after, b) || len(sidecars(t, path)) != 0 {
				t.Fatal("a refused log was changed or set aside")
			}
			return
		}
		if want.OK && !bytes.Equal(after, b) {
			t.Fatal("Open changed an intact log")
		}
		if want.Torn {
			wantRecovered(t, path, b[:want.ValidBytes], b[want.ValidBytes:])
		}
		if err := l.Event("tick", nil); err != nil {
			t.Fatal(err)
		}
		if rep, err := VerifyFile(path); err != nil || !rep.OK || rep.Records != want.Records+len(rep.Recoveries)-len(want.Recoveries)+1 {
			t.Fatalf("after Open and one record: %+v, %v (before: %+v)", rep, err, want)
		}
	})
}

func TestQuickChainAgreesWithVerify(t *testing.T) {
	path, lines := sampleLog(t, 30)
	b, _ := os.ReadFile(path)
	edit := func(i int, from, to string) []byte {
		c := make([][]byte, len(lines))
		copy(c, lines)
		c[i] = bytes.Replace(c[i], []byte(from), []byte(to), 1)
		return append(bytes.Join(c, []byte{'\n'}), '\n')
	}
	cases := []struct {
		name  string
		input []byte
		ok    bool
	}{
		{"intact", b, true},
		{"empty", nil, true},
		{"one byte changed in the middle", edit(10, `"reclaim"`, `"reclaiM"`), false},
		{"one byte changed in the last record", edit(29, `"tick"`, `"tiCk"`), true}, // as for Verify: the end is not anchored
		{"last record no longer a record", edit(29, `"kind":"event"`, `"kind":"evenT"`), false},
		{"seq changed", edit(5, `"seq":6,`, `"seq":7,`), false},
		{"torn tail", b[:len(b)-3], false},
		{"garbage after", append(append([]byte(nil), b...), "x\n"...), false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			q, ok, err := quickChain(bytes.NewReader(c.input))
			full, _ := Verify(bytes.NewReader(c.input))
			if err != nil || ok != c.ok || ok != full.OK {
				t.Fatalf("quickChain ok %v, %v; Verify %+v; want %v", ok, err, full, c.ok)
			}
			if ok && (q.Records != full.Records || q.Head != full.Head || q.LastSeq != full.LastSeq || q.ValidBytes != full.ValidBytes) {
				t.Fatalf("quickChain %+v, Verify %+v", q, full)
			}
		})
	}
}
