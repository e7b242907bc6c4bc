//go:build linux

package organizer

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/bastion-mcp/bastion/safety/config"
)

func seedDemo(e *env) {
	e.put("report.pdf", "pdf")
	e.put("photo.jpg", "jpg")
	e.put(".bashrc", "alias ll='ls -l'")
	e.put("setup.exe", "MZ")
	os.WriteFile(filepath.Join(e.outside, "secret.pdf"), []byte("outside"), 0o644)
	os.Symlink(filepath.Join(e.outside, "secret.pdf"), filepath.Join(e.ws, "link.pdf"))
}

func TestDemoPairPlannerDefersDotfileAndInstallerAndSkipsSymlink(t *testing.T) {
	e := newEnv(t, config.Organizer{})
	seedDemo(e)
	p := e.plan()
	for _, c := range []struct{ name, code, layer string }{
		{".bashrc", "NEEDS_EXPLICIT_REQUEST", "restraint"},
		{"setup.exe", "NEEDS_EXPLICIT_REQUEST", "restraint"},
		{"link.pdf", "POLICY_DENIED", "protection"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if code, layer, rule := p.skip(c.name); code != c.code || layer != c.layer {
				t.Errorf("%s: code %q layer %q rule %q, want %s %s", c.name, code, layer, rule, c.code, c.layer)
			}
		})
	}
	if p.MoveCount != 2 {
		t.Fatalf("moves %+v", p.Moves)
	}
	if r := e.call("apply_plan", map[string]any{"plan_id": p.PlanID}); r.Code != "OK" {
		t.Fatalf("apply: %+v", r)
	}
	if !e.exists("Documents/report.pdf") || !e.exists("Images/photo.jpg") || !e.exists("link.pdf") || !e.exists("setup.exe") {
		t.Fatal("apply did not move exactly the planned files")
	}
	// Named explicitly, the installer moves.
	if r := e.call("move_file", map[string]any{"src": "setup.exe", "dest": "Installers/setup.exe"}); r.Code != "OK" {
		t.Fatalf("move setup.exe: %+v", r)
	}
	// The symlink never moves, however it is named.
	for _, c := range []struct{ name, src string }{
		{"plain", "link.pdf"}, {"dot slash", "./link.pdf"}, {"trailing slash", "link.pdf/"},
		{"through a folder and back", "Documents/../link.pdf"}, {"absolute", filepath.Join(e.ws, "link.pdf")},
		{"out and back in", "../" + filepath.Base(e.ws) + "/link.pdf"},
	} {
		t.Run("symlink named "+c.name, func(t *testing.T) {
			r := e.call("move_file", map[string]any{"src": c.src, "dest": "Documents/link.pdf"})
			if r.OK || (r.Code != "POLICY_DENIED" && r.Code != "PATH_ESCAPE" && r.Code != "NOT_FOUND") {
				t.Fatalf("symlink named %q: %+v", c.src, r)
			}
		})
	}
	if fi, err := os.Lstat(filepath.Join(e.ws, "link.pdf")); err != nil || fi.Mode()&os.ModeSymlink == 0 || e.exists("Documents/link.pdf") {
		t.Fatal("the symlink moved")
	}
	if b, _ := os.ReadFile(filepath.Join(e.outside, "secret.pdf")); string(b) != "outside" {
		t.Fatal("outside file touched")
	}
}

func TestMoveFileRefusesEscapesAbsoluteAndDotDot(t *testing.T) {
	e := newEnv(t, config.Organizer{})
	e.put("a.txt", "a")
	for _, c := range []struct{ name, dest string }{
		{"dot-dot", "../a.txt"}, {"absolute outside", filepath.Join(e.outside, "a.txt")},
		{"etc", "/etc/a.txt"}, {"in and out", "x/../../a.txt"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if r := e.call("move_file", map[string]any{"src": "a.txt", "dest": c.dest}); r.Code != "PATH_ESCAPE" {
				t.Fatalf("dest %q: %+v", c.dest, r)
			}
		})
	}
	if r := e.call("move_file", map[string]any{"src": filepath.Join(e.outside, "x"), "dest": "x"}); r.Code != "PATH_ESCAPE" {
		t.Fatalf("src outside: %+v", r)
	}
	if !e.exists("a.txt") {
		t.Fatal("moved")
	}
}

