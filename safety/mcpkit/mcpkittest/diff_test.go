package mcpkittest

import "testing"

func TestDiff(t *testing.T) {
	for _, c := range []struct {
		name, a, b, want string
	}{
		{"equal texts", "a\nb\n", "a\nb\n", ""},
		{"one line changed", "a\nb\nc\n", "a\nB\nc\n", "@@ line 1 @@\n a\n-b\n+B\n c\n"},
		{"line added at the end", "a\n", "a\nb\n", "@@ line 1 @@\n a\n+b\n"},
		{"line removed at the start", "a\nb\n", "b\n", "@@ line 1 @@\n-a\n b\n"},
		{"far apart changes make two hunks", "1\n2\n3\n4\n5\n6\n7\n8\n9\n", "x\n2\n3\n4\n5\n6\n7\n8\ny\n",
			"@@ line 1 @@\n-1\n+x\n 2\n 3\n@@ line 7 @@\n 7\n 8\n-9\n+y\n"},
		{"missing final newline", "a\n", "a", "@@ line 1 @@\n-a\n+a (no newline at end)\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := Diff(c.a, c.b); got != c.want {
				t.Fatalf("Diff:\n%s\nwant:\n%s", got, c.want)
			}
		})
	}
}
