package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// cachePy prints the Go module cache the command was given and whether a
// planted file is in it; with "plant" it plants that file first, as a
// poisoned module download would be.
const cachePy = `import os, sys
m = os.environ["GOMODCACHE"]
if sys.argv[1] == "plant":
    with open(os.path.join(m, "planted.txt"), "w") as f:
        f.write("poison")
print("GOMODCACHE=" + m)
print("SEES=" + str(os.path.exists(os.path.join(m, "planted.txt"))))
`

// cacheRun runs cachePy in the server with policy pol and returns its
// GOMODCACHE and whether it saw the planted file.
func cacheRun(t *testing.T, b *serverBox, pol, verb string) (modcache string, sees bool) {
	t.Helper()
	c, _ := b.start(t, pol)
	r := call(t, c, "run_command", map[string]any{"command": "python3 cache.py " + verb})
	out, _ := r.Detail["stdout"].(string)
	if r.Code != "OK" {
		t.Fatalf("python3 cache.py %s: %+v", verb, r)
	}
	for _, l := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(l, "GOMODCACHE="); ok {
			modcache = v
		}
	}
	return modcache, strings.Contains(out, "SEES=True")
}

// TestCachePlantedByOneJailIsInvisibleToAnother: two servers with
// different jails and the same state directory; the first one's command
// plants a file in its Go module cache; the second one's command is given
// another directory and does not see the file. A jail moved away and made
// again at the same path gets fresh caches. With share_caches = true both
// jails' commands get the same directory and the second sees the plant.
// As root and unprivileged.
func TestCachePlantedByOneJailIsInvisibleToAnother(t *testing.T) {
	asRootAndUnprivileged(t, func(t *testing.T, b *serverBox) {
		state := b.dir(t, "state")
		jail1, jail2 := b.dir(t, "jail1"), b.dir(t, "jail2")
		for _, j := range []string{jail1, jail2} {
			b.writeScript(t, j, "cache.py", cachePy)
		}
		pol1 := b.policy(t, jail1, state, "caches = [\"go\"]")
		pol2 := b.policy(t, jail2, state, "caches = [\"go\"]")
		m1, _ := cacheRun(t, b, pol1, "plant")
		m2, sees := cacheRun(t, b, pol2, "look")
		if m1 == "" || m2 == "" || m1 == m2 || sees {
			t.Fatalf("jail 2's command sees jail 1's cache: GOMODCACHE %q and %q, planted file seen: %v", m1, m2, sees)
		}
		if _, err := os.Stat(filepath.Join(m1, "planted.txt")); err != nil {
			t.Fatalf("the plant is not in jail 1's cache on the host: %v", err)
		}
		if _, err := os.Stat(filepath.Join(m2, "planted.txt")); err == nil {
			t.Fatal("the plant is in jail 2's cache on the host")
		}
		for _, m := range []string{m1, m2} {
			rel, err := filepath.Rel(filepath.Join(state, "caches"), m)
			if err != nil || strings.HasPrefix(rel, "..") || !strings.HasPrefix(rel, "jail-") {
				t.Fatalf("cache %s is not a per-jail directory under the state directory's caches/", m)
			}
			for d := m; d != state; d = filepath.Dir(d) {
				if fi, err := os.Stat(d); err != nil || fi.Mode().Perm() != 0o700 {
					t.Fatalf("cache directory %s: %v %v, want mode 0700", d, fi.Mode(), err)
				}
			}
		}
		if again, sees := cacheRun(t, b, pol1, "look"); again != m1 || !sees {
			t.Fatalf("jail 1's next command does not get its own cache back: %q (want %q), sees %v", again, m1, sees)
		}

		// The jail moved away and made again at its path: fresh caches.
		if err := os.Rename(jail1, jail1+"-old"); err != nil {
			t.Fatal(err)
		}
		b.dir(t, "jail1")
		b.writeScript(t, jail1, "cache.py", cachePy)
		if m, sees := cacheRun(t, b, pol1, "look"); m == m1 || sees {
			t.Fatalf("a jail made again at the same path gets the old jail's cache: %q, sees %v", m, sees)
		}

		// Opted in: one cache for every jail.
		shared1 := b.policy(t, jail1, state, "caches = [\"go\"]\nshare_caches = true")
		shared2 := b.policy(t, jail2, state, "caches = [\"go\"]\nshare_caches = true")
		s1, _ := cacheRun(t, b, shared1, "plant")
		s2, sees := cacheRun(t, b, shared2, "look")
		if s1 != s2 || !sees || s1 != filepath.Join(state, "caches", "go", "mod") {
			t.Fatalf("share_caches: GOMODCACHE %q and %q, plant seen %v; want both %s", s1, s2, sees, filepath.Join(state, "caches", "go", "mod"))
		}
	})
}