func TestMoveFileRefusesExistingDestinationNeverOverwrites(t *testing.T) {
	e := newEnv(t, config.Organizer{})
	e.put("a.txt", "new")
	e.put("Documents/a.txt", "precious")
	r := e.call("move_file", map[string]any{"src": "a.txt", "dest": "Documents/a.txt"})
	if r.Code != "POLICY_DENIED" || e.read("Documents/a.txt") != "precious" || e.read("a.txt") != "new" {
		t.Fatalf("%+v", r)
	}
	// A folder at the destination is not "into": it is occupied.
	r = e.call("move_file", map[string]any{"src": "a.txt", "dest": "Documents/"})
	if r.Code != "POLICY_DENIED" || !e.exists("a.txt") {
		t.Fatalf("dest folder: %+v", r)
	}
	if ents, _ := os.ReadDir(filepath.Join(e.ws, "Documents")); len(ents) != 1 {
		t.Fatal("renamed around")
	}
}

func TestMoveFileRefusesControlCharacterNamesAndSpecialFiles(t *testing.T) {
	e := newEnv(t, config.Organizer{})
	e.put("a.txt", "a")
	if r := e.call("move_file", map[string]any{"src": "a.txt", "dest": "b\x1b[31m.txt"}); r.OK {
		t.Fatalf("%+v", r)
	}
	if err := mkfifo(filepath.Join(e.ws, "pipe")); err != nil {
		t.Fatal(err)
	}
	r := e.call("move_file", map[string]any{"src": "pipe", "dest": "pipe2"})
	if r.Code != "POLICY_DENIED" || !strings.Contains(r.Reason, "special") {
		t.Fatalf("fifo: %+v", r)
	}
	p := e.plan()
	if code, layer, _ := p.skip("pipe"); code != "POLICY_DENIED" || layer != "protection" {
		t.Fatalf("planner on fifo: %s %s", code, layer)
	}
}

func TestApplyIsStaleWhenFileSwappedForSymlinkAfterPlanning(t *testing.T) {
	e := newEnv(t, config.Organizer{})
	e.put("a.pdf", "a")
	e.put("b.pdf", "b")
	p := e.plan()
	os.Remove(filepath.Join(e.ws, "b.pdf"))
	os.Symlink("/etc/passwd", filepath.Join(e.ws, "b.pdf"))
	r := e.call("apply_plan", map[string]any{"plan_id": p.PlanID})
	if r.Code != "STALE" || !strings.Contains(string(r.Detail), "b.pdf") {
		t.Fatalf("%+v", r)
	}
	if e.exists("Documents") || !e.exists("a.pdf") {
		t.Fatal("something moved")
	}
	// One-shot: the same id is refused afterwards.
	if r := e.call("apply_plan", map[string]any{"plan_id": p.PlanID}); r.OK {
		t.Fatal("plan id reused")
	}
}

func TestApplyIsStaleWhenDestinationCreatedAfterPlanning(t *testing.T) {
	e := newEnv(t, config.Organizer{})
	e.put("a.pdf", "a")
	e.put("b.jpg", "b")
	p := e.plan()
	e.put("Images/b.jpg", "someone else's")
	r := e.call("apply_plan", map[string]any{"plan_id": p.PlanID})
	if r.Code != "STALE" || e.exists("Documents/a.pdf") || e.read("Images/b.jpg") != "someone else's" {
		t.Fatalf("%+v", r)
	}
}

func TestApplyIsStaleWhenDestinationFolderBecomesSymlink(t *testing.T) {
	e := newEnv(t, config.Organizer{})
	e.put("a.pdf", "a")
	p := e.plan()
	os.Symlink(e.outside, filepath.Join(e.ws, "Documents"))
	r := e.call("apply_plan", map[string]any{"plan_id": p.PlanID})
	if r.OK || !e.exists("a.pdf") {
		t.Fatalf("%+v", r)
	}
	if ents, _ := os.ReadDir(e.outside); len(ents) != 0 {
		t.Fatal("wrote outside the workspace")
	}
}

