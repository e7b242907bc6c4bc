package audit

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/bastion-mcp/bastion/safety/result"
)

func TestChainVerifiesAfterManyRecords(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state", "audit.jsonl")
	l := openLog(t, Options{Path: path})
	if err := l.Event("startup", map[string]any{"version": "0.1.0"}); err != nil {
		t.Fatal(err)
	}
	const pairs = 500
	for i := range pairs {
		id, err := l.Intent("reclaim", map[string]any{"path": fmt.Sprintf("/p/%d", i), "n": i})
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Outcome(id, "reclaim", result.OK, map[string]any{"bytes": i * 10}); err != nil {
			t.Fatal(err)
		}
	}
	rep := mustVerify(t, path, 1+2*pairs)
	if rep.FirstSeq != 1 || rep.FirstPrev != GenesisPrev || rep.LastSeq != 1+2*pairs {
		t.Fatalf("report %+v", rep)
	}
	lines := readLines(t, path)
	if got := hashLine(lines[len(lines)-1]); rep.Head != got {
		t.Fatalf("Head = %s, want hash of the last line %s", rep.Head, got)
	}
}

func TestRecordsHaveTheDocumentedShape(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l := openLog(t, Options{Path: path, Server: "terminald"})
	id, err := l.Intent("run_command", map[string]any{"argv": []string{"ls", "-l"}, "line": "a && b <c>"})
	if err != nil {
		t.Fatal(err)
	}
	if id != "i-1" {
		t.Fatalf("intent id = %q, want i-1", id)
	}
	if err := l.Outcome(id, "run_command", result.Timeout, nil); err != nil {
		t.Fatal(err)
	}
	if err := l.Event("config_loaded", nil); err != nil {
		t.Fatal(err)
	}
	lines := readLines(t, path)
	if len(lines) != 3 {
		t.Fatalf("%d lines, want 3", len(lines))
	}
	// Field order is part of the format: it is what the hash covers.
	if !bytes.HasPrefix(lines[0], []byte(`{"seq":1,"time":"`)) ||
		!bytes.Contains(lines[0], []byte(`"kind":"intent","server":"terminald","action":"run_command","fields":{"argv":["ls","-l"],"line":"a && b <c>"},"prev":"`+GenesisPrev+`"}`)) {
		t.Fatalf("intent line %s", lines[0])
	}
	if bytes.Contains(lines[0], []byte(`"intent":`)) || bytes.Contains(lines[0], []byte(`"code":`)) {
		t.Fatalf("intent record carries intent or code: %s", lines[0])
	}
	out := decodeLine(t, lines[1])
	if out.Kind != KindOutcome || out.Intent == nil || *out.Intent != "i-1" || out.Code == nil || *out.Code != "TIMEOUT" ||
		out.Seq != 2 || out.Prev != hashLine(lines[0]) || out.Fields == nil || len(out.Fields) != 0 {
		t.Fatalf("outcome %+v from %s", out, lines[1])
	}
	ev := decodeLine(t, lines[2])
	if ev.Kind != KindEvent || ev.Seq != 3 || ev.Prev != hashLine(lines[1]) || ev.Server != "terminald" {
		t.Fatalf("event %+v", ev)
	}
	for _, ln := range lines {
		d := decodeLine(t, ln)
		ts, err := time.Parse(time.RFC3339Nano, d.Time)
		if err != nil || ts.Location() != time.UTC || !strings.HasSuffix(d.Time, "Z") {
			t.Fatalf("time %q is not RFC 3339 UTC: %v", d.Time, err)
		}
		if time.Since(ts) > time.Minute || time.Since(ts) < 0 {
			t.Fatalf("time %q is not now", d.Time)
		}
	}
}

