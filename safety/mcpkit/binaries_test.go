package mcpkit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// binaryCalls is how many calls of each read-only tool the binaries
// benchmark makes; MCPKIT_SOAK_CALLS lowers it for a quick run.
func binaryCalls() int {
	if n, err := strconv.Atoi(os.Getenv("MCPKIT_SOAK_CALLS")); err == nil && n > 0 {
		return n
	}
	return 100000
}

// startServerBinary starts one of the three servers, built into dir, on
// fresh state and an empty root, and initializes it; a tools/call before
// initialize must be refused with -32600 and a ping answered.
func startServerBinary(b *testing.B, dir, name string) *child {
	b.Helper()
	home, root := filepath.Join(b.TempDir(), "home"), filepath.Join(b.TempDir(), "root")
	for _, d := range []string{home, root} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			b.Fatal(err)
		}
	}
	args := map[string][]string{
		"sweepd":     {"--root", root},
		"terminald":  {"--config", filepath.Join("..", "..", "policies", "policy.toml")},
		"organizerd": nil,
	}[name]
	cmd := exec.Command(filepath.Join(dir, name), append(args, "--log-level", "error")...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "XDG_STATE_HOME=" + filepath.Join(home, "state"),
		"BASTION_JAIL_ROOT=" + root, "BASTION_WORKSPACE_ROOT=" + root, schedTraceEnv}
	r, w, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	cmd.Stderr = w
	c := startProc(b, cmd, true)
	w.Close()
	c.sched = watchSched(r)
	c.sendLine(`{"jsonrpc":"2.0","id":"early","method":"tools/call","params":{"name":"scan","arguments":{}}}`)
	wantRPCError(b, c.next(30*time.Second), "early", -32600)
	c.ping(4999)
	c.sendLine(initLine)
	if m := c.next(30 * time.Second); m["result"] == nil {
		b.Fatalf("%s initialize: %v", name, trim(m))
	}
	c.sendLine(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return c
}

// readOnlyTools lists the tools the server marks readOnlyHint.
func (c *child) readOnlyTools() []string {
	c.t.Helper()
	c.sendLine(`{"jsonrpc":"2.0","id":"tools","method":"tools/list"}`)
	m := c.next(30 * time.Second)
	raw, _ := json.Marshal(m["result"])
	var res struct {
		Tools []struct {
			Name        string
			Annotations struct{ ReadOnlyHint *bool }
		}
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		c.t.Fatalf("tools/list: %v", err)
	}
	var names []string
	for _, tl := range res.Tools {
		if h := tl.Annotations.ReadOnlyHint; h != nil && *h {
			names = append(names, tl.Name)
		}
	}
	return names
}

// procFigures samples the process: RSS, fds and threads from /proc, and
// goroutines from its scheduler trace.
func (c *child) procFigures() soakFigures {
	f := c.procFiguresNoWait()
	f.Goroutines = c.sched.goroutines(c.t)
	return f
}

// BenchmarkServerBinaries builds sweepd, terminald and organizerd from
// this tree and drives each over stdio: a tools/call before initialize
// (refused with -32600), every hostile line of
// TestStdioHostileInput, a 100 MB line, 10 MB arguments and 100,000
// notifications, each answered and followed by a ping, with peak RSS under
// stdioMemoryCapKB; then 100,000 calls of each read-only tool (with empty
// arguments: an error answer is still a full round trip) in the same
// session, RSS, fds, threads and goroutines sampled at start and end (see
// schedTrace). Run with -benchtime 1x.
func BenchmarkServerBinaries(b *testing.B) {
	dir := b.TempDir()
	for _, s := range []string{"sweepd", "terminald", "organizerd"} {
		build := exec.Command("go", "build", "-o", filepath.Join(dir, s), "./"+s)
		build.Dir = filepath.Join("..", "..")
		if out, err := build.CombinedOutput(); err != nil {
			b.Fatalf("building %s: %v\n%s", s, err, out)
		}
	}
	for _, s := range []string{"sweepd", "terminald", "organizerd"} {
		b.Run(s, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				c := startServerBinary(b, dir, s)
				hostileBinary(b, c, s)
				soakBinary(b, c, s)
			}
		})
	}
}

