package journal

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/bastion-mcp/bastion/safety/jail"
	"github.com/bastion-mcp/bastion/safety/result"
	"github.com/bastion-mcp/bastion/safety/testfs"
)

// unprivBaseEnv names the directory the unprivileged pass of
// TestOpenFailsWhenCompactionCannotSyncDirectory works in.
const unprivBaseEnv = "BASTION_JOURNAL_UNPRIV_BASE"

// nobody is the unprivileged user that pass runs as.
const nobody = 65534

// TestOpenFailsWhenCompactionCannotSyncDirectory proves that compaction's
// directory fsync is not best effort: when the journal's directory cannot
// be opened for it (mode 0300: the owner may create, rename and look up
// names, not read the directory), Open fails with ErrWrite wrapping the
// cause, although the temporary file was written, synced and renamed. The
// same directory made readable opens. Root opens any directory, so as root
// the check runs in a copy of this test binary as uid 65534 (setpriv).
func TestOpenFailsWhenCompactionCannotSyncDirectory(t *testing.T) {
	if base := os.Getenv(unprivBaseEnv); base != "" {
		checkUnsyncableDirectory(t, base)
		return
	}
	base := unprivBase(t)
	if os.Getuid() != 0 {
		checkUnsyncableDirectory(t, base)
		return
	}
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Fatalf("setpriv (util-linux) is needed to run this test as uid %d: %v", nobody, err)
	}
	bin := filepath.Join(base, "journal.test")
	testfs.CopyExecutable(t, os.Args[0], bin)
	cmd := exec.Command(setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", "--",
		bin, "-test.run=^"+t.Name()+"$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), unprivBaseEnv+"="+base)
	cmd.Dir = base
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("the pass as uid %d failed: %v\n%s", nobody, err, out.String())
	}
	if !bytes.Contains(out.Bytes(), []byte("--- PASS: "+t.Name())) {
		t.Fatalf("the pass as uid %d did not run the test:\n%s", nobody, out.String())
	}
}

// unprivBase makes a directory the current user and uid 65534 can both
// reach, holding ws (the workspace) and state (the journal's directory,
// 0300), owned by the user that will open the journal.
func unprivBase(t *testing.T) string {
	t.Helper()
	base, err := os.MkdirTemp("", "journal-unpriv-")
	if err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(base, "state")
	t.Cleanup(func() {
		os.Chmod(state, 0o700)
		os.RemoveAll(base)
	})
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	owner := os.Getuid()
	if owner == 0 {
		owner = nobody
	}
	for _, d := range []string{"ws", "state"} {
		p := filepath.Join(base, d)
		if err := os.Mkdir(p, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(p, owner, owner); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(state, 0o300); err != nil {
		t.Fatal(err)
	}
	return base
}

// checkUnsyncableDirectory runs, as the owner of base/state, the check
// TestOpenFailsWhenCompactionCannotSyncDirectory describes.
func checkUnsyncableDirectory(t *testing.T, base string) {
	root, err := jail.OpenRoot(filepath.Join(base, "ws"))
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	state := filepath.Join(base, "state")
	path := filepath.Join(state, "j.journal")
	_, _, err = Open(path, root, Options{})
	if result.CodeOf(err) != ErrWrite.Code || !errors.Is(err, fs.ErrPermission) {
		t.Fatalf("Open with an unreadable journal directory = %v, want ErrWrite wrapping EACCES", err)
	}
	if fi, err := os.Stat(path); err != nil || !fi.Mode().IsRegular() {
		t.Fatalf("the compacted journal is not in place (%v): the failure is not the directory fsync", err)
	}
	if err := os.Chmod(state, 0o700); err != nil {
		t.Fatal(err)
	}
	j, _, err := Open(path, root, Options{})
	if err != nil {
		t.Fatalf("Open once the directory is readable: %v", err)
	}
	j.Close()
}
