//go:build !windows

package jail

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/bastion-mcp/bastion/safety/result"
)

func TestCleanRefusesDotDotTraversal(t *testing.T) {
	t.Parallel()
	for _, p := range []string{
		"..", "../", "../x", "a/../../x", "a/b/../../../x", "./../x", "./..",
		"a/./../..", "a/../b/../../x", "../root/x", "x/../../root",
		"a//..//..//x", "..\x2fx",
	} {
		t.Run("refused "+p, func(t *testing.T) {
			if _, err := Clean("/r", p); !errors.Is(err, ErrEscape) {
				t.Errorf("Clean(%q) = %v, want ErrEscape", p, err)
			}
		})
	}
	// Lexical ".." that stays inside is fine and comes back canonical.
	for p, want := range map[string]string{"a/../b": "b", "a/b/..": "a", "./a//b/": "a/b", ".": ".", "a/..": "."} {
		t.Run("inside "+p, func(t *testing.T) {
			if got, err := Clean("/r", p); err != nil || got != want {
				t.Errorf("Clean(%q) = %q, %v, want %q", p, got, err, want)
			}
		})
	}
}

func TestCleanRefusesAbsolutePathOutside(t *testing.T) {
	t.Parallel()
	for _, p := range []string{
		"/", "/etc/passwd", "/r2/x", "/r2", "/rr", "/r-x/y", "/r/../r2/x",
		"/r/../etc", "/r/a/../../x", "//r2/x", "/r/..",
	} {
		t.Run(p, func(t *testing.T) {
			if got, err := Clean("/r", p); !errors.Is(err, ErrEscape) {
				t.Errorf("Clean(/r, %q) = %q, %v, want ErrEscape", p, got, err)
			}
		})
	}
	// A root given with a trailing slash, and no root at all.
	if got, err := Clean("/r/", "/r2/x"); !errors.Is(err, ErrEscape) {
		t.Errorf("Clean(/r/, /r2/x) = %q, %v, want ErrEscape", got, err)
	}
	if got, err := Clean("", "/etc/passwd"); !errors.Is(err, ErrEscape) {
		t.Errorf("Clean(\"\", /etc/passwd) = %q, %v: an empty root must not accept absolute paths", got, err)
	}
}

func TestCleanAcceptsAbsolutePathInside(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ root, p, want string }{
		{"/r", "/r", "."},
		{"/r", "/r/", "."},
		{"/r", "/r/x", "x"},
		{"/r", "/r/a/b/", "a/b"},
		{"/r", "/r//a/./b", "a/b"},
		{"/r", "/r/a/../b", "b"},
		{"/r/", "/r/x", "x"},
		{"/", "/etc", "etc"},
		{"/", "/", "."},
	} {
		t.Run(c.p+" in "+c.root, func(t *testing.T) {
			if got, err := Clean(c.root, c.p); err != nil || got != c.want {
				t.Errorf("Clean(%q, %q) = %q, %v, want %q", c.root, c.p, got, err, c.want)
			}
		})
	}
}

func TestCleanRefusesNULAndControlCharacters(t *testing.T) {
	t.Parallel()
	for _, p := range []string{
		"a\x00b", "\x00", "../\x00", "a\nb", "a\rb", "a\tb", "\x1b[31m", "a\x7f",
		"a\u0085b", "a\u009bb", "/r/x\x00/../../etc",
	} {
		t.Run(fmt.Sprintf("Clean %q", p), func(t *testing.T) {
			_, err := Clean("/r", p)
			if !errors.Is(err, ErrBadName) {
				t.Errorf("Clean(%q) = %v, want ErrBadName", p, err)
			}
			if result.CodeOf(err) != result.InvalidRequest {
				t.Errorf("Clean(%q) code %s", p, result.CodeOf(err))
			}
		})
	}
	for _, n := range []string{"a\x00b", "a\nb", "\x7f", "\u009b"} {
		t.Run(fmt.Sprintf("CheckName %q", n), func(t *testing.T) {
			if err := CheckName(n); !errors.Is(err, ErrBadName) {
				t.Errorf("CheckName(%q) = %v, want ErrBadName", n, err)
			}
		})
	}
	// Printable non-ASCII is a name like any other.
	if got, err := Clean("/r", "café/日本"); err != nil || got != "café/日本" {
		t.Errorf("Clean(unicode) = %q, %v", got, err)
	}
}

