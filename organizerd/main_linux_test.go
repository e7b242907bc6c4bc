//go:build linux

package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/bastion-mcp/bastion/safety/mcpkit/mcpkittest"
)

// bin is the organizerd binary built once by TestMain.
var bin string

func TestMain(m *testing.M) { mcpkittest.RunWithBinary(m, "organizerd", &bin) }

var cleanEnv = mcpkittest.CleanEnv

func runBin(t *testing.T, env []string, args ...string) (int, string, string) {
	t.Helper()
	r := mcpkittest.Run(t, bin, env, args...)
	return r.Code, r.Stdout, r.Stderr
}

func TestBinaryRefusesToStartWithoutWorkspace(t *testing.T) {
	code, _, stderr := runBin(t, cleanEnv(t))
	if code == 0 || !strings.HasPrefix(stderr, "fatal: no workspace") || strings.Count(stderr, "\n") != 1 {
		t.Fatalf("code %d stderr %q", code, stderr)
	}
}

func TestBinaryRefusesJournalInsideWorkspace(t *testing.T) {
	ws := t.TempDir()
	env := append(cleanEnv(t), "BASTION_WORKSPACE_ROOT="+ws, "BASTION_JOURNAL="+filepath.Join(ws, "j"))
	code, _, stderr := runBin(t, env)
	if code == 0 || !strings.HasPrefix(stderr, "fatal:") || !strings.Contains(stderr, "journal") {
		t.Fatalf("code %d stderr %q", code, stderr)
	}
}

// TestBinaryRefusesBrokenRadarRuleFile: a [radar] rule file that does not
// parse refuses the start, in the shape every server gives it.
func TestBinaryRefusesBrokenRadarRuleFile(t *testing.T) {
	radar, ruleFile := mcpkittest.BrokenRadarRules(t)
	pol := filepath.Join(t.TempDir(), "policy.toml")
	if err := os.WriteFile(pol, []byte(radar), 0o644); err != nil {
		t.Fatal(err)
	}
	env := append(cleanEnv(t), "BASTION_WORKSPACE_ROOT="+t.TempDir())
	mcpkittest.WantRadarRefusal(t, mcpkittest.Run(t, bin, env, "--config", pol), ruleFile)
}

func TestBinaryVersionAndHelp(t *testing.T) {
	if code, out, _ := runBin(t, cleanEnv(t), "--version"); code != 0 || !strings.HasPrefix(out, "organizerd ") {
		t.Fatalf("%d %q", code, out)
	}
	if code, _, errOut := runBin(t, cleanEnv(t), "--help"); code != 0 || !strings.Contains(errOut, "--config") {
		t.Fatalf("%d %q", code, errOut)
	}
}

// proc is one running organizerd driven over stdio.
type proc struct {
	cmd *exec.Cmd
	c   *client.Client
}

func start(t *testing.T, env []string) *proc {
	t.Helper()
	c, cmd := mcpkittest.StartStdio(t, bin, env)
	return &proc{cmd: cmd, c: c}
}

func (p *proc) kill() {
	p.cmd.Process.Kill()
	p.cmd.Wait()
	p.c.Close()
}

type res struct {
	Code   string          `json:"code"`
	Reason string          `json:"reason"`
	Detail json.RawMessage `json:"detail"`
}

func (p *proc) call(name string, args map[string]any) (res, error) {
	var req mcp.CallToolRequest
	req.Params.Name, req.Params.Arguments = name, args
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := p.c.CallTool(ctx, req)
	if err != nil {
		return res{}, err
	}
	var r res
	b, _ := json.Marshal(out.StructuredContent)
	json.Unmarshal(b, &r)
	return r, nil
}

func mountTmpfs(t *testing.T, dir string) {
	t.Helper()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=256m"); err != nil {
		t.Fatalf("mount tmpfs (the crash test runs as root): %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(dir, syscall.MNT_DETACH) })
}

// tree maps every path under dir to its content hash ("dir" for folders).
func tree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if d.IsDir() {
			out[rel] = "dir"
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		h := sha256.Sum256(b)
		out[rel] = hex.EncodeToString(h[:])
		return nil
	})
	return out
}

