package testfs

import (
	"os"
	"path/filepath"
	"testing"
)

func TestWriteMakesParentsAndExistsSeesLinks(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "a", "b", "f")
	Write(t, p, "x")
	if b, err := os.ReadFile(p); err != nil || string(b) != "x" {
		t.Fatalf("ReadFile = %q, %v", b, err)
	}
	link := filepath.Join(dir, "dangling")
	if err := os.Symlink(filepath.Join(dir, "nothing"), link); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		p    string
		want bool
	}{{"file", p, true}, {"dangling-link", link, true}, {"missing", filepath.Join(dir, "nothing"), false}} {
		t.Run(c.name, func(t *testing.T) {
			if got := Exists(c.p); got != c.want {
				t.Fatalf("Exists(%s) = %v, want %v", c.p, got, c.want)
			}
		})
	}
}