func TestReopenContinuesChain(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	for round := range 3 {
		l, err := Open(Options{Path: path, Server: "sweepd"})
		if err != nil {
			t.Fatal(err)
		}
		for range 10 {
			id, err := l.Intent("reclaim", nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := l.Outcome(id, "reclaim", result.OK, nil); err != nil {
				t.Fatal(err)
			}
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		mustVerify(t, path, 20*(round+1))
	}
	lines := readLines(t, path)
	if d := decodeLine(t, lines[20]); d.Seq != 21 || d.Prev != hashLine(lines[19]) {
		t.Fatalf("first record after reopening: %+v", d)
	}
}

func TestOpenRefusesWhenParentIsAFile(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct{ name, path string }{
		{"parent is a file", filepath.Join(file, "audit.jsonl")},
		{"grandparent is a file", filepath.Join(file, "sub", "audit.jsonl")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Open(Options{Path: c.path, Server: "sweepd"})
			wantCode(t, err, result.AuditUnavailable)
			if !errors.Is(err, syscall.ENOTDIR) {
				t.Fatalf("Open(%s): %v, want ENOTDIR inside", c.path, err)
			}
		})
	}
}

func TestOpenRefusesLogInsideRoot(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "root")
	outside := filepath.Join(base, "outside")
	for _, d := range []string{root, outside, filepath.Join(root, "sub")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	symlink := func(target, link string) string {
		t.Helper()
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
		return link
	}
	// A parent outside the root, as written, that resolves inside it.
	intoRoot := symlink(filepath.Join(root, "sub"), filepath.Join(base, "state-link"))
	// A root given through a symlink, and a log under the real directory.
	rootLink := symlink(root, filepath.Join(base, "root-link"))
	// A path that resolves outside the root but passes through a link that
	// lives inside it (the server could retarget that link).
	hop := symlink(outside, filepath.Join(root, "hop"))
	viaHop := symlink(hop, filepath.Join(base, "via-hop"))
	// A relative link inside a root reached through "..".
	relHop := symlink("../outside", filepath.Join(root, "rel-hop"))

	cases := []struct {
		name  string
		path  string
		roots []string
	}{
		{"directly inside", filepath.Join(root, "audit.jsonl"), []string{root}},
		{"nested and not yet existing", filepath.Join(root, "new", "deeper", "audit.jsonl"), []string{root}},
		{"the root itself through dot-dot", filepath.Join(root, "sub", "..", "audit.jsonl"), []string{root}},
		{"through a symlinked parent", filepath.Join(intoRoot, "audit.jsonl"), []string{root}},
		{"through a symlinked parent that does not exist below", filepath.Join(intoRoot, "x", "audit.jsonl"), []string{root}},
		{"root given as a symlink", filepath.Join(root, "sub", "audit.jsonl"), []string{rootLink}},
		{"through a link that lives inside the root", filepath.Join(viaHop, "audit.jsonl"), []string{root}},
		{"through a relative link inside the root", filepath.Join(relHop, "audit.jsonl"), []string{root}},
		{"second of several roots", filepath.Join(root, "audit.jsonl"), []string{outside + "-not", root}},
		{"root is slash", filepath.Join(outside, "audit.jsonl"), []string{"/"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Open(Options{Path: c.path, Server: "sweepd", Roots: c.roots})
			e := wantCode(t, err, result.PolicyDenied)
			named := false
			for _, r := range c.roots {
				named = named || strings.Contains(e.Reason, "root "+r+":")
			}
			if !named {
				t.Fatalf("reason does not name the root: %s", e.Reason)
			}
		})
	}
	if _, err := os.Lstat(filepath.Join(root, "new")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a refused Open created a directory inside the root: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(root, "audit.jsonl")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a refused Open created the log inside the root: %v", err)
	}

	// Outside every root it opens, also through a symlink that lives outside.
	outLink := symlink(outside, filepath.Join(base, "out-link"))
	for _, p := range []string{filepath.Join(outside, "audit.jsonl"), filepath.Join(outLink, "a2.jsonl"),
		filepath.Join(base, "rootish", "audit.jsonl")} { // a sibling whose name shares the root's prefix
		l := openLog(t, Options{Path: p, Roots: []string{root, rootLink}})
		if err := l.Event("startup", nil); err != nil {
			t.Fatal(err)
		}
	}
}

func TestBadFailModeIsRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	refused := []struct{ name, mode string }{
		{"capitalised", "Closed"},
		{"upper case", "OPEN"},
		{"prefixed", "fail-open"},
		{"off", "off"},
		{"leading space", " closed"},
		{"boolean", "true"},
	}
	for _, c := range refused {
		t.Run("refuses "+c.name, func(t *testing.T) {
			_, err := Open(Options{Path: path, Server: "sweepd", FailMode: c.mode})
			e := wantCode(t, err, result.InvalidRequest)
			if !strings.Contains(e.Reason, fmt.Sprintf("%q", c.mode)) {
				t.Fatalf("reason does not name the mode: %s", e.Reason)
			}
			if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
				t.Fatal("a refused Open created the log")
			}
		})
	}
	accepted := []struct{ name, mode string }{
		{"empty is closed", ""},
		{"closed", FailClosed},
		{"open", FailOpen},
	}
	for _, c := range accepted {
		t.Run("accepts "+c.name, func(t *testing.T) {
			openLog(t, Options{Path: path, FailMode: c.mode})
		})
	}
}

