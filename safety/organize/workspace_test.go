package organize

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/bastion-mcp/bastion/safety/config"
	"github.com/bastion-mcp/bastion/safety/jail"
	"github.com/bastion-mcp/bastion/safety/result"
)

// newWorkspace makes a workspace holding files (names ending in "/" are
// folders), all modified an hour ago, and the rules over it.
func newWorkspace(t *testing.T, files ...string) (Workspace, string) {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	for _, f := range files {
		p := filepath.Join(dir, filepath.FromSlash(f))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if f[len(f)-1] == '/' {
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.WriteFile(p, []byte(f), 0o644); err != nil {
			t.Fatal(err)
		}
		os.Chtimes(p, old, old)
	}
	root, err := jail.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	rules, err := New(config.Organizer{})
	if err != nil {
		t.Fatal(err)
	}
	return Workspace{Root: root, Rules: rules}, dir
}

func TestCheckMoveAppliesTheProtectionLayer(t *testing.T) {
	w, dir := newWorkspace(t, "a.pdf", "setup.exe", "taken.pdf", "Docs/b.pdf", "File", "folder/", ".npmrc")
	if err := os.Symlink(filepath.Join(dir, "a.pdf"), filepath.Join(dir, "link.pdf")); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, src, dest string
		code            result.Code // OK: the move is allowed
		rule            string
	}{
		{"plain move", "a.pdf", "Documents/a.pdf", result.OK, ""},
		{"restraint does not bind move_file", "setup.exe", "Installers/setup.exe", result.OK, ""},
		{"absolute inside", filepath.Join(dir, "a.pdf"), "x.pdf", result.OK, ""},
		{"folder", "folder", "moved", result.OK, ""},
		{"source escapes", "../a.pdf", "a2.pdf", result.PathEscape, "path-escape"},
		{"destination escapes", "a.pdf", "../a.pdf", result.PathEscape, "path-escape"},
		{"the workspace itself", ".", "x", result.InvalidRequest, "invalid-path"},
		{"onto the workspace", "a.pdf", ".", result.InvalidRequest, "invalid-path"},
		{"missing source", "nope.pdf", "x.pdf", result.NotFound, "source"},
		{"symlink source", "link.pdf", "x.pdf", result.PolicyDenied, "symlink"},
		{"occupied destination", "a.pdf", "taken.pdf", result.PolicyDenied, "occupied-destination"},
		{"destination folder is a file", "a.pdf", "File/a.pdf", result.PolicyDenied, "occupied-destination"},
		{"control character in destination", "a.pdf", "x\x1b.pdf", result.PolicyDenied, "bad-name"},
		{"onto a git hook", "a.pdf", ".git/hooks/pre-commit", result.PolicyDenied, "protected-path"},
		{"creates .envrc", "a.pdf", "sub/.envrc", result.PolicyDenied, "protected-path"},
		{"creates editor tasks", "a.pdf", ".vscode/tasks.json", result.PolicyDenied, "protected-path"},
		{"creates agent settings", "folder", ".claude", result.PolicyDenied, "protected-path"},
		{"moving a protected file away runs nothing", ".npmrc", "npmrc.txt", result.OK, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			m, sk := w.CheckMove(c.src, c.dest)
			if c.code == result.OK {
				if sk != nil || m.Src == "" || m.Dst == "" {
					t.Fatalf("move %+v refused: %+v", m, sk)
				}
				return
			}
			if sk == nil {
				t.Fatalf("move %+v allowed, want %s", m, c.code)
			}
			if sk.Code != c.code || sk.Rule != c.rule || sk.Layer != Protection {
				t.Fatalf("skip %+v, want code %s rule %q in the protection layer", sk, c.code, c.rule)
			}
		})
	}
}

func TestEvaluateIsThePlannersView(t *testing.T) {
	w, _ := newWorkspace(t, "a.pdf", "setup.exe", ".bashrc", "Documents/taken.pdf", "taken.pdf", "sub/c.pdf", "noext")
	for _, c := range []struct {
		name, rel, entry string
		listed           bool   // through Listed (list_files)
		rule             string // "": may move
		dest             string
	}{
		{"file with a category", ".", "a.pdf", false, "", "Documents/a.pdf"},
		{"installer waits to be named", ".", "setup.exe", false, "installer", ""},
		{"dotfile waits to be named", ".", ".bashrc", false, "dotfile", ""},
		{"occupied category slot", ".", "taken.pdf", false, "occupied-destination", "Documents/taken.pdf"},
		{"no category", ".", "noext", false, "uncategorized", ""},
		{"below the top, planner view", "sub", "c.pdf", false, "", "sub/Documents/c.pdf"},
		{"below the top, as listed", "sub", "c.pdf", true, "not-top-level", "sub/Documents/c.pdf"},
	} {
		t.Run(c.name, func(t *testing.T) {
			d, err := w.Root.OpenDir(c.rel)
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			info, err := d.Lstat(c.entry)
			if err != nil {
				t.Fatal(err)
			}
			e := jail.Entry{Name: c.entry, Type: info.Mode.Type()}
			ev := w.Evaluate(d, c.rel, e)
			if c.listed {
				ev = w.Listed(d, c.rel, e)
			}
			rule := ""
			if ev.Skip != nil {
				rule = ev.Skip.Rule
			}
			if rule != c.rule || ev.Dest != c.dest {
				t.Fatalf("rule %q dest %q (%+v), want rule %q dest %q", rule, ev.Dest, ev.Skip, c.rule, c.dest)
			}
			if c.rule == "" && (ev.State.Size != info.Size || ev.Size != info.Size) {
				t.Fatalf("state %+v size %d, want the lstat size %d", ev.State, ev.Size, info.Size)
			}
		})
	}
}