func TestCleanRefusesInvalidUTF8(t *testing.T) {
	t.Parallel()
	for _, p := range []string{"\xff", "a/\xc3", "\xed\xa0\x80", "\xc0\xaf", "a\xe2\x82"} {
		t.Run(fmt.Sprintf("%q", p), func(t *testing.T) {
			if _, err := Clean("/r", p); !errors.Is(err, ErrBadName) {
				t.Errorf("Clean(%q) = %v, want ErrBadName", p, err)
			}
			if err := CheckName(p); err == nil {
				t.Errorf("CheckName(%q) accepted invalid UTF-8", p)
			}
		})
	}
}

func TestCleanRefusesHugePath(t *testing.T) {
	t.Parallel()
	huge := strings.Repeat("a/", MaxPathLen/2+1)
	if _, err := Clean("/r", huge); !errors.Is(err, ErrTooLong) {
		t.Errorf("Clean(%d bytes) = %v, want ErrTooLong", len(huge), err)
	}
	if _, err := Clean("/r", "/r/"+strings.Repeat("x", MaxPathLen)); !errors.Is(err, ErrTooLong) {
		t.Errorf("absolute huge path: %v, want ErrTooLong", err)
	}
	if got, err := Clean("/r", strings.Repeat("x", MaxPathLen)); err != nil || len(got) != MaxPathLen {
		t.Errorf("a path of exactly MaxPathLen bytes: %v", err)
	}
	if err := CheckName(strings.Repeat("n", 256)); !errors.Is(err, ErrTooLong) {
		t.Errorf("CheckName(256 bytes) = %v, want ErrTooLong", err)
	}
	if _, err := Clean("/r", ""); !errors.Is(err, ErrEmpty) {
		t.Errorf("Clean(\"\") = %v, want ErrEmpty", err)
	}
}

func TestCheckNameRefusesSeparatorsAndDots(t *testing.T) {
	t.Parallel()
	for _, n := range []string{".", "..", "a/b", "/", "../x"} {
		t.Run("refused "+n, func(t *testing.T) {
			if err := CheckName(n); !errors.Is(err, ErrEscape) {
				t.Errorf("CheckName(%q) = %v, want ErrEscape", n, err)
			}
		})
	}
	if err := CheckName(""); !errors.Is(err, ErrEmpty) {
		t.Errorf("CheckName(\"\") = %v", err)
	}
	for _, n := range []string{"...", ".hidden", "a..b", "x"} {
		t.Run("accepted "+n, func(t *testing.T) {
			if err := CheckName(n); err != nil {
				t.Errorf("CheckName(%q) = %v", n, err)
			}
		})
	}
}

func TestSplitAndJoin(t *testing.T) {
	t.Parallel()
	for rel, want := range map[string][2]string{"a": {".", "a"}, "a/b": {"a", "b"}, "a/b/c": {"a/b", "c"}} {
		t.Run(rel, func(t *testing.T) {
			p, b := Split(rel)
			if p != want[0] || b != want[1] {
				t.Errorf("Split(%q) = %q, %q", rel, p, b)
			}
			if Join(p, b) != rel {
				t.Errorf("Join(Split(%q)) = %q", rel, Join(p, b))
			}
		})
	}
}

func FuzzClean(f *testing.F) {
	for _, s := range []string{"..", "a/../../x", "/r/x", "/r2/x", "a\x00", "./a", "\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		rel, err := Clean("/r", p)
		if err != nil {
			return
		}
		if rel == ".." || strings.HasPrefix(rel, "../") || strings.HasPrefix(rel, "/") {
			t.Fatalf("Clean(%q) = %q escapes", p, rel)
		}
		if rel != "." {
			for _, part := range strings.Split(rel, "/") {
				if err := CheckName(part); err != nil && !errors.Is(err, ErrTooLong) {
					t.Fatalf("Clean(%q) = %q has a bad component %q: %v", p, rel, part, err)
				}
			}
		}
	})
}

// TestCleanRefusesBidiOverrides: a request path carrying a right-to-left
// override could be shown to a human as a different path than the one acted
// on ("evil\u202Egnp.exe" reads as "evilexe.png").
func TestCleanRefusesBidiOverrides(t *testing.T) {
	for _, p := range []string{"evil\u202Egnp.exe", "a/\u2066b\u2069", "x\u200Fy", "/r/\u202Ax"} {
		t.Run(fmt.Sprintf("%+q", p), func(t *testing.T) {
			if _, err := Clean("/r", p); !errors.Is(err, ErrBadName) {
				t.Errorf("Clean(%q) = %v, want ErrBadName", p, err)
			}
		})
	}
	if rel, err := Clean("/r", "café/naïve"); err != nil || rel != "café/naïve" {
		t.Errorf("ordinary non-ASCII refused: %q %v", rel, err)
	}
}