func setupCrashWorkspace(t *testing.T, n int) (env []string, ws string) {
	base, _ := filepath.EvalSymlinks(t.TempDir())
	mountTmpfs(t, base)
	ws = filepath.Join(base, "ws")
	state := filepath.Join(base, "state")
	os.MkdirAll(ws, 0o755)
	os.MkdirAll(state, 0o700)
	exts := []string{".pdf", ".jpg", ".mp3", ".zip", ".csv", ".go", ".epub", ".ttf", ".pptx", ".mkv"}
	old := time.Now().Add(-2 * time.Hour)
	for i := range n {
		p := filepath.Join(ws, fmt.Sprintf("file-%05d%s", i, exts[i%len(exts)]))
		os.WriteFile(p, []byte(fmt.Sprintf("content %d", i)), 0o644)
		os.Chtimes(p, old, old)
	}
	pol := filepath.Join(base, "policy.toml")
	os.WriteFile(pol, []byte("audit_log = \"state/audit.jsonl\"\n[organizer]\nworkspace_root = \"ws\"\njournal = \"state/organizer.journal\"\n"), 0o644)
	return append(cleanEnv(t), "BASTION_POLICY_FILE="+pol), ws
}

// TestCrashKilledDuringApplyLosesNothingAndUndoRestoresTree kills the real
// binary with SIGKILL at random moments during a 2,000-file apply until 20
// kills have interrupted one (at most 60 rounds).
// After each restart the audit log verifies, every file exists exactly once, and undo restores the
// original tree exactly (names and content hashes).
func TestCrashKilledDuringApplyLosesNothingAndUndoRestoresTree(t *testing.T) {
	const files, rounds = 2000, 20
	env, ws := setupCrashWorkspace(t, files)
	auditLog := filepath.Join(filepath.Dir(ws), "state", "audit.organizerd.jsonl")
	orig := tree(t, ws)
	hashes := map[string]bool{}
	for _, h := range orig {
		hashes[h] = true
	}
	// Calibrate: how long does one uninterrupted apply take?
	p := start(t, env)
	plan, _ := p.call("plan_organize", nil)
	var pl struct {
		PlanID    string `json:"plan_id"`
		MoveCount int    `json:"move_count"`
	}
	json.Unmarshal(plan.Detail, &pl)
	if pl.MoveCount != files {
		t.Fatalf("planned %d moves: %s", pl.MoveCount, plan.Detail)
	}
	t0 := time.Now()
	if r, err := p.call("apply_plan", map[string]any{"plan_id": pl.PlanID}); err != nil || r.Code != "OK" {
		t.Fatalf("apply: %v %+v", err, r)
	}
	applyTime := time.Since(t0)
	if r, _ := p.call("undo_last_action", nil); r.Code != "OK" {
		t.Fatalf("undo: %+v", r)
	}
	t.Logf("one %d-file apply takes %v", files, applyTime)
	interrupted := 0
	round := 0
	for ; interrupted < rounds && round < 3*rounds; round++ {
		r, err := p.call("plan_organize", nil)
		if err != nil {
			t.Fatal(err)
		}
		json.Unmarshal(r.Detail, &pl)
		done := make(chan struct{})
		go func() {
			p.call("apply_plan", map[string]any{"plan_id": pl.PlanID})
			close(done)
		}()
		time.Sleep(time.Duration(rand.Int64N(int64(applyTime) + 1)))
		select {
		case <-done:
		default:
			interrupted++
		}
		p.kill()
		<-done
		p = start(t, env)
		wantAuditVerifies(t, env, auditLog)
		// Every file exactly once.
		seen := map[string]int{}
		for _, h := range tree(t, ws) {
			if h != "dir" {
				seen[h]++
			}
		}
		for h := range hashes {
			if seen[h] != 1 {
				t.Fatalf("round %d: a file is present %d times after the crash", round, seen[h])
			}
		}
		if len(seen) != len(hashes) {
			t.Fatalf("round %d: %d distinct files, want %d", round, len(seen), len(hashes))
		}
		u, err := p.call("undo_last_action", nil)
		if err != nil || (u.Code != "OK" && u.Code != "NOT_FOUND") {
			t.Fatalf("round %d: undo: %v %+v", round, err, u)
		}
		got := tree(t, ws)
		if len(got) != len(orig) {
			t.Fatalf("round %d: %d entries after undo, want %d", round, len(got), len(orig))
		}
		for k, v := range orig {
			if got[k] != v {
				t.Fatalf("round %d: %s not restored", round, k)
			}
		}
	}
	p.kill()
	tails, _ := filepath.Glob(filepath.Join(filepath.Dir(auditLog), "organizer.journal.tail-*"))
	t.Logf("%d of %d kills landed while the apply was running; %d distinct damaged journal tails were set aside", interrupted, round, len(tails))
	if interrupted < rounds {
		t.Fatalf("only %d of %d kills interrupted an apply; the test is not testing crashes", interrupted, round)
	}
}

