package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/bastion-mcp/bastion/safety/mcpkit/mcpkittest"
)

// killRounds is how many times TestBinaryKilledDuringRunLeavesNothing
// kills a server.
const killRounds = 20

// killCase is one kind of round: a profile and a command whose processes
// all carry the round's token (%[1]s) in their command line.
type killCase struct {
	name, profile, command string
	procs                  int    // how many processes the command starts
	next                   string // a command the next server runs (%[1]s: the token)
}

var killCases = []killCase{
	// A setsid descendant and a double-forked one beside the direct child.
	{"sandbox", "profile = \"sandbox\"\n[terminal.allowlist]\ncommands = [\"sh\"]\n",
		`sh -c "setsid sh -c 'sleep 300; : %[1]s' & (sh -c 'sleep 300; : %[1]s' &); sleep 300; : %[1]s"`, 3, "sh -c ': %[1]s'"},
	// The allowlist profile runs no shell: one long-lived allowed program.
	{"allowlist", "[terminal.allowlist]\ncommands = [\"tail\"]\n", `tail -f %[1]s.txt`, 1, "tail -n 1 %[1]s.txt"},
}

// TestBinaryKilledDuringRunLeavesNothing kills the server with SIGKILL at a
// random moment (before, while or after the command's processes start), 20
// rounds alternating the sandbox and allowlist profiles: no process of the
// command survives the server, and the private run directory the dead
// server left is removed when the next server starts, which then runs a
// command. One round in four is killed the moment the command's first
// process appears, so some kills always fall while the command is being
// started, however fast or slow the machine is.
func TestBinaryKilledDuringRunLeavesNothing(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 0))
	t.Logf("seed %d", seed)
	begin := time.Now()
	var started, left, survived int
	for i := range killRounds {
		kc := killCases[i%len(killCases)]
		tok := fmt.Sprintf("bastion-killed-%d-%d", i, time.Now().UnixNano())
		wait := atFirstProcess(tok)
		if i%4 != 3 {
			// Otherwise one round in three is killed within 30 ms of the
			// call, while the command is being started; the others within
			// 250 ms.
			window := 250 * time.Millisecond
			if rng.IntN(3) == 0 {
				window = 30 * time.Millisecond
			}
			after := time.Duration(rng.Int64N(int64(window)))
			wait = func() { time.Sleep(after) }
		}
		s, l, v := killRun(t, kc, tok, wait)
		started, left, survived = started+s, left+l, survived+v
	}
	t.Logf("%d rounds in %v: %d killed with all the command's processes running, %d processes survived, %d run directories left after a restart",
		killRounds, time.Since(begin).Round(time.Millisecond), started, survived, left)
	if started == 0 {
		t.Fatalf("no kill of %d fell while the command's processes all ran: nothing was proven about them", killRounds)
	}
}

// atFirstProcess waits (up to 5 s) until a process carrying tok runs.
func atFirstProcess(tok string) func() {
	return func() {
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); {
			if len(mcpkittest.Carrying(tok)) > 0 {
				return
			}
			time.Sleep(time.Millisecond)
		}
	}
}

// killRun is one round: start a server, call run_command, kill the server
// when wait returns; then wait for the command's processes to be gone,
// start the next server and require the dead one's run directory gone. It
// returns whether the command's processes were all running at the kill
// (1 or 0), and the run directories left and processes that survived
// (each fails the test too).
func killRun(t *testing.T, kc killCase, tok string, wait func()) (started, left, survived int) {
	t.Helper()
	jail, state := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(jail, tok+".txt"), []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	pol := policy(t, jail, kc.profile+"[terminal.state]\ndir = "+fmt.Sprintf("%q", state)+"\n")
	c, cmd := mcpkittest.StartStdio(t, bin, cleanEnv(t), "--config", pol, "--log-level", "warn")
	go func() {
		var req mcp.CallToolRequest
		req.Params.Name = "run_command"
		req.Params.Arguments = map[string]any{"command": fmt.Sprintf(kc.command, tok)}
		_, _ = c.CallTool(context.Background(), req) // never answers: the server is killed
	}()
	wait()
	if len(mcpkittest.Carrying(tok)) >= kc.procs {
		started = 1
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_, _ = cmd.Process.Wait()
	survived = len(waitGone(t, tok))
	runs := filepath.Join(state, "runs")
	dead, _ := os.ReadDir(runs)
	if len(dead) != 1 {
		t.Fatalf("%s: the killed server should have left its run directory behind, found %v", kc.name, dead)
	}
	c2 := startStdio(t, pol)
	if r := call(t, c2, "run_command", map[string]any{"command": fmt.Sprintf(kc.next, tok)}); r.Code != "OK" {
		t.Fatalf("%s: the next server: %+v", kc.name, r)
	}
	for _, d := range dead {
		if _, err := os.Stat(filepath.Join(runs, d.Name())); !os.IsNotExist(err) {
			t.Errorf("%s: the dead server's run directory %s is still there after the next start", kc.name, d.Name())
			left++
		}
	}
	return started, left, survived
}

// waitGone waits up to 3 s for every process carrying tok to be gone, and
// then 100 ms more for one started late; it kills and returns (failing the
// test) any that is still there.
func waitGone(t *testing.T, tok string) []int {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for {
		if len(mcpkittest.Carrying(tok)) == 0 {
			time.Sleep(100 * time.Millisecond)
			if len(mcpkittest.Carrying(tok)) == 0 {
				return nil
			}
		}
		if time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	surv := mcpkittest.Carrying(tok)
	for _, p := range surv {
		_ = syscall.Kill(p, syscall.SIGKILL)
	}
	t.Errorf("processes %v of the command outlived the server's SIGKILL", surv)
	return surv
}
