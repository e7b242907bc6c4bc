package command

import (
	"slices"
	"strings"
	"testing"

	"github.com/bastion-mcp/bastion/safety/result"
)

// FuzzCheck feeds arbitrary lines to the shipped policy: Check must not
// panic, must answer one of its four codes (NEEDS_EXPLICIT_REQUEST exactly
// for an ask decision, which is never Allowed), and an allowed decision
// must name an allowlisted, not denylisted program given by bare name.
func FuzzCheck(f *testing.F) {
	for _, c := range readCorpus(f) {
		f.Add(c.line)
	}
	f.Add("git -c x=y\x00 status")
	f.Add(`echo "a\"b" 'c' \ d`)
	p := shipped(f)
	f.Fuzz(func(t *testing.T, line string) {
		d, err := p.Check(line)
		switch d.Code {
		case result.OK, result.PolicyDenied, result.InvalidRequest, result.NeedsExplicitRequest:
		default:
			t.Fatalf("%q: unexpected code %s", line, d.Code)
		}
		if d.Ask != (d.Code == result.NeedsExplicitRequest) || (d.Ask && d.Allowed) {
			t.Fatalf("%q: Ask=%v Allowed=%v with code %s", line, d.Ask, d.Allowed, d.Code)
		}
		if (err == nil) != d.Allowed {
			t.Fatalf("%q: error %v with Allowed=%v", line, err, d.Allowed)
		}
		if !d.Allowed {
			if d.Reason == "" {
				t.Fatalf("%q: refusal without reason", line)
			}
			return
		}
		if len(d.Argv) == 0 || strings.ContainsAny(d.Argv[0], `/\=`) {
			t.Fatalf("%q: allowed argv %q", line, d.Argv)
		}
		name := Name(d.Argv[0])
		if name != d.Name || !contains(p.Allow, name) || contains(p.Deny, name) {
			t.Fatalf("%q: allowed %q (name %q) outside the allowlist or on the denylist", line, d.Argv[0], name)
		}
		if _, bad := never[name]; bad && !p.Sandboxed {
			t.Fatalf("%q: allowed a never-allowed program", line)
		}
		if strings.ContainsAny(line, "\n\x00") {
			t.Fatalf("%q: allowed a line with a newline or NUL", line)
		}
	})
}

// FuzzParseAgreesWithItself checks that what Parse accepts is stable: the
// words, re-quoted in single quotes, parse back to the same words.
func FuzzParseAgreesWithItself(f *testing.F) {
	f.Add(`echo "a;b" 'c d' e\ f`)
	f.Add(`git log @{u} -- x`)
	f.Fuzz(func(t *testing.T, line string) {
		argv, err := Parse(line)
		if err != nil {
			return
		}
		var b strings.Builder
		for i, w := range argv {
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString("'" + strings.ReplaceAll(w, "'", `'"'"'`) + "'")
		}
		again, err := Parse(b.String())
		if err != nil || !slices.Equal(again, argv) {
			t.Fatalf("%q → %q → %q (%v)", line, argv, again, err)
		}
	})
}

// BenchmarkCheck measures Parse+Evaluate under the shipped policy for a
// mix of allowed and refused lines.
func BenchmarkCheck(b *testing.B) {
	p := shipped(b)
	lines := []string{
		"git status",
		`git log --oneline -n 10 -- "src/a b.go"`,
		"git push --force-with-lease origin main",
		"find . -name '*.go' -type f -print",
		"tar -czf out.tar.gz src",
		"git -c alias.x=!sh x",
		"ls -la | wc -l",
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		_, _ = p.Check(lines[i%len(lines)])
	}
}

// BenchmarkParse measures the double split alone.
func BenchmarkParse(b *testing.B) {
	line := `git log --format='%H %s' --author "A B" -n 20 -- src/main.go`
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		_, _ = Parse(line)
	}
}
