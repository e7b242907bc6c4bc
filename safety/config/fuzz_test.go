package config

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// FuzzPolicy feeds arbitrary bytes to the policy loader (strict TOML
// decoding, path resolution, the shared checks): it refuses or accepts,
// never panics, and decodes the same bytes the same way twice.
func FuzzPolicy(f *testing.F) {
	for _, s := range []string{
		"", "[approval]\nreclaim = \"agent\"\n", "[audit]\npath = \"a.log\"\n",
		"[sweep]\nroots = [\"/tmp\"]\n", "unknown = 1\n", "[[x]]\n", "a = \"\\u0000\"\n",
		"[terminal]\n", "[organizer]\n", "= = =", "[a.b.c.d]\nx = 1979-05-27T07:32:00Z\n",
	} {
		f.Add([]byte(s))
	}
	// The shipped policies (read here, not committed twice).
	shipped, _ := filepath.Glob(filepath.Join("..", "..", "policies", "*.toml"))
	for _, p := range shipped {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		p1, err1 := Parse(b)
		p2, err2 := Parse(b)
		if (err1 == nil) != (err2 == nil) || (err1 != nil && err1.Error() != err2.Error()) {
			t.Fatalf("two decodings differ: %v / %v", err1, err2)
		}
		if err1 != nil {
			if p1 != nil {
				t.Fatalf("an error and a policy: %v", err1)
			}
			return
		}
		if !reflect.DeepEqual(p1, p2) {
			t.Fatalf("two decodings differ: %+v / %+v", p1, p2)
		}
		_ = p1.resolve("/policy-dir")
		_ = p1.validateShared()
	})
}