func TestUndoRefusesOccupiedOriginalAndChangedFileThenRedo(t *testing.T) {
	e := newEnv(t, config.Organizer{})
	e.put("a.pdf", "a")
	e.put("b.pdf", "b")
	p := e.plan()
	e.call("apply_plan", map[string]any{"plan_id": p.PlanID})
	e.put("a.pdf", "newcomer")
	r := e.call("undo_last_action", nil)
	if r.Code != "POLICY_DENIED" && r.Code != "STALE" || !strings.Contains(r.Reason+string(r.Detail), "a.pdf") {
		t.Fatalf("%+v", r)
	}
	if e.read("a.pdf") != "newcomer" || !e.exists("Documents/b.pdf") {
		t.Fatal("refused undo moved something")
	}
	os.Remove(filepath.Join(e.ws, "a.pdf"))
	os.WriteFile(filepath.Join(e.ws, "Documents/b.pdf"), []byte("edited"), 0o644)
	if r := e.call("undo_last_action", nil); r.OK || !strings.Contains(r.Reason+string(r.Detail), "changed") {
		t.Fatalf("changed file: %+v", r)
	}
	os.WriteFile(filepath.Join(e.ws, "Documents/b.pdf"), []byte("b"), 0o644)
	os.Chtimes(filepath.Join(e.ws, "Documents/b.pdf"), old, old)
	if r := e.call("undo_last_action", nil); r.Code != "OK" || !e.exists("a.pdf") || e.exists("Documents") {
		t.Fatalf("undo: %+v", r)
	}
	if r := e.call("redo_last_action", nil); r.Code != "OK" || !e.exists("Documents/a.pdf") {
		t.Fatalf("redo: %+v", r)
	}
	e.call("undo_last_action", nil)
	e.put("c.txt", "c")
	e.call("move_file", map[string]any{"src": "c.txt", "dest": "d.txt"})
	if r := e.call("redo_last_action", nil); r.Code != "NOT_FOUND" {
		t.Fatalf("redo after new work: %+v", r)
	}
}

func TestPlannerDefersRecentPartialSystemAndHighRiskFiles(t *testing.T) {
	e := newEnv(t, config.Organizer{})
	os.WriteFile(filepath.Join(e.ws, "fresh.pdf"), []byte("x"), 0o644)
	for _, n := range []string{"movie.mp4.crdownload", "Thumbs.db", "~$report.docx", "id_rsa", ".env", "tool.AppImage"} {
		e.put(n, "x")
	}
	os.Mkdir(filepath.Join(e.ws, "Thing.app"), 0o755)
	p := e.plan()
	for _, c := range []struct{ name, rule string }{
		{"fresh.pdf", "recent"}, {"movie.mp4.crdownload", "partial-download"}, {"Thumbs.db", "system-file"},
		{"~$report.docx", "system-file"}, {"Thing.app", "app-bundle"}, {"tool.AppImage", "installer"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if code, _, got := p.skip(c.name); code != "NEEDS_EXPLICIT_REQUEST" || got != c.rule {
				t.Errorf("%s: %s %s, want rule %s", c.name, code, got, c.rule)
			}
		})
	}
	if code, _, rule := p.skip("id_rsa"); code != "NEEDS_EXPLICIT_REQUEST" || (rule != "high-risk" && rule != "uncategorized") {
		t.Errorf("id_rsa: %s %s", code, rule)
	}
	if p.MoveCount != 0 {
		t.Fatalf("moves: %+v", p.Moves)
	}
}

func TestRacingAdversarySwapsFilesForSymlinksDuringApply(t *testing.T) {
	e := newEnv(t, config.Organizer{})
	canary := filepath.Join(e.outside, "canary.pdf")
	os.WriteFile(canary, []byte("canary"), 0o644)
	const n = 200
	for i := range n {
		e.put(fmt.Sprintf("f%03d.pdf", i), "x")
	}
	p := e.plan()
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; !stop.Load(); i = (i + 1) % n {
			name := filepath.Join(e.ws, fmt.Sprintf("f%03d.pdf", i))
			tmp := name + ".swap"
			if os.Symlink(canary, tmp) == nil {
				os.Rename(tmp, name) // replaces the file (or whatever is there) with a symlink
				os.Remove(tmp)
			}
		}
	}()
	e.call("apply_plan", map[string]any{"plan_id": p.PlanID})
	stop.Store(true)
	wg.Wait()
	if b, _ := os.ReadFile(canary); string(b) != "canary" {
		t.Fatal("canary changed")
	}
	ents, _ := os.ReadDir(filepath.Join(e.ws, "Documents"))
	for _, en := range ents {
		if en.Type()&os.ModeSymlink != 0 {
			t.Fatalf("a symlink was moved: %s", en.Name())
		}
	}
}

func TestPolicyRuleWithoutLayerIsFatal(t *testing.T) {
	_, err := newRules(config.Organizer{Skip: []config.SkipRule{{Name: "x", When: []string{"ext:.x"}, Reason: "r"}}})
	if err == nil || !strings.Contains(err.Error(), "layer is required") {
		t.Fatalf("err = %v", err)
	}
	_, err = newRules(config.Organizer{Skip: []config.SkipRule{{Name: "symlink", Layer: "restraint", When: []string{"dir"}, Reason: "r"}}})
	if err == nil {
		t.Fatal("a protection rule was overridden")
	}
}
