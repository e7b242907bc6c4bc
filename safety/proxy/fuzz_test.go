package proxy

import (
	"strings"
	"testing"
)

var fuzzSeeds = []string{
	"example.com", "*.example.org", "*.Example.ORG.", "localhost", "203.0.113.7", "[2001:db8::1]", "2001:db8::1",
	"::ffff:203.0.113.7", "*", "*.com", ".example.org", "a.*.b", "127.1", "0x7f000001", "exa\x00mple.com",
	"\u212aexample.com", "example.com:443", "a..b", "-a.b", "_x.example.com", "",
}

// FuzzPattern checks that ValidatePattern never panics, that a valid
// pattern admits what it names and a wildcard never its apex, and that
// New agrees with ValidatePattern.
func FuzzPattern(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		err := ValidatePattern(s)
		p, nerr := New(Options{AllowedHosts: []string{s}})
		if (err == nil) != (nerr == nil) {
			t.Fatalf("ValidatePattern(%q) = %v but New = %v", s, err, nerr)
		}
		if err != nil {
			return
		}
		defer p.Close()
		pt, _ := parsePattern(s)
		switch {
		case pt.addr.IsValid():
			if !p.Allowed(pt.addr.String()) {
				t.Fatalf("pattern %q does not admit its address %s", s, pt.addr)
			}
		case pt.wild:
			if p.Allowed(pt.name) {
				t.Fatalf("wildcard %q admits its apex %q", s, pt.name)
			}
			if sub := "a." + pt.name; len(sub) <= maxNameLen && !p.Allowed(sub) {
				t.Fatalf("wildcard %q does not admit %q", s, sub)
			}
		default:
			if !p.Allowed(pt.name) || !p.Allowed(strings.ToUpper(pt.name)+".") {
				t.Fatalf("pattern %q does not admit %q", s, pt.name)
			}
			if p.Allowed("a." + pt.name) {
				t.Fatalf("exact pattern %q admits a subdomain", s)
			}
		}
	})
}

// FuzzAllowed checks, for arbitrary hosts against a fixed list, that
// Allowed never panics and admits a host only if it is a listed name, a
// strict subdomain of a wildcard, or a listed address, whatever its case or
// trailing dot.
func FuzzAllowed(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	for _, s := range []string{"a.example.org", "example.org", "badexample.org", "example.org.evil.test",
		"x.example.com", "EXAMPLE.COM.", "203.0.113.7", "[::ffff:203.0.113.7]", "198.51.100.1", "a.b.example.org"} {
		f.Add(s)
	}
	p, err := New(Options{AllowedHosts: []string{"example.com", "*.example.org", "203.0.113.7"}})
	if err != nil {
		f.Fatal(err)
	}
	defer p.Close()
	f.Fuzz(func(t *testing.T, host string) {
		got := p.Allowed(host)
		name, addr, kind, why := normalizeHost(host)
		want := false
		if why == "" {
			switch kind {
			case hostAddr:
				want = addr.String() == "203.0.113.7"
			case hostName:
				want = name == "example.com" || strings.HasSuffix(name, ".example.org")
			}
		}
		if got != want {
			t.Fatalf("Allowed(%q) = %v, want %v (normalised %q, kind %d, %s)", host, got, want, name, kind, why)
		}
		if got && (strings.Contains(host, "*") || strings.ContainsAny(host, "/:@ \x00") && kind != hostAddr) {
			t.Fatalf("Allowed(%q) admits a non-host", host)
		}
		if up, ok := asciiLower(host); ok && p.Allowed(strings.ToUpper(up)) != got {
			t.Fatalf("Allowed(%q) depends on case", host)
		}
	})
}