func TestOpenRefusesBadOptions(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		name string
		opts Options
	}{
		{"empty path", Options{Path: "", Server: "sweepd"}},
		{"relative path", Options{Path: "state/audit.jsonl", Server: "sweepd"}},
		{"path names no file", Options{Path: "/", Server: "sweepd"}},
		{"no server name", Options{Path: filepath.Join(dir, "audit.jsonl"), Server: ""}},
		{"negative MaxBytes", Options{Path: filepath.Join(dir, "audit.jsonl"), Server: "sweepd", MaxBytes: -1}},
		{"empty root", Options{Path: filepath.Join(dir, "audit.jsonl"), Server: "sweepd", Roots: []string{""}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Open(c.opts)
			wantCode(t, err, result.InvalidRequest)
		})
	}
}

func TestNewFileAndDirectoryArePrivate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "b")
	path := filepath.Join(dir, "audit.jsonl")
	openLog(t, Options{Path: path})
	cases := []struct {
		name string
		path string
		want os.FileMode
	}{
		{"log directory", dir, 0o700},
		{"created parent", filepath.Dir(dir), 0o700},
		{"log file", path, 0o600},
		{"lock file", path + ".lock", 0o600},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fi, err := os.Stat(c.path)
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode().Perm() != c.want {
				t.Fatalf("%s has mode %v, want %v", c.path, fi.Mode().Perm(), c.want)
			}
		})
	}
}

