package risk

import "testing"

func TestPathOfURI(t *testing.T) {
	for _, tc := range []struct {
		name, uri, want string
		ok              bool
	}{
		{"relative", URIFor("src/.env"), "src/.env", true},
		{"escaped-space", URIFor("a b/c%d"), "a b/c%d", true},
		{"absolute", URIScheme + "/srv/app/.env", "/srv/app/.env", true},
		{"other-scheme", "file:///etc/passwd", "", false},
		{"empty-path", URIScheme, "", false},
		{"dotdot", URIScheme + "a/../b", "", false},
		{"dot", URIScheme + "./a", "", false},
		{"empty-segment", URIScheme + "a//b", "", false},
		{"query", URIScheme + "a?cursor=2", "", false},
		{"bad-escape", URIScheme + "a%zz", "", false},
		{"escaped-slash", URIScheme + "a%2Fb", "", false},
		{"nul", URIScheme + "a%00", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := PathOfURI(tc.uri)
			if got != tc.want || ok != tc.ok {
				t.Fatalf("PathOfURI(%q) = %q, %v; want %q, %v", tc.uri, got, ok, tc.want, tc.ok)
			}
		})
	}
}
