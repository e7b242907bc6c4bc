package risk

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/bastion-mcp/bastion/safety/result"
)

func TestClassifyRefusesPathThroughSymlinkedDirectory(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	write(t, outside, "secret.env", "DB_PASSWORD=Zx9vQ2mmT7\n")
	if err := os.Symlink(outside, filepath.Join(root, "linked")); err != nil {
		t.Fatal(err)
	}
	_, err := newEngine(t, Options{}).Classify(openRoot(t, root), "linked/secret.env")
	if result.CodeOf(err) != result.PathEscape {
		t.Fatalf("want PATH_ESCAPE through a symlinked directory, got %v", err)
	}
}

func TestClassifyAndSummaryDoNotEnterAnotherMount(t *testing.T) {
	root := t.TempDir()
	write(t, root, "src/main.go", "package main\n")
	mnt := filepath.Join(root, "mnt")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", mnt, "tmpfs", 0, "size=1m"); err != nil {
		t.Fatalf("mount tmpfs: %v", err)
	}
	t.Cleanup(func() { _ = unix.Unmount(mnt, unix.MNT_DETACH) })
	write(t, mnt, ".env", "TOKEN=Zx9vQ2mmT7abc\n")
	e := newEngine(t, Options{})
	r := openRoot(t, root)
	if _, err := e.Classify(r, "mnt/.env"); result.CodeOf(err) != result.PathEscape {
		t.Fatalf("want PATH_ESCAPE for a file on another mount, got %v", err)
	}
	s, err := e.Summarize(context.Background(), r, ".", SummaryLimits{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Files != 1 || s.Skipped != 1 || s.Counts[HighRisk] != 0 {
		t.Fatalf("summary entered the mount: files=%d skipped=%d counts=%v", s.Files, s.Skipped, s.Counts)
	}
}
