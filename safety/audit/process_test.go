package audit

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/bastion-mcp/bastion/safety/result"
)

// TestAuditWriterProcess is not a test on its own: TestSeparateProcessesShareOneChain
// runs the test binary with it selected and the variables below set, to get
// real separate writer processes. Without them it does nothing.
func TestAuditWriterProcess(t *testing.T) {
	path := os.Getenv("BASTION_AUDIT_WRITER_PATH")
	if path == "" {
		return
	}
	pairs, _ := strconv.Atoi(os.Getenv("BASTION_AUDIT_WRITER_PAIRS"))
	maxBytes, _ := strconv.ParseInt(os.Getenv("BASTION_AUDIT_WRITER_MAXBYTES"), 10, 64)
	name := os.Getenv("BASTION_AUDIT_WRITER_NAME")
	l, err := Open(Options{Path: path, Server: name, MaxBytes: maxBytes})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for i := range pairs {
		id, err := l.Intent("reclaim", map[string]any{"writer": name, "i": i})
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Outcome(id, "reclaim", result.OK, map[string]any{"writer": name, "i": i}); err != nil {
			t.Fatal(err)
		}
	}
}

func TestSeparateProcessesShareOneChain(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	// One process writes first so the others open an existing log.
	openLog(t, Options{Path: path}).Event("startup", nil)

	const procs, pairs = 4, 150
	cmds := make([]*exec.Cmd, procs)
	for p := range procs {
		cmd := exec.Command(exe, "-test.run=^TestAuditWriterProcess$", "-test.count=1")
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		cmd.Env = append(os.Environ(),
			"BASTION_AUDIT_WRITER_PATH="+path,
			"BASTION_AUDIT_WRITER_PAIRS="+strconv.Itoa(pairs),
			"BASTION_AUDIT_WRITER_MAXBYTES="+strconv.Itoa(64<<10),
			"BASTION_AUDIT_WRITER_NAME="+fmt.Sprintf("writer%d", p))
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds[p] = cmd
	}
	for _, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("writer process: %v", err)
		}
	}

	// Walk the rotated files oldest first: every file verifies, each links
	// to the one before, and no record is lost or doubled.
	var files []string
	for i := Keep; i >= 1; i-- {
		if _, err := os.Stat(path + "." + strconv.Itoa(i)); err == nil {
			files = append(files, path+"."+strconv.Itoa(i))
		}
	}
	files = append(files, path)
	if len(files) < 2 {
		t.Fatalf("expected the writers to rotate the log, got %v", files)
	}
	total := 0
	perWriter := map[string]int{}
	for i, f := range files {
		lines := readLines(t, f)
		rep := mustVerify(t, f, len(lines))
		if i == 0 && rep.FirstSeq != 1 {
			t.Fatalf("the oldest file starts at seq %d; a file was lost", rep.FirstSeq)
		}
		if i > 0 && rep.Note != "" {
			t.Fatalf("%s: %s", f, rep.Note)
		}
		for _, ln := range lines {
			d := decodeLine(t, ln)
			if w, ok := d.Fields["writer"].(string); ok {
				perWriter[w]++
			}
		}
		total += len(lines)
	}
	if want := 1 + procs*pairs*2; total != want {
		t.Fatalf("%d records in %d files, want %d", total, len(files), want)
	}
	for p := range procs {
		if n := perWriter[fmt.Sprintf("writer%d", p)]; n != 2*pairs {
			t.Fatalf("writer%d has %d records, want %d", p, n, 2*pairs)
		}
	}
}
