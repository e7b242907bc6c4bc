package runner

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// TestEmptyDirSeesWhatARunLeft: emptyDir decides whether a run's HOME or
// TMPDIR goes back to the next run as it is (giveBack); anything a command
// left there, a changed mode, or a symbolic link in its place must make it
// false.
func TestEmptyDirSeesWhatARunLeft(t *testing.T) {
	mk := func(t *testing.T) string {
		d := filepath.Join(t.TempDir(), "home")
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
		return d
	}
	if d := mk(t); !emptyDir(d) {
		t.Fatal("a new 0700 directory is not empty")
	}
	for _, c := range []struct {
		name string
		do   func(t *testing.T, d string) string
	}{
		{"a file", func(t *testing.T, d string) string {
			must(t, os.WriteFile(filepath.Join(d, "f"), nil, 0o600))
			return d
		}},
		{"a dot file", func(t *testing.T, d string) string {
			must(t, os.WriteFile(filepath.Join(d, ".x"), nil, 0o600))
			return d
		}},
		{"an empty directory", func(t *testing.T, d string) string { must(t, os.Mkdir(filepath.Join(d, "sub"), 0o700)); return d }},
		{"many entries", func(t *testing.T, d string) string {
			for i := range 300 {
				must(t, os.WriteFile(filepath.Join(d, "entry-with-a-long-name-"+strconv.Itoa(i)), nil, 0o600))
			}
			return d
		}},
		{"mode changed", func(t *testing.T, d string) string { must(t, os.Chmod(d, 0o755)); return d }},
		{"setgid added", func(t *testing.T, d string) string { must(t, os.Chmod(d, 0o700|os.ModeSetgid)); return d }},
		{"a symbolic link to an empty directory", func(t *testing.T, d string) string {
			l := d + "-link"
			must(t, os.Symlink(d, l))
			return l
		}},
		{"a regular file", func(t *testing.T, d string) string {
			f := d + "-file"
			must(t, os.WriteFile(f, nil, 0o700))
			return f
		}},
		{"missing", func(t *testing.T, d string) string { must(t, os.Remove(d)); return d }},
	} {
		t.Run(c.name, func(t *testing.T) {
			if p := c.do(t, mk(t)); emptyDir(p) {
				t.Fatalf("emptyDir(%s) = true", p)
			}
		})
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