func TestLogFileSymlinkIsRefused(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real.jsonl")
	if err := os.WriteFile(real, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "audit.jsonl")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	_, err := Open(Options{Path: link, Server: "sweepd"})
	wantCode(t, err, result.AuditUnavailable)
	if !errors.Is(err, syscall.ELOOP) {
		t.Fatalf("err = %v, want ELOOP inside", err)
	}

	// Swapped for a symlink after Open: the next record is refused too.
	path := filepath.Join(dir, "b.jsonl")
	l := openLog(t, Options{Path: path})
	if err := os.Rename(path, path+".moved"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(path+".moved", path); err != nil {
		t.Fatal(err)
	}
	_, err = l.Intent("reclaim", nil)
	wantCode(t, err, result.AuditUnavailable)
}

func TestOpenModeProceedsAndLogs(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "state")
	path := filepath.Join(dir, "audit.jsonl")
	var logs bytes.Buffer
	l := openLog(t, Options{Path: path, FailMode: FailOpen, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err := l.Event("startup", nil); err != nil {
		t.Fatal(err)
	}

	// Fault: the log's directory is replaced by a regular file (ENOTDIR).
	if err := os.Rename(dir, dir+".away"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dir, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	id, err := l.Intent("reclaim", map[string]any{"path": "/x"})
	if err != nil {
		t.Fatalf("open mode Intent: %v", err)
	}
	if !strings.HasPrefix(id, "i-unrecorded-") {
		t.Fatalf("id of an unrecorded intent = %q", id)
	}
	id2, _ := l.Intent("reclaim", nil)
	if id2 == id {
		t.Fatal("two unrecorded intents got the same id")
	}
	if !strings.Contains(logs.String(), "record not written") || !strings.Contains(logs.String(), "action=reclaim") ||
		!strings.Contains(logs.String(), "kind=intent") {
		t.Fatalf("open-mode failure not logged: %q", logs.String())
	}
	if err := l.Outcome(id, "reclaim", result.OK, nil); err != nil {
		t.Fatalf("open mode Outcome: %v", err)
	}
	if strings.Count(logs.String(), "record not written") != 3 {
		t.Fatalf("want three warnings: %q", logs.String())
	}

	// Repaired: the returned id is usable, and the chain goes on.
	os.Remove(dir)
	if err := os.Rename(dir+".away", dir); err != nil {
		t.Fatal(err)
	}
	if err := l.Outcome(id, "reclaim", result.OK, nil); err != nil {
		t.Fatal(err)
	}
	lines := readLines(t, path)
	if len(lines) != 2 {
		t.Fatalf("%d lines, want 2", len(lines))
	}
	if d := decodeLine(t, lines[1]); d.Intent == nil || *d.Intent != id || d.Seq != 2 {
		t.Fatalf("outcome %+v", d)
	}
	mustVerify(t, path, 2)
}

func TestConcurrentWritersKeepChain(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l := openLog(t, Options{Path: path})
	// A second Log on the same file in this process stands for a second
	// server: they coordinate through the lock file, not the mutex.
	l2 := openLog(t, Options{Path: path, Server: "terminald"})
	const workers, each = 8, 50
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			log := l
			if w%2 == 1 {
				log = l2
			}
			for i := range each {
				action := fmt.Sprintf("w%d", w)
				id, err := log.Intent(action, map[string]any{"i": i})
				if err != nil {
					errs <- err
					return
				}
				if err := log.Outcome(id, action, result.OK, map[string]any{"i": i}); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	mustVerify(t, path, 2*workers*each)
	// Every outcome names an intent of the same action written before it.
	intents := map[string]string{}
	for _, ln := range readLines(t, path) {
		d := decodeLine(t, ln)
		switch d.Kind {
		case KindIntent:
			intents[intentID(d.Seq)] = d.Action
		case KindOutcome:
			if intents[*d.Intent] != d.Action {
				t.Fatalf("outcome %d names intent %s of action %q, want %q", d.Seq, *d.Intent, intents[*d.Intent], d.Action)
			}
		}
	}
}

func TestRotationContinuesChain(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	const maxBytes = 2048
	l := openLog(t, Options{Path: path, MaxBytes: maxBytes})
	const total = 200
	for i := range total {
		if err := l.Event("tick", map[string]any{"i": i, "pad": strings.Repeat("x", 50)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Lstat(path + ".6"); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("rotation kept more than five files")
	}
	files := []string{path + ".5", path + ".4", path + ".3", path + ".2", path + ".1", path} // oldest first
	var lastSeq int64
	var lastLine []byte
	for i, f := range files {
		fi, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Size() > maxBytes {
			t.Fatalf("%s is %d bytes, over MaxBytes", f, fi.Size())
		}
		lines := readLines(t, f)
		rep := mustVerify(t, f, len(lines))
		first := decodeLine(t, lines[0])
		if i == 0 {
			if rep.Note == "" {
				t.Fatalf("the oldest kept file continues a deleted one; VerifyFile should say so: %+v", rep)
			}
		} else {
			if rep.Note != "" {
				t.Fatalf("%s: link to its predecessor not checked: %s", f, rep.Note)
			}
			if first.Seq != lastSeq+1 || first.Prev != hashLine(lastLine) {
				t.Fatalf("%s does not continue the chain: first %+v, previous seq %d", f, first, lastSeq)
			}
		}
		lastLine = lines[len(lines)-1]
		lastSeq = decodeLine(t, lastLine).Seq
	}
	if lastSeq != total {
		t.Fatalf("last seq %d, want %d", lastSeq, total)
	}

	// Reopening continues the rotated chain too.
	l.Close()
	l = openLog(t, Options{Path: path, MaxBytes: maxBytes})
	if id, err := l.Intent("reclaim", nil); err != nil || id != intentID(total+1) {
		t.Fatalf("Intent after reopen = %q, %v", id, err)
	}
}

func TestOpenContinuesRotatedChainWhenCurrentFileIsEmpty(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l := openLog(t, Options{Path: path})
	for range 4 {
		l.Event("tick", nil)
	}
	l.Close()
	// A rotation that stopped after the rename: FILE.1 holds the chain, FILE is empty.
	if err := os.Rename(path, path+".1"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	l = openLog(t, Options{Path: path})
	if id, err := l.Intent("reclaim", nil); err != nil || id != "i-5" {
		t.Fatalf("Intent = %q, %v; want i-5", id, err)
	}
	mustVerify(t, path, 1)
}

func TestRemovedLogIsRecreatedAndContinuesChain(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l := openLog(t, Options{Path: path})
	for range 3 {
		l.Event("tick", nil)
	}
	head := hashLine(readLines(t, path)[2])
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := l.Event("tick", nil); err != nil {
		t.Fatal(err)
	}
	lines := readLines(t, path)
	if d := decodeLine(t, lines[0]); len(lines) != 1 || d.Seq != 4 || d.Prev != head {
		t.Fatalf("recreated log does not continue the chain: %s", lines[0])
	}
	rep := mustVerify(t, path, 1)
	if rep.Note == "" {
		t.Fatal("VerifyFile should say the chain continues a file that is not present")
	}
}

func TestWriteAfterCloseFailsClosed(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l := openLog(t, Options{Path: path})
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	_, err := l.Intent("reclaim", nil)
	wantCode(t, err, result.AuditUnavailable)
	wantCode(t, l.Event("x", nil), result.AuditUnavailable)
	wantCode(t, l.Outcome("i-1", "x", result.OK, nil), result.AuditUnavailable)
}

func TestUnencodableFieldFailsClosed(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l := openLog(t, Options{Path: path})
	_, err := l.Intent("reclaim", map[string]any{"f": func() {}})
	e := wantCode(t, err, result.AuditUnavailable)
	if !strings.Contains(e.Reason, "JSON") {
		t.Fatalf("reason: %s", e.Reason)
	}
	if err := l.Event("ok", nil); err != nil {
		t.Fatal(err)
	}
	mustVerify(t, path, 1)
}

func TestClientReasonsNeverShowThePath(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "secret-state-dir")
	l := openLog(t, Options{Path: filepath.Join(dir, "audit.jsonl")})
	os.Rename(dir, dir+".away")
	os.WriteFile(dir, nil, 0o600)
	_, err := l.Intent("reclaim", nil)
	e := wantCode(t, err, result.AuditUnavailable)
	if strings.Contains(e.Reason, "secret-state-dir") {
		t.Fatalf("client-facing reason shows the path: %s", e.Reason)
	}
	if _, reason := result.Classify(err); reason != e.Reason {
		t.Fatalf("Classify reason %q", reason)
	}
	if !strings.Contains(e.Reason, "refused before anything was done") {
		t.Fatalf("reason: %s", e.Reason)
	}
}

func TestDefaultDir(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", "/var/xdg")
	t.Setenv("HOME", "/home/u")
	if d, err := DefaultDir(); err != nil || d != "/var/xdg/bastion" {
		t.Fatalf("DefaultDir = %q, %v", d, err)
	}
	t.Setenv("XDG_STATE_HOME", "relative/xdg")
	if d, err := DefaultDir(); err != nil || d != "/home/u/.local/state/bastion" {
		t.Fatalf("DefaultDir with relative XDG_STATE_HOME = %q, %v", d, err)
	}
	t.Setenv("XDG_STATE_HOME", "")
	if d, err := DefaultDir(); err != nil || d != "/home/u/.local/state/bastion" {
		t.Fatalf("DefaultDir = %q, %v", d, err)
	}
	t.Setenv("HOME", "")
	_, err := DefaultDir()
	wantCode(t, err, result.InvalidRequest)
	t.Setenv("HOME", "rel")
	_, err = DefaultDir()
	wantCode(t, err, result.InvalidRequest)
}

func TestOpenRefusesWhenRotatedPredecessorIsBroken(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l := openLog(t, Options{Path: path})
	l.Event("tick", nil)
	l.Close()
	b, _ := os.ReadFile(path)
	os.WriteFile(path+".1", b[:len(b)-5], 0o600) // torn
	os.WriteFile(path, nil, 0o600)
	_, err := Open(Options{Path: path, Server: "sweepd"})
	e := wantCode(t, err, result.AuditUnavailable)
	if !strings.Contains(e.Reason, "`sweepd audit verify "+path+".1`") {
		t.Fatalf("reason should name the broken file: %s", e.Reason)
	}
}
