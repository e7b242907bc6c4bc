package testfs

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// UnprivilegedEnv is set in the environment of the unprivileged re-run
// that RerunUnprivileged starts.
const UnprivilegedEnv = "BASTION_TESTFS_UNPRIVILEGED"

// Nobody is the unprivileged user and group the re-run runs as.
const Nobody = 65534

// RerunUnprivileged runs the tests of this test binary that match pattern
// again as an unprivileged user (setpriv --reuid=65534), with a private
// TMPDIR and HOME that user owns, and fails t if any of them fails or
// skips, or none ran. The re-run's working directory is a copy, readable
// by that user, of the files the tests open relative to theirs (files,
// as the tests name them: "../../policies/dev.example.toml",
// "testdata/x.py"): the checkout itself may lie where that user cannot
// look (a root-owned 0700 home). It does nothing in that re-run itself,
// and only logs when the tests already run unprivileged: then the
// ordinary pass is the unprivileged one.
func RerunUnprivileged(t *testing.T, pattern string, files ...string) {
	t.Helper()
	if os.Getenv(UnprivilegedEnv) != "" {
		return
	}
	if os.Getuid() != 0 {
		t.Logf("the tests already run unprivileged (uid %d): that pass is the unprivileged one", os.Getuid())
		return
	}
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Fatalf("setpriv (util-linux) is needed to run the server unprivileged: %v", err)
	}
	base, err := os.MkdirTemp("", "bastion-unpriv-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(base, filepath.Base(os.Args[0]))
	CopyExecutable(t, os.Args[0], bin)
	// The copy of the working directory sits as deep below base as the
	// files reach up from it.
	up := 0
	for _, f := range files {
		n := 0
		for p := filepath.Clean(f); strings.HasPrefix(p, ".."); p = strings.TrimPrefix(strings.TrimPrefix(p, ".."), "/") {
			n++
		}
		up = max(up, n)
	}
	wd := filepath.Join(base, "tree")
	for i := 0; i < up; i++ {
		wd = filepath.Join(wd, fmt.Sprintf("d%d", i))
	}
	if err := os.MkdirAll(wd, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(wd, f)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tmp := filepath.Join(base, "tmp")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(tmp, Nobody, Nobody); err != nil {
		t.Fatal(err)
	}
	var env []string
	for _, kv := range os.Environ() {
		switch name, _, _ := strings.Cut(kv, "="); name {
		case "TMPDIR", "HOME", "GOCOVERDIR", UnprivilegedEnv:
			continue
		}
		env = append(env, kv)
	}
	env = append(env, "TMPDIR="+tmp, "HOME="+tmp, UnprivilegedEnv+"=1")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", "--",
		bin, "-test.run="+pattern, "-test.count=1", "-test.v", "-test.timeout=280s")
	cmd.Env = env
	cmd.Dir = wd
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	text := out.String()
	if err != nil || strings.Contains(text, "--- SKIP") || !strings.Contains(text, "--- PASS") {
		t.Fatalf("the unprivileged re-run of %s failed (%v):\n%s", pattern, err, text)
	}
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, "--- PASS") {
			t.Log("unprivileged:", strings.TrimPrefix(line, "--- "))
		}
	}
}

// CopyExecutable copies the program at src to dst (mode 0755) for
// another user or process to run. The copy is written by cp, a process of
// its own: a file this process held open for writing would be inherited
// by any child that a parallel test forks meanwhile, and executing dst
// would then fail with ETXTBSY ("text file busy") until that child
// exec'd.
func CopyExecutable(t testing.TB, src, dst string) {
	t.Helper()
	if out, err := exec.Command("cp", "--", src, dst).CombinedOutput(); err != nil {
		t.Fatalf("copying %s: %v %s", src, err, out)
	}
	if err := os.Chmod(dst, 0o755); err != nil {
		t.Fatal(err)
	}
}

// SetImmutable sets or clears a file's immutable attribute, as chattr +i
// and -i do (FS_IOC_SETFLAGS; root only): the fault that makes a file
// impossible to remove, for tests of what stays behind.
func SetImmutable(t testing.TB, path string, on bool) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	const immutable = 0x10 // FS_IMMUTABLE_FL of linux/fs.h
	var flags int32
	if _, _, e := unix.Syscall(unix.SYS_IOCTL, f.Fd(), unix.FS_IOC_GETFLAGS, uintptr(unsafe.Pointer(&flags))); e != 0 {
		t.Fatalf("FS_IOC_GETFLAGS %s: %v", path, e)
	}
	if on {
		flags |= immutable
	} else {
		flags &^= immutable
	}
	if _, _, e := unix.Syscall(unix.SYS_IOCTL, f.Fd(), unix.FS_IOC_SETFLAGS, uintptr(unsafe.Pointer(&flags))); e != 0 {
		t.Fatalf("FS_IOC_SETFLAGS %s: %v", path, e)
	}
}
