package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/bastion-mcp/bastion/safety/jail"
	"github.com/bastion-mcp/bastion/safety/mcpkit/mcpkittest"
)

// The tree of one kill round: killProjects projects, each a package.json
// beside a node_modules of killDirs directories of killFiles files.
const (
	killRounds   = 20
	killProjects = 24
	killDirs     = 4
	killFiles    = 12
)

// TestBinaryKilledDuringReclaimLeavesFindsWholeOrGone kills sweepd with
// SIGKILL at a random moment of a confirmed reclaim of many finds, 20
// rounds: afterwards every find is whole (every file, same bytes) or gone
// from its path, never half-deleted; the next start finishes what the
// killed one set aside (a reclaim_recovered audit event) so no
// .bastion-reclaim- directory is left; a rescan lists exactly the whole
// finds; and the audit log verifies.
func TestBinaryKilledDuringReclaimLeavesFindsWholeOrGone(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 0))
	t.Logf("seed %d", seed)
	pol := filepath.Join(t.TempDir(), "policy.toml")
	if err := os.WriteFile(pol, []byte("[approval]\nreclaim = \"agent\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// One uninterrupted reclaim measures how long the kill window is.
	span := killRound(t, pol, -1, nil)
	var half, gone, recovered int
	start := time.Now()
	for range killRounds {
		after := time.Duration(rng.Int64N(int64(span + span/5)))
		h, g, r := killRoundChecked(t, pol, after)
		half, gone, recovered = half+h, gone+g, recovered+r
	}
	t.Logf("%d rounds of %d finds (%d files each) in %v; an uninterrupted reclaim takes %v: %d finds half-deleted, %d gone, %d whole, %d set-aside finds finished by the next start",
		killRounds, killProjects, killDirs*killFiles, time.Since(start).Round(time.Millisecond), span.Round(time.Millisecond),
		half, gone, killRounds*killProjects-gone-half, recovered)
	if half != 0 {
		t.Fatalf("%d finds were left half-deleted", half)
	}
	if gone == 0 || gone == killRounds*killProjects {
		t.Fatalf("no kill fell inside a reclaim (%d of %d finds gone): the rounds prove nothing", gone, killRounds*killProjects)
	}
}

// killRoundChecked runs one round killed after the given time and checks
// it; it returns the finds half-deleted and gone, and how many set-aside
// directories the next start finished.
func killRoundChecked(t *testing.T, pol string, after time.Duration) (half, gone, recovered int) {
	t.Helper()
	var r roundResult
	killRound(t, pol, after, &r)
	return r.half, r.gone, r.recovered
}

type roundResult struct{ half, gone, recovered int }

// killRound builds a tree, scans it and reclaims every find; with after < 0
// it lets the reclaim finish and returns how long it took, otherwise it
// kills the server after that time, then checks the tree, restarts and
// rescans into r.
func killRound(t *testing.T, pol string, after time.Duration, r *roundResult) time.Duration {
	t.Helper()
	root, state := t.TempDir(), t.TempDir()
	buildKillTree(t, root)
	c, cmd := mcpkittest.StartStdio(t, bin, cleanEnv(t, "XDG_STATE_HOME="+state), "--config", pol, "--root", root)
	ids := scanIDs(t, c)
	if len(ids) != killProjects {
		t.Fatalf("scan found %d finds, want %d", len(ids), killProjects)
	}
	if after < 0 {
		begin := time.Now()
		if res := call(t, c, "reclaim", map[string]any{"ids": ids, "confirm": "delete"}); res.Code != "OK" {
			t.Fatalf("reclaim: %+v", res)
		}
		return time.Since(begin)
	}
	go func() {
		var req mcp.CallToolRequest
		req.Params.Name = "reclaim"
		req.Params.Arguments = map[string]any{"ids": ids, "confirm": "delete"}
		_, _ = c.CallTool(context.Background(), req) // the server may be killed first
	}()
	time.Sleep(after)
	killNow(t, cmd)
	whole := checkFinds(t, root, r)
	left := asides(t, root)
	c2, _ := mcpkittest.StartStdio(t, bin, cleanEnv(t, "XDG_STATE_HOME="+state), "--config", pol, "--root", root)
	if now := asides(t, root); len(now) != 0 {
		t.Fatalf("after the restart %v are still set aside", now)
	}
	r.recovered += len(left)
	if got := len(scanIDs(t, c2)); got != whole {
		t.Fatalf("the rescan lists %d finds, want the %d whole ones", got, whole)
	}
	c2.Close()
	checkAudit(t, state, len(left) > 0)
	return 0
}

func killNow(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_, _ = cmd.Process.Wait()
}

// buildKillTree writes killProjects projects into root.
func buildKillTree(t *testing.T, root string) {
	t.Helper()
	for p := range killProjects {
		proj := filepath.Join(root, fmt.Sprintf("p%02d", p))
		for d := range killDirs {
			dir := filepath.Join(proj, "node_modules", fmt.Sprintf("m%d", d))
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			for f := range killFiles {
				if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%d.js", f)), []byte(killContent(d, f)), 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := os.WriteFile(filepath.Join(proj, "package.json"), []byte("{}"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func killContent(d, f int) string { return fmt.Sprintf("module.exports = %d;\n", d*1000+f) }

// checkFinds sorts every find of root into whole, gone or half-deleted
// (counted into r) and returns how many are whole. A project's
// package.json must always survive.
func checkFinds(t *testing.T, root string, r *roundResult) (whole int) {
	t.Helper()
	for p := range killProjects {
		proj := filepath.Join(root, fmt.Sprintf("p%02d", p))
		if _, err := os.Stat(filepath.Join(proj, "package.json")); err != nil {
			t.Fatalf("the project file of %s is gone: %v", proj, err)
		}
		nm := filepath.Join(proj, "node_modules")
		if _, err := os.Lstat(nm); os.IsNotExist(err) {
			r.gone++
			continue
		}
		if missing := missingFiles(nm); missing > 0 {
			t.Errorf("%s is half-deleted: %d of %d files missing", nm, missing, killDirs*killFiles)
			r.half++
			continue
		}
		whole++
	}
	return whole
}

// missingFiles counts the files of a find that are gone or changed.
func missingFiles(nm string) int {
	n := 0
	for d := range killDirs {
		for f := range killFiles {
			b, err := os.ReadFile(filepath.Join(nm, fmt.Sprintf("m%d", d), fmt.Sprintf("f%d.js", f)))
			if err != nil || string(b) != killContent(d, f) {
				n++
			}
		}
	}
	return n
}

// asides lists the set-aside directories in root's top directory.
func asides(t *testing.T, root string) []string {
	t.Helper()
	ents, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), jail.AsidePrefix) {
			out = append(out, e.Name())
		}
	}
	return out
}

// scanIDs scans the whole root and returns the finds' ids.
func scanIDs(t *testing.T, c *client.Client) []string {
	t.Helper()
	res := call(t, c, "scan", map[string]any{})
	if res.Code != "OK" {
		t.Fatalf("scan: %+v", res)
	}
	var scan struct {
		Finds []struct{ ID string } `json:"finds"`
	}
	res.DecodeDetail(t, &scan)
	ids := make([]string, len(scan.Finds))
	for i, f := range scan.Finds {
		ids[i] = f.ID
	}
	return ids
}

// checkAudit requires the round's audit log to verify and, when the
// killed server left finds set aside, to hold the event of their recovery.
func checkAudit(t *testing.T, state string, recovered bool) {
	t.Helper()
	logPath := filepath.Join(state, "bastion", "sweepd.audit.jsonl")
	if v := runBin(t, cleanEnv(t), "audit", "verify", logPath); v.Code != 0 {
		t.Fatalf("audit verify after the round: exit %d, %q %q", v.Code, v.Stdout, v.Stderr)
	}
	b, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Contains(string(b), `"reclaim_recovered"`); got != recovered {
		t.Fatalf("reclaim_recovered in the audit log: %v, want %v", got, recovered)
	}
}