func hostileBinary(b *testing.B, c *child, name string) {
	start := time.Now()
	ping := 5000
	for _, tc := range hostileLines {
		c.sendLine(tc.line)
		wantRPCError(b, c.next(30*time.Second), tc.id, tc.code)
		ping++
		c.ping(ping)
	}
	c.send(bigCall("ten-mb", 10<<20))
	wantRPCError(b, c.next(30*time.Second), "ten-mb", -32600)
	c.send(bigCall("hundred-mb", 100<<20))
	wantRPCError(b, c.next(60*time.Second), "hundred-mb", -32600)
	for i := 0; i < 100000; i++ {
		c.sendLine(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":424242}}`)
	}
	c.ping(ping + 1)
	hwm := status(b, c.cmd.Process.Pid, "VmHWM")
	fmt.Printf("%s hostile stdio input (%d lines, 10 MB arguments, a 100 MB line, 100,000 notifications): all answered, still serving, %s; peak RSS %d KiB (cap %d KiB)\n",
		name, len(hostileLines), time.Since(start).Round(time.Millisecond), hwm, stdioMemoryCapKB)
	if hwm > stdioMemoryCapKB {
		b.Errorf("%s peak RSS %d KiB over the cap", name, hwm)
	}
}

// stallAfter is how long the soak waits for one answer before it prints
// what the server is doing; it then waits on, up to stallGiveUp, to tell a
// late answer from a lost one. (One sweepd run once had a call unanswered
// after stallAfter, when the soak still gave up there; no timeout of 30 s
// is on a read-only call's path, see docs/reliability.md.)
const stallAfter, stallGiveUp = 30 * time.Second, 5 * time.Minute

func soakBinary(b *testing.B, c *child, name string) {
	tools, n := c.readOnlyTools(), binaryCalls()
	if len(tools) == 0 {
		b.Fatalf("%s lists no read-only tool", name)
	}
	var slowest time.Duration
	var stalls []string
	start, t0, id := c.procFigures(), time.Now(), 100000
	for i := 0; i < n*len(tools); i++ {
		id++
		tool := tools[i%len(tools)]
		t1 := time.Now()
		c.sendLine(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":{}}}`, id, tool))
		m := c.await(b, fmt.Sprintf("%s call %d of %s, %s into the soak", name, i+1, tool, time.Since(t0).Round(time.Millisecond)), &stalls)
		if m["id"] != float64(id) || (m["result"] == nil && m["error"] == nil) {
			b.Fatalf("%s call %d of %s: %v", name, i+1, tool, trim(m))
		}
		slowest = max(slowest, time.Since(t1))
	}
	took, end := time.Since(t0), c.procFigures()
	fmt.Printf("%s soak: %d calls of each of %v in one session in %s (%.0f calls/s), slowest call %s; goroutines include the runtime's own\n  start: %v\n  end:   %v\n",
		name, n, tools, took.Round(time.Millisecond), float64(n*len(tools))/took.Seconds(), slowest.Round(time.Millisecond), start, end)
	if len(stalls) > 0 {
		b.Errorf("%s: %d calls answered only after %s: %v", name, len(stalls), stallAfter, stalls)
	}
	checkSoak(b, start, end)
}

// await returns the server's next message. When none comes within
// stallAfter it prints the server's state (stallReport) and waits on up to
// stallGiveUp; a late answer is added to stalls, a lost one fails.
func (c *child) await(b *testing.B, what string, stalls *[]string) map[string]any {
	t0 := time.Now()
	select {
	case m := <-c.out:
		return m
	case <-time.After(stallAfter):
	}
	fmt.Printf("%s: unanswered for %s\n%s", what, stallAfter, c.stallReport())
	select {
	case m := <-c.out:
		late := fmt.Sprintf("%s answered after %s", what, time.Since(t0).Round(time.Millisecond))
		fmt.Println(late)
		*stalls = append(*stalls, late)
		return m
	case <-time.After(stallGiveUp - stallAfter):
		b.Fatalf("%s: unanswered for %s\n%s", what, stallGiveUp, c.stallReport())
	}
	return nil
}

// stallReport is what a stalled server is doing: each thread's state and
// kernel wait channel (D, waiting on the disk, names the function), its
// I/O so far, the load, and its goroutines as the last scheduler trace
// listed them.
func (c *child) stallReport() string {
	pid := c.cmd.Process.Pid
	var r strings.Builder
	tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	for _, t := range tasks {
		stat, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/stat", pid, t.Name()))
		wchan, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/wchan", pid, t.Name()))
		state := "?"
		if i := bytes.LastIndexByte(stat, ')'); i >= 0 && i+3 < len(stat) {
			state = string(stat[i+2 : i+3])
		}
		fmt.Fprintf(&r, "  thread %s: state %s, wchan %s\n", t.Name(), state, wchan)
	}
	io, _ := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid))
	load, _ := os.ReadFile("/proc/loadavg")
	fmt.Fprintf(&r, "  io: %s\n  loadavg: %s  %v\n  goroutines (last scheduler trace):\n%s",
		strings.ReplaceAll(strings.TrimSpace(string(io)), "\n", ", "), load, c.procFiguresNoWait(), c.sched.lastDump())
	return r.String()
}

// procFiguresNoWait is procFigures without the goroutines, for a server
// that may not be answering.
func (c *child) procFiguresNoWait() soakFigures {
	pid := c.cmd.Process.Pid
	return soakFigures{status(c.t, pid, "VmRSS"), status(c.t, pid, "VmHWM"), openFDs(c.t, pid), status(c.t, pid, "Threads"), 0}
}
