package proxy

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/bastion-mcp/bastion/safety/result"
)

func TestValidatePattern(t *testing.T) {
	for _, ok := range []string{
		"example.com", "EXAMPLE.com", "example.com.", "localhost", "*.example.org", "*.a.b.example.org.",
		"xn--bcher-kva.example", "_acme.example.com", "a-b.example", "203.0.113.7", "2001:db8::1", "[2001:db8::1]",
		"::ffff:203.0.113.7",
	} {
		t.Run("valid "+ok, func(t *testing.T) {
			if err := ValidatePattern(ok); err != nil {
				t.Errorf("ValidatePattern(%q) = %v, want nil", ok, err)
			}
		})
	}
	for bad, why := range map[string]string{
		"":                                "empty",
		"*":                               "every host",
		"*.":                              "every host",
		"*.com":                           "two labels",
		"*.1.2.3":                         "two labels",
		".example.org":                    `"*.example.org"`,
		"a.*.example.org":                 "leading",
		"*example.org":                    "leading",
		"**.example.org":                  "leading",
		"https://example.com":             "scheme",
		"example.com/path":                "path",
		"user@example.com":                "user",
		"example.com:443":                 "port",
		"[2001:db8::1]:443":               "brackets",
		"[example.com]":                   "brackets",
		"ex ample.com":                    "character",
		"exa\x00mple.com":                 "character",
		"bücher.example":                  "xn--",
		"\u212aexample.com":               "xn--", // Kelvin sign: must not fold to "k"
		"-a.example.com":                  "'-'",
		"a..example.com":                  "empty label",
		"127.1":                           "neither",
		"2130706433":                      "neither",
		"127.0.0.1":                       "loopback",
		"10.0.0.1":                        "private",
		"169.254.169.254":                 "link-local",
		"::1":                             "loopback",
		"fe80::1%eth0":                    "zone",
		"100.64.1.1":                      "CGNAT",
		strings.Repeat("a", 64):           "63",
		strings.Repeat("a.", 127) + "com": "253",
	} {
		t.Run("invalid "+patternName(bad), func(t *testing.T) {
			err := ValidatePattern(bad)
			var re *result.Error
			if !errors.As(err, &re) || re.Code != result.InvalidRequest {
				t.Fatalf("ValidatePattern(%q) = %v, want INVALID_REQUEST", bad, err)
			}
			if !strings.Contains(re.Reason, why) || !strings.Contains(re.Reason, "allowed_hosts entry") {
				t.Errorf("ValidatePattern(%q) reason %q, want it to mention %q", bad, re.Reason, why)
			}
		})
	}
}

// patternName names a subtest after a pattern: "empty", or the pattern,
// shortened when long.
func patternName(p string) string {
	switch {
	case p == "":
		return "empty"
	case len(p) > 24:
		return fmt.Sprintf("%s...(%d bytes)", p[:12], len(p))
	}
	return p
}
