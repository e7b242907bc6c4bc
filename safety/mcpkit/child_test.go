package mcpkit

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"github.com/bastion-mcp/bastion/safety/mcpkit/mcpkittest"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/bastion-mcp/bastion/safety/result"
)

// childEnv makes the test binary a server: "stdio" serves testServer on its
// stdin and stdout through Serve, "http=ADDR" over Streamable HTTP. The
// hostile-input and soak tests drive it as a separate process, so its
// memory (VmHWM) is the serve path's alone.
const childEnv = "MCPKIT_TEST_CHILD_SERVE"

func TestMain(m *testing.M) {
	if mode := os.Getenv(childEnv); mode != "" {
		os.Exit(childServe(mode))
	}
	os.Exit(m.Run())
}

func childServe(mode string) int {
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	tr := Transport{}
	if addr, ok := strings.CutPrefix(mode, "http="); ok {
		tr.HTTP = addr
		if os.Getenv("MCPKIT_TEST_BODY_TIMEOUT") != "" {
			bodyReadTimeout = 2 * time.Second
		}
		if f := os.Getenv("MCPKIT_TEST_TOKEN_FILE"); f != "" {
			tr.TokenFile = f
		}
	}
	if err := Serve(context.Background(), childServer(), tr, logger); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// childServer is testServer with one more read-only tool, runtime_stats,
// which reports the server's goroutines for the soak.
func childServer() *server.MCPServer {
	s := testServer(io.Discard)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	s.AddTool(NewTool("runtime_stats", "Report the goroutine count.", Annotations{ReadOnly: true, Idempotent: true}, noArgsSchema),
		Handle("runtime_stats", log, func(context.Context, mcp.CallToolRequest, struct{}) result.OperationResult {
			return result.Success("", "stats", map[string]int{"goroutines": runtime.NumGoroutine()}, time.Time{})
		}))
	return s
}

// child is a server process started from the test binary.
type child struct {
	t     testing.TB
	cmd   *exec.Cmd
	in    io.WriteCloser
	out   chan map[string]any // stdio: each message the server wrote
	sched *schedTrace         // a built server binary's goroutines
}

func startChild(t testing.TB, mode string, env ...string) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(append(os.Environ(), childEnv+"="+mode), env...)
	return startProc(t, cmd, mode == "stdio")
}

// startProc starts cmd, driving its stdin and reading its stdout when
// stdio is set.
func startProc(t testing.TB, cmd *exec.Cmd, stdio bool) *child {
	t.Helper()
	if cmd.Stderr == nil {
		cmd.Stderr = os.Stderr
	}
	c := &child{t: t, cmd: cmd, out: make(chan map[string]any, 1024)}
	var stdout io.ReadCloser
	if stdio {
		var err error
		if c.in, err = cmd.StdinPipe(); err != nil {
			t.Fatal(err)
		}
		if stdout, err = cmd.StdoutPipe(); err != nil {
			t.Fatal(err)
		}
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if c.in != nil {
			c.in.Close()
		}
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	if stdout != nil {
		go c.readLoop(stdout)
	}
	return c
}

func (c *child) readLoop(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			m = map[string]any{"unparsable": sc.Text()}
		}
		c.out <- m
	}
	close(c.out)
}

// send writes raw bytes to the server's stdin.
func (c *child) send(b []byte) {
	c.t.Helper()
	if _, err := c.in.Write(b); err != nil {
		c.t.Fatalf("write to server: %v", err)
	}
}

func (c *child) sendLine(s string) { c.send([]byte(s + "\n")) }

// next returns the server's next message, failing after d.
func (c *child) next(d time.Duration) map[string]any {
	c.t.Helper()
	select {
	case m, ok := <-c.out:
		if !ok {
			c.t.Fatal("the server closed its output")
		}
		return m
	case <-time.After(d):
		c.t.Fatalf("no message from the server within %s", d)
	}
	return nil
}

// ping proves the server still serves, and that nothing was answered
// before the ping's own response.
func (c *child) ping(id int) {
	c.t.Helper()
	c.sendLine(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"ping"}`, id))
	m := c.next(30 * time.Second)
	if fmt.Sprint(m["id"]) != strconv.Itoa(id) || m["result"] == nil {
		c.t.Fatalf("ping %d answered by %v", id, m)
	}
}

// status reads one field of /proc/<pid>/status, in kB for the Vm* fields.
func status(t testing.TB, pid int, field string) int {
	t.Helper()
	return int(mcpkittest.ProcStatus(t, pid, field))
}

// openFDs counts the open file descriptors of pid.
func openFDs(t testing.TB, pid int) int {
	t.Helper()
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}
