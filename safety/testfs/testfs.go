// Package testfs holds the file helpers that tests across Bastion's
// modules share, so each exists once.
package testfs

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// Write writes content to the file p (mode 0644), making its parent
// directories (mode 0755). It fails the test on any error.
func Write(t testing.TB, p, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Exists reports whether p names anything (a symbolic link at p is not
// followed).
func Exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

// FillDisk writes to path until its file system is full (ENOSPC); it
// fails the test on any other error, or when 4 MiB did not fill it (the
// tests mount a small tmpfs).
func FillDisk(t testing.TB, path string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 4096)
	for range 1 << 10 {
		if _, err := f.Write(buf); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("filling: %v", err)
			}
			return
		}
	}
	t.Fatal("the file system never filled up")
}
