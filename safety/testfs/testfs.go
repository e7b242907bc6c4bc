// Package testfs holds the file helpers that tests across Bastion's
// modules share, so each exists once.
package testfs

import (
	"os"
	"path/filepath"
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
