package mcpkit

import (
	"bufio"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// schedTraceEnv makes a Go binary's runtime print its scheduler state,
// every goroutine listed, on stderr every 500 ms. It is how the soak of
// the built servers counts their goroutines without any code in them: a
// real binary has no tool that reports goroutines (the test binary's
// runtime_stats is test code), and a debugging hook a client could reach
// is what the soak must not need. GODEBUG is the Go runtime's own setting,
// read once at start from the environment the operator gives the process;
// the trace goes to stderr (the log), never to the protocol.
const schedTraceEnv = "GODEBUG=schedtrace=500,scheddetail=1"

// schedTrace reads the scheduler trace of schedTraceEnv and keeps how many
// goroutines the last whole dump listed.
type schedTrace struct {
	mu    sync.Mutex
	dumps int    // whole dumps read
	last  int    // live goroutines in the last whole dump
	text  string // its goroutine lines, for a stall report
}

func watchSched(r io.ReadCloser) *schedTrace {
	st := &schedTrace{}
	go st.read(r)
	return st
}

// read counts the "  G<id>: status=<n>(...)" lines of each dump; a dump
// is whole when the next one's "SCHED" line arrives.
func (st *schedTrace) read(r io.ReadCloser) {
	defer r.Close()
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	n, in := 0, false
	var text strings.Builder
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "SCHED ") {
			if in {
				st.mu.Lock()
				st.dumps, st.last, st.text = st.dumps+1, n, text.String()
				st.mu.Unlock()
			}
			n, in = 0, true
			text.Reset()
			continue
		}
		if g, ok := strings.CutPrefix(line, "  G"); ok && in && liveG(g) {
			n++
			if text.Len() < 64<<10 {
				text.WriteString(line + "\n")
			}
		}
	}
}

// lastDump is the goroutine lines of the last whole dump.
func (st *schedTrace) lastDump() string {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.text
}

// liveG reports whether a dump's goroutine line ("12: status=4(select)
// m=nil ...") is of a goroutine that exists: not idle (0), dead (6) or
// dead extra (11), the scan bit (0x1000) ignored. Like
// runtime.NumGoroutine it leaves out dead goroutines kept for reuse;
// unlike it, it counts the runtime's own (GC workers, sweeper, finalizer).
func liveG(g string) bool {
	_, rest, ok := strings.Cut(g, ": status=")
	if !ok {
		return false
	}
	end := strings.IndexByte(rest, '(')
	if end < 0 {
		return false
	}
	s, err := strconv.Atoi(rest[:end])
	if err != nil {
		return false
	}
	switch s &^ 0x1000 {
	case 0, 6, 11:
		return false
	}
	return true
}

// goroutines waits for a dump that began after the call and returns its
// count: the dump under way at the call may have begun before it, so the
// second dump finished from now is the first wholly after it.
func (st *schedTrace) goroutines(t testing.TB) int {
	t.Helper()
	st.mu.Lock()
	d0 := st.dumps
	st.mu.Unlock()
	deadline := time.Now().Add(10 * time.Second)
	for {
		st.mu.Lock()
		d, n := st.dumps, st.last
		st.mu.Unlock()
		if d >= d0+2 {
			return n
		}
		if time.Now().After(deadline) {
			t.Fatalf("no scheduler trace from the server within 10 s (%s)", schedTraceEnv)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestSchedTraceCountsGoroutines: the scheduler trace of a server process
// counts at least the goroutines runtime.NumGoroutine reports there (the
// runtime's own on top), and grows with them: 50 idle connections, each
// served by a goroutine, add 50 to both.
func TestSchedTraceCountsGoroutines(t *testing.T) {
	addr := freeAddr(t)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"=http="+addr, schedTraceEnv)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = w
	c := startProc(t, cmd, false)
	w.Close()
	st := watchSched(r)
	s := newSession(addr)
	waitListening(t, addr)
	s.initialize(t)
	pid := c.cmd.Process.Pid
	n0, g0 := s.figures(t, pid, 1).Goroutines, st.goroutines(t)
	if g0 < n0 || g0 > n0+32 {
		t.Fatalf("the trace counts %d goroutines, NumGoroutine %d", g0, n0)
	}
	var conns []net.Conn
	defer func() {
		for _, cn := range conns {
			cn.Close()
		}
	}()
	for range 50 {
		cn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, cn)
	}
	n1 := s.settleAbove(t, pid, n0+50)
	g1 := st.goroutines(t)
	t.Logf("NumGoroutine %d → %d; the trace %d → %d", n0, n1, g0, g1)
	if d := (g1 - g0) - (n1 - n0); d < -3 || d > 3 {
		t.Errorf("the trace grew by %d, NumGoroutine by %d", g1-g0, n1-n0)
	}
}

// settleAbove waits up to 5 s for the server's goroutines to reach min.
func (s *session) settleAbove(t testing.TB, pid, min int) int {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		n := s.figures(t, pid, 2).Goroutines
		if n >= min || time.Now().After(deadline) {
			return n
		}
		time.Sleep(20 * time.Millisecond)
	}
}