// wantAuditVerifies runs `organizerd audit verify` on the audit log and
// requires it to pass.
func wantAuditVerifies(t *testing.T, env []string, log string) {
	t.Helper()
	if code, out, errOut := runBin(t, env, "audit", "verify", log); code != 0 {
		t.Fatalf("audit verify %s: exit %d\n%s%s", log, code, out, errOut)
	}
}

// TestBinaryDamagedJournal: garbage lines written after the journal's last
// record (what a crash can leave) are set aside to a sidecar and recorded
// in the audit log, and organizerd starts with the valid records (the move
// before the damage is undone); garbage with a valid record after it is
// damage in the middle, and organizerd refuses to start, naming the line.
func TestBinaryDamagedJournal(t *testing.T) {
	for _, c := range []struct {
		name   string
		damage func(journal []byte) []byte
		starts bool
	}{
		{"garbage after the last record", func(j []byte) []byte { return append(j, "\x00\x00garbage\n{\"t\":\"beg\nmore garbage"...) }, true},
		{"garbage in the middle", func(j []byte) []byte { return append(append(j, "garbage\n"...), j...) }, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			env, ws := setupCrashWorkspace(t, 1)
			state := filepath.Join(filepath.Dir(ws), "state")
			jpath := filepath.Join(state, "organizer.journal")
			p := start(t, env)
			if r, err := p.call("move_file", map[string]any{"src": "file-00000.pdf", "dest": "Documents/file-00000.pdf"}); err != nil || r.Code != "OK" {
				t.Fatalf("move_file: %v %+v", err, r)
			}
			p.kill()
			j, err := os.ReadFile(jpath)
			if err != nil {
				t.Fatal(err)
			}
			damaged := c.damage(j)
			os.WriteFile(jpath, damaged, 0o600)
			if !c.starts {
				line := fmt.Sprintf("line %d is not a record", bytes.Count(j, []byte("\n"))+1)
				mcpkittest.WantFatal(t, mcpkittest.Run(t, bin, env), "journal", line)
				return
			}
			p = start(t, env)
			defer p.kill()
			side := jpath + ".tail-" + sha256Hex(damaged[len(j):])
			if b, err := os.ReadFile(side); err != nil || !bytes.Equal(b, damaged[len(j):]) {
				t.Fatalf("sidecar %s: %v", side, err)
			}
			if r, err := p.call("undo_last_action", nil); err != nil || r.Code != "OK" {
				t.Fatalf("undo of the move kept from before the damage: %v %+v", err, r)
			}
			wantAuditVerifies(t, env, filepath.Join(state, "audit.organizerd.jsonl"))
			if a, _ := os.ReadFile(filepath.Join(state, "audit.organizerd.jsonl")); !strings.Contains(string(a), sha256Hex(damaged[len(j):])) ||
				!strings.Contains(string(a), `"journal_tail_set_aside"`) {
				t.Fatal("the audit log does not record the tail set aside with its hash")
			}
		})
	}
}

func sha256Hex(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}
