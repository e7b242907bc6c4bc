package risk

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// TestCachedDescriptorIsTheSameJSON reads every descriptor twice (the
// second read comes from the cache) and compares the JSON bytes: an empty
// reasons or matched_rules list is [] on every read, never null.
func TestCachedDescriptorIsTheSameJSON(t *testing.T) {
	gitEnv(t)
	dir := gitInit(t)
	write(t, dir, ".env", "API_KEY=sk_live_0123456789abcdefghijklmn\n")
	write(t, dir, ".env.example", "API_KEY=changeme\n")
	write(t, dir, "src/main.go", "package main\n")
	write(t, dir, "logs/app.log", "started\n")
	write(t, dir, "notes.txt", "hi\n")
	if err := os.Symlink("notes.txt", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	runGit(t, dir, "", "add", ".env", ".env.example", "src/main.go")
	e := newEngine(t, Options{})
	root := openRoot(t, dir)
	for _, rel := range []string{".env", ".env.example", "src", "src/main.go", "link", "logs/app.log", "notes.txt", "."} {
		t.Run(caseName(rel), func(t *testing.T) {
			var reads [2][]byte
			for i := range reads {
				d, err := e.Classify(root, rel)
				if err != nil {
					t.Fatal(err)
				}
				if reads[i], err = json.Marshal(d); err != nil {
					t.Fatal(err)
				}
				if bytes.Contains(reads[i], []byte(":null")) {
					t.Errorf("read %d holds a null: %s", i+1, reads[i])
				}
			}
			if !bytes.Equal(reads[0], reads[1]) {
				t.Errorf("cached read differs:\nfirst  %s\nsecond %s", reads[0], reads[1])
			}
		})
	}
}
