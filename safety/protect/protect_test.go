package protect

import (
	"testing"

	"github.com/bastion-mcp/bastion/safety/result"
)

func TestMatchAtAnyDepth(t *testing.T) {
	s := Default()
	for _, c := range []struct {
		rel  string
		want string // pattern, "" for not protected
	}{
		{".git", ".git"},
		{"sub/dir/.git", ".git"},
		{".git/hooks", ".git/hooks"},
		{".git/hooks/pre-commit", ".git/hooks"},
		{"a/.git/hooks/x/y", ".git/hooks"},
		{".git/config", ".git/config"},
		{".git/config/x", ""}, // a File entry protects its own name only
		{".git/objects/ab/cdef", ""},
		{".git/refs/heads/main", ""},
		{".git/index", ""},
		{".git/modules/lib/hooks/post-checkout", ".git/modules/*/hooks"},
		{".vscode", ".vscode"},
		{"web/.vscode/tasks.json", ".vscode"},
		{".envrc", ".envrc"},
		{"deep/er/.envrc", ".envrc"},
		{"envrc", ""},
		{".envrc.example", ""},
		{".cargo/config.toml", ".cargo/config.toml"},
		{".cargo/registry/x", ""},
		{"src/main.go", ""},
		{"", ""},
	} {
		e, ok := s.Match(c.rel)
		if (c.want == "") == ok || (ok && e.Pattern != c.want) {
			t.Errorf("Match(%q) = %q, %v; want %q", c.rel, e.Pattern, ok, c.want)
		}
	}
}

func TestEveryDefaultSaysWhatRunsIt(t *testing.T) {
	seen := map[string]bool{}
	for _, e := range Defaults {
		if e.Trigger == "" || seen[e.Pattern] {
			t.Errorf("entry %q: empty trigger or listed twice", e.Pattern)
		}
		seen[e.Pattern] = true
		if _, err := clean(e.Pattern); err != nil {
			t.Errorf("entry %q is not a clean pattern: %v", e.Pattern, err)
		}
	}
}

func TestProtectAndUnprotect(t *testing.T) {
	s, err := New([]string{"tools/hooks"}, []Unprotect{{Pattern: ".vscode", Reason: "the agent edits settings.json"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := s.Match("tools/hooks/pre-push"); !ok {
		t.Error("an added path is not protected")
	}
	if _, ok := s.Match(".vscode/settings.json"); ok {
		t.Error("an unprotected path is still protected")
	}
	if len(s.Unprotected) != 1 || s.Unprotected[0].Reason == "" {
		t.Errorf("the opt-out and its reason are not kept: %+v", s.Unprotected)
	}
	for name, bad := range map[string]func() error{
		"unprotect without a reason": func() error { _, err := New(nil, []Unprotect{{Pattern: ".envrc"}}); return err },
		"unprotect of an unknown path": func() error {
			_, err := New(nil, []Unprotect{{Pattern: ".nothing", Reason: "x"}})
			return err
		},
		"absolute path":  func() error { _, err := New([]string{"/etc/x"}, nil); return err },
		"dot-dot path":   func() error { _, err := New([]string{"a/../../b"}, nil); return err },
		"NUL in a path":  func() error { _, err := New([]string{"a\x00b"}, nil); return err },
		"empty path":     func() error { _, err := New([]string{""}, nil); return err },
		"backslash path": func() error { _, err := New([]string{`a\b`}, nil); return err },
	} {
		if err := bad(); result.CodeOf(err) != result.InvalidRequest {
			t.Errorf("%s: got %v, want INVALID_REQUEST", name, err)
		}
	}
}
